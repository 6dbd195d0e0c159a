"""How long a SQLite connection waits for another connection's lock, changed for one block.

A connection waits up to its busy timeout for a lock another connection holds, then fails with
``database is locked``. The store's connections wait ``busy_timeout_seconds`` (``sqlite_database``);
a few of their statements must wait less (a write a read makes on the side, the log's truncation)
or not at all (a purge's truncation, which would hold the writers' lock while it waits). This module
is their one way to do so, apart from ``sqlite_database`` so that ``sqlite_wal`` and ``sqlite_erasure``,
which ``sqlite_database`` imports, can use it too.
"""

from __future__ import annotations

import sqlite3
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
