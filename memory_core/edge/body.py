"""Bounded reading of an ASGI request body, shared by the local host and the MCP front.

Both receive bodies straight from the ASGI server, before any function runs, so
both must stop reading at the route's limit instead of buffering whatever a
client sends (unauthenticated uploads must cost no memory).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

Receive = Callable[[], Awaitable[Mapping[str, Any]]]


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
