"""The one reading of Content-Length (``memory_core.edge.body.declared_length``): ASCII digits only, a huge one too
large, never a 500, and one answer for REST and /api/mcp on every path a request takes.

- The Functions path (``admit``, and the ``append_memory`` and ``mcp`` functions themselves): the request is built by
  hand, as azure-functions-host's ToRpcHttp shapes it, because the Functions host cannot run here.
- ``serve`` over real sockets: its HTTP parser (llhttp) refuses most hostile values before the app sees them (its
  own plain 400, alike on every path); what it lets through (19 digits, leading zeros, spaces and tabs) the local
  host reads before the body, by the same rule.
- The local host (``FunctionHost``, what ``serve`` runs) given what llhttp refuses, as another ASGI server could
  hand it over: the same 400 the edge answers, in the route's own protocol, before a byte of the body is read.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import azure.functions as func
import pytest

import function_app
from memory_core import composition
from memory_core.api import rest
from memory_core.composition import Runtime, build_runtime
from memory_core.domain.errors import InvalidInput, PayloadTooLarge
from memory_core.edge import spec_of
from memory_core.edge.admission import admit
from memory_core.local.host import FunctionHost
from memory_core.mcp import transport
from memory_core.settings import Settings
from tests.support.local_server import USER_KEY, RunningServer, identity, read_until_closed

BODY = b'{"scope": "user", "content_markdown": "- a fact"}'
PING = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
NOT_DIGITS = ["\u00b2", "1\u00b2", "\u0661\u0662", "\uff11\uff12", "12\u00a0", "\u3000" + "12", "1 2", "-1", "+12",
              "0x10", "1e3", "12.0", "12, 12"]
TOO_MANY_DIGITS = ["9" * 19, "1" * 5000]
# Past 4,300 characters ``int()`` refuses a text, leading zeros included: each of these answered 500 once.
ZEROS = "0" * 5000
TOO_LARGE_AFTER_ZEROS = [ZEROS + "9" * 19, ZEROS + "99999999"]


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    rt = build_runtime(Settings(memory_store="sqlite", memory_sqlite_path=str(tmp_path / "m.sqlite3"),
                                memory_api_keys=(USER_KEY,), website_hostname=None))
    try:
        yield rt
    finally:
        rt.store.close()


def _append(rt: Runtime, content_length: str) -> object:
    spec = spec_of(rest.append_memory)
    assert spec is not None
    request = func.HttpRequest(method="POST", url="http://localhost:7071/api/instances/i/memory/append",
                               route_params={"instanceId": "i"}, body=BODY,
                               headers={"host": "localhost:7071", "content-type": "application/json",
                                        "content-length": content_length, "x-api-key": USER_KEY,
                                        "x-user-identity": identity("alex@contoso.com")})
    return admit(spec, request, rt)


@pytest.mark.parametrize("declared", NOT_DIGITS)
def test_a_length_that_is_not_ascii_digits_is_400(runtime: Runtime, declared: str) -> None:
    """Superscripts, Arabic-Indic and full-width digits (``str.isdigit`` takes them; ``int`` refuses the first) and
    whitespace HTTP does not allow around a value are refused as 400 invalid_content_length, never a ValueError."""
    with pytest.raises(InvalidInput) as refused:
        _append(runtime, declared)
    assert refused.value.code == "invalid_content_length"


@pytest.mark.parametrize("declared", TOO_MANY_DIGITS)
def test_a_length_of_more_digits_than_any_body_is_413(runtime: Runtime, declared: str) -> None:
    """Nineteen digits and more are too large without a conversion (``int`` of 5,000 digits raised ValueError)."""
    with pytest.raises(PayloadTooLarge):
        _append(runtime, declared)


@pytest.mark.parametrize("declared", [str(len(BODY)), f" \t{len(BODY)}\t ", "0" * 30 + str(len(BODY)),
                                      ZEROS + str(len(BODY))])
def test_a_length_in_ascii_digits_with_http_whitespace_is_read(runtime: Runtime, declared: str) -> None:
    """Spaces and tabs around the digits (RFC 9110's optional whitespace) and leading zeros are a length, however
    many zeros (past 4,300 digits ``int()`` of the whole text raised ValueError: a 500)."""
    assert _append(runtime, declared) is not None


# -- REST and /api/mcp answer alike -------------------------------------------------------------------------------


def _refusal(response: func.HttpResponse) -> tuple[int, str, str]:
    """Status, error code and message of a REST error body or of a JSON-RPC error (its ``data.code``)."""
    document = json.loads(response.get_body())
    if "jsonrpc" in document:
        assert document["id"] is None and document["error"]["code"] == -32600, document
        return response.status_code, document["error"]["data"]["code"], document["error"]["message"]
    return response.status_code, document["error"]["code"], document["error"]["message"]


def _functions_request(path: str, body: bytes, content_length: str) -> func.HttpRequest:
    return func.HttpRequest(method="POST", url=f"http://localhost:7071/api/{path}", body=body,
                            route_params={"instanceId": "i"} if path.startswith("instances/") else {},
                            headers={"host": "localhost:7071", "content-type": "application/json",
                                     "accept": "application/json, text/event-stream",
                                     "content-length": content_length, "x-api-key": USER_KEY,
                                     "x-user-identity": identity("alex@contoso.com")})


@pytest.fixture
def process_runtime(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    """``runtime`` as the process's (``composition.runtime()``), which the functions and the local host read."""
    monkeypatch.setattr(composition._process, "runtime", runtime)
    return runtime


@pytest.mark.anyio
@pytest.mark.parametrize("declared", [*NOT_DIGITS, *TOO_MANY_DIGITS, "99999999", *TOO_LARGE_AFTER_ZEROS])
async def test_the_functions_path_answers_a_hostile_length_alike_on_rest_and_mcp(process_runtime: Runtime,
                                                                                declared: str) -> None:
    """The ``append_memory`` and ``mcp`` functions as the Functions worker calls them: one status, code and message,
    the MCP one as a JSON-RPC error."""
    rest_answer = rest.append_memory(_functions_request("instances/i/memory/append", BODY, declared))
    mcp_answer = await transport.mcp(_functions_request("mcp", PING, declared), None)
    assert _refusal(rest_answer) == _refusal(mcp_answer)
    expected = (400, "invalid_content_length") if declared in NOT_DIGITS else (413, "payload_too_large")
    assert _refusal(rest_answer)[:2] == expected


@pytest.mark.anyio
@pytest.mark.parametrize("zeros", [30, 5000])
async def test_the_functions_path_reads_a_length_after_thousands_of_zeros_on_rest_and_mcp(process_runtime: Runtime,
                                                                                        zeros: int) -> None:
    """The ``append_memory`` and ``mcp`` functions themselves serve a request whose Content-Length is its length
    after ``zeros`` zeros (5,000 answered 500 ``internal_error``: ``int()`` of the whole text)."""
    rest_answer = rest.append_memory(_functions_request("instances/i/memory/append", BODY,
                                                        "0" * zeros + str(len(BODY))))
    mcp_answer = await transport.mcp(_functions_request("mcp", PING, "0" * zeros + str(len(PING))), None)
    assert rest_answer.status_code == 200, rest_answer.get_body()
    assert "- a fact" in json.loads(rest_answer.get_body())["content_markdown"]
    assert (mcp_answer.status_code, json.loads(mcp_answer.get_body())) == (200, {"jsonrpc": "2.0", "id": 1,
                                                                                 "result": {}})


def _raw_post(server: RunningServer, path: str, body: bytes, content_length: str) -> tuple[int, bytes]:
    """``body`` POSTed on a socket of its own with ``Content-Length: content_length`` as given; the status and the
    answer's body."""
    host, port = server.base_url.removeprefix("http://").split(":")
    head = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nX-API-KEY: {USER_KEY}\r\n"
            f"X-USER-IDENTITY: {identity('alex@contoso.com')}\r\nContent-Length: {content_length}\r\n"
            "Connection: close\r\n\r\n").encode()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head + body)
        answer = read_until_closed(sock)
    status_line, _, rest_of_answer = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest_of_answer.partition(b"\r\n\r\n")[2]


