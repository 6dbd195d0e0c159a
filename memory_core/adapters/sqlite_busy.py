"""How long a SQLite connection waits for another connection's lock, changed for one block.

A connection waits up to its busy timeout for a lock another connection holds, then fails with
``database is locked``. The store's connections wait ``busy_timeout_seconds`` (``sqlite_database``);
a few of their statements must wait less (a write a read makes on the side, the log's truncation)
or not at all (a purge's truncation, which would hold the writers' lock while it waits). This module
is their one way to do so, apart from ``sqlite_database`` so that ``sqlite_wal`` and ``sqlite_erasure``,
which ``sqlite_database`` imports, can use it too.

``WritersTurn`` puts one process's own writers of a file (its request threads and its checkpoint thread's purge)
in turn on a Python lock before they ask SQLite for the file's write lock, so a writer of this process that
comes while another holds the file begins the moment that one ends, instead of sleeping in SQLite's busy
handler (1, 2, 5, 10 ms between tries, whatever the lock's holder does meanwhile). Writers of other processes
still wait in SQLite's busy handler; the file's lock is SQLite's, the turn only orders who asks for it.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def busy_timeout(db: sqlite3.Connection, seconds: float | None) -> Iterator[sqlite3.Connection]:
    """``db`` waiting at most ``seconds`` for a lock inside the block (0: not at all; None: its own timeout, unchanged).

    The timeout ``db`` had before is restored when the block ends, whether it returns or raises, so the
    connection (a thread's, kept for its next statements) never keeps a wait meant for one block. Rounds
    ``seconds`` down to whole milliseconds, SQLite's unit. Raises ``sqlite3.Error`` when SQLite fails
    (a closed connection); an error inside the block leaves as it came, the timeout restored first.
    """
    if seconds is None:
        yield db
        return
    previous = db.execute("PRAGMA busy_timeout").fetchone()[0]
    db.execute(f"PRAGMA busy_timeout={int(seconds * 1000)}")
    try:
        yield db
    finally:
        db.execute(f"PRAGMA busy_timeout={int(previous)}")


class WritersTurn:
    """One process's writers of one file, in turn (see the module's docstring). Reentrant: a thread that holds the
    turn and begins a write again gets SQLite's own answer (a transaction within a transaction), as without it."""

    def __init__(self) -> None:
        self._lock = threading.RLock()

    @contextmanager
    def taken(self, seconds: float) -> Iterator[float | None]:
        """The turn for the block, waited for ``seconds`` at most; a block that could not have it in that time runs
        without it (SQLite's lock decides, as without a turn). Yields None when the turn came without waiting,
        else the seconds left of ``seconds`` for SQLite's own wait (0 when none is left), so that the two waits
        together stay within ``seconds``; rounded down to a sixteenth of ``seconds``. The wait is set by a
        ``PRAGMA busy_timeout`` whose value is part of its text (a PRAGMA takes no parameter): the exact rest, in
        milliseconds, made a new text for each write that waited, which pushed the connection's hot statements out
        of ``sqlite3``'s cache of 128; in sixteenths a budget has at most 17 texts."""
        if self._lock.acquire(blocking=False):
            try:
                yield None
            finally:
                self._lock.release()
            return
        started = time.monotonic()
        held = self._lock.acquire(timeout=max(0.0, seconds))
        try:
            yield _in_sixteenths(max(0.0, seconds - (time.monotonic() - started)), seconds)
        finally:
            if held:
                self._lock.release()


def _in_sixteenths(left: float, seconds: float) -> float:
    """``left`` (0 to ``seconds``) rounded down to a whole sixteenth of ``seconds``, but never to 0 while some is
    left: a wait of 0 is SQLite's "do not wait", a locked file's error at once (a review found it after a turn
    that left less than a sixteenth). At most one sixteenth longer than ``left``, so still 17 values a budget."""
    step = seconds / 16
    return step * max(1, int(left / step)) if step > 0 and left > 0 else 0.0
