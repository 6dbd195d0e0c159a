"""FunctionHost: an ASGI app that serves a FunctionApp's HTTP functions.

It reads the routes and methods from the FunctionApp object itself, so there
is no second routing table to keep in step with function_app.py. Synchronous
functions run in worker threads (as the Python worker runs them); async ones
run on the event loop.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import anyio.to_thread
import azure.functions as func

from memory_core.api.function_table import functions_of, http_methods
from memory_core.domain.errors import MemoryCoreError, MethodNotAllowed
from memory_core.edge.body import declared_length, header_value, read_bounded_body, too_large
from memory_core.edge.errors import error_response
from memory_core.edge.function import allowed_methods_of, answer_headers_of, body_limit_of, refusal_of
from memory_core.local.timers import TimerFunction, run_timer

log = logging.getLogger("memory_core.local")

ASGIReceive = Callable[[], Awaitable[dict[str, Any]]]
ASGISend = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class _Route:
    name: str
    template: str
    pattern: re.Pattern[str]
    methods: frozenset[str]
    handler: Callable[..., Any]
    is_async: bool
    wants_context: bool


@dataclass(frozen=True)
class InvocationContext:
    """The subset of azure.functions.Context that handlers here use."""

    invocation_id: str
    function_name: str
    function_directory: str = ""


def compile_route(template: str, prefix: str) -> re.Pattern[str]:
    """A Functions route template ("instances/{instanceId}/memory") as a regex matching a whole path (an optional
    trailing slash aside)."""
    parts = []
    for segment in template.strip("/").split("/"):
        match = re.fullmatch(r"{(\*?)(\w+)(?::[^}?]*)?(\??)}", segment)
        if match:
            catch_all, name, optional = match.groups()
            body = f"(?P<{name}>.*)" if catch_all else f"(?P<{name}>[^/]+)"
            parts.append(f"(?:/{body})?" if optional else f"/{body}")
        else:
            parts.append("/" + re.escape(segment))
    base = f"/{prefix.strip('/')}" if prefix.strip("/") else ""
    # \Z, not $: $ also matches before a final newline, so "/api/mcp%0A" would be served as "/api/mcp".
    return re.compile(f"^{base}{''.join(parts)}/?\\Z", re.IGNORECASE)


class RouteIndex:
    """The routes a path may match, found without trying every route's pattern.

    Each route is filed under its template's first segment when that is a literal ("mcp",
    "instances"); a path is tried against the routes filed under its own first segment (case
    folded) and those whose first segment is a parameter, in the order ``routes`` lists them.
    A first segment filed under no literal is tried against every route, so a path the
    patterns' case-insensitive match would accept in some other spelling is matched as before.
    """

    def __init__(self, routes: list[_Route], prefix: str) -> None:
        self._routes = routes
        self._base = f"/{prefix.strip('/')}/".casefold() if prefix.strip("/") else "/"
        firsts = [_literal_first_segment(route.template, prefix) for route in routes]
        self._by_first = {
            first: [r for r, f in zip(routes, firsts, strict=True) if f in (first, None)]
            for first in set(firsts) if first is not None
        }

    def matches(self, path: str) -> list[tuple[_Route, re.Match[str]]]:
        """Every route whose pattern matches ``path``, with its match, in the routes' order."""
        folded = path.casefold()
        first = folded[len(self._base):].split("/", 1)[0] if folded.startswith(self._base) else None
        candidates = self._by_first.get(first, self._routes) if first is not None else self._routes
        return [(r, m) for r in candidates if (m := r.pattern.match(path))]


def _literal_first_segment(template: str, prefix: str) -> str | None:
    """The first segment of ``template`` (``/{prefix}/...``) after the prefix, case folded; None for a parameter."""
    rest = template.strip("/")[len(prefix.strip("/")):].strip("/")
    first = rest.split("/", 1)[0]
    return None if "{" in first else first.casefold()


