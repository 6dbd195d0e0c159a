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

Each user has a share of the worker threads (``MAX_CALLS_PER_USER``): a call made for a user (``share``: the user
the authenticator proved, ``share_of``; never an instance or any other header the caller picks) is counted toward
that share from the moment it starts until its thread really returns, running or abandoned, and is refused the same
way while the share is full. So one user can never hold more than ``MAX_CALLS_PER_USER`` worker threads, waiting or
abandoned (a slow store partition, memory-tool writes queued on that user's turn), however many calls they send at
once or however many instances they name, and other users keep being served. Calls made for no user yet (a signed
token's check, an agent's settings read) count toward the process's count only.

The process's count is held by the composition root (``composition.abandoned_calls``, built on first use), which
passes it to the backends and the MCP front it builds, so the bound is the process's. A backend or front built without
a count keeps one of its own: nothing in this package reaches for the process's. Nothing here is built at import.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from memory_core.domain.errors import Unavailable
from memory_core.domain.identity import Caller

T = TypeVar("T")

MAX_ABANDONED_CALLS = 100
"""Abandoned calls still running at which new ones are refused: well above a healthy server's (none) and below what
threads cost (each keeps its stack and, on Cosmos DB, a connection until its own timeout)."""
MAX_CALLS_PER_USER = 10
"""Calls of one user (``share``) in worker threads at once, waiting for a thread, running or abandoned, at which that
user's next call is refused: an agent calls one tool at a time, so ordinary use stays far below it, while one user
whose calls stall holds at most a quarter of anyio's 40 threads and a tenth of ``MAX_ABANDONED_CALLS``."""
RETRY_AFTER_SECONDS = 5


def share_of(caller: Caller) -> str:
    """The share a call made for ``caller`` counts toward: the user the authenticator proved (the upn it gave, which
    owns the memory), whatever instance, agent or session the request names."""
    return caller.upn


class AbandonedCalls:
    """How many calls were abandoned at their caller's time bound and still run (the process's count), and how many
    calls each user's share has in worker threads, from their start until their thread returns (``running_for``).
    Thread-safe; a share is kept only while some of its calls are in flight (the map does not grow)."""

    def __init__(self, limit: int = MAX_ABANDONED_CALLS, share_limit: int = MAX_CALLS_PER_USER) -> None:
        self.limit = limit
        self.share_limit = share_limit
        self._running = 0
        self._by_share: dict[Hashable, int] = {}
        self._lock = threading.Lock()

    @property
    def running(self) -> int:
        """Abandoned calls whose thread has not returned yet."""
        with self._lock:
            return self._running

    def running_for(self, share: Hashable) -> int:
        """Calls made for ``share`` that started and whose thread has not returned yet (waiting for a thread, running,
        or abandoned): never more than ``share_limit``."""
        with self._lock:
            return self._by_share.get(share, 0)

    def shares(self) -> int:
        """How many shares have a call in flight (for tests: the map does not grow)."""
        with self._lock:
            return len(self._by_share)

    @property
    def full(self) -> bool:
        """True while ``limit`` abandoned calls still run: new calls are refused until some return."""
        return self.running >= self.limit

    def full_for(self, share: Hashable | None) -> bool:
        """True while the process's count is ``full``, or ``share`` has ``share_limit`` calls in flight: a new call
        for ``share`` is refused until some return (None: the process's count only)."""
        with self._lock:
            return self._refused_locked(share)

    def refusal(self, share: Hashable | None = None) -> Unavailable:
        """What a call or a request refused while ``full`` (or ``full_for(share)``) raises: 503 with Retry-After."""
        with self._lock:
            return self._refusal_locked(share)

    def _refused_locked(self, share: Hashable | None) -> bool:
        if self._running >= self.limit:
            return True
        return share is not None and self._by_share.get(share, 0) >= self.share_limit

    def _refusal_locked(self, share: Hashable | None) -> Unavailable:
        if self._running < self.limit and share is not None:  # the user's own share is what is full
            return Unavailable(f"{self._by_share.get(share, 0)} of your earlier calls to the store have not returned "
                               f"yet; retry later", retry_after_seconds=RETRY_AFTER_SECONDS)
        return Unavailable(f"{self._running} earlier calls to the store have not returned yet; retry later",
                           retry_after_seconds=RETRY_AFTER_SECONDS)

    def _take_locked(self, share: Hashable | None, step: int) -> None:
        if share is None:
            return
        left = self._by_share.get(share, 0) + step
        if left > 0:
            self._by_share[share] = left
        else:
            self._by_share.pop(share, None)

    async def run(self, call: Callable[..., T], *args: Any, share: Hashable | None = None) -> T:
        """``call(*args)`` in a worker thread the caller's cancellation abandons; ``Unavailable`` while
        ``full_for(share)``. A call for ``share`` (``share_of``; None: the process's count only) takes its place in
        the share here, under the lock that checks it, and gives it back only when its thread returns (or when anyio
        drops it before it started), so ``running_for(share)`` never passes ``share_limit``, however many calls
        start at once. If abandoned, it counts toward the process's count until its thread returns as well (checked
        here and again as the thread starts, so at most ``limit`` plus the threads running at once, anyio's 40 by
        default, are ever abandoned together)."""
        with self._lock:
            if self._refused_locked(share):
                raise self._refusal_locked(share)
            self._take_locked(share, 1)
        started = done = abandoned = dropped = False
        cancelled = anyio.get_cancelled_exc_class()

        def tracked() -> T:
            nonlocal started, done
            with self._lock:
                if dropped:  # anyio dropped it (cancelled before it started) and its place was given back
                    raise cancelled()
                if self._running >= self.limit:  # checked again here: many calls may pass the first check at once
                    self._take_locked(share, -1)
                    done = True
                    raise self._refusal_locked(None)
                started = True
            try:
                return call(*args)
            finally:
                with self._lock:
                    done = True
                    self._take_locked(share, -1)
                    if abandoned:
                        self._running -= 1

        try:
            return await anyio.to_thread.run_sync(tracked, abandon_on_cancel=True)
        except BaseException as failure:
            with self._lock:
                if not started and not done:  # never ran and never will (``dropped``): its place is given back here
                    dropped = True
                    self._take_locked(share, -1)
                elif isinstance(failure, cancelled):
                    abandoned = True
                    if not done:
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
