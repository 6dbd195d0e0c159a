"""The edge: the one path every HTTP function's request takes before its handler runs.

``endpoint(spec)`` turns a handler into an Azure Function; ``EdgeApp.route``
refuses any function that did not go through it, so a new route cannot skip
a rule. In order, for every request:

1. the declared ``Content-Length`` against the route's body limit (413), before
   the body is read and before any credential is looked at;
2. Host and Origin against the app's names (421, 403; ``memory_core.edge.names``);
3. the content type: a body is JSON and says so (``application/json``, 415);
4. authentication, as the route declares it (``Access``; 401, 403);
5. the memory mode (X-MEMORY-MODE) on user routes (400 when malformed);
6. the body, bounded again as read, decoded strictly (``memory_core.wire.json_text``)
   and validated; the query string; the ``{instanceId}`` route parameter (400);
7. the handler, with everything above in a ``Call``;
8. any raised error, answered once by ``memory_core.edge.errors.response_for_error``.

HEAD runs the GET handler (the host drops the body). OPTIONS answers the
methods a route serves, where the route declares them.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlsplit

import azure.functions as func
from pydantic import BaseModel, TypeAdapter, ValidationError

from memory_core import composition
from memory_core.domain.errors import InvalidInput, PayloadTooLarge, UnsupportedMediaType
from memory_core.domain.identity import Caller
from memory_core.domain.modes import MEMORY_MODE_HEADER, OFF_WRITE_NOTICE, memory_is_off
from memory_core.edge.errors import JSON, response_for_error
from memory_core.identity import Authentication
from memory_core.wire.errors import ErrorDetail
from memory_core.wire.json_text import JsonRejected, loads
from memory_core.wire.memory import InstanceId, NotStoredResponse

if TYPE_CHECKING:  # pydantic-settings loads with the composition root (cold start, issue #15)
    from memory_core.composition import Runtime
    from memory_core.settings import Settings

M = TypeVar("M", bound=BaseModel)

SMALL_BODY_BYTES = 64 * 1024
"""The body limit of routes that take no write content (operator decisions, settings, bodiless POSTs)."""


class Access(Enum):
    """Who may call a route. Every route declares one; there is no default to forget."""

    USER = "user"
    """A user credential of MEMORY_AUTH_MODE; the handler gets ``call.caller``."""
    OPERATOR = "operator"
    """An operator key or the operator app role; the handler gets ``call.operator`` (the audit label)."""
    PUBLIC = "public"
    """No credential: documents anyone may read (the OpenAPI document, static pages, OAuth metadata)."""
    PER_MESSAGE = "per_message"
    """The MCP endpoint: it authenticates every request itself, with the same Authenticator, before the protocol
    runs, so its 401 is a JSON-RPC error whose challenge names the OAuth metadata (memory_core.mcp.transport)."""


def request_body_limit(max_write_bytes: int) -> int:
    """The largest request body accepted for writes of up to ``max_write_bytes``.

    JSON escaping can grow text up to 6x (\\uXXXX); the content limit itself is
    enforced on the decoded text by the service, with a precise message.
    """
    return max_write_bytes * 6 + 64 * 1024


def write_body_limit(settings: Settings) -> int:
    """The body limit of routes that carry memory content (MEMORY_MAX_WRITE_BYTES, JSON-escaped)."""
    return request_body_limit(settings.memory_max_write_bytes)


@dataclass(frozen=True)
class EndpointSpec:
    """What a route declares: who may call it, what it reads, what it answers (also its OpenAPI entry).

    ``body_limit`` is the largest body accepted (bytes, or a function of the
    settings); by default routes with a ``body`` model take memory content and
    others take at most ``SMALL_BODY_BYTES``. ``statuses`` are further success
    statuses beside ``success_status`` (e.g. 202 when a deletion waits for approval).
    ``methods`` (when set) are the methods the route serves, for OPTIONS answers.
    ``memory_off`` (user routes) answers a request under X-MEMORY-MODE: off
    instead of the handler: ``not_stored`` for writes, an empty answer for reads.
    """

    summary: str
    tag: str
    access: Access
    response: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    errors: tuple[int, ...] = (400, 401)
    content_type: str = JSON
    success_status: int = 200
    statuses: dict[int, type[BaseModel]] = field(default_factory=dict)
    description: str = ""
    body_limit: int | Callable[[Settings], int] | None = None
    methods: tuple[str, ...] = ()
    in_openapi: bool = True
    memory_off: Callable[[Call], Answer] | None = None

    def max_body_bytes(self, settings: Settings) -> int:
        if callable(self.body_limit):
            return self.body_limit(settings)
        if self.body_limit is not None:
            return self.body_limit
        return write_body_limit(settings) if self.body is not None else SMALL_BODY_BYTES


class ValidationFailed(InvalidInput):
    """InvalidInput carrying per-field details (never the offending values)."""

    def __init__(self, message: str, details: list[ErrorDetail]) -> None:
        super().__init__(message, code="validation_error")
        self.details = details


@dataclass(frozen=True)
class Call:
    """A request that passed the edge, as the handler sees it."""

    request: func.HttpRequest
    runtime: Runtime
    authentication: Authentication | None = None
    operator_label: str | None = None
    memory_off: bool = False
    parsed_body: BaseModel | None = None
    parsed_query: BaseModel | None = None
    instance: str | None = None
    context: Any = None

    @property
    def caller(self) -> Caller:
        """The authenticated user (routes with ``Access.USER``)."""
        if self.authentication is None:
            raise RuntimeError("this route does not authenticate a user")
        return self.authentication.caller

    @property
    def operator(self) -> str:
        """The operator's audit label (routes with ``Access.OPERATOR``)."""
        if self.operator_label is None:
            raise RuntimeError("this route does not authenticate an operator")
        return self.operator_label

    @property
    def instance_id(self) -> str:
        """The validated ``{instanceId}`` route parameter."""
        if self.instance is None:
            raise RuntimeError("this route has no {instanceId}")
        return self.instance

    def body(self, model: type[M]) -> M:
        """The validated body (the route's ``body`` model)."""
        if not isinstance(self.parsed_body, model):
            raise RuntimeError(f"this route's body is not a {model.__name__}")
        return self.parsed_body

    def query(self, model: type[M]) -> M:
        """The validated query string (the route's ``query`` model)."""
        if not isinstance(self.parsed_query, model):
            raise RuntimeError(f"this route's query is not a {model.__name__}")
        return self.parsed_query

    def route_param(self, name: str) -> str:
        return self.request.route_params.get(name, "")


