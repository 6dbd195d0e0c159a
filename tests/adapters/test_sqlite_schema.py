"""The SQLite store's schema and the upgrade of an older file (``sqlite_schema``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_database import SqliteDatabase
from memory_core.adapters.sqlite_schema import SCHEMA_VERSION
from memory_core.domain.errors import Unavailable


def test_an_upgrade_sqlite_rolled_back_by_itself_reports_sqlites_own_error_and_leaves_the_old_file(
        tmp_path: Path) -> None:
    """An upgrade whose transaction SQLite rolled back by itself (here a trigger's ``RAISE(ROLLBACK)``; a full disk or
    a corrupt index does the same) fails the open with SQLite's own error, not "cannot rollback - no transaction is
    active", and leaves the file at its old version, to be upgraded at the next open."""
    path = tmp_path / "old.sqlite3"
    SqliteDatabase(path).close()
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("PRAGMA user_version=8")  # before erasure purges: the upgrade marks both purges owed
    raw.execute("CREATE TRIGGER refuse_marks BEFORE INSERT ON erasure_purges"
                " BEGIN SELECT RAISE(ROLLBACK, 'the disk refused the upgrade'); END")
    raw.close()
    with pytest.raises(Unavailable, match="the disk refused the upgrade"):
        SqliteDatabase(path)
    raw = sqlite3.connect(path, isolation_level=None)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 8
    raw.execute("DROP TRIGGER refuse_marks")
    raw.close()
    SqliteDatabase(path).close()
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    raw.close()