def http_routes(app: func.FunctionApp, prefix: str) -> list[_Route]:
    routes = []
    for function in functions_of(app):
        trigger = function.get_trigger()
        if getattr(trigger, "type", None) != "httpTrigger":
            continue
        handler = function.get_user_function()
        route = str(getattr(trigger, "route", None) or function.get_function_name())
        methods = frozenset(http_methods(trigger))
        params = inspect.signature(handler).parameters
        routes.append(
            _Route(
                name=str(function.get_function_name()),
                template=f"/{prefix.strip('/')}/{route}",
                pattern=compile_route(route, prefix),
                methods=methods,
                handler=handler,
                is_async=inspect.iscoroutinefunction(inspect.unwrap(handler)),
                wants_context="context" in params,
            )
        )
    return routes


class FunctionHost:
    """ASGI application serving every HTTP function of ``app`` under ``/{prefix}``."""

    def __init__(
        self,
        app: func.FunctionApp,
        *,
        route_prefix: str = "api",
        timers: list[TimerFunction] | None = None,
        body_limit: Callable[[Callable[..., Any]], int] = body_limit_of,
        answer_headers: Callable[[Callable[..., Any]], dict[str, str]] = answer_headers_of,
        allowed_methods: Callable[[Callable[..., Any], frozenset[str]], list[str]] = allowed_methods_of,
        refusal: Callable[[Callable[..., Any]], Callable[[BaseException], func.HttpResponse]] = refusal_of,
    ) -> None:
        """``body_limit(handler)``: the largest body read for a function (the edge's own limit);
        ``answer_headers(handler)``: the headers its answers carry, given to the refusals made here for it;
        ``refusal(handler)``: how it answers a refusal made here (a method it does not serve, a body over the
        limit), in its own protocol;
        ``allowed_methods(handler, registered)``: the methods it serves, named in a 405's Allow."""
        self.routes = http_routes(app, route_prefix)
        self._index = RouteIndex(self.routes, route_prefix)
        self._body_limit = body_limit
        self._answer_headers = answer_headers
        self._allowed_methods = allowed_methods
        self._refusal = refusal
        self.timers = timers or []
        self._timer_tasks: list[asyncio.Task[None]] = []

    async def __call__(self, scope: dict[str, Any], receive: ASGIReceive, send: ASGISend) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        await self._http(scope, receive, send)

    async def _lifespan(self, receive: ASGIReceive, send: ASGISend) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._timer_tasks = [asyncio.create_task(run_timer(t)) for t in self.timers]
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for task in self._timer_tasks:
                    task.cancel()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: dict[str, Any], receive: ASGIReceive, send: ASGISend) -> None:
        path: str = scope["path"]
        method: str = scope["method"].upper()
        matches = self._index.matches(path)
        if not matches:
            await _send(send, error_response(404, "not_found", f"no function serves {path}"))
            return
        allowed = [(r, m) for r, m in matches if method in r.methods]
        if not allowed:
            # What the routes serve, not every method they are registered for: /api/mcp is
            # registered for GET, DELETE, PUT and PATCH only to refuse them itself.
            methods = sorted({x for r, _ in matches for x in self._allowed_methods(r.handler, r.methods)})
            # In the route's own protocol (``refusal``): /api/mcp answers a JSON-RPC error, as its own 405 does.
            handler = matches[0][0].handler
            response = self._refusal(handler)(MethodNotAllowed(f"{method} is not allowed on {path}"))
            for name, value in {**self._answer_headers(handler), "Allow": ", ".join(methods)}.items():
                response.headers[name] = value
            await _send(send, response, head=method == "HEAD")
            return
        route, match = allowed[0]
        # An oversize body is refused from its declared length, before a byte of it is read,
        # and a chunked one as soon as it passes the limit: a request that would be refused
        # costs no more memory than the limit, whoever sends it.
        limit = self._body_limit(route.handler)
        try:  # the edge's reading (400, 413), answered here before the body is read
            declared_length(header_value(scope.get("headers", []), b"content-length"), limit)
        except MemoryCoreError as refused:
            await _send(send, self._unread(route.handler, refused), head=method == "HEAD")
            return
        body = await read_bounded_body(receive, limit)
        if body is None:
            await _send(send, self._unread(route.handler, too_large(limit)), head=method == "HEAD")
            return
        request = _request(scope, method, body, {k: v for k, v in match.groupdict().items() if v is not None})
        try:
            if route.is_async:
                answered = await _unless_disconnected(self._invoke(route, request), receive)
            else:  # cancelling it would not stop its thread, only free anyio's token for one more
                answered = await self._invoke(route, request)
        except Exception as error:
            log.exception("function %s failed", route.name, exc_info=error)
            answered = error_response(500, "internal_error", "internal error",
                                      headers=self._answer_headers(route.handler))
        if answered is None:
            return  # the client went away: nobody to answer
        await _send(send, answered, head=method == "HEAD")

    def _unread(self, handler: Callable[..., Any], error: MemoryCoreError) -> func.HttpResponse:
        """``error`` (a body over the limit, a Content-Length that is no length) as ``handler`` answers refusals; the
        connection closes (the rest of the body is never read)."""
        response = self._refusal(handler)(error)
        for name, value in {**self._answer_headers(handler), "Connection": "close"}.items():
            response.headers[name] = value
        return response

    async def _invoke(self, route: _Route, request: func.HttpRequest) -> func.HttpResponse:
        args: list[Any] = [request]
        if route.wants_context:
            args.append(InvocationContext(uuid.uuid4().hex, route.name))
        if route.is_async:
            result = await route.handler(*args)
        else:
            result = await anyio.to_thread.run_sync(route.handler, *args)
        if not isinstance(result, func.HttpResponse):
            raise TypeError(f"function {route.name} returned {type(result).__name__}, not HttpResponse")
        return result


