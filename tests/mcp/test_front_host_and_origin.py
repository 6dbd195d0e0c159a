"""The Host and Origin rule on /api/mcp is the edge's (``memory_core.edge.names``), case and all.

Host names compare without ASCII case (RFC 9110 4.2.3); the MCP SDK's DNS-rebinding check compares exact strings
and answers plain text. The front (``memory_core.mcp.front``) applies the edge's rule and hands the SDK the canonical
Host and Origin, so a request the edge accepts is never refused by the SDK for case alone, and a request the edge
refuses is refused as the edge refuses it: its status, a JSON-RPC error body with the edge's message.

Real ``serve`` over real sockets (``http.client``, a raw socket, the official client) and the real SDK's check.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request

from memory_core.edge.names import AppNames
from memory_core.mcp.front import McpHttpApp, addressed_scope
from memory_core.mcp.transport import security_settings
from memory_core.settings import Settings
from tests.mcp.client import ACCEPT, mcp_headers, mcp_session, text
from tests.mcp.conftest import DEFAULT_INSTANCE
from tests.support.local_server import USER_KEY, RunningServer, read_until_closed, running_server

PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
# A notification: the front's single exchange leaves it to the SDK's own app, whose DNS-rebinding check then runs.
NOTIFICATION = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ERA = {"MCP-Protocol-Version": "2025-11-25"}
HOST_REFUSED = "the Host header does not name this app"
ORIGIN_REFUSED = "requests from other web sites are refused (Origin)"


def _settings(**values: object) -> Settings:
    base: dict[str, object] = {"website_hostname": None, "memory_allowed_hosts": (), "memory_mcp_allowed_hosts": ()}
    return Settings(**{**base, **values})  # type: ignore[arg-type]


def _port(server: RunningServer) -> int:
    return int(server.base_url.rsplit(":", 1)[1])


def _post(server: RunningServer, body: dict[str, Any], path: str = "/api/mcp",
          **headers: str) -> tuple[int, dict[str, str], bytes]:
    """``body`` POSTed with http.client, which sends the Host given here as it is (its own only when none is)."""
    connection = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=30)
    try:
        connection.request("POST", path, json.dumps(body).encode(),
                           {**ACCEPT, **mcp_headers(USER_KEY), **ERA, **headers})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def _assert_accepted(status: int, body: bytes, message: dict[str, Any]) -> None:
    if "id" in message:
        assert status == 200, body
        assert json.loads(body) == {"jsonrpc": "2.0", "id": message["id"], "result": {}}
    else:
        assert status == 202, body


def _assert_refused_as_the_edge_refuses(status: int, headers: dict[str, str], body: bytes, expected_status: int,
                                        message: str) -> None:
    assert status == expected_status, body
    assert headers["content-type"].startswith("application/json")
    document = json.loads(body)
    assert document["jsonrpc"] == "2.0" and document["id"] is None
    assert document["error"]["code"] == -32600 and document["error"]["message"].startswith(message)


# -- the SDK's check, given what the edge admits ------------------------------------


def _scope(host: str | None, origin: str | None = None) -> dict[str, Any]:
    headers = [(b"content-type", b"application/json")]
    if host is not None:
        headers.append((b"host", host.encode()))
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return {"type": "http", "method": "POST", "path": "/api/mcp", "headers": headers, "query_string": b"",
            "scheme": "http", "server": ("127.0.0.1", 8520)}


@pytest.mark.anyio
@pytest.mark.parametrize(("values", "host", "origin"), [
    ({}, "LOCALHOST:7071", "http://LocalHost:7071"),
    ({}, "LocalHost", "HTTPS://LOCALHOST/"),
    ({}, "[::1]:08080", "HTTP://[::1]:8080/"),
    ({}, None, None),
    ({"website_hostname": "Memory.AzureWebsites.net"}, "MEMORY.azurewebsites.NET", "https://memory.AZUREWEBSITES.net"),
    ({"memory_allowed_hosts": ("https://Bücher.example/",)}, "XN--BCHER-KVA.example:443",
     "https://Xn--Bcher-Kva.Example"),
])
async def test_the_sdk_accepts_every_request_the_edge_admits_in_the_form_the_front_gives_it(
    values: dict[str, object], host: str | None, origin: str | None
) -> None:
    """The SDK's own check, configured as the app configures it, refuses the request as sent (case; a missing Host)
    and accepts it once ``addressed_scope`` has made it canonical."""
    settings = _settings(**values)
    sdk = TransportSecurityMiddleware(security_settings(settings))
    sent = _scope(host, origin)
    assert await sdk.validate_request(Request(sent), is_post=True) is not None
    assert await sdk.validate_request(Request(addressed_scope(sent, AppNames.from_settings(settings))),
                                      is_post=True) is None


@pytest.mark.anyio
@pytest.mark.parametrize(("host", "origin", "status"), [
    ("localhost.:7071", None, 421), ("evil.example", None, 421), ("", None, 421), ("b\u00fccher.example", None, 421),
    ("localhost", "http://LOCALHOST.evil.example", 403), ("localhost", "null", 403),
])
async def test_a_request_the_edge_refuses_never_reaches_the_sdk(host: str, origin: str | None, status: int) -> None:
    reached: list[object] = []

    async def sdk(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope)

    app = McpHttpApp(sdk, names=AppNames.from_settings(_settings()))
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": json.dumps(PING).encode(), "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = _scope(host, origin)
    scope["headers"] = [(k, v.decode().encode("latin-1") if k == b"host" else v) for k, v in scope["headers"]]
    await app(scope, receive, send)
    assert not reached
    assert sent[0]["status"] == status
    assert json.loads(sent[1]["body"])["error"]["code"] == -32600


# -- over serve ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("message", [PING, NOTIFICATION], ids=["request", "notification"])
@pytest.mark.parametrize(("host", "origin"), [
    ("LOCALHOST:{port}", None), ("LocalHost", None), ("127.0.0.1:{port}", "http://LOCALHOST:{port}"),
    ("localhost:{port}", "HTTP://LocalHost:{port}/"), ("[::1]:{port}", "https://[::1]"),
], ids=["upper-host", "mixed-host-no-port", "upper-origin", "mixed-origin-and-scheme", "ipv6"])
def test_a_host_or_origin_in_another_case_is_served(core_server: RunningServer, host: str, origin: str | None,
                                                    message: dict[str, Any]) -> None:
    """Over ``serve``: a request answered by the front (ping) and one the SDK's own app answers (a notification)."""
    port = _port(core_server)
    headers = {"Host": host.format(port=port), **({"Origin": origin.format(port=port)} if origin else {})}
    status, _, body = _post(core_server, message, **headers)
    _assert_accepted(status, body, message)


