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

A count built with a line (``share_line``, the stdio process's: ``composition.abandoned_calls``) lets a call whose
share is full wait for a place instead, first come first served, up to ``share_line`` calls waiting per share; a call
waits no thread, and its caller's time bound ends the wait. A single client over stdio is the only user its process
serves, so refusing its 11th concurrent call protected nobody: over Cosmos DB, 50 calls sent at once answered 35
refusals. A share whose every place is held by an abandoned call (a stalled store) refuses at once, as without a line.

Over HTTP the front waits instead (``hold``: a request's place taken before its protocol runs, in the same line, with
the front's own bounds, MEMORY_MCP_QUEUE_LENGTH and MEMORY_MCP_QUEUE_WAIT): the request's store calls for that share
run in the place it holds (``CURRENT_PLACE``), one after another, and it gives the place back as it ends (a call
abandoned in it keeps it until its thread returns). Past the line's length or its wait a call is refused with
``TooManyCalls`` (429), which only that user sees; a stalled share or a full process count is ``Unavailable`` (503),
as before. The line is one process's: an app scaled out over several processes (Functions instances, or workers of
one) keeps a share and a line in each.

The process's count is held by the composition root (``composition.abandoned_calls``, built on first use), which
passes it to the backends and the MCP front it builds, so the bound is the process's. A backend or front built without
a count keeps one of its own: nothing in this package reaches for the process's. Nothing here is built at import.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from memory_core.domain.errors import TooManyCalls, Unavailable
from memory_core.domain.identity import Caller
from memory_core.mcp.context import CURRENT_PLACE

T = TypeVar("T")

MAX_ABANDONED_CALLS = 100
"""Abandoned calls still running at which new ones are refused: well above a healthy server's (none) and below what
threads cost (each keeps its stack and, on Cosmos DB, a connection until its own timeout)."""
MAX_CALLS_PER_USER = 10
"""Calls of one user (``share``) in worker threads at once, waiting for a thread, running or abandoned, at which that
user's next call is refused: an agent calls one tool at a time, so ordinary use stays far below it, while one user
whose calls stall holds at most a quarter of anyio's 40 threads and a tenth of ``MAX_ABANDONED_CALLS``."""
RETRY_AFTER_SECONDS = 5


@dataclass(eq=False)
class _Waiter:
    """A call waiting on its event loop for a place in its full share; ``granted`` once a returning call handed it
    its place."""

    loop: asyncio.AbstractEventLoop
    event: asyncio.Event = field(default_factory=asyncio.Event)
    granted: bool = False


@dataclass(eq=False)
class HeldPlace:
    """A place in ``share`` of ``counts`` that a request took before its protocol ran (``AbandonedCalls.hold``) and
    keeps until it ends: each of its calls for ``share`` runs in it in turn (``AbandonedCalls.run``: ``in_use`` from
    its start until its thread returns), so a request that waited in the line is never refused on its second call
    (a clear reads, then clears). ``AbandonedCalls.give_back`` marks it ``ended`` as the request ends and gives it
    back then, or, while a call abandoned at its time bound still runs in it, when that call's thread returns (under
    the count's lock: exactly once)."""

    counts: AbandonedCalls
    share: Hashable
    in_use: bool = False
    ended: bool = False


def share_of(caller: Caller) -> str:
    """The share a call made for ``caller`` counts toward: the user the authenticator proved (the upn it gave, which
    owns the memory), whatever instance, agent or session the request names."""
    return caller.upn


class AbandonedCalls:
    """How many calls were abandoned at their caller's time bound and still run (the process's count), and how many
    calls each user's share has in worker threads, from their start until their thread returns (``running_for``).
    Thread-safe; a share is kept only while some of its calls are in flight (the map does not grow)."""

    def __init__(
        self, limit: int = MAX_ABANDONED_CALLS, share_limit: int = MAX_CALLS_PER_USER, share_line: int = 0
    ) -> None:
        """``share_line``: calls that may wait for a place in a full share (0: refused at once, as over HTTP)."""
        self.limit = limit
        self.share_limit = share_limit
        self.share_line = share_line
        self._running = 0
        self._by_share: dict[Hashable, int] = {}
        self._abandoned_by_share: dict[Hashable, int] = {}
        self._waiting: dict[Hashable, deque[_Waiter]] = {}
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

    def waiting_for(self, share: Hashable) -> int:
        """Calls made for ``share`` waiting for a place in it (never more than ``share_line``)."""
        with self._lock:
            return len(self._waiting.get(share, ()))

    def shares(self) -> int:
        """How many shares have a call in flight, abandoned or waiting (for tests: the maps do not grow)."""
        with self._lock:
            return len(self._by_share.keys() | self._abandoned_by_share.keys() | self._waiting.keys())

    @property
    def full(self) -> bool:
        """True while ``limit`` abandoned calls still run: new calls are refused until some return."""
        return self.running >= self.limit

    def full_for(self, share: Hashable | None) -> bool:
        """True while the process's count is ``full``, or ``share`` has ``share_limit`` calls in flight and may not
        wait for a place (its line holds ``share_line`` calls, or every place is held by an abandoned call): a new
        call for ``share`` is refused until some return (None: the process's count only)."""
        with self._lock:
            return self._refused_locked(share, self.share_line)

    def refusal(self, share: Hashable | None = None) -> Unavailable:
        """What a call or a request refused while ``full`` (or ``full_for(share)``) raises: 503 with Retry-After."""
        with self._lock:
            return self._refusal_locked(share)

    def _refused_locked(self, share: Hashable | None, line: int) -> bool:
        """True when a call for ``share`` may neither take a place now nor wait in a line of at most ``line``."""
        if self._running >= self.limit:
            return True
        if share is None or not self._is_full_locked(share):
            return False
        return self._stalled_locked(share) or len(self._waiting.get(share, ())) >= line

    def _stalled_locked(self, share: Hashable) -> bool:
        """Every place of ``share`` is held by an abandoned call: no place will come back soon."""
        return self._abandoned_by_share.get(share, 0) >= self.share_limit

    def _is_full_locked(self, share: Hashable) -> bool:
        """No place of ``share`` is free for a new call: all are taken, or calls already wait for the next one."""
        return self._by_share.get(share, 0) >= self.share_limit or bool(self._waiting.get(share))

    def _refusal_locked(self, share: Hashable | None) -> Unavailable:
        """``Unavailable`` for a full process count or a stalled share (the store is what is slow); ``TooManyCalls``
        for a share whose places are all taken by calls still running and whose line is full (the caller is)."""
        if self._running < self.limit and share is not None:  # the user's own share is what is full
            waiting = len(self._waiting.get(share, ()))
            also = f" and {waiting} more wait for them" if waiting else ""
            refused = Unavailable if self._stalled_locked(share) else TooManyCalls
            return refused(f"{self._by_share.get(share, 0)} of your earlier calls to the store have not returned "
                           f"yet{also}; retry later", retry_after_seconds=RETRY_AFTER_SECONDS)
        return Unavailable(f"{self._running} earlier calls to the store have not returned yet; retry later",
                           retry_after_seconds=RETRY_AFTER_SECONDS)

    def _take_locked(self, share: Hashable | None, step: int) -> None:
        if share is None:
            return
        _count(self._by_share, share, step)

    def _give_back_locked(self, share: Hashable | None) -> None:
        """A call's place in ``share`` given back: handed to the first call waiting for it, if any (the count stays),
        else freed."""
        line = self._waiting.get(share) if share is not None else None
        while line:
            waiter = line.popleft()
            if not line:
                del self._waiting[share]
            try:
                waiter.loop.call_soon_threadsafe(waiter.event.set)  # from a worker thread or the loop's own
            except RuntimeError:  # its loop is closed: nobody waits there any more
                continue
            waiter.granted = True
            return
        self._take_locked(share, -1)

    def _must_wait_locked(self, share: Hashable | None, line: int) -> bool:
        """True when a call for ``share`` may not take a place now but may wait for one (behind fewer than ``line``);
        raises the refusal when it may do neither. Takes the place when it is free (and nobody waits before it)."""
        if self._refused_locked(share, line):
            raise self._refusal_locked(share)
        if share is None:
            return False
        if not self._is_full_locked(share):
            self._take_locked(share, 1)
            return False
        return True

    async def _take_place(self, share: Hashable | None, line: int, wait: float | None = None) -> None:
        """A place in ``share`` taken, at once or after waiting in its line behind fewer than ``line`` calls, for at
        most ``wait`` seconds (None: until the caller's cancellation); ``Unavailable`` when refused, ``TooManyCalls``
        when the wait ends first. A cancelled wait leaves the line."""
        with self._lock:
            if not self._must_wait_locked(share, line):
                return
            waiter = _Waiter(asyncio.get_running_loop())
            self._waiting.setdefault(share, deque()).append(waiter)
        try:
            with anyio.move_on_after(math.inf if wait is None else wait):
                await waiter.event.wait()
        except BaseException:
            with self._lock:
                if waiter.granted:  # handed a place as it was cancelled: the next in line gets it
                    self._give_back_locked(share)
                else:
                    self._leave_line_locked(share, waiter)
            raise
        with self._lock:
            if waiter.granted:  # handed a place, perhaps just as the wait ended: it is this call's
                return
            self._leave_line_locked(share, waiter)
            running = self._by_share.get(share, 0)
        raise TooManyCalls(f"{running} of your earlier calls to the store had not returned after this one waited "
                           f"{wait:g} s for a place; retry later", retry_after_seconds=RETRY_AFTER_SECONDS)

    def _leave_line_locked(self, share: Hashable | None, waiter: _Waiter) -> None:
        waiting = self._waiting.get(share)
        if waiting is not None and waiter in waiting:
            waiting.remove(waiter)
            if not waiting:
                del self._waiting[share]

    async def hold(self, share: Hashable, *, line: int, wait: float) -> HeldPlace:
        """A place in ``share`` for a request, before its protocol runs: at once, or after waiting in the share's line
        (first come, first served, no thread) behind fewer than ``line`` calls for at most ``wait`` seconds.
        ``TooManyCalls`` when the line is full or the wait ends first; ``Unavailable`` while the process's count is
        full or every place of the share is held by an abandoned call. The caller's cancellation (its time bound, its
        client gone) ends the wait and leaves the line. Set the place as ``CURRENT_PLACE`` for the request's calls,
        and ``give_back`` it as the request ends."""
        await self._take_place(share, line, wait)
        return HeldPlace(self, share)

    def give_back(self, held: HeldPlace) -> None:
        """``held``'s request ended: its place given back (to the first call waiting, if any) now, or when the call
        running in it returns (one abandoned at its time bound keeps it till then); idempotent."""
        with self._lock:
            if not held.ended:
                held.ended = True
                if not held.in_use:
                    self._give_back_locked(held.share)

    def _claim(self, share: Hashable | None) -> HeldPlace | None:
        """The place of this count in ``share`` that the current request holds (``CURRENT_PLACE``), now in use by
        the caller's call, which runs in it instead of taking another; None when there is none, or it is in use by
        another call of the request (that call takes a place of its own) or its request ended."""
        held = CURRENT_PLACE.get()
        if share is None or held is None or held.counts is not self or held.share != share:
            return None
        with self._lock:
            if held.in_use or held.ended:
                return None
            held.in_use = True
            return held

    def _release_locked(self, share: Hashable | None, held: HeldPlace | None) -> None:
        """A call's place given back as its thread returns: a place its request holds goes back to the request (or,
        if the request ended meanwhile, to the line); a place of its own goes to the line."""
        if held is None:
            self._give_back_locked(share)
            return
        held.in_use = False
        if held.ended:
            self._give_back_locked(share)

    async def run(self, call: Callable[..., T], *args: Any, share: Hashable | None = None) -> T:
        """``call(*args)`` in a worker thread the caller's cancellation abandons; ``Unavailable`` while
        ``full_for(share)``. A call for ``share`` (``share_of``; None: the process's count only) takes its place in
        the share here, under the lock that checks it (or waits in the share's line for one, with a ``share_line``:
        the caller's cancellation ends the wait; or runs in the place the request holds, ``hold``, and gives it back
        to the request), and gives it back only when its thread returns (or when anyio drops it before it started),
        handing it to the first call waiting, so ``running_for(share)`` never passes ``share_limit``, however many
        calls start at once. If abandoned, it counts toward the process's count until
        its thread returns as well (checked here and again as the thread starts, so at most ``limit`` plus the threads
        running at once, anyio's 40 by default, are ever abandoned together)."""
        held = self._claim(share)
        if held is None:
            await self._take_place(share, self.share_line)
        started = done = abandoned = dropped = False
        cancelled = anyio.get_cancelled_exc_class()

        def tracked() -> T:
            nonlocal started, done
            with self._lock:
                if dropped:  # anyio dropped it (cancelled before it started) and its place was given back
                    raise cancelled()
                if self._running >= self.limit:  # checked again here: many calls may pass the first check at once
                    self._release_locked(share, held)
                    done = True
                    raise self._refusal_locked(None)
                started = True
            try:
                return call(*args)
            finally:
                with self._lock:
                    done = True
                    self._release_locked(share, held)
                    if abandoned:
                        self._running -= 1
                        if share is not None:
                            _count(self._abandoned_by_share, share, -1)

        try:
            return await anyio.to_thread.run_sync(tracked, abandon_on_cancel=True)
        except BaseException as failure:
            with self._lock:
                if not started and not done:  # never ran and never will (``dropped``): its place is given back here
                    dropped = True
                    self._release_locked(share, held)
                elif isinstance(failure, cancelled):
                    abandoned = True
                    if not done:
                        self._running += 1
                        if share is not None:
                            _count(self._abandoned_by_share, share, 1)
            raise


def _count(counts: dict[Hashable, int], share: Hashable, step: int) -> None:
    """``counts[share]`` moved by ``step``; a share whose count reaches 0 leaves the map (it does not grow)."""
    left = counts.get(share, 0) + step
    if left > 0:
        counts[share] = left
    else:
        counts.pop(share, None)


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