Answer = func.HttpResponse | BaseModel
SyncHandler = Callable[[Call], Answer]
AsyncHandler = Callable[[Call], Awaitable[Answer]]
HttpFunction = Callable[..., Any]


def json_response(model: BaseModel, status: int = 200, headers: dict[str, str] | None = None) -> func.HttpResponse:
    # Serialized straight to bytes: model_dump_json() decodes to str and HttpResponse encodes it
    # back, two copies that were a third of the server's time for a 1.4 MB memory (issue #15).
    body = model.__pydantic_serializer__.to_json(model)
    return func.HttpResponse(body, status_code=status, mimetype=JSON, headers=headers or {})


def _details(error: ValidationError) -> list[ErrorDetail]:
    return [
        ErrorDetail(field=".".join(str(p) for p in err["loc"]) or "body", message=err["msg"])
        for err in error.errors(include_input=False, include_url=False)
    ]


def _validated(model: type[M], data: object, where: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        details = _details(e)
        raise ValidationFailed(f"invalid {where}: {details[0].field}: {details[0].message}", details) from None


def _declared_length(req: func.HttpRequest) -> int | None:
    raw = req.headers.get("content-length")
    if raw is None or not raw.strip():
        return None
    if not raw.strip().isdigit():
        raise InvalidInput("Content-Length must be a non-negative integer", code="invalid_content_length")
    return int(raw.strip())


def _too_large(size: int, limit: int, declared: bool) -> PayloadTooLarge:
    what = "declares" if declared else "is"
    return PayloadTooLarge(f"request body {what} {size} bytes; this endpoint accepts at most {limit} bytes")


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == JSON or (media.startswith("application/") and media.endswith("+json"))


def _parse_body(raw: bytes, model: type[M]) -> M:
    try:
        data = loads(raw)
    except JsonRejected as rejected:
        raise InvalidInput(f"request body is not acceptable JSON: {rejected}", code="malformed_json") from None
    if not isinstance(data, dict):
        raise InvalidInput("request body must be a JSON object", code="malformed_json")
    return _validated(model, data, "request")


_INSTANCE_ID = TypeAdapter(InstanceId)


def _instance_id(raw: str) -> str:
    try:
        return _INSTANCE_ID.validate_python(raw)
    except ValidationError:
        raise InvalidInput(
            "instanceId must be 1-128 characters: letters, digits, '.', '_', ':' or '-'", code="invalid_instance_id"
        ) from None


def admit(spec: EndpointSpec, req: func.HttpRequest, rt: Runtime, context: Any = None) -> Call:
    """Every rule of the edge, in order; the ``Call`` a handler gets, or the error that refuses it."""
    limit = spec.max_body_bytes(rt.settings)
    declared = _declared_length(req)
    if declared is not None and declared > limit:
        raise _too_large(declared, limit, declared=True)
    host = req.headers.get("host") or urlsplit(req.url).netloc
    rt.names.check(host, req.headers.get("origin"))
    raw = req.get_body() or b""
    if (spec.body is not None or raw) and not _is_json(req.headers.get("content-type")):
        raise UnsupportedMediaType("send the request body as JSON with Content-Type: application/json")
    authentication: Authentication | None = None
    operator: str | None = None
    if spec.access is Access.USER:
        authentication = rt.auth.authenticate(req.headers)
    elif spec.access is Access.OPERATOR:
        operator = rt.auth.operator(req.headers)
    off = memory_is_off(req.headers.get(MEMORY_MODE_HEADER)) if spec.access is Access.USER else False
    if len(raw) > limit:
        raise _too_large(len(raw), limit, declared=False)
    body = _parse_body(raw, spec.body) if spec.body is not None else None
    query = _validated(spec.query, dict(req.params), "query") if spec.query is not None else None
    instance = req.route_params.get("instanceId")
    return Call(
        request=req,
        runtime=rt,
        authentication=authentication,
        operator_label=operator,
        memory_off=off,
        parsed_body=body,
        parsed_query=query,
        instance=_instance_id(instance) if instance is not None else None,
        context=context,
    )


def _options(spec: EndpointSpec) -> func.HttpResponse:
    allow = ", ".join(dict.fromkeys([*spec.methods, "OPTIONS"]))
    return func.HttpResponse(status_code=204, headers={"Allow": allow})


def not_stored(call: Call) -> NotStoredResponse:
    """The answer of a write under X-MEMORY-MODE: off: nothing was stored, and it says so."""
    return NotStoredResponse(message=OFF_WRITE_NOTICE)


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
                    return response_for_error(error)

            function: HttpFunction = serve_async
        else:
            sync_handler = cast(SyncHandler, handler)

            def serve(req: func.HttpRequest) -> func.HttpResponse:
                try:
                    if req.method.upper() == "OPTIONS" and spec.methods:
                        composition.runtime().names.check(req.headers.get("host") or urlsplit(req.url).netloc,
                                              req.headers.get("origin"))
                        return _options(spec)
                    call = admit(spec, req, composition.runtime())
                    return _response(_handled(spec, call, sync_handler), spec)
                except Exception as error:
                    return response_for_error(error)

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
