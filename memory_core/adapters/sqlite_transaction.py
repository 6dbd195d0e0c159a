"""One write transaction on a SQLite connection: ``BEGIN IMMEDIATE``, committed or rolled back.

The store's writes (``SqliteDatabase.write``), the schema's upgrade (``sqlite_schema``), each step of a purge's
index merge (``sqlite_erasure``) and an index made anew (``sqlite_fulltext``) each run in one. This module is
their one way to do so, apart from ``sqlite_database`` so that the modules it imports can use it too (as
``sqlite_busy``). ``IMMEDIATE`` takes the writers' lock at ``BEGIN``, so two writers serialize there instead of
one failing at its first write, and a crash leaves either the whole transaction or none of it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def write_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``db`` inside one ``BEGIN IMMEDIATE`` transaction: committed when the block returns, rolled back when it raises.

    ``db`` must be in autocommit mode (``isolation_level=None``) and out of any transaction. ``BEGIN`` waits for
    another writer's lock up to ``db``'s busy timeout (``sqlite_busy.busy_timeout`` changes it for a block).

    An error inside the block leaves as it came, after the rollback. SQLite rolls a transaction back by itself on
    some errors (a full disk, an I/O error, a file or full-text index it finds corrupt, ``RAISE(ROLLBACK)``): then
    there is nothing left to roll back, and the error that leaves is still SQLite's own, never "cannot rollback -
    no transaction is active" in its place. Raises ``sqlite3.Error`` when ``BEGIN`` or ``COMMIT`` fails (a busy
    timeout, a full disk); a failed ``COMMIT`` is left as SQLite leaves it, not rolled back here.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if db.in_transaction:  # else SQLite rolled back by itself: its error is the one to report
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
