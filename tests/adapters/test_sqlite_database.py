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
