"""Blocking calls in worker threads that the caller's time bound may abandon, and a bound on how many may pile up.

``AbandonedCalls.run`` runs a blocking call (a store call, a settings read, a token exchange, a token check) in a
worker thread that the caller's time bound abandons (McpHttpApp, StdioFront: 30 s): the answer does not wait
for it. anyio hands the thread's capacity token back when it abandons one, so under a stalled store each new
request started one more thread while the old ones still waited (measured: 200 concurrent requests bounded at
0.5 s left about 115 more threads behind each time, 691 after 1,200), each living until its store's own timeout
(``COSMOS_OPERATION_TIMEOUT``, up to 600 s). An ``AbandonedCalls`` counts the abandoned calls still running; while it
holds ``MAX_ABANDONED_CALLS`` of them, a new call is refused with ``Unavailable`` (503, Retry-After) instead of
starting a thread, and the MCP front refuses a request that would need the store the same way (``McpHttpApp``,
``answers_without_the_store``).

The process's count is held by the composition root (``composition.abandoned_calls``, built on first use), which
passes it to the backends and the MCP front it builds, so the bound is the process's. A backend or front built without
a count keeps one of its own: nothing in this package reaches for the process's. Nothing here is built at import.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from memory_core.domain.errors import Unavailable

T = TypeVar("T")

MAX_ABANDONED_CALLS = 100
"""Abandoned calls still running at which new ones are refused: well above a healthy server's (none) and below what
threads cost (each keeps its stack and, on Cosmos DB, a connection until its own timeout)."""
RETRY_AFTER_SECONDS = 5


class AbandonedCalls:
    """How many calls were abandoned at their caller's time bound and still run. Thread-safe."""

    def __init__(self, limit: int = MAX_ABANDONED_CALLS) -> None:
        self.limit = limit
        self._running = 0
        self._lock = threading.Lock()

    @property
    def running(self) -> int:
        """Abandoned calls whose thread has not returned yet."""
        with self._lock:
            return self._running

    @property
    def full(self) -> bool:
        """True while ``limit`` abandoned calls still run: new calls are refused until some return."""
        return self.running >= self.limit

    def refusal(self) -> Unavailable:
        """What a call or a request refused while ``full`` raises: 503 with Retry-After."""
        with self._lock:
            return self._refusal_locked()

    def _refusal_locked(self) -> Unavailable:
        return Unavailable(f"{self._running} earlier calls to the store have not returned yet; retry later",
                           retry_after_seconds=RETRY_AFTER_SECONDS)

    async def run(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` in a worker thread the caller's cancellation abandons; ``Unavailable`` while ``full``
        (checked before and again as the thread starts, so at most ``limit`` plus the threads running at once, anyio's
        40 by default, are ever abandoned together)."""
        if self.full:
            raise self.refusal()
        started = done = abandoned = False

        def tracked() -> T:
            nonlocal started, done
            with self._lock:
                if self._running >= self.limit:  # checked again here: many calls may pass the first check at once
                    raise self._refusal_locked()
                started = True
                if abandoned:  # cancelled while the thread picked the call up: it runs, abandoned, all the same
                    self._running += 1
            try:
                return call(*args)
            finally:
                with self._lock:
                    done = True
                    if abandoned:
                        self._running -= 1

        try:
            return await anyio.to_thread.run_sync(tracked, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            with self._lock:
                abandoned = True
                if started and not done:  # not started: anyio drops the call, or ``tracked`` counts it
                    self._running += 1
            raise


STORELESS_METHODS = frozenset({"ping", "initialize", "server/discover", "tools/list"})
"""Requests answered without a store call they cannot do without: a ping, and the handshake and the tool list, whose
agent's guidance (a settings read in a worker thread) is refused while the count is full and falls back to the base
text, as any settings read that fails does (``guidance.guidance_reader``)."""


def answers_without_the_store(message: Any) -> bool:
    """True for a single JSON-RPC message that the MCP front may still pass while the count is full: a request for
    one of ``STORELESS_METHODS``, or a notification (``notifications/...``, no id: no tool runs for it). Its
    authentication still runs: a signed token's check, made in a worker thread, is refused like any other call."""
    if not isinstance(message, dict):
        return False
    method = message.get("method")
    if not isinstance(method, str):
        return False
    return method in STORELESS_METHODS or (method.startswith("notifications/") and "id" not in message)
