"""The Functions bridge gives an ASGI app what ``azure.functions.AsgiMiddleware`` gives it, and answers alike.

Each case runs the same ``func.HttpRequest`` through the real ``AsgiMiddleware.handle_async`` and through
``functions_bridge.answer_with``, with the same small ASGI app, and compares what the app saw and what came back.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import azure.functions as func
import pytest
from starlette.types import Message, Receive, Scope, Send

from memory_core.mcp.functions_bridge import answer_with, scope_of

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


async def test_after_the_body_the_app_hears_of_the_disconnect_once_it_has_answered() -> None:
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
            await send({"type": "http.response.body", "body": b"ok"})

    with anyio.fail_after(5):
        response = await answer_with(app, _request("http://localhost:7071/api/mcp"), {})
    assert response.get_body() == b"ok" and heard == ["http.disconnect"]


async def test_what_the_app_raises_reaches_the_caller() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        raise LookupError("the app's own failure")

    with pytest.raises(LookupError, match="the app's own failure"):
        await answer_with(app, _request("http://localhost:7071/api/mcp"), {})


def test_a_header_value_beyond_ascii_is_encoded_as_utf_8_as_the_middleware_encodes_it() -> None:
    scope = scope_of(_request("http://localhost:7071/api/mcp"), {})
    identity = dict(scope["headers"])[b"x-user-identity"]
    assert "Zoë".encode() in identity
