"""The one mapping from the domain's error family to HTTP statuses and exit codes.

REST answers use it directly; MCP tool errors and CLI exit codes reuse it.
Anything not in the family is an internal error: the caller gets a generic
message with an incident id, the details go only to the log.
"""

from __future__ import annotations

import logging
import uuid

from memory_core.domain.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    MemoryCoreError,
    NotFound,
    PayloadTooLarge,
    SecretDetected,
    Unauthenticated,
    Unavailable,
)

log = logging.getLogger("memory_core")

HTTP_STATUS: dict[type[MemoryCoreError], int] = {
    InvalidInput: 400,
    Unauthenticated: 401,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    PayloadTooLarge: 413,
    SecretDetected: 422,
    Unavailable: 503,
}

EXIT_CODES: dict[int, int] = {400: 2, 401: 3, 403: 3, 404: 4, 409: 5, 413: 2, 422: 2, 503: 6, 500: 1}


def status_for(error: MemoryCoreError) -> int:
    """The HTTP status of a domain error (most specific class wins)."""
    for cls in type(error).__mro__:
        if cls in HTTP_STATUS:
            return HTTP_STATUS[cls]  # type: ignore[index]
    return 500


def exit_code_for(status: int) -> int:
    return EXIT_CODES.get(status, 1)


def internal_error(error: BaseException) -> tuple[str, str]:
    """Log an unexpected error with an incident id; returns (code, public message)."""
    incident = uuid.uuid4().hex[:12]
    log.error("internal error (incident %s)", incident, exc_info=error)
    return "internal_error", f"internal error; the operator can find incident {incident} in the service log"