async def _unless_disconnected(invocation: Awaitable[func.HttpResponse],
                               receive: ASGIReceive) -> func.HttpResponse | None:
    """``invocation``'s answer, or None once the client has disconnected first (``invocation`` is then cancelled).

    The Functions host cancels nothing when a client goes away; here an async function that waits (the MCP endpoint's
    line for a place in a user's share, ``memory_core.mcp.stalled``) stops waiting for a client that is gone. Only an
    async function's invocation may be watched: a sync function runs in ``anyio.to_thread.run_sync``, which this
    cancellation (asyncio's own) does not wait for; it would give anyio's thread token back while the thread still
    runs, so clients that hang up would start threads past anyio's 40. The invocation runs in this task, as without
    the watch; only the watch is a task of its own.
    """
    current = asyncio.current_task()
    assert current is not None
    gone = False

    async def watch() -> None:
        nonlocal gone
        while (await receive())["type"] != "http.disconnect":
            pass  # the body was read whole: nothing else can come but the disconnect
        gone = True
        current.cancel()

    watcher = asyncio.ensure_future(watch())
    try:
        answer = await invocation
    except asyncio.CancelledError:
        if not gone:
            raise  # this request is cancelled itself (the server stops)
        current.uncancel()
        return None
    finally:
        watcher.cancel()
    return None if gone else answer


def _request(scope: dict[str, Any], method: str, body: bytes, route_params: dict[str, str]) -> func.HttpRequest:
    headers: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", []):
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    query = scope.get("query_string", b"").decode("latin-1")
    host = headers.get("host", "localhost")
    url = f"{scope.get('scheme', 'http')}://{host}{scope['path']}" + (f"?{query}" if query else "")
    params = dict(parse_qsl(query, keep_blank_values=True))
    return func.HttpRequest(method=method, url=url, headers=headers, params=params, route_params=route_params,
                            body=body)


async def _send(send: ASGISend, response: func.HttpResponse, *, head: bool = False) -> None:
    """Send ``response``; for HEAD, its headers (Content-Length included) without the body."""
    body = response.get_body() or b""
    headers: list[tuple[bytes, bytes]] = []
    has_type = False
    for name, value in response.headers.items():
        if name.lower() == "content-type":
            has_type = True
        if name.lower() == "content-length":
            continue
        headers.append((name.encode("latin-1"), value.encode("latin-1")))
    if not has_type and response.mimetype:
        content_type = response.mimetype
        if response.charset and (response.mimetype.startswith("text/") or "json" in response.mimetype):
            content_type += f"; charset={response.charset}"
        headers.append((b"content-type", content_type.encode("latin-1")))
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})
