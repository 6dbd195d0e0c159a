"""One Functions HTTP request through an ASGI app, and its answer back as a ``func.HttpResponse``.

``azure.functions.AsgiMiddleware.handle_async`` does this too, but per request it also builds a
WSGI environ's worth of fields (``WsgiRequest``: the body copied into a ``BytesIO``, every header
renamed ``HTTP_*``, the URL parsed twice), logs each ASGI message at DEBUG and gathers the
answer's headers in a ``wsgiref.headers.Headers``: about a tenth of the MCP endpoint's own time
for a small call over ``serve`` (docs/performance.md, "The MCP HTTP path on serve"). The
endpoint keeps ``AsgiMiddleware`` for what it does once per process, the app's lifespan; each
request goes through ``answer_with`` instead, which gives the app the same scope fields
(method, scheme, path percent-decoded as UTF-8, raw path, query, headers encoded as UTF-8,
server, a copy of the lifespan's state) and reads its answer the same way (one status, the
headers, the body's parts joined; the content type as the response's mimetype).
"""

from __future__ import annotations

import asyncio
from copy import copy
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

import azure.functions as func
from starlette.types import ASGIApp, Message

_ASGI = {"version": "3.0", "spec_version": "2.3"}


def scope_of(request: func.HttpRequest, state: dict[str, Any]) -> dict[str, Any]:
    """The ASGI HTTP scope ``AsgiMiddleware`` would give ``request`` (its ``azure_functions.*`` keys aside: no app
    here reads them); ``state`` is copied, as the middleware copies its lifespan's."""
    url = urlsplit(request.url)
    path = unquote_to_bytes(url.path).decode("utf-8")
    port = url.port or (443 if url.scheme == "https" else 80)
    return {
        "type": "http",
        "asgi": _ASGI,
        "http_version": "1.1",
        "method": request.method,
        "scheme": url.scheme,
        "path": path,
        "raw_path": path.encode("utf-8"),
        "query_string": url.query.encode("utf-8"),
        "root_path": "",
        "headers": [(name.encode("utf-8"), value.encode("utf-8")) for name, value in request.headers.items()],
        "server": (url.hostname, port) if url.hostname else None,
        "client": None,
        "state": copy(state),
    }


async def answer_with(app: ASGIApp, request: func.HttpRequest, state: dict[str, Any]) -> func.HttpResponse:
    """``request`` answered by ``app``: its status, headers and whole body (a streamed body's parts joined).

    The app receives the body once, then ``http.disconnect`` once it has answered. Whatever ``app`` raises is
    raised here, as ``AsgiMiddleware.handle_async`` raises it.
    """
    body: bytes | None = request.get_body() or b""
    status = 0
    headers: dict[str, str] = {}
    parts: list[bytes] = []
    answered = asyncio.Event()

    async def receive() -> Message:
        nonlocal body
        if body is not None:
            message = {"type": "http.request", "body": body, "more_body": False}
            body = None
            return message
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            for name, value in message.get("headers", []):
                headers.setdefault(name.decode(), value.decode())  # the first of a repeated name, as the middleware
        elif message["type"] == "http.response.body":
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                answered.set()

    await app(scope_of(request, state), receive, send)
    lowered = {name.lower(): value for name, value in headers.items()}
    # The content encoding as the charset is the middleware's reading, kept so both answer alike.
    return func.HttpResponse(b"".join(parts), status_code=status, headers=headers,
                             mimetype=lowered.get("content-type"), charset=lowered.get("content-encoding"))