@pytest.mark.parametrize("message", [PING, NOTIFICATION], ids=["request", "notification"])
@pytest.mark.parametrize(("headers", "status", "refusal", "rest_code"), [
    ({"Host": "localhost.:{port}"}, 421, HOST_REFUSED, "host_not_allowed"),
    ({"Host": "LOCALHOST.evil.example"}, 421, HOST_REFUSED, "host_not_allowed"),
    ({"Host": "b\u00fccher.example"}, 421, HOST_REFUSED, "host_not_allowed"),
    ({"Host": "LOCALHOST:{port}@evil.example"}, 421, HOST_REFUSED, "host_not_allowed"),
    ({"Origin": "http://LOCALHOST.:{port}"}, 403, ORIGIN_REFUSED, "origin_not_allowed"),
    ({"Origin": "HTTPS://EVIL.EXAMPLE"}, 403, ORIGIN_REFUSED, "origin_not_allowed"),
    ({"Origin": "http://localhost:{port}/page"}, 403, ORIGIN_REFUSED, "origin_not_allowed"),
    ({"Origin": "http://local\thost:{port}"}, 403, ORIGIN_REFUSED, "origin_not_allowed"),
    ({"Origin": "http://localhost:{port}?from=evil"}, 403, ORIGIN_REFUSED, "origin_not_allowed"),
    ({"Origin": "http://localhost:{port}#top"}, 403, ORIGIN_REFUSED, "origin_not_allowed"),
], ids=["trailing-dot", "upper-foreign-host", "latin-1-host", "userinfo", "origin-trailing-dot", "upper-foreign-origin",
        "origin-with-a-path", "origin-with-a-tab", "origin-with-a-query", "origin-with-a-fragment"])
