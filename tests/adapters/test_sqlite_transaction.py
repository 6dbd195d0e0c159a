"""One write transaction on a SQLite connection (``sqlite_transaction``): committed when the block returns, rolled
back when it raises, and SQLite's own error reported when SQLite rolled the transaction back by itself."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_transaction import write_transaction


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = tmp_path / "t.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE numbers (n INTEGER)")
    # What SQLite does by itself on some errors (a full disk, a corrupt index): the transaction is gone when the
    # statement fails.
    db.execute("CREATE TRIGGER refuse_13 BEFORE INSERT ON numbers WHEN new.n = 13"
               " BEGIN SELECT RAISE(ROLLBACK, 'thirteen is refused by the file'); END")
    db.close()
    return path


@pytest.fixture
def db(path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(path, isolation_level=None, timeout=0)
    yield connection
    connection.close()


def _numbers(path: Path) -> list[int]:
    other = sqlite3.connect(path)
    try:
        return [n for (n,) in other.execute("SELECT n FROM numbers ORDER BY n")]
    finally:
        other.close()


def test_the_block_is_committed_when_it_returns(path: Path, db: sqlite3.Connection) -> None:
    with write_transaction(db) as inside:
        assert inside is db and db.in_transaction
        db.execute("INSERT INTO numbers VALUES (1)")
        db.execute("INSERT INTO numbers VALUES (2)")
    assert not db.in_transaction
    assert _numbers(path) == [1, 2]


def test_the_block_is_rolled_back_whole_when_it_raises_and_the_error_leaves_as_it_came(
        path: Path, db: sqlite3.Connection) -> None:
    with pytest.raises(LookupError, match="the caller's own"), write_transaction(db):
        db.execute("INSERT INTO numbers VALUES (1)")
        raise LookupError("the caller's own")
    assert not db.in_transaction
    assert _numbers(path) == []


def test_a_transaction_sqlite_rolled_back_by_itself_reports_sqlites_own_error(
        path: Path, db: sqlite3.Connection) -> None:
    """Not "cannot rollback - no transaction is active", which hid the cause when the full-text index was corrupt;
    the connection is out of any transaction after it, and its next transaction commits."""
    with pytest.raises(sqlite3.IntegrityError, match="thirteen is refused by the file"), write_transaction(db):
        db.execute("INSERT INTO numbers VALUES (1)")
        db.execute("INSERT INTO numbers VALUES (13)")
    assert not db.in_transaction
    with write_transaction(db):
        db.execute("INSERT INTO numbers VALUES (2)")
    assert _numbers(path) == [2]


def test_the_writers_lock_is_taken_at_begin(path: Path, db: sqlite3.Connection) -> None:
    """IMMEDIATE: another writer cannot begin while the block runs (it waits up to its busy timeout, here none),
    even before the block has written anything."""
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        with write_transaction(db):
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                other.execute("BEGIN IMMEDIATE")
        with write_transaction(other):
            other.execute("INSERT INTO numbers VALUES (3)")
    finally:
        other.close()
    assert _numbers(path) == [3]


def test_a_begin_that_cannot_take_the_lock_raises_and_leaves_no_transaction(path: Path,
                                                                             db: sqlite3.Connection) -> None:
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        ran = False
        with pytest.raises(sqlite3.OperationalError, match="locked"), write_transaction(db):
            ran = True
        assert not ran and not db.in_transaction
    finally:
        holder.execute("ROLLBACK")
        holder.close()
