"""A write transaction that times its parts, for the benches that put it in place of the store's.

A bench assigns ``timed_write_transaction(record)`` to ``memory_core.adapters.sqlite_database.write_transaction``;
the store's writes then go through it, each as ``sqlite_transaction.write_transaction`` runs it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import NamedTuple


class TransactionParts(NamedTuple):
    """One committed write transaction's parts, in seconds."""

    begin: float  # ``BEGIN IMMEDIATE``: where a write waits for another's lock
    statements: float  # the block: the store's statements
    commit: float  # ``COMMIT``


def timed_write_transaction(
    record: Callable[[TransactionParts], None],
) -> Callable[[sqlite3.Connection], AbstractContextManager[sqlite3.Connection]]:
    """``sqlite_transaction.write_transaction`` (``BEGIN IMMEDIATE``, committed when the block returns, rolled back
    when it raises) that hands ``record`` the parts of each transaction it commits, once ``COMMIT`` is through; a
    block that raises is rolled back and recorded nowhere."""

    @contextmanager
    def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
        started = time.perf_counter()
        db.execute("BEGIN IMMEDIATE")
        begun = time.perf_counter()
        try:
            yield db
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        done = time.perf_counter()
        db.execute("COMMIT")
        record(TransactionParts(begun - started, done - begun, time.perf_counter() - done))

    return transaction