def test_a_refused_host_or_origin_is_refused_as_the_rest_routes_refuse_it(
    core_server: RunningServer, headers: dict[str, str], status: int, refusal: str, rest_code: str,
    message: dict[str, Any],
) -> None:
    """The edge's status and message on /api/mcp (a JSON-RPC error), its status and code on a REST route."""
    sent = {name: value.format(port=_port(core_server)) for name, value in headers.items()}
    _assert_refused_as_the_edge_refuses(*_post(core_server, message, **sent), status, refusal)
    rest_status, _, rest_body = _post(core_server, {"query": "x"},
                                      f"/api/instances/{DEFAULT_INSTANCE}/memory/search", **sent)
    assert (rest_status, json.loads(rest_body)["error"]["code"]) == (status, rest_code)


@pytest.mark.parametrize("message", [PING, NOTIFICATION], ids=["request", "notification"])
def test_a_request_without_a_host_is_served_as_its_url_names_it(core_server: RunningServer,
                                                                message: dict[str, Any]) -> None:
    """HTTP/1.0 may leave Host out: the edge reads the URL's authority; the SDK, which refuses a request without
    Host, is given it."""
    body = json.dumps(message).encode()
    head = "".join(f"{name}: {value}\r\n" for name, value in {**ACCEPT, **mcp_headers(USER_KEY), **ERA}.items())
    with socket.create_connection(("127.0.0.1", _port(core_server)), timeout=30) as sock:
        sock.sendall(f"POST /api/mcp HTTP/1.0\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        answer = read_until_closed(sock)
    status_line, _, rest = answer.partition(b"\r\n")
    _assert_accepted(int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2], message)


@pytest.mark.anyio
async def test_the_official_client_works_through_an_upper_case_host_and_origin(core_server: RunningServer) -> None:
    """A whole session (initialize, the initialized notification, two tool calls) with Host and Origin in upper case."""
    port = _port(core_server)
    headers = {**mcp_headers(USER_KEY, "casey@contoso.com"), "Host": f"LOCALHOST:{port}",
               "Origin": f"HTTP://LOCALHOST:{port}"}
    async with mcp_session(f"{core_server.api}/mcp", headers) as session:
        appended = await session.call_tool("append_memory", {"scope": "user", "memory": "prefers upper case"})
        assert not appended.is_error, text(appended)
        assert "prefers upper case" in text(await session.call_tool("get_memory", {"scope": "user"}))


# -- an IDN -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def idn_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """memory-core that also answers to an IDN, configured in Unicode (browsers send it as xn--bcher-kva.example)."""
    env = {"MEMORY_ALLOWED_HOSTS": "Bücher.example", "MEMORY_MCP_ALLOWED_HOSTS": "", "WEBSITE_HOSTNAME": "",
           "MEMORY_STORE": "sqlite", "MEMORY_COREAPI_BASE_URL": ""}
    with running_server(Path(tmp_path_factory.mktemp("mcp-idn")), env) as server:
        yield server


@pytest.mark.parametrize("message", [PING, NOTIFICATION], ids=["request", "notification"])
def test_an_idn_is_served_in_its_ascii_form_in_any_case(idn_server: RunningServer, message: dict[str, Any]) -> None:
    _assert_accepted(*_post(idn_server, message, Host="XN--BCHER-KVA.EXAMPLE")[::2], message)
    _assert_accepted(*_post(idn_server, message, Host="xn--bcher-kva.example:443",
                            Origin="https://Xn--Bcher-Kva.Example")[::2], message)


@pytest.mark.parametrize(("headers", "status", "refusal"), [
    ({"Host": "b\u00fccher.example"}, 421, HOST_REFUSED),
    ({"Host": "B\u00dcCHER.EXAMPLE"}, 421, HOST_REFUSED),
    ({"Host": "xn--bcher-kva.example."}, 421, HOST_REFUSED),
    ({"Host": "xn--bcher-kva.example", "Origin": "http://xn--bcher-kva.example"}, 403, ORIGIN_REFUSED),
], ids=["unicode", "unicode-upper", "trailing-dot", "http-origin"])
def test_an_idn_is_refused_in_unicode_or_over_http(idn_server: RunningServer, headers: dict[str, str], status: int,
                                                   refusal: str) -> None:
    """A Host is ASCII (a browser sends the xn-- form); a name that is not loopback is a page over https only."""
    _assert_refused_as_the_edge_refuses(*_post(idn_server, NOTIFICATION, **headers), status, refusal)
