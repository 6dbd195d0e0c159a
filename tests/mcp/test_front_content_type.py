"""The Content-Type rule on /api/mcp is the edge's (``memory_core.edge.media``), whichever part of the app answers.

A ping and a tools/call are answered by the front's single exchange, a notification by the SDK's own app, whose
checks (its DNS-rebinding middleware's plain-text 400 ``Invalid Content-Type header``, its transport's 415) compare
the header exactly. The front refuses what the edge's rule refuses (415, a JSON-RPC error) and hands the SDK
``application/json`` for what it accepts, so one Content-Type gets one answer for every method.

Real ``serve`` over real sockets (``http.client``), and the real SDK's check.
"""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request

from memory_core.domain.errors import UnsupportedMediaType
from memory_core.edge.names import AppNames
from memory_core.mcp.front import addressed_scope
from memory_core.mcp.transport import security_settings
from memory_core.settings import Settings
from tests.mcp.client import mcp_headers
from tests.mcp.test_front_host_and_origin import ERA, NOTIFICATION, PING
from tests.support.local_server import USER_KEY, RunningServer

CALL = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "get_memory", "arguments": {"scope": "user"}}}
MESSAGES = {"ping": PING, "tools/call": CALL, "notification": NOTIFICATION}
ACCEPTED = ["application/json", "APPLICATION/JSON", "application/json; charset=utf-8",
            "Application/Json ;CHARSET=UTF-8", "application/vnd.example+json"]
REFUSED = ["text/plain", None, "application/jsonx", "application/json, text/plain", "text/json", "application/json+xml"]


def _post(server: RunningServer, message: dict[str, Any], content_type: str | None) -> tuple[int, str, bytes]:
    """``message`` POSTed with ``content_type`` (None: no Content-Type header at all); status, its type, body."""
    port = int(server.base_url.rsplit(":", 1)[1])
    headers = {"Accept": "application/json, text/event-stream", **mcp_headers(USER_KEY), **ERA}
    if content_type is not None:
        headers["Content-Type"] = content_type
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", "/api/mcp", json.dumps(message).encode(), headers)
        response = connection.getresponse()
        return response.status, response.getheader("content-type") or "", response.read()
    finally:
        connection.close()


@pytest.mark.parametrize("content_type", ACCEPTED)
def test_a_content_type_the_edge_accepts_is_served_for_every_method(core_server: RunningServer,
                                                                     content_type: str) -> None:
    for name, message in MESSAGES.items():
        status, media, body = _post(core_server, message, content_type)
        if name == "notification":
            assert (status, body) == (202, b""), (name, body)
            continue
        assert status == 200 and media.startswith("application/json"), (name, status, body)
        document = json.loads(body)
        assert document["id"] == message["id"] and "result" in document and "error" not in document, (name, document)
    tools_call = json.loads(_post(core_server, CALL, content_type)[2])
    assert tools_call["result"]["isError"] is False


@pytest.mark.parametrize("content_type", REFUSED)
def test_a_content_type_the_edge_refuses_is_one_jsonrpc_415_for_every_method(core_server: RunningServer,
                                                                             content_type: str | None) -> None:
    answers = {name: _post(core_server, message, content_type) for name, message in MESSAGES.items()}
    assert len(set(answers.values())) == 1, answers  # never the SDK's plain text for the notification
    status, media, body = answers["ping"]
    assert status == 415 and media.startswith("application/json"), (status, body)
    document = json.loads(body)
    assert document["jsonrpc"] == "2.0" and document["id"] is None
    assert document["error"]["code"] == -32600
    assert document["error"]["message"] == "send the request body as JSON with Content-Type: application/json"
    assert document["error"]["data"]["code"] == "unsupported_media_type"


# -- the SDK's checks, given what the front admits ---------------------------------------------------------------


def _scope(content_type: bytes | None) -> dict[str, Any]:
    headers = [(b"host", b"localhost:7071")] + ([(b"content-type", content_type)] if content_type is not None else [])
    return {"type": "http", "method": "POST", "path": "/api/mcp", "headers": headers, "query_string": b"",
            "scheme": "http", "server": ("127.0.0.1", 7071)}


@pytest.mark.anyio
@pytest.mark.parametrize("names", [True, False], ids=["names", "no-names"])
@pytest.mark.parametrize("content_type", ACCEPTED)
async def test_the_sdk_accepts_every_content_type_the_front_admits_as_it_is_given(content_type: str,
                                                                                 names: bool) -> None:
    settings = Settings(website_hostname=None, memory_allowed_hosts=(), memory_mcp_allowed_hosts=())
    sdk = TransportSecurityMiddleware(security_settings(settings))
    given = addressed_scope(_scope(content_type.encode()), AppNames.from_settings(settings) if names else None)
    assert [v for k, v in given["headers"] if k == b"content-type"] == [b"application/json"]
    assert [v for k, v in given["headers"] if k == b"host"] == [b"localhost:7071"]
    assert await sdk.validate_request(Request(given), is_post=True) is None


@pytest.mark.parametrize("content_type", REFUSED)
def test_the_front_refuses_what_the_edge_refuses_before_the_sdk(content_type: str | None) -> None:
    with pytest.raises(UnsupportedMediaType):
        addressed_scope(_scope(content_type.encode() if content_type is not None else None), None)
