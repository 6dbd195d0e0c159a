"""The Functions bridge gives an ASGI app what ``azure.functions.AsgiMiddleware`` gives it, and answers alike.

Each case runs the same ``func.HttpRequest`` through the real ``AsgiMiddleware.handle_async`` and through
``functions_bridge.answer_with``, with the same small ASGI app, and compares what the app saw and what came back.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import azure.functions as func
import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from memory_core.mcp.functions_bridge import answer_with, scope_of
from tests.support.local_server import USER_KEY, RunningServer

pytestmark = pytest.mark.anyio

# The fields an ASGI app reads; AsgiMiddleware's own "asgi.version"-style and azure_functions.* keys aside.
SCOPE_FIELDS = ("type", "http_version", "method", "scheme", "path", "raw_path", "query_string", "root_path",
                "headers", "server", "client", "state")


def _request(url: str, body: bytes = b'{"jsonrpc":"2.0","id":1,"method":"ping"}', **headers: str) -> func.HttpRequest:
    sent = {"host": "localhost:7071", "content-type": "application/json", "x-api-key": "k",
            "x-user-identity": json.dumps({"upn": "zoë@contoso.com", "name": "Zoë"}, ensure_ascii=False),
            **headers}
    return func.HttpRequest(method="POST", url=url, headers=sent, body=body)


def _recording(seen: list[tuple[Scope, list[Message]]], answer: list[Message]) -> Any:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append((scope, [await receive()]))
        for message in answer:
            await send(message)
    return app


@pytest.mark.parametrize("url", [
    "http://localhost:7071/api/mcp",
    "https://memory.contoso.com/api/mcp?trace=a%20b&x=1",
    "http://127.0.0.1:8326/api/m%C3%A9moire/%2Fraw",
])
async def test_the_app_sees_the_scope_and_body_the_middleware_gives_it(url: str) -> None:
    seen: list[tuple[Scope, list[Message]]] = []
    answer: list[Message] = [{"type": "http.response.start", "status": 200, "headers": []},
                             {"type": "http.response.body", "body": b"{}"}]
    app = _recording(seen, answer)
    middleware = func.AsgiMiddleware(app)
    middleware.state = {"lifespan": "state"}
    request = _request(url)
    await middleware.handle_async(request)
    await answer_with(app, request, middleware.state)
    (theirs, their_body), (ours, our_body) = seen
    assert {k: theirs[k] for k in SCOPE_FIELDS} == {k: ours[k] for k in SCOPE_FIELDS}
    assert our_body == their_body == [{"type": "http.request", "body": request.get_body(), "more_body": False}]
    assert ours["state"] is not middleware.state  # a copy, as the middleware gives each request


async def test_an_answer_in_parts_with_a_repeated_header_comes_back_as_the_middleware_returns_it() -> None:
    answer: list[Message] = [
        {"type": "http.response.start", "status": 401,
         "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="a"'),
                     (b"www-authenticate", b'Bearer realm="b"'), (b"retry-after", b"1")]},
        {"type": "http.response.body", "body": b'{"jsonrpc":', "more_body": True},
        {"type": "http.response.body", "body": b'"2.0"}', "more_body": False},
    ]
    app = _recording([], answer)
    request = _request("http://localhost:7071/api/mcp")
    theirs = await func.AsgiMiddleware(app).handle_async(request)
    ours = await answer_with(app, request, {})
    assert ours.status_code == theirs.status_code == 401
    assert ours.get_body() == theirs.get_body() == b'{"jsonrpc":"2.0"}'
    assert dict(ours.headers) == dict(theirs.headers)
    assert (ours.mimetype, ours.charset) == (theirs.mimetype, theirs.charset)


@pytest.mark.parametrize("parts", [[b"ok"], [b"first, ", b"then ", b"last"]], ids=["one-part", "streamed"])
async def test_after_the_body_the_app_hears_of_the_disconnect_only_once_its_final_part_is_sent(
        parts: list[bytes]) -> None:
    """Nothing to hear before the answer starts, nor after a part with ``more_body``; the disconnect after the last."""
    heard: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()

        async def listen() -> None:
            heard.append((await receive())["type"])

        async with anyio.create_task_group() as group:
            group.start_soon(listen)
            await anyio.sleep(0.05)
            assert heard == []  # nothing to hear while the answer is not sent
            await send({"type": "http.response.start", "status": 200, "headers": []})
            for part in parts[:-1]:
                await send({"type": "http.response.body", "body": part, "more_body": True})
                await anyio.sleep(0.05)
                assert heard == []  # the answer is still being sent
            await send({"type": "http.response.body", "body": parts[-1], "more_body": False})
            with anyio.fail_after(5):
                while not heard:
                    await anyio.sleep(0.01)
            assert heard == ["http.disconnect"]

    with anyio.fail_after(5):
        response = await answer_with(app, _request("http://localhost:7071/api/mcp"), {})
    assert response.get_body() == b"".join(parts) and heard == ["http.disconnect"]


async def test_what_the_app_raises_reaches_the_caller() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise LookupError("the app's own failure")

    with pytest.raises(LookupError, match="the app's own failure"):
        await answer_with(app, _request("http://localhost:7071/api/mcp"), {})


def test_a_header_value_beyond_ascii_is_encoded_as_utf_8_as_the_middleware_encodes_it() -> None:
    scope = scope_of(_request("http://localhost:7071/api/mcp"), {})
    identity = dict(scope["headers"])[b"x-user-identity"]
    assert "Zoë".encode() in identity


@pytest.mark.parametrize("url", ["http://localhost:abc/api/mcp", "http://localhost:99999/api/mcp",
                                 "http://localhost:-1/api/mcp", "http://[::1]:abc/api/mcp", "http://[::1/api/mcp",
                                 "http://a\uff03b/api/mcp", "http://localhost/api/mcp%FF%FE"])
def test_a_url_the_middleware_would_raise_on_still_gives_a_scope(url: str) -> None:
    """The edge refuses such a Host before the bridge runs; the bridge must not raise on the URL either (a 500).
    A port it cannot read is the scheme's default; an authority it cannot parse gives no ``server``."""
    scope = scope_of(_request(url), {})
    assert scope["path"].startswith("/api/mcp")
    assert scope["server"] in (("localhost", 80), ("::1", 80), None)


