"""The one mapping from the domain's error family to HTTP answers (and exit codes).

Every HTTP function answers its errors through ``response_for_error`` (the
edge calls it); MCP tool errors and CLI exit codes reuse the same table.
Anything not in the family is an internal error: the caller gets a generic
message with an incident id, the details go only to the log.
"""

from __future__ import annotations

import logging
import uuid

import azure.functions as func

from memory_core.domain.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    MemoryCoreError,
    MethodNotAllowed,
    MisdirectedRequest,
    NotFound,
    PayloadTooLarge,
    TooManyCalls,
    Unauthenticated,
    Unavailable,
    Unprocessable,
    UnsupportedMediaType,
)
from memory_core.wire.errors import ErrorBody, ErrorDetail, ErrorResponse

log = logging.getLogger("memory_core")

HTTP_STATUS: dict[type[MemoryCoreError], int] = {
    InvalidInput: 400,
    Unauthenticated: 401,
    Forbidden: 403,
    NotFound: 404,
    MethodNotAllowed: 405,
    Conflict: 409,
    PayloadTooLarge: 413,
    UnsupportedMediaType: 415,
    MisdirectedRequest: 421,
    Unprocessable: 422,
    TooManyCalls: 429,
    Unavailable: 503,
}

EXIT_CODES: dict[int, int] = {
    400: 2, 401: 3, 403: 3, 404: 4, 409: 5, 413: 2, 415: 2, 421: 3, 422: 2, 429: 6, 503: 6, 500: 1
}
JSON = "application/json"


def status_for(error: MemoryCoreError) -> int:
    """The HTTP status of a domain error (most specific class wins)."""
    for cls in type(error).__mro__:
        if cls in HTTP_STATUS:
            return HTTP_STATUS[cls]
    return 500


def exit_code_for(status: int) -> int:
    return EXIT_CODES.get(status, 1)


def internal_error(error: BaseException) -> tuple[str, str]:
    """Log an unexpected error with an incident id; returns (code, public message)."""
    incident = uuid.uuid4().hex[:12]
    log.error("internal error (incident %s)", incident, exc_info=error)
    return "internal_error", f"internal error; the operator can find incident {incident} in the service log"


def error_response(
    status: int,
    code: str,
    message: str,
    details: list[ErrorDetail] | None = None,
    headers: dict[str, str] | None = None,
) -> func.HttpResponse:
    """An error answer: ``{"error": {"code", "message"[, "details"]}}`` with ``status``."""
    body = ErrorResponse(error=ErrorBody(code=code, message=message, details=details))
    return func.HttpResponse(
        body.model_dump_json(exclude_none=True),
        status_code=status,
        mimetype=JSON,
        headers=headers or {},
    )


def headers_for(error: MemoryCoreError) -> dict[str, str]:
    """The headers a domain error's HTTP answer carries (REST and the MCP endpoint alike).

    Retry-After for ``Unavailable`` (``TooManyCalls`` included); WWW-Authenticate for a 401 (the enabled ways to
    authenticate, from ``memory_core.identity``), or for any error that names a challenge.
    """
    headers: dict[str, str] = {}
    if isinstance(error, Unavailable):
        headers["Retry-After"] = str(error.retry_after_seconds)
    challenge = getattr(error, "challenge", None)
    if status_for(error) == 401:
        headers["WWW-Authenticate"] = challenge or 'ApiKey header="X-API-KEY"'
    elif challenge:
        headers["WWW-Authenticate"] = challenge
    return headers


def response_for_error(error: BaseException) -> func.HttpResponse:
    """The one place a raised error becomes an HTTP answer."""
    if isinstance(error, MemoryCoreError):
        details = getattr(error, "details", None)
        return error_response(status_for(error), error.code, error.message, details, headers_for(error))
    code, message = internal_error(error)
    return error_response(500, code, message)
