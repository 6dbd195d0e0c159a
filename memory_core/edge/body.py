"""The edge's rules for a request body before it is parsed: its declared length, and its bounded reading.

``declared_length`` is the one reading of Content-Length, for every host: the edge's ``admit`` (the Functions
path, where the Functions host hands the header over as it came) and the local host (``serve``, which answers
before a byte of the body is read). ``read_bounded_body`` reads an ASGI body up to a limit, for the local host and
the MCP front, which receive bodies straight from the ASGI server, before any function runs: both must stop
reading at the route's limit instead of buffering whatever a client sends (unauthenticated uploads must cost no
memory).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from memory_core.domain.errors import InvalidInput, PayloadTooLarge

Receive = Callable[[], Awaitable[Mapping[str, Any]]]

DECLARED_LENGTH_DIGITS = 18
"""A Content-Length of more digits (past 10^18 bytes) is too large for any endpoint without reading it as a number:
``int()`` refuses text past 4,300 digits with a ValueError, which would have answered 500."""

# The optional whitespace around a header's value (RFC 9110 section 5.6.3): space and tab, nothing else.
_OWS = " \t"


def too_large(limit: int) -> PayloadTooLarge:
    """The refusal of a body over ``limit`` bytes, declared or read (413 ``payload_too_large``)."""
    return PayloadTooLarge(f"request body is larger than this endpoint accepts ({limit} bytes)")


def declared_length(content_length: str | None, limit: int) -> int | None:
    """The body length a Content-Length header value declares, when it is within ``limit``; None when none is
    declared (no header, or only whitespace).

    Only ASCII digits, with HTTP's optional whitespace (space, tab) around them, are a length: ``str.isdigit``
    alone takes ``²`` and other digits ``int()`` refuses, and a repeated header joined with ", " (as the hosts
    join one) is no length. Raises ``InvalidInput`` (400 ``invalid_content_length``) for anything else, and
    ``PayloadTooLarge`` (``too_large``, 413) for a length over ``limit`` or of more than
    ``DECLARED_LENGTH_DIGITS`` digits, which is never converted."""
    text = "" if content_length is None else content_length.strip(_OWS)
    if not text:
        return None
    if not (text.isascii() and text.isdigit()):
        raise InvalidInput("Content-Length must be a non-negative integer", code="invalid_content_length")
    # Leading zeros count for nothing: thousands of them would pass a digit count and still fail int().
    digits = text.lstrip("0") or "0"
    if len(digits) > DECLARED_LENGTH_DIGITS or int(digits) > limit:
        raise too_large(limit)
    return int(digits)


def header_value(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> str | None:
    """Every value of the header ``name`` (lower case) among ASGI ``headers``, joined with ", " as the Functions
    hosts join a repeated header (one value: itself), read as Latin-1; None when there is none."""
    values = [v.decode("latin-1") for k, v in headers if k.lower() == name]
    return ", ".join(values) if values else None


async def read_bounded_body(receive: Receive, limit: int) -> bytes | None:
    """The whole body, or None as soon as it passes ``limit`` bytes (the rest is never read)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)
