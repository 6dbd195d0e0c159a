"""A connection's busy timeout changed for one block (``sqlite_busy``): restored however the block ends. One
process's writers of a file take turns (``WritersTurn``) before SQLite's lock."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_busy import WritersTurn, busy_timeout
from memory_core.adapters.sqlite_database import SqliteDatabase


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


# -- WritersTurn: one process's writers of a file, in turn before SQLite's lock ----------------------------------


def _held_elsewhere(turn: WritersTurn, seconds: float) -> threading.Thread:
    """A thread holding ``turn`` for ``seconds``, started and holding it when this returns."""
    holding = threading.Event()

    def hold() -> None:
        with turn.taken(10):
            holding.set()
            time.sleep(seconds)

    thread = threading.Thread(target=hold)
    thread.start()
    assert holding.wait(5)
    return thread


def test_a_free_turn_is_taken_without_waiting_and_leaves_sqlite_its_own_wait() -> None:
    turn = WritersTurn()
    with turn.taken(5) as left:
        assert left is None
        with turn.taken(5) as again:  # the same thread again: reentrant, SQLite answers a nested BEGIN as ever
            assert again is None


def test_a_turn_held_by_another_thread_is_waited_for_and_the_wait_counts_against_sqlites() -> None:
    turn = WritersTurn()
    holder = _held_elsewhere(turn, 0.2)
    started = time.monotonic()
    with turn.taken(5) as left:
        waited = time.monotonic() - started
        assert left is not None and 5 - waited - 5 / 16 < left <= 5 - waited + 0.01
    holder.join()
    assert waited >= 0.1


@pytest.mark.alone
def test_a_turn_not_had_in_time_runs_without_it_and_leaves_sqlite_no_more_wait() -> None:
    turn = WritersTurn()
    holder = _held_elsewhere(turn, 0.5)
    started = time.monotonic()
    with turn.taken(0.05) as left:
        assert left == 0.0
        assert time.monotonic() - started < 0.4  # did not wait for the holder
    holder.join()


def test_a_write_of_the_process_begins_after_its_other_writers_write_not_in_sqlites_busy_handler(tmp_path: Path) -> None:
    """Another thread of the process holds the file's write lock through ``SqliteDatabase.write``: this thread's
    write sends its ``BEGIN IMMEDIATE`` only once that one committed (it waited on the turn, woken at its end), where
    without the turn it sent it at once and slept in SQLite's busy handler between tries."""
    database = SqliteDatabase(tmp_path / "m.sqlite3")
    events: list[str] = []
    inside, release = threading.Event(), threading.Event()

    def other_writer() -> None:
        with database.write() as db:
            db.execute("CREATE TABLE IF NOT EXISTS t (x)")
            inside.set()
            release.wait(5)
            events.append("other committing")

    thread = threading.Thread(target=other_writer)
    thread.start()
    assert inside.wait(5)
    database.connection().set_trace_callback(lambda sql: events.append(sql) if sql.startswith("BEGIN") else None)
    threading.Timer(0.1, release.set).start()
    with database.write() as db:
        db.execute("INSERT INTO t VALUES (1)")
    thread.join()
    database.close()
    assert events == ["other committing", "BEGIN IMMEDIATE"]
