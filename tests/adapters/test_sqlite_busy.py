"""A connection's busy timeout changed for one block (``sqlite_busy``): restored however the block ends."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_busy import busy_timeout


@pytest.fixture
def db() -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(":memory:", timeout=10.0, isolation_level=None)
    yield connection
    connection.close()


def timeout_ms(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA busy_timeout").fetchone()[0])


def test_the_block_waits_as_asked_and_the_connection_its_own_wait_after(db: sqlite3.Connection) -> None:
    with busy_timeout(db, 1.5) as inside:
        assert inside is db
        assert timeout_ms(db) == 1500
    assert timeout_ms(db) == 10_000


def test_the_wait_is_restored_when_the_block_raises(db: sqlite3.Connection) -> None:
    with pytest.raises(sqlite3.OperationalError, match="no such table"), busy_timeout(db, 0):
        assert timeout_ms(db) == 0
        db.execute("SELECT * FROM no_such_table")
    assert timeout_ms(db) == 10_000


def test_blocks_nest_each_restoring_the_wait_it_found(db: sqlite3.Connection) -> None:
    with busy_timeout(db, 1.0):
        with busy_timeout(db, 0):
            assert timeout_ms(db) == 0
        assert timeout_ms(db) == 1000
    assert timeout_ms(db) == 10_000


def test_none_leaves_the_connection_its_own_wait(db: sqlite3.Connection) -> None:
    with busy_timeout(db, None):
        assert timeout_ms(db) == 10_000
    assert timeout_ms(db) == 10_000


def test_a_block_that_does_not_wait_fails_at_once_on_a_locked_file(tmp_path: Path) -> None:
    """What the wait is for: a writer's lock held elsewhere fails the block's write at once, not after 10 s."""
    path = tmp_path / "locked.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    waiter = sqlite3.connect(path, timeout=10.0, isolation_level=None)
    try:
        holder.execute("CREATE TABLE t (n INTEGER)")
        holder.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="locked"), busy_timeout(waiter, 0):
            waiter.execute("BEGIN IMMEDIATE")
        assert time.monotonic() - started < 5
        assert timeout_ms(waiter) == 10_000
    finally:
        holder.close()
        waiter.close()
