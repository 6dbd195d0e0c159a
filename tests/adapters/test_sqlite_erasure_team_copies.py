"""The SQLite purge of erased words (``sqlite_erasure``) racing team copies being written by another process.

A forget of a team-shared entry erases the entry and its copy, and the file owes a purge: the checkpoint thread merges
the full-text index a few pages per write transaction, and other writers go on between the steps. A team copy is
written in its own transaction (the copy, its full-text row and its mark, ``team_copies.share``): the late copy of the
forgotten entry is refused by its mark, and another author's copy written between two steps is indexed like any
entry. Written as a guard when the ordering audit found this untested (2026-12-07): it held on the code as it was.
"""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from memory_core.adapters import sqlite_database, sqlite_erasure
from memory_core.adapters.sqlite_erasure import purge_erased, purge_owed
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain import team_copies
from memory_core.domain.identity import Caller
from memory_core.domain.models import SHARED_OWNER, Scope, Share, shared_copy_id
from memory_core.domain.service import DeletionMode, MemoryService, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from tests.support.clock import TickingClock
from tests.support.fts_blocks import index_blocks_holding

INSTANCE = "erasure"
AUTHOR, TEAMMATE = Caller(upn="author@contoso.com"), Caller(upn="mate@contoso.com")
TEAM = WriteOptions(share=Share.TEAM)


def _word(name: str) -> str:
    """A word found nowhere else, which Porter stemming keeps whole (``test_sqlite_erasure._word``)."""
    return f"{name}{uuid.uuid4().hex[:10]}zq"


def _service(store: SqliteMemoryStore, clock: TickingClock) -> MemoryService:
    return MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE, clock=clock,
                         default_sharing=SharingPolicy.TEAM, allow_sharing_override=True)


class _CopiesBetweenSteps:
    """A purge's connection that, after the first transaction it commits (a step of the merge), has ``write`` run:
    another process's writes, between two steps of the merge."""

    def __init__(self, db: sqlite3.Connection, write: Any) -> None:
        self._db, self._write = db, write
        self.commands: list[str] = []

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        if sql.startswith("INSERT INTO entries_fts(entries_fts"):
            self.commands.append(str(params[0]) if params else sql)
        cursor = self._db.execute(sql, params)
        if sql == "COMMIT" and self._write is not None:
            write, self._write = self._write, None
            write()
        return cursor


def test_team_copies_written_between_the_steps_of_a_purge_leave_no_erased_word_and_stay_searchable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between two steps of the purge another process writes the forgotten entry's copy late (refused by its mark)
    and a new team-shared entry (the entry and its copy): the forgotten word leaves every index block and file, the
    new entry's copy is found by the teammate's search, and the index is sound."""
    monkeypatch.setattr(sqlite_erasure, "MERGE_PAGES", 1)
    monkeypatch.setattr(sqlite_erasure, "MIN_PAUSE_SECONDS", 0.0)
    monkeypatch.setattr(sqlite_database, "purge_erased", lambda db, **_: True)  # only the purge below runs
    path, forgotten, written = tmp_path / "m.sqlite3", _word("diagnosis"), _word("launch")
    clock = TickingClock(datetime(2026, 12, 7, tzinfo=UTC), timedelta(milliseconds=1))
    store = SqliteMemoryStore(path)
    service = _service(store, clock)
    view = service.append(AUTHOR, INSTANCE, Scope.USER, None, f"- {forgotten} private medical note", TEAM)
    for n in range(60):  # many segments: a merge of several steps
        service.append(AUTHOR, INSTANCE, Scope.USER, None, f"- fact {n} about trains and {uuid.uuid4().hex} things")
    (entry,) = [e for s in store.load_partition(INSTANCE, AUTHOR.upn) for e in s.entries if e.id == view.entry_id]
    service.forget(AUTHOR, INSTANCE, entry.id)
    store.close()
    assert index_blocks_holding(path, forgotten) > 0  # owed: the words are still in an older segment

    other = SqliteMemoryStore(path)  # another process, writing while the purge runs

    def write() -> None:
        team_copies.share(other, entry)  # the forgotten entry's copy, late
        _service(other, clock).append(AUTHOR, INSTANCE, Scope.USER, None, f"- the launch is {written}", TEAM)

    db = sqlite3.connect(path, isolation_level=None, timeout=10)
    db.execute("PRAGMA secure_delete=ON")
    steps = _CopiesBetweenSteps(db, write)
    assert purge_erased(cast(sqlite3.Connection, steps)) is True
    db.execute("INSERT INTO entries_fts(entries_fts) VALUES ('integrity-check')")
    owed = purge_owed(db)
    db.close()

    assert steps.commands[0] == "merge" and len(steps.commands) >= 2, steps.commands
    assert not owed
    assert other.get_entry(INSTANCE, SHARED_OWNER, shared_copy_id(entry.id)) is None
    hits = _service(other, clock).search(TEAMMATE, INSTANCE, Scope.USER, None, written)
    assert [h.entry.author_upn for h in hits] == [AUTHOR.upn] and hits[0].entry.key.upn == SHARED_OWNER
    assert _service(other, clock).search(TEAMMATE, INSTANCE, Scope.USER, None, forgotten) == []
    other.close()
    assert index_blocks_holding(path, forgotten) == 0
    assert [p.name for p in sorted(path.parent.glob(path.name + "*")) if forgotten.encode() in p.read_bytes()] == []