def _served_refusal(status: int, body: bytes) -> tuple[int, str, str]:
    return _refusal(func.HttpResponse(body, status_code=status))


@pytest.mark.parametrize("declared", ["9" * 19, "999999999999999999", "99999999", *TOO_LARGE_AFTER_ZEROS])
def test_serve_answers_a_length_over_the_limit_alike_on_rest_and_mcp(sqlite_server: RunningServer,
                                                                     declared: str) -> None:
    """19 digits (past what the edge converts, within what llhttp reads), 18, and eight, alone or after 5,000
    zeros (llhttp reads those too): 413 with one code and one message, from the headers alone (no body is sent)."""
    rest_answer = _raw_post(sqlite_server, "/api/instances/i/memory/append", b"", declared)
    mcp_answer = _raw_post(sqlite_server, "/api/mcp", b"", declared)
    assert _served_refusal(*rest_answer) == _served_refusal(*mcp_answer)
    assert _served_refusal(*rest_answer)[:2] == (413, "payload_too_large")


@pytest.mark.parametrize("declared", ["0" * 30 + "{n}", ZEROS + "{n}", " {n}", "{n}\t", "\t {n} "],
                         ids=["leading-zeros", "5000-leading-zeros", "space-before", "tab-after", "both"])
def test_serve_reads_a_length_with_leading_zeros_or_http_whitespace_on_rest_and_mcp(
        sqlite_server: RunningServer, instance_id: str, declared: str) -> None:
    rest_body = json.dumps({"scope": "user", "content_markdown": f"- {declared!r}"}).encode()
    rest_answer = _raw_post(sqlite_server, f"/api/instances/{instance_id}/memory/append", rest_body,
                            declared.format(n=len(rest_body)))
    mcp_answer = _raw_post(sqlite_server, "/api/mcp", PING, declared.format(n=len(PING)))
    assert rest_answer[0] == 200, rest_answer
    assert mcp_answer == (200, b'{"jsonrpc":"2.0","id":1,"result":{}}')


