"""A CoreAPI answer read as the domain's error: the one place an error answer becomes one.

``error_from_response`` keeps the CoreAPI's own code and message, and the raised error's
``http_status`` (``http_status_of``) is the status the CoreAPI answered; the error's class answers that status
here too (``edge.errors.status_for``; a 504, which the error family has no class of, is a 503), with its
Retry-After, so a remote 429 is a 429 with the same Retry-After where the error is answered. ``error_body`` is the one
reading of a CoreAPI error body, for callers that make their own requests too
(``integrations/anthropic.py``). ``CoreApiClient`` (``memory_core.client``) raises these.
"""

from __future__ import annotations

import httpx

from memory_core.domain.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    MemoryCoreError,
    NotFound,
    PayloadTooLarge,
    TimedOut,
    TooManyCalls,
    Unauthenticated,
    Unavailable,
    Unprocessable,
    UnsupportedMediaType,
)


class CoreApiFailure(MemoryCoreError):
    """The CoreAPI failed in a way the error family has no class for (reported as HTTP 500)."""

    code = "coreapi_error"


class CoreApiUnreachable(Unavailable):
    """No HTTP answer arrived: the CoreAPI could not be reached or did not answer in time.

    ``__cause__`` is the transport's own error (its class name is safe to report).
    """

    code = "coreapi_unreachable"


# The class of each status the CoreAPI answers with its error body (see memory_core.edge.errors): the one it was
# raised as there, or its base, so that ``edge.errors.status_for`` answers the same status here.
_ERROR_BY_STATUS: dict[int, type[MemoryCoreError]] = {
    400: InvalidInput,
    401: Unauthenticated,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: Unprocessable,
}

# The statuses a caller may retry after, from the CoreAPI or a gateway in front of it, body or not: each keeps its
# Retry-After. A 429 stays a 429 here (TooManyCalls); a 504, which the error family has no class of, is the store's
# deadline passed (TimedOut, 503), as the service answers its own.
_RETRIABLE_BY_STATUS: dict[int, type[Unavailable]] = {
    429: TooManyCalls,
    502: Unavailable,
    503: Unavailable,
    504: TimedOut,
}


def _retry_after(response: httpx.Response) -> int:
    try:
        return max(1, int(response.headers.get("retry-after", "5")))
    except ValueError:
        return 5


def error_body(response: httpx.Response) -> tuple[str, str] | None:
    """(code, message) of a CoreAPI error answer {"error": {"code", "message"}}, else None."""
    try:
        document = response.json()
    except ValueError:
        return None
    error = document.get("error") if isinstance(document, dict) else None
    if not isinstance(error, dict):
        return None
    code, message = error.get("code"), error.get("message")
    if not isinstance(code, str) or not isinstance(message, str) or not message:
        return None
    return code, message


def error_from_response(response: httpx.Response) -> MemoryCoreError:
    """The domain error a CoreAPI error answer stands for, with the CoreAPI's own code and message.

    A 429, 502, 503 or 504 is raised as the retriable class of ``_RETRIABLE_BY_STATUS`` (``TooManyCalls`` for a
    429), keeping its Retry-After (5 s when it names none or names a date), with or without the CoreAPI error body
    (a gateway's page becomes a message naming only the status). Any other status is the class
    ``_ERROR_BY_STATUS`` names, or ``CoreApiFailure`` (reported as 500) for a status outside it or an answer without
    the CoreAPI error body, never the body's raw text. The answered status is kept as ``http_status`` on the error.
    """
    status = response.status_code
    body = error_body(response)
    retriable = _RETRIABLE_BY_STATUS.get(status)
    error: MemoryCoreError
    if retriable is not None:
        code, message = body or (None, f"the CoreAPI answered HTTP {status}; retry later")
        error = retriable(message, code=code, retry_after_seconds=_retry_after(response))
    elif body is None:
        error = CoreApiFailure(f"the CoreAPI answered HTTP {status} without an error description")
    else:
        code, message = body
        error = _ERROR_BY_STATUS.get(status, CoreApiFailure)(message, code=code)
    error.http_status = status  # type: ignore[attr-defined]
    if not isinstance(error, Unavailable) and "retry-after" in response.headers:
        # A 408 or 425 from a gateway says when to retry; keep it as a 503's is kept.
        error.retry_after_seconds = _retry_after(response)  # type: ignore[attr-defined]
    return error


def http_status_of(error: MemoryCoreError) -> int | None:
    """The status the CoreAPI answered for ``error`` (None when no answer arrived)."""
    status = getattr(error, "http_status", None)
    return status if isinstance(status, int) else None


def retry_after_of(error: MemoryCoreError) -> int | None:
    """The seconds to wait before retrying: always for a 429, 502, 503 or 504 (5 when the answer named none), for
    another status when it carried ``Retry-After``; else None."""
    seconds = getattr(error, "retry_after_seconds", None)
    return seconds if isinstance(seconds, int) else None
