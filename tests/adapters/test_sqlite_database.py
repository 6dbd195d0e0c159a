"""The SQLite store's file (``sqlite_database``): read transactions and what a failure inside one answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.adapters.sqlite_database import SqliteDatabase
from memory_core.domain.errors import Unavailable


def test_a_read_transaction_reads_one_state_of_the_file(tmp_path: Path) -> None:
    """A write committed by another connection during the block is not seen until the block ends."""
    path = tmp_path / "memory.sqlite3"
    reader, writer = SqliteDatabase(path), SqliteDatabase(path)
    try:
        with writer.write() as db:
            db.execute("CREATE TABLE numbers (n INTEGER)")
            db.execute("INSERT INTO numbers VALUES (1)")
        with reader.reading() as db:
            assert db.execute("SELECT count(*) FROM numbers").fetchone()[0] == 1
            with writer.write() as other:
                other.execute("INSERT INTO numbers VALUES (2)")
            assert db.execute("SELECT count(*) FROM numbers").fetchone()[0] == 1
        assert reader.read("SELECT count(*) FROM numbers", [])[0][0] == 2
    finally:
        reader.close()
        writer.close()


def test_a_failing_statement_inside_a_read_answers_unavailable_and_ends_the_transaction(tmp_path: Path) -> None:
    database = SqliteDatabase(tmp_path / "memory.sqlite3")
    try:
        with pytest.raises(Unavailable, match="could not complete the read"), database.reading() as db:
            db.execute("SELECT * FROM no_such_table")
        assert database.connection().in_transaction is False
    finally:
        database.close()


def test_a_write_sqlite_rolled_back_by_itself_answers_unavailable_with_sqlites_own_error(tmp_path: Path) -> None:
    """SQLite rolls a transaction back by itself on some errors (a corrupt full-text index, a full disk; here a
    trigger's ``RAISE(ROLLBACK)``): the write answers SQLite's error, not "cannot rollback - no transaction is
    active", and the thread's connection writes again after it."""
    database = SqliteDatabase(tmp_path / "memory.sqlite3")
    try:
        with database.write() as db:
            db.execute("CREATE TABLE numbers (n INTEGER)")
            db.execute("CREATE TRIGGER refuse_13 BEFORE INSERT ON numbers WHEN new.n = 13"
                       " BEGIN SELECT RAISE(ROLLBACK, 'thirteen is refused by the file'); END")
        with pytest.raises(Unavailable, match="could not complete the write: thirteen is refused by the file"), \
                database.write() as db:
            db.execute("INSERT INTO numbers VALUES (1)")
            db.execute("INSERT INTO numbers VALUES (13)")
        assert database.connection().in_transaction is False
        with database.write() as db:
            db.execute("INSERT INTO numbers VALUES (2)")
        assert [row[0] for row in database.read("SELECT n FROM numbers", [])] == [2]
    finally:
        database.close()