@pytest.mark.parametrize(("forwarded", "port"), [("443", 443), ("8443, 80", 8443), ("abc, 8443", 8443), ("", 7071),
                                                 ("443abc", 443)])
async def test_the_server_port_is_x_forwarded_port_first_as_the_middleware_takes_it(forwarded: str, port: int) -> None:
    seen: list[tuple[Scope, list[Message]]] = []
    answer: list[Message] = [{"type": "http.response.start", "status": 200, "headers": []},
                             {"type": "http.response.body", "body": b"{}"}]
    app = _recording(seen, answer)
    request = _request("http://localhost:7071/api/mcp", **({"x-forwarded-port": forwarded} if forwarded else {}))
    await func.AsgiMiddleware(app).handle_async(request)
    await answer_with(app, request, {})
    (theirs, _), (ours, _) = seen
    assert ours["server"] == theirs["server"] == ("localhost", port)


def test_a_forwarded_port_out_of_range_gives_way_to_the_url_port() -> None:
    """Where the middleware would name port 99999, the bridge names the URL's."""
    scope = scope_of(_request("http://localhost:7071/api/mcp", **{"x-forwarded-port": "99999"}), {})
    assert scope["server"] == ("localhost", 7071)


def test_the_same_identity_header_bytes_give_the_same_name_over_rest_and_mcp(core_server: RunningServer) -> None:
    """Raw UTF-8 bytes in X-USER-IDENTITY, over real sockets to ``serve``: the local host reads header bytes as
    latin-1 (each byte one character, as the Functions host hands headers over: text), and the MCP path keeps
    that text (the bridge encodes it UTF-8, the MCP front decodes UTF-8), so both store the same display name."""
    base = {"X-API-KEY": USER_KEY, "X-INSTANCE-ID": "local", "Accept": "application/json, text/event-stream"}

    def raw_identity(upn: str) -> tuple[str, bytes]:
        return "X-USER-IDENTITY", json.dumps({"upn": upn, "name": "Zoë"}, ensure_ascii=False).encode("utf-8")

    with httpx.Client(base_url=core_server.api, timeout=30) as http:
        rest = http.post("/instances/local/memory/append", headers=[*base.items(), raw_identity("zoe@contoso.com")],
                         json={"scope": "user", "content_markdown": "- a"})
        mcp = http.post("/mcp", headers=[*base.items(), raw_identity("zed@contoso.com")],
                        json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                              "params": {"name": "append_memory", "arguments": {"scope": "user", "memory": "- a"}}})
    assert rest.status_code == mcp.status_code == 200, (rest.text, mcp.text)
    rest_name = rest.json()["name"]
    mcp_name = json.loads(mcp.json()["result"]["content"][0]["text"])["name"]
    assert rest_name == mcp_name == "Zoë".encode().decode("latin-1")


def test_a_header_value_that_is_not_utf_8_is_refused_by_the_mcp_front_not_raised() -> None:
    """Only an app served without the bridge sees raw bytes; the front answers 400 rather than guess a reading."""
    from memory_core.mcp.front import header_text

    assert header_text({"headers": [(b"x-user-identity", b'{"name": "Zo\xeb"}')]}) is None
    assert header_text({"headers": [(b"X-A", "Zoë".encode())]}) == {"x-a": "Zoë"}