@pytest.mark.parametrize("declared", [*NOT_DIGITS, *TOO_MANY_DIGITS[1:], "99999999999999999999", ""])
def test_serve_answers_a_length_its_parser_refuses_alike_on_rest_and_mcp(sqlite_server: RunningServer,
                                                                         declared: str) -> None:
    """What llhttp refuses is refused before any route is chosen: the same answer on every path, never a 500."""
    rest_answer = _raw_post(sqlite_server, "/api/instances/i/memory/append", BODY, declared)
    mcp_answer = _raw_post(sqlite_server, "/api/mcp", PING, declared)
    assert rest_answer == mcp_answer
    assert rest_answer[0] == 400


async def _through_the_host(path: str, content_length: bytes) -> tuple[list[dict[str, Any]], int]:
    """One POST of ``path`` through ``FunctionHost`` (function_app's routes) with ``content_length`` as an ASGI server
    could hand it over: what the host sent, and how many times it asked for the body."""
    sent: list[dict[str, Any]] = []
    reads = 0

    async def receive() -> dict[str, Any]:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": PING, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "query_string": b"", "scheme": "http",
             "headers": [(b"host", b"localhost:7071"), (b"content-type", b"application/json"),
                         (b"content-length", content_length)]}
    await FunctionHost(function_app.app)(scope, receive, send)
    return sent, reads


@pytest.mark.anyio
@pytest.mark.parametrize("declared", [*NOT_DIGITS, *TOO_MANY_DIGITS, *TOO_LARGE_AFTER_ZEROS])
async def test_the_local_host_refuses_a_hostile_length_before_reading_the_body(process_runtime: Runtime,
                                                                              declared: str) -> None:
    """Given what llhttp refuses (another ASGI server might not), the host answers the edge's refusal itself, in
    the route's protocol, with Connection: close, and never reads the body."""
    answers = {}
    for path in ("/api/instances/i/memory/append", "/api/mcp"):
        sent, reads = await _through_the_host(path, declared.encode("utf-8"))
        assert reads == 0, path
        headers = {name.lower(): value for name, value in sent[0]["headers"]}
        assert headers[b"connection"] == b"close"
        answers[path] = _refusal(func.HttpResponse(sent[1]["body"], status_code=sent[0]["status"]))
    assert answers["/api/instances/i/memory/append"] == answers["/api/mcp"]
    expected = (400, "invalid_content_length") if declared in NOT_DIGITS else (413, "payload_too_large")
    assert answers["/api/mcp"][:2] == expected
