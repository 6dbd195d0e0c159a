"""One memory-tool write at a time per user in this process (``FileWriters``): a queue, not a rule.

A command commits the user's file index under its etag, so of two writes that read the same
version one commits and the other reads everything again and re-applies (``memory_file_service``).
Reading again is what a command costs: the user's entries brought up to date after the other's
erasure, and the files built from them. At 60,000 entries, four clients writing one user's files
through one server spent seconds a command losing to each other (one gave up, 409, after 28 s),
though nothing they did conflicted. Queued in the process, each write reads once and commits.

Nothing depends on the queue for being right: the etag still decides between processes, and a
write that waited ``wait`` seconds for its turn goes ahead unqueued (a command whose store does
not answer must not hold the user's other writes for longer than a client waits).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Longer than a command takes, even a directory's delete that forgets many files; shorter than a client waits.
WAIT = 20.0


class FileWriters:
    """Per-user turns for the memory tool's writes in one process. Thread-safe; holds a lock only
    for users with a write waiting or running."""

    def __init__(self, wait: float = WAIT) -> None:
        self._wait = wait
        self._guard = threading.Lock()
        self._turns: dict[tuple[str, str], tuple[threading.Lock, int]] = {}

    @contextmanager
    def turn(self, instance_id: str, upn: str) -> Iterator[bool]:
        """Run the body once no other write of ``upn``'s files in this process runs, or after ``wait``
        seconds in any case; yields whether the turn was had (False: it ran beside another)."""
        key = (instance_id, upn)
        with self._guard:
            lock, users = self._turns.get(key) or (threading.Lock(), 0)
            self._turns[key] = (lock, users + 1)
        had = lock.acquire(timeout=self._wait)
        try:
            yield had
        finally:
            if had:
                lock.release()
            with self._guard:
                lock, users = self._turns[key]
                if users == 1:
                    del self._turns[key]
                else:
                    self._turns[key] = (lock, users - 1)

    def waiting(self) -> int:
        """How many users have a write waiting or running (for tests: the map does not grow)."""
        with self._guard:
            return len(self._turns)
