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

Where the middleware would raise on hostile input, the scope is built anyway (the edge has
already refused a malformed Host; ``memory_core.edge.names``): a path whose percent-escapes
are not UTF-8 is decoded with replacement characters, and a port that is not 1-65535 gives
way to the scheme's default. ``server``'s port is X-Forwarded-Port's first number, as the
middleware takes it, when that is a port (the middleware takes any number, and 80 when there
is none); else the URL's.

Header values are the text the Functions host handed over, encoded as UTF-8 (as the
middleware encodes them); ``memory_core.mcp.front`` decodes them as UTF-8, so the MCP
endpoint reads the same text a REST function reads from ``req.headers``.
"""

from __future__ import annotations

import asyncio
import re
from copy import copy
from typing import Any
from urllib.parse import SplitResult, unquote_to_bytes, urlsplit

import azure.functions as func
from starlette.types import ASGIApp, Message

from memory_core.edge.names import ADDRESS_SCOPE_KEY, Address

_ASGI = {"version": "3.0", "spec_version": "2.3"}
_LEADING_NUMBER = re.compile(r"[0-9]+")
_AUTHORITY = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*")


def scope_of(request: func.HttpRequest, state: dict[str, Any]) -> dict[str, Any]:
    """The ASGI HTTP scope ``AsgiMiddleware`` would give ``request`` (its ``azure_functions.*`` keys aside: no app
    here reads them); ``state`` is copied, as the middleware copies its lifespan's."""
    url = _split(request.url)
    path = unquote_to_bytes(url.path).decode("utf-8", "replace")
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
        "server": (url.hostname, _port_of(url, request.headers.get("x-forwarded-port"))) if url.hostname else None,
        "client": None,
        "state": copy(state),
    }


def _split(url: str) -> SplitResult:
    """``url`` split; when its authority does not parse ("[::1", a name NFKC makes a separator), without it."""
    try:
        return urlsplit(url)
    except ValueError:
        return urlsplit(_AUTHORITY.sub(r"\1", url, count=1))


def _port_of(url: SplitResult, forwarded: str | None) -> int:
    """X-Forwarded-Port's first number that is a port, else the URL's port, else the scheme's default; never
    raises."""
    for part in (forwarded or "").split(","):
        number = _LEADING_NUMBER.match(part.strip())
        if number is not None:
            if 1 <= int(number[0]) <= 65535:
                return int(number[0])
            break  # the middleware stops at the first number too
    try:
        port = url.port
    except ValueError:  # "localhost:abc", "localhost:99999": the edge refuses these Hosts, but the URL is not checked
        port = None
    return port or (443 if url.scheme == "https" else 80)


async def answer_with(app: ASGIApp, request: func.HttpRequest, state: dict[str, Any],
                      address: Address | None = None) -> func.HttpResponse:
    """``request`` answered by ``app``: its status, headers and whole body (a streamed body's parts joined).

    ``address``: the Host and Origin the edge admitted, given to ``app`` in the scope under
    ``ADDRESS_SCOPE_KEY`` (None: the scope has no such key, as the middleware's has not).
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

    scope = scope_of(request, state)
    if address is not None:
        scope[ADDRESS_SCOPE_KEY] = address
    await app(scope, receive, send)
    lowered = {name.lower(): value for name, value in headers.items()}
    # The content encoding as the charset is the middleware's reading, kept so both answer alike.
    return func.HttpResponse(b"".join(parts), status_code=status, headers=headers,
                             mimetype=lowered.get("content-type"), charset=lowered.get("content-encoding"))
