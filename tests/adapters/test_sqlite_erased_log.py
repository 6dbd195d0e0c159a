"""The SQLite store's log of erased entries (``sqlite_erased_log``): every erasure logged by the trigger, whatever
deletes the row, and the log bounded, with a mark it no longer reaches back to never trusted."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memory_core.adapters.sqlite_erased_log import KEEP, covers
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.models import ProfileKey, Scope
from tests.support.seeding import make_entries, seed

KEY = ProfileKey("log", "alex@contoso.com", Scope.USER)


def test_a_row_deleted_by_any_statement_is_logged_with_its_partition(tmp_path: Path) -> None:
    path = tmp_path / "log.sqlite3"
    store = SqliteMemoryStore(path)
    entries = make_entries(KEY, 3)
    seed(store, entries)
    store.close()
    with sqlite3.connect(path) as db:  # not through the store: another process, another code path
        db.execute("DELETE FROM entries WHERE id = ?", [entries[1].id])
        logged = db.execute("SELECT instance_id, upn, entry_id, table_max FROM erased_entries").fetchall()
        largest = db.execute("SELECT MAX(rowid) FROM entries").fetchone()[0]
    assert logged == [(KEY.instance_id, KEY.upn, entries[1].id, largest)]


def test_the_log_keeps_the_newest_erasures_and_says_which_marks_it_still_covers(tmp_path: Path) -> None:
    path = tmp_path / "log.sqlite3"
    SqliteMemoryStore(path).close()
    with sqlite3.connect(path) as db:
        db.executemany("INSERT INTO erased_entries (instance_id, upn, entry_id, table_max) VALUES ('i', 'u', ?, 0)",
                       [(str(n),) for n in range(3 * KEEP)])
        kept, oldest, newest = db.execute("SELECT COUNT(*), MIN(seq), MAX(seq) FROM erased_entries").fetchone()
    assert KEEP <= kept <= KEEP + 256 and newest == 3 * KEEP
    assert covers(oldest, oldest - 1) and covers(oldest, newest)
    assert not covers(oldest, oldest - 2) and not covers(oldest, 0)
    assert covers(None, 0)  # no erasure yet in the file
