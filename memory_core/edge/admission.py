"""The rules every request passes before its handler runs, in order (``admit``), and the ``Call`` it
passes with:

1. the declared ``Content-Length`` against the route's body limit (``memory_core.edge.body.declared_length``:
   400, 413), before the body is read and before any credential is looked at;
2. Host and Origin against the app's names (421, 403; ``memory_core.edge.names``);
3. the content type: a body is JSON and says so (``memory_core.edge.media``, 415);
4. authentication, as the route declares it (``Access``; 401, 403);
5. the memory mode (X-MEMORY-MODE) on user routes (400 when malformed);
6. the body, bounded again as read, decoded strictly (``memory_core.wire.json_text``)
   and validated; the query string, each parameter the route reads given once; the
   ``{instanceId}`` route parameter; the ``Idempotency-Key`` header on routes that take one (400). A route
   declared ``query_or_body`` reads the query string on GET and HEAD and the body on its other methods, where a
   parameter of the query model in the URL is refused (400 ``parameter_in_url``).

A refusal is raised as the error family's member; ``memory_core.edge.function`` answers it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

import azure.functions as func
from pydantic import BaseModel, TypeAdapter, ValidationError

from memory_core.domain.errors import InvalidInput
from memory_core.domain.idempotency import IDEMPOTENCY_KEY_HEADER, checked_key
from memory_core.domain.identity import Caller
from memory_core.domain.modes import MEMORY_MODE_HEADER, memory_is_off
from memory_core.edge.body import declared_length, too_large
from memory_core.edge.media import require_json
from memory_core.edge.names import Address
from memory_core.edge.spec import Access, EndpointSpec
from memory_core.identity import Authentication
from memory_core.wire.errors import ErrorDetail
from memory_core.wire.field_names import field_name
from memory_core.wire.json_text import JsonRejected, loads
from memory_core.wire.memory import InstanceId

if TYPE_CHECKING:  # pydantic-settings loads with the composition root (cold start, issue #15)
    from memory_core.composition import Runtime

M = TypeVar("M", bound=BaseModel)


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
    idempotency_key: str | None = None
    """The validated ``Idempotency-Key`` header on routes that declare it (``EndpointSpec.idempotency_key``)."""
    address: Address | None = None
    """The canonical Host and Origin the edge admitted (``AppNames.admitted``), for a reader behind the edge that
    compares them itself (the MCP SDK, through ``memory_core.mcp.front``), which is handed these instead of
    checking again."""

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

    def input(self, model: type[M]) -> M:
        """The validated input of a route that takes it either way: the body (a POST) or else the query string.

        ``model`` is what both are (the query model, which the body model extends)."""
        parsed = self.parsed_body if self.parsed_body is not None else self.parsed_query
        if not isinstance(parsed, model):
            raise RuntimeError(f"this route's input is not a {model.__name__}")
        return parsed

    def route_param(self, name: str) -> str:
        return self.request.route_params.get(name, "")


Answer = func.HttpResponse | BaseModel
"""What a handler returns: a response as is, or a model answered as JSON with the route's status."""


def _details(error: ValidationError) -> list[ErrorDetail]:
    return [
        ErrorDetail(field=field_name(err["loc"], whole="body"), message=err["msg"])
        for err in error.errors(include_input=False, include_url=False)
    ]


