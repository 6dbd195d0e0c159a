"""The SQLite store's file (``sqlite_database``): read transactions and what a failure inside one answers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_database import MIN_SQLITE_VERSION, SqliteDatabase
from memory_core.domain.errors import ConfigurationError, Unavailable


def test_an_sqlite_older_than_3_38_is_refused_at_open_naming_both_versions_and_no_file_is_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact field filters read JSON with ``->``, which SQLite has only from 3.38.0. An older SQLite cannot be
    installed here (Python's ``sqlite3`` is built against this machine's 3.40.1), so its version is patched."""
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 37, 2))
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.37.2")
    path = tmp_path / "folder" / "memory.sqlite3"
    with pytest.raises(ConfigurationError) as caught:
        SqliteDatabase(path)
    assert "3.38.0" in str(caught.value) and "3.37.2" in str(caught.value)
    assert str(caught.value).startswith("invalid configuration:")
    assert not path.parent.exists()


def test_the_oldest_sqlite_with_the_json_arrow_opens_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """3.38.0 itself is enough (the check is not off by one); patched as above, the file is this machine's SQLite."""
    assert MIN_SQLITE_VERSION == (3, 38, 0)
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 38, 0))
    database = SqliteDatabase(tmp_path / "memory.sqlite3")
    try:
        assert database.read("SELECT json('{\"a\":\"b\"}') -> '$.a'", [])[0][0] == '"b"'
    finally:
        database.close()


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
