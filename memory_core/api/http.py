"""HTTP plumbing shared by the endpoint functions: parsing, answering, error mapping.

``endpoint`` wraps each function so that every domain error becomes its JSON
error answer and nothing else escapes as a stack trace, and records the
metadata the OpenAPI document is generated from.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import azure.functions as func
from pydantic import BaseModel, TypeAdapter, ValidationError

from memory_core.api.errors import internal_error, status_for
from memory_core.api.schemas import ErrorBody, ErrorDetail, ErrorResponse, InstanceId
from memory_core.domain.errors import InvalidInput, MemoryCoreError, PayloadTooLarge, Unavailable
from memory_core.domain.modes import MEMORY_MODE_HEADER, memory_is_off

M = TypeVar("M", bound=BaseModel)
Handler = Callable[[func.HttpRequest], func.HttpResponse]

JSON = "application/json"


@dataclass(frozen=True)
class EndpointSpec:
    """What the OpenAPI generator knows about an endpoint beyond its route."""

    summary: str
    tag: str
    response: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    errors: tuple[int, ...] = (400, 401)
    content_type: str = JSON
    security: tuple[str, ...] = ("apiKey", "userIdentity")
    success_status: int = 200
    # Further success statuses answering the same model (e.g. 202 while a deletion awaits approval).
    other_success: tuple[int, ...] = ()
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def error_response(
    status: int,
    code: str,
    message: str,
    details: list[ErrorDetail] | None = None,
    headers: dict[str, str] | None = None,
) -> func.HttpResponse:
    body = ErrorResponse(error=ErrorBody(code=code, message=message, details=details))
    return func.HttpResponse(
        body.model_dump_json(exclude_none=True),
        status_code=status,
        mimetype=JSON,
        headers=headers or {},
    )


def response_for_error(error: BaseException) -> func.HttpResponse:
    """The one place a raised error becomes an HTTP answer."""
    if isinstance(error, MemoryCoreError):
        status = status_for(error)
        headers: dict[str, str] = {}
        if isinstance(error, Unavailable):
            headers["Retry-After"] = str(error.retry_after_seconds)
        challenge = getattr(error, "challenge", None)  # memory_core.identity: the enabled ways to authenticate
        if status == 401:
            headers["WWW-Authenticate"] = challenge or 'ApiKey header="X-API-KEY"'
        elif challenge:
            headers["WWW-Authenticate"] = challenge
        details = getattr(error, "details", None)
        return error_response(status, error.code, error.message, details, headers)
    code, message = internal_error(error)
    return error_response(500, code, message)


def endpoint(spec: EndpointSpec) -> Callable[[Handler], Handler]:
    """Wrap an endpoint function with error mapping and attach its OpenAPI spec."""

    def decorate(fn: Handler) -> Handler:
        @functools.wraps(fn)
        def wrapper(req: func.HttpRequest) -> func.HttpResponse:
            try:
                return fn(req)
            except Exception as error:  # noqa: BLE001 - the single mapping point
                return response_for_error(error)

        wrapper.__endpoint__ = spec  # type: ignore[attr-defined]
        return wrapper

    return decorate


class ValidationFailed(InvalidInput):
    """InvalidInput carrying per-field details (never the offending values)."""

    def __init__(self, message: str, details: list[ErrorDetail]) -> None:
        super().__init__(message, code="validation_error")
        self.details = details


def _details(error: ValidationError) -> list[ErrorDetail]:
    return [
        ErrorDetail(field=".".join(str(p) for p in err["loc"]) or "body", message=err["msg"])
        for err in error.errors(include_input=False, include_url=False)
    ]


def request_body_limit(max_write_bytes: int) -> int:
    """The largest request body accepted for writes of up to ``max_write_bytes``.

    JSON escaping can grow text up to 6x (\\uXXXX); the content limit itself is
    enforced on the decoded text by the service, with a precise message.
    """
    return max_write_bytes * 6 + 64 * 1024


def parse_body(req: func.HttpRequest, model: type[M], max_bytes: int) -> M:
    """Validate a JSON body. ``PayloadTooLarge`` over ``max_bytes``; ``InvalidInput`` otherwise."""
    raw = req.get_body() or b""
    if len(raw) > max_bytes:
        raise PayloadTooLarge(f"request body is {len(raw)} bytes; the limit is {max_bytes} bytes")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("request body is not valid JSON", code="malformed_json") from None
    if not isinstance(data, dict):
        raise InvalidInput("request body must be a JSON object", code="malformed_json")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        details = _details(e)
        raise ValidationFailed(f"invalid request: {details[0].field}: {details[0].message}", details) from None


def parse_query(req: func.HttpRequest, model: type[M]) -> M:
    try:
        return model.model_validate(dict(req.params))
    except ValidationError as e:
        details = _details(e)
        raise ValidationFailed(f"invalid query: {details[0].field}: {details[0].message}", details) from None


_INSTANCE_ID = TypeAdapter(InstanceId)


def instance_id(req: func.HttpRequest) -> str:
    """The validated {instanceId} route parameter."""
    try:
        return _INSTANCE_ID.validate_python(req.route_params.get("instanceId", ""))
    except ValidationError:
        raise InvalidInput(
            "instanceId must be 1-128 characters: letters, digits, '.', '_', ':' or '-'", code="invalid_instance_id"
        ) from None


def memory_off(req: func.HttpRequest) -> bool:
    """Whether X-MEMORY-MODE: off asks for no memory on this request (``InvalidInput`` if malformed)."""
    return memory_is_off(req.headers.get(MEMORY_MODE_HEADER))


def json_response(model: BaseModel, status: int = 200) -> func.HttpResponse:
    return func.HttpResponse(model.model_dump_json(), status_code=status, mimetype=JSON)
