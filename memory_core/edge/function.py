"""The edge: the one path every HTTP function's request takes before its handler runs.

``endpoint(spec)`` turns a handler into an Azure Function that admits each request by every
rule of the edge, in order (``memory_core.edge.admission``), runs the handler with the ``Call``,
and answers any raised error once (``memory_core.edge.errors.response_for_error``, or the route's own
``EndpointSpec.refusal``: the MCP endpoint answers JSON-RPC).
``EdgeApp.route`` refuses any function that did not go through it, so a new route cannot skip
a rule. What a route declares is ``memory_core.edge.spec``.

HEAD runs the GET handler (the host drops the body). OPTIONS answers the
methods a route serves, where the route declares them. Every answer, a refusal
included, carries the headers the route declares (``EndpointSpec.headers``). An answer of a route
that takes a credential is ``Cache-Control: no-store`` unless it says otherwise: it holds a person's
memory or an operator's view, which no browser or proxy may keep.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, cast
from urllib.parse import urlsplit

import azure.functions as func
from pydantic import BaseModel

from memory_core import composition
from memory_core.domain.errors import MemoryCoreError
from memory_core.edge.admission import Answer, Call, admit
from memory_core.edge.errors import JSON, response_for_error
from memory_core.edge.spec import SMALL_BODY_BYTES, Access, EndpointSpec

SyncHandler = Callable[[Call], Answer]
AsyncHandler = Callable[[Call], Awaitable[Answer]]
HttpFunction = Callable[..., Any]


def json_response(model: BaseModel, status: int = 200, headers: dict[str, str] | None = None) -> func.HttpResponse:
    # Serialized straight to bytes: model_dump_json() decodes to str and HttpResponse encodes it
    # back, two copies that were a third of the server's time for a 1.4 MB memory (issue #15).
    body = model.__pydantic_serializer__.to_json(model)
    return func.HttpResponse(body, status_code=status, mimetype=JSON, headers=headers or {})


def _options(spec: EndpointSpec) -> func.HttpResponse:
    allow = ", ".join(dict.fromkeys([*spec.methods, "OPTIONS"]))
    return func.HttpResponse(status_code=204, headers={"Allow": allow})


def _route_headers(spec: EndpointSpec) -> dict[str, str]:
    if spec.headers is None:
        return {}
    try:
        settings = composition.runtime().settings
    except MemoryCoreError:  # a runtime that cannot be built (settings, the store): its 500 still carries the
        settings = None  # route's headers, the strictest
    return spec.headers(settings)


def _with_headers(spec: EndpointSpec, response: func.HttpResponse) -> func.HttpResponse:
    """``response`` with the route's own headers (``EndpointSpec.headers``) where it does not set them itself, and
    ``no-store`` when a route that takes a credential sets no caching of its own."""
    for name, value in _route_headers(spec).items():
        if name not in response.headers:
            response.headers[name] = value
    if spec.access is not Access.PUBLIC and "Cache-Control" not in response.headers:
        response.headers["Cache-Control"] = "no-store"
    return response


def answer_headers_of(function: Callable[..., Any]) -> dict[str, str]:
    """The headers every answer of ``function`` carries, for a host that refuses a request before it runs it."""
    spec = spec_of(function)
    return _route_headers(spec) if spec is not None else {}


def _handled(spec: EndpointSpec, call: Call, handler: SyncHandler) -> Answer:
    if call.memory_off and spec.memory_off is not None:
        return spec.memory_off(call)
    return handler(call)


def _response(answer: Answer, spec: EndpointSpec) -> func.HttpResponse:
    if isinstance(answer, func.HttpResponse):
        return answer
    return json_response(answer, spec.success_status)


def endpoint(spec: EndpointSpec) -> Callable[[Callable[..., Any]], HttpFunction]:
    """Make ``handler(call)`` (sync or async) an HTTP function behind the edge, described by ``spec``."""

    def decorate(handler: Callable[..., Any]) -> HttpFunction:
        if inspect.iscoroutinefunction(handler):
            async_handler = cast(AsyncHandler, handler)

            async def serve_async(req: func.HttpRequest, context: func.Context) -> func.HttpResponse:
                return _with_headers(spec, await answer_async(req, context))

            async def answer_async(req: func.HttpRequest, context: func.Context) -> func.HttpResponse:
                try:
                    if req.method.upper() == "OPTIONS" and spec.methods:
                        composition.runtime().names.check(req.headers.get("host") or urlsplit(req.url).netloc,
                                              req.headers.get("origin"))
                        return _options(spec)
                    call = admit(spec, req, composition.runtime(), context)
                    if call.memory_off and spec.memory_off is not None:
                        return _response(spec.memory_off(call), spec)
                    return _response(await async_handler(call), spec)
                except Exception as error:
                    return (spec.refusal or response_for_error)(error)

            function: HttpFunction = serve_async
        else:
            sync_handler = cast(SyncHandler, handler)

            def serve(req: func.HttpRequest) -> func.HttpResponse:
                return _with_headers(spec, answer(req))

            def answer(req: func.HttpRequest) -> func.HttpResponse:
                try:
                    if req.method.upper() == "OPTIONS" and spec.methods:
                        composition.runtime().names.check(req.headers.get("host") or urlsplit(req.url).netloc,
                                              req.headers.get("origin"))
                        return _options(spec)
                    call = admit(spec, req, composition.runtime())
                    return _response(_handled(spec, call, sync_handler), spec)
                except Exception as error:
                    return (spec.refusal or response_for_error)(error)

            function = serve
        # The Functions worker binds arguments by the function's own signature ("req",
        # "context"), so the name is copied but not __wrapped__.
        function.__name__ = handler.__name__
        function.__qualname__ = handler.__qualname__
        function.__module__ = handler.__module__
        function.__doc__ = handler.__doc__
        function.__endpoint__ = spec  # type: ignore[attr-defined]
        return function

    return decorate


def spec_of(function: Callable[..., Any]) -> EndpointSpec | None:
    """The ``EndpointSpec`` of an edge function; None for anything else."""
    spec = getattr(function, "__endpoint__", None)
    return spec if isinstance(spec, EndpointSpec) else None


def allowed_methods_of(function: Callable[..., Any], registered: Iterable[str]) -> list[str]:
    """The methods a host names in Allow when it refuses a method on ``function``'s route: those it serves.

    A route that declares the methods it serves (``EndpointSpec.methods``; /api/mcp: POST) is
    registered for others only so that it may refuse them itself, as the MCP endpoint's own 405
    (Allow: POST) does: its Allow is the declared methods, with HEAD beside GET (the edge runs
    GET for it). Any other route serves every method it is registered for.
    """
    spec = spec_of(function)
    if spec is None or not spec.methods:
        return list(registered)
    return [*spec.methods, *(["HEAD"] if "GET" in spec.methods else [])]


def refusal_of(function: Callable[..., Any]) -> Callable[[BaseException], func.HttpResponse]:
    """How ``function`` answers an error raised before it runs, for a host that refuses a request itself
    (``EndpointSpec.refusal``; the REST error body by default)."""
    spec = spec_of(function)
    return spec.refusal if spec is not None and spec.refusal is not None else response_for_error


def body_limit_of(function: Callable[..., Any]) -> int:
    """The largest body the edge lets ``function`` take, for a host that reads bodies itself."""
    spec = spec_of(function)
    return spec.max_body_bytes(composition.runtime().settings) if spec is not None else SMALL_BODY_BYTES


def _method_names(methods: Iterable[str | func.HttpMethod] | None) -> list[str]:
    return [str(getattr(m, "value", m)).upper() for m in (methods or ["GET", "POST"])]


class EdgeApp(func.FunctionApp):
    """A FunctionApp whose HTTP routes all go through the edge.

    ``route`` refuses a function that ``endpoint`` did not make, adds HEAD to
    every GET route, and OPTIONS to routes that declare the methods they serve.
    """

    def route(self, route: str | None = None, trigger_arg_name: str = "req", binding_arg_name: str = "$return",
              methods: Iterable[str | func.HttpMethod] | None = None, auth_level: Any = None,
              trigger_extra_fields: dict[str, Any] | None = None,
              binding_extra_fields: dict[str, Any] | None = None) -> Callable[..., Any]:
        names = _method_names(methods)

        def decorator(function: Callable[..., Any]) -> Any:
            spec = spec_of(function)
            if spec is None:
                raise TypeError(
                    f"{getattr(function, '__name__', function)!r} on route {route!r} does not go through the "
                    "edge: decorate it with memory_core.edge.endpoint(EndpointSpec(...))"
                )
            if spec.methods and "OPTIONS" not in names:
                raise TypeError(f"route {route!r} declares the methods it serves; list OPTIONS among its methods")
            served = spec.methods or names
            if "GET" in served and "HEAD" not in names:
                names.append("HEAD")
            register = super(EdgeApp, self).route(route, trigger_arg_name, binding_arg_name, names, auth_level,
                                                  trigger_extra_fields, binding_extra_fields)
            return register(function)

        return decorator