def validated(model: type[M], data: object, where: str) -> M:
    """``data`` as ``model``; ``ValidationFailed`` (400) naming ``where`` and the first field otherwise: how the edge
    validates a body or a query, for a handler that holds a field to a further rule."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        details = _details(e)
        raise ValidationFailed(f"invalid {where}: {details[0].field}: {details[0].message}", details) from None


@cache
def _names_read(model: type[BaseModel]) -> dict[str, str]:
    """The query parameters ``model`` reads, by their case-folded names (once per model, not per request)."""
    return {(field.alias or name).casefold(): field.alias or name for name, field in model.model_fields.items()}


def _query(model: type[M], req: func.HttpRequest) -> M:
    """The query string as ``model``; 400 ``repeated_query_parameter`` when a parameter it reads comes twice.

    Azure's host joins a repeated parameter with commas and the local host keeps the last one,
    so ``?status=pending&status=approved`` would mean something different on each. Names are
    counted without case, as Azure's host joins them (ASP.NET's query collection; the host's
    ``ToRpcHttp`` hands the worker ``StringValues.ToString()`` and the URL with its query string).
    The raw URL is read for the count because ``req.params`` has already merged the repeats.
    """
    read = _names_read(model)
    counts = Counter(name.casefold() for name, _ in parse_qsl(urlsplit(req.url).query, keep_blank_values=True))
    repeated = sorted(read[name] for name, count in counts.items() if count > 1 and name in read)
    if repeated:
        raise InvalidInput(
            f"query parameter {repeated[0]!r} is given {counts[repeated[0].casefold()]} times; give it once",
            code="repeated_query_parameter",
        )
    return validated(model, dict(req.params), "query")


_QUERY_METHODS = frozenset({"GET", "HEAD"})


def _reads(spec: EndpointSpec, method: str) -> tuple[bool, bool]:
    """Whether a request reads its body, and whether it reads its query string (``EndpointSpec.query_or_body``:
    the query string on GET and HEAD, the body on the route's other methods)."""
    if spec.query_or_body:
        on_query = method.upper() in _QUERY_METHODS
        return not on_query, on_query
    return spec.body is not None, spec.query is not None


def _no_parameters_in_url(model: type[BaseModel], req: func.HttpRequest) -> None:
    """400 when a request that sends its input as a body also names a parameter of ``model`` in its URL.

    Either would be ambiguous, and a caller who put the words in the URL believing they were in the body
    should learn it: the URL is what proxies, request telemetry and HTTP clients log."""
    read = _names_read(model)
    named = sorted({read[name.casefold()] for name, _ in parse_qsl(urlsplit(req.url).query, keep_blank_values=True)
                    if name.casefold() in read})
    if named:
        raise InvalidInput(
            f"query parameter {named[0]!r} on a {req.method.upper()}: give it in the JSON body, not in the URL "
            "(URLs are logged)", code="parameter_in_url",
        )


def _parse_body(raw: bytes, model: type[M]) -> M:
    try:
        data = loads(raw)
    except JsonRejected as rejected:
        raise InvalidInput(f"request body is not acceptable JSON: {rejected}", code="malformed_json") from None
    if not isinstance(data, dict):
        raise InvalidInput("request body must be a JSON object", code="malformed_json")
    return validated(model, data, "request")


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
    declared_length(req.headers.get("content-length"), limit)
    host = req.headers.get("host") or urlsplit(req.url).netloc
    address = rt.names.admitted(host, req.headers.get("origin"))
    raw = req.get_body() or b""
    reads_body, reads_query = _reads(spec, req.method)
    if reads_body or raw:
        require_json(req.headers.get("content-type"))
    authentication: Authentication | None = None
    operator: str | None = None
    if spec.access is Access.USER:
        authentication = rt.auth.authenticate(req.headers)
    elif spec.access is Access.OPERATOR:
        operator = rt.auth.operator(req.headers)
    off = memory_is_off(req.headers.get(MEMORY_MODE_HEADER)) if spec.access is Access.USER else False
    if len(raw) > limit:
        raise too_large(limit)
    body = _parse_body(raw, spec.body) if reads_body and spec.body is not None else None
    if spec.query_or_body and body is not None and spec.query is not None:
        _no_parameters_in_url(spec.query, req)
    query = _query(spec.query, req) if reads_query and spec.query is not None else None
    key = req.headers.get(IDEMPOTENCY_KEY_HEADER) if spec.idempotency_key else None
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
        address=address,
        idempotency_key=checked_key(key) if key is not None else None,
    )
