"""Erased text leaves the SQLite file (``sqlite_erasure``): not in the full-text index's segments, not in freed
pages, not in the write-ahead log, whether the erasure is immediate, swept, or was owed when a process died."""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from memory_core.adapters import sqlite_database, sqlite_erasure, sqlite_wal
from memory_core.adapters.sqlite_busy import WritersTurn
from memory_core.adapters.sqlite_erasure import purge_erased, purge_owed
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import Scope
from memory_core.domain.service import MemoryService
from memory_core.domain.views import DeletionMode, Forgotten
from tests.support.clock import TickingClock
from tests.support.fts_blocks import index_blocks_holding

ALEX = Caller(upn="alex@contoso.com", name="Alex")
INSTANCE = "erasure"


def _word() -> str:
    """A word found nowhere else, which Porter stemming keeps whole (no rule strips a final "zq"), so the index holds
    exactly it: a hex tail ending in "ed" or "e" would be stored stemmed and escape a search of the file's bytes."""
    return f"diagnosis{uuid.uuid4().hex[:10]}zq"


def _files_holding(path: Path, word: str) -> list[str]:
    """The store's files (the database, its log) whose bytes hold ``word`` anywhere."""
    return [p.name for p in sorted(path.parent.glob(path.name + "*")) if word.encode() in p.read_bytes()]


def _purged(store: SqliteMemoryStore, seconds: float = 10.0) -> bool:
    """Whether the checkpoint thread finished the purges the file owes within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not purge_owed(store._db.connection()):
            return True
        time.sleep(0.01)
    return False


def _service(path: Path, mode: DeletionMode) -> tuple[SqliteMemoryStore, MemoryService]:
    store = SqliteMemoryStore(path)
    return store, MemoryService(store, deletion_mode=mode, clock=TickingClock(datetime(2026, 12, 6, tzinfo=UTC)))


def test_a_forgotten_entry_leaves_no_word_in_the_index_or_any_file(tmp_path: Path) -> None:
    """An immediate forget among other entries: once the checkpoint thread has purged (the forget does not wait for
    it), the stored bytes of the database and its log hold the erased word nowhere (they did before), and the other
    entries are still found by search."""
    path, word = tmp_path / "m.sqlite3", _word()
    store, service = _service(path, DeletionMode.IMMEDIATE)
    for n in range(30):
        service.append(ALEX, INSTANCE, Scope.USER, None, f"- kept fact {n} about trains")
    view = service.append(ALEX, INSTANCE, Scope.USER, None, f"- {word} private medical note")
    before = _files_holding(path, word)
    assert isinstance(service.forget(ALEX, INSTANCE, str(view.entry_id)), Forgotten)
    purged = _purged(store)
    after, blocks = _files_holding(path, word), index_blocks_holding(path, word)
    found = service.search(ALEX, INSTANCE, Scope.USER, None, "trains", limit=50)
    thread_purges = store._db._checkpointer.purges
    store.close()
    assert before, "the word was stored before the forget (else this test proves nothing)"
    assert purged and thread_purges >= 1
    assert after == [] and blocks == 0
    assert len(found) == 30


def test_an_approved_clear_leaves_no_word_in_any_file_after_the_sweep(tmp_path: Path) -> None:
    """Under operator approval the words stay (hidden) until the sweep executes the approved clear, then leave
    every file."""
    path, word = tmp_path / "m.sqlite3", _word()
    store, service = _service(path, DeletionMode.OPERATOR_APPROVAL)
    for n in range(5):
        service.append(ALEX, INSTANCE, Scope.USER, None, f"- {word} note {n}")
    pending = service.clear(ALEX, INSTANCE, Scope.USER, None, confirm=True)
    held = _files_holding(path, word)
    service.custody.approve("operator-key", INSTANCE, str(pending.request_id))
    service.custody.sweep()
    purged = _purged(store)
    swept = _files_holding(path, word)
    store.close()
    assert held and purged and swept == []


def test_a_purge_owed_when_the_process_died_is_done_at_the_next_open(tmp_path: Path) -> None:
    """A delete committed by a process that died before its purge leaves the mark (the trigger set it in the
    delete's own transaction); the next open of the file purges, and the word is gone."""
    path, word = tmp_path / "m.sqlite3", _word()
    store, service = _service(path, DeletionMode.IMMEDIATE)
    service.append(ALEX, INSTANCE, Scope.USER, None, f"- {word} private medical note")
    store.close()
    died = sqlite3.connect(path, isolation_level=None)  # deletes as the store would, and never purges
    died.execute("DELETE FROM entries WHERE content_markdown LIKE ?", (f"%{word}%",))
    owed = purge_owed(died)
    died.close()
    assert owed and index_blocks_holding(path, word) > 0
    reopened = SqliteMemoryStore(path)
    owed_after = purge_owed(reopened._db.connection())
    reopened.close()
    assert not owed_after and index_blocks_holding(path, word) == 0 and _files_holding(path, word) == []


def test_a_file_from_before_purges_is_purged_when_upgraded(tmp_path: Path) -> None:
    """A file of schema version 8 may hold the words of everything it ever erased: opening it upgrades it and
    purges them."""
    path, word = tmp_path / "m.sqlite3", _word()
    store, service = _service(path, DeletionMode.IMMEDIATE)
    service.append(ALEX, INSTANCE, Scope.USER, None, f"- {word} private medical note")
    store.close()
    old = sqlite3.connect(path, isolation_level=None)  # as version 8 left it: no mark, no triggers, no zeroing
    old.executescript("DROP TRIGGER entries_erased; DROP TRIGGER entries_rewritten; DROP TRIGGER file_index_replaced;"
                      "DROP TRIGGER file_index_rewritten; DROP TRIGGER file_index_erased; DROP TABLE erasure_purges;"
                      "PRAGMA user_version=8; PRAGMA secure_delete=OFF;")
    old.execute("DELETE FROM entries")
    old.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    old.close()
    assert index_blocks_holding(path, word) > 0 and _files_holding(path, word)
    SqliteMemoryStore(path).close()
    assert index_blocks_holding(path, word) == 0 and _files_holding(path, word) == []


class _EraseDuringCheckpoint:
    """A connection that, just before the purge truncates the log, lets another process finish a purge of its own
    and then erase an entry."""

    def __init__(self, db: sqlite3.Connection, other: sqlite3.Connection) -> None:
        self._db, self._other = db, other

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        if sql == "PRAGMA wal_checkpoint(TRUNCATE)":
            assert purge_erased(self._other)
            self._other.execute("DELETE FROM entries WHERE rowid = (SELECT max(rowid) FROM entries)")
        return self._db.execute(sql, params)


def test_an_erasure_committed_during_a_purge_stays_owed(tmp_path: Path) -> None:
    """A purge records only the mark it saw, and never takes one away: while it runs, another process finishes a
    purge of its own and an entry is erased; that entry is still owed a purge, which the next one does."""
    path, word = tmp_path / "m.sqlite3", _word()
    store, service = _service(path, DeletionMode.IMMEDIATE)
    service.append(ALEX, INSTANCE, Scope.USER, None, "- first")
    service.append(ALEX, INSTANCE, Scope.USER, None, f"- {word} erased during the purge")
    store.close()
    db, other = (sqlite3.connect(path, isolation_level=None) for _ in range(2))
    db.execute("DELETE FROM entries WHERE content_markdown = '- first'")
    assert purge_erased(cast(sqlite3.Connection, _EraseDuringCheckpoint(db, other))) is True
    still_owed = purge_owed(db)
    assert still_owed and index_blocks_holding(path, word) > 0
    assert purge_erased(db) is True and not purge_owed(db) and index_blocks_holding(path, word) == 0
    db.close()
    other.close()


def test_the_checkpoint_threads_connection_zeroes_what_it_frees(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread's merge frees the pages that held erased words: its connection runs with secure_delete on,
    whatever the SQLite build's default (Debian's is on; here every new connection starts with it off)."""
    store = SqliteMemoryStore(tmp_path / "m.sqlite3")
    real_connect = sqlite3.connect

    def connect_with_it_off(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = real_connect(*args, **kwargs)
        connection.execute("PRAGMA secure_delete=OFF")
        return connection

    monkeypatch.setattr(sqlite_wal.sqlite3, "connect", connect_with_it_off)
    db = store._db._checkpointer._connect()
    try:
        assert db.execute("PRAGMA secure_delete").fetchone()[0] == 1
    finally:
        db.close()
        store.close()


def test_a_forget_just_before_close_is_purged_by_the_close(tmp_path: Path) -> None:
    """A short-lived process (the stdio front, the command line) erases and closes at once: close finishes the
    purge the thread had not done, so the words are gone before the next open."""
    path, word = tmp_path / "m.sqlite3", _word()
    store, service = _service(path, DeletionMode.IMMEDIATE)
    view = service.append(ALEX, INSTANCE, Scope.USER, None, f"- {word} private medical note")
    store._db._checkpointer.close()  # no thread: the purge handed over stays pending
    service.forget(ALEX, INSTANCE, str(view.entry_id))
    store.close()
    assert _files_holding(path, word) == [] and index_blocks_holding(path, word) == 0


def test_memory_tool_names_that_leave_the_index_leave_the_file(tmp_path: Path) -> None:
    """Names with no entry behind them (a whitespace-only file renamed, a directory holding only one deleted): the
    file index is rewritten, and once the thread has purged, neither old name is in the database or its log (they
    were before). A file with text keeps its first path in its entry's provenance (``reason``) until erased."""
    path = tmp_path / "m.sqlite3"
    store, service = _service(path, DeletionMode.IMMEDIATE)
    files = MemoryFiles(service)
    old_name, folder = _word(), _word()
    files.execute(ALEX, INSTANCE, None, {"command": "create", "path": f"/memories/{old_name}.md", "file_text": " "})
    files.execute(ALEX, INSTANCE, None, {"command": "create", "path": f"/memories/{folder}/keep.md", "file_text": " "})
    held = (_files_holding(path, old_name), _files_holding(path, folder))
    files.execute(ALEX, INSTANCE, None, {"command": "rename", "old_path": f"/memories/{old_name}.md",
                                         "new_path": "/memories/renamed.md"})
    files.execute(ALEX, INSTANCE, None, {"command": "delete", "path": f"/memories/{folder}"})
    purged = _purged(store)
    after = (_files_holding(path, old_name), _files_holding(path, folder))
    store.close()
    assert all(held) and purged and after == ([], [])


def test_a_purge_never_makes_a_writer_wait_behind_a_reader(tmp_path: Path) -> None:
    """A reader holds an older state open: the purge's log truncation does not wait for it (which would hold the
    writers' lock meanwhile), so another connection's write goes through at once; the purge answers False and
    the file still owes it until the reader is gone."""
    path = tmp_path / "m.sqlite3"
    store, service = _service(path, DeletionMode.IMMEDIATE)
    for n in range(3):
        service.append(ALEX, INSTANCE, Scope.USER, None, f"- fact {n}")
    store.close()
    reader, purger, writer = (sqlite3.connect(path, isolation_level=None, timeout=10, check_same_thread=False)
                              for _ in range(3))
    purger.execute("DELETE FROM entries WHERE rowid = (SELECT min(rowid) FROM entries)")
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM entries").fetchone()  # the reader's state is older than the delete
    written: list[float] = []

    def write_soon() -> None:
        time.sleep(0.1)
        started = time.monotonic()
        writer.execute("UPDATE profiles SET name = 'Alex W.'")
        written.append(time.monotonic() - started)

    thread = threading.Thread(target=write_soon)
    thread.start()
    done = purge_erased(purger, retry_seconds=0.6)
    thread.join()
    owed = purge_owed(purger)
    reader.execute("COMMIT")
    finished = purge_erased(purger)
    for connection in (reader, purger, writer):
        connection.close()
    assert done is False and owed and written[0] < 0.3, written
    assert finished is True


_COLUMNS = ("id, instance_id, upn, profile_id, scope, agent_object_id, kind, content_markdown, created_on, "
            "author_upn, author_user_id, agent_name, reason, session_id, operation_id, tags, share, content_sha256")


class _WriteBetweenSteps:
    """A purge's connection that, after each transaction it commits, lets another connection write at once (no busy
    wait: it fails if the purge still held the lock) and notes whether the erased word was still in the index then."""

    def __init__(self, db: sqlite3.Connection, writer: sqlite3.Connection, path: Path, word: str) -> None:
        self._db, self._writer, self._path, self._word = db, writer, path, word
        self.commands: list[str] = []
        self.writes = self.writes_while_merging = 0

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        if sql.startswith("INSERT INTO entries_fts(entries_fts"):
            self.commands.append(str(params[0]) if params else sql)
        cursor = self._db.execute(sql, params)
        if sql == "COMMIT":
            self._writer.execute(f"INSERT INTO entries ({_COLUMNS}) SELECT lower(hex(randomblob(16))), "
                                 + _COLUMNS.split(", ", 1)[1].replace("content_markdown", "'- written between two steps'")
                                 + " FROM entries LIMIT 1")
            self.writes += 1
            self.writes_while_merging += index_blocks_holding(self._path, self._word) > 0
        return cursor


def _file_owing_a_purge(tmp_path: Path, entries: int, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A closed store file of ``entries`` entries, each appended on its own (many index segments) after one
    with a word of its own, forgotten last (its words in an older segment than the forget's): the file owes the purge, which nobody has run."""
    path, word = tmp_path / "m.sqlite3", _word()
    monkeypatch.setattr(sqlite_database, "purge_erased", lambda db, **_: True)  # not at the store's close
    store, service = _service(path, DeletionMode.IMMEDIATE)
    store._db._checkpointer.close()
    monkeypatch.setattr(store._db._checkpointer, "owe_purge", lambda: None)  # nor on its thread
    view = service.append(ALEX, INSTANCE, Scope.USER, None, f"- {word} private medical note")
    for n in range(entries):
        service.append(ALEX, INSTANCE, Scope.USER, None, f"- fact {n} about trains and {uuid.uuid4().hex} things")
    service.forget(ALEX, INSTANCE, str(view.entry_id))
    store._db.close()
    return path, word


def test_writers_go_on_between_the_steps_of_a_purge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The purge merges the index a few pages per write transaction: after each step another connection writes
    without waiting at all, while the erased word is still in the index (the merge under way); at the end the word
    is in no index block, the entries written meanwhile are found by search and the index is sound. (One
    ``'optimize'`` held the lock from start to end, so no write came between.)"""
    monkeypatch.setattr(sqlite_erasure, "MERGE_PAGES", 1)
    monkeypatch.setattr(sqlite_erasure, "MIN_PAUSE_SECONDS", 0.0)
    path, word = _file_owing_a_purge(tmp_path, 400, monkeypatch)
    db, writer = (sqlite3.connect(path, isolation_level=None, timeout=0) for _ in range(2))
    db.execute("PRAGMA secure_delete=ON")
    steps = _WriteBetweenSteps(db, writer, path, word)
    assert index_blocks_holding(path, word) > 0
    assert purge_erased(cast(sqlite3.Connection, steps)) is True
    db.execute("INSERT INTO entries_fts(entries_fts) VALUES ('integrity-check')")
    (found,) = db.execute("SELECT count(*) FROM entries_fts WHERE entries_fts MATCH 'steps'").fetchone()
    db.close()
    writer.close()
    assert steps.writes_while_merging >= 3, steps.commands
    assert steps.commands[0] == "merge" and "optimize" not in steps.commands
    assert index_blocks_holding(path, word) == 0 and _files_holding(path, word) == []
    assert found == steps.writes > len(steps.commands)  # one after each step, and after the marks of the purge


def test_a_purge_kept_busy_past_its_bound_finishes_as_one_optimize(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps past the bound set by the index's size at the start (writers keeping the merge busy) end in one
    ``'optimize'``, so the erased words leave the index whatever the writers do."""
    monkeypatch.setattr(sqlite_erasure, "MERGE_PAGES", 1)
    monkeypatch.setattr(sqlite_erasure, "MIN_PAUSE_SECONDS", 0.0)
    monkeypatch.setattr(sqlite_erasure, "MERGE_SLACK_STEPS", -10_000)
    path, word = _file_owing_a_purge(tmp_path, 20, monkeypatch)
    db, writer = (sqlite3.connect(path, isolation_level=None, timeout=0) for _ in range(2))
    steps = _WriteBetweenSteps(db, writer, path, word)
    assert purge_erased(cast(sqlite3.Connection, steps)) is True
    db.close()
    writer.close()
    assert steps.commands == ["optimize"]
    assert index_blocks_holding(path, word) == 0 and _files_holding(path, word) == []


def test_the_index_stays_sound_through_thousands_of_purges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each merge of all segments leaves the index's structure a level deeper on this SQLite (3.40), and past 2,000
    levels FTS5 calls the index corrupt: every write of an entry failed, for good, after about 1,400 erasures. A
    purge that finds the structure past ``REBUILD_PAST_LEVELS`` rebuilds it instead: after 2,500 erasures, each
    purged, the index is sound, shallow, and still finds what is kept (an entry kept beside each erased one: the index changes at every purge)."""
    monkeypatch.setattr(sqlite_erasure, "MIN_PAUSE_SECONDS", 0.0)
    path = tmp_path / "m.sqlite3"
    store, service = _service(path, DeletionMode.IMMEDIATE)
    service.append(ALEX, INSTANCE, Scope.USER, None, "- kept fact about trains")
    store.close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous=OFF")  # no fsync per purge: the test is about the index, not durability
    deepest = 0
    for n in range(2_500):
        db.execute(f"INSERT INTO entries ({_COLUMNS}) SELECT 'erased{n}', "
                   + _COLUMNS.split(", ", 1)[1].replace("content_markdown", f"'- erased note {n}'")
                   + " FROM entries LIMIT 1")
        db.execute(f"INSERT INTO entries ({_COLUMNS}) SELECT 'kept{n}', "
                   + _COLUMNS.split(", ", 1)[1].replace("content_markdown", f"'- kept note {n}'")
                   + " FROM entries LIMIT 1")
        db.execute("DELETE FROM entries WHERE id = ?", (f"erased{n}",))
        assert purge_erased(db) is True
        deepest = max(deepest, sqlite_erasure.index_levels(db))
    db.execute("INSERT INTO entries_fts(entries_fts) VALUES ('integrity-check')")
    found = db.execute("SELECT count(*) FROM entries_fts WHERE entries_fts MATCH 'trains'").fetchone()[0]
    (kept,) = db.execute("SELECT count(*) FROM entries_fts WHERE entries_fts MATCH 'kept'").fetchone()
    levels = sqlite_erasure.index_levels(db)
    db.close()
    assert found == 1 and kept == 2_501  # the first fact too
    assert 0 < levels <= deepest <= sqlite_erasure.REBUILD_PAST_LEVELS + 2, (levels, deepest)


def test_a_file_whose_index_fts5_calls_corrupt_gets_a_new_one_at_open(tmp_path: Path) -> None:
    """A file left by the release that purged with one ``'optimize'`` per erasure, past 2,000 levels: FTS5 cannot
    open its index, so every write of an entry failed. The next open makes the index anew from the entries: the
    store opens, appends, and search finds what was stored before and after."""
    path = tmp_path / "m.sqlite3"
    store, service = _service(path, DeletionMode.IMMEDIATE)
    service.append(ALEX, INSTANCE, Scope.USER, None, "- kept fact about trains")
    store.close()
    raw = sqlite3.connect(path, isolation_level=None)
    (block,) = raw.execute("SELECT block FROM entries_fts_data WHERE id = 10").fetchone()
    assert block[4] < 0x80  # one byte of level count: replaced by the two bytes of 2,001
    raw.execute("UPDATE entries_fts_data SET block = ? WHERE id = 10",
                (block[:4] + bytes([0x80 | (2_001 >> 7), 2_001 & 0x7F]) + block[5:],))
    with pytest.raises(sqlite3.DatabaseError, match="vtable constructor failed"):
        raw.execute("SELECT count(*) FROM entries_fts").fetchone()
    raw.close()
    store, service = _service(path, DeletionMode.IMMEDIATE)
    service.append(ALEX, INSTANCE, Scope.USER, None, "- another fact about trains")
    found = service.search(ALEX, INSTANCE, Scope.USER, None, "trains", limit=10)
    store.close()
    assert sorted(hit.entry.content_markdown for hit in found) == ["- another fact about trains",
                                                                  "- kept fact about trains"]


def _frames_not_copied_back(path: Path) -> int:
    """Frames in the log not yet in the database file: ``mxFrame`` less ``nBackfill``, read from the wal-index
    (the ``-shm`` file: the header's ``mxFrame`` at byte 16, the checkpoint information's ``nBackfill`` at byte 96,
    native byte order; https://www.sqlite.org/walformat.html)."""
    shm = Path(f"{path}-shm").read_bytes()[:100]
    return int.from_bytes(shm[16:20], sys.byteorder) - int.from_bytes(shm[96:100], sys.byteorder)


class _SeesTheTruncation:
    """A purge's connection noting, as each ``TRUNCATE`` checkpoint starts, the frames it would have to copy."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self._db, self._path = db, path
        self.left_to_copy: list[int] = []

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        if sql == "PRAGMA wal_checkpoint(TRUNCATE)":
            self.left_to_copy.append(_frames_not_copied_back(self._path))
        return self._db.execute(sql, params)


def test_the_purges_truncation_finds_the_log_already_copied_back(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``TRUNCATE`` checkpoint takes the writers' lock before it copies the log back, and holds it through the copy
    and its ``fsync``s: every write of the file, from any process, waited that long. The purge copies the log with
    a ``PASSIVE`` checkpoint first (no writers' lock), so its ``TRUNCATE`` starts with nothing left to copy (on
    ``main`` it had every frame of the index merge to copy), and the word still leaves every file."""
    path, word = _file_owing_a_purge(tmp_path, 20, monkeypatch)
    db = sqlite3.connect(path, isolation_level=None, timeout=0)
    db.execute("PRAGMA secure_delete=ON")
    seen = _SeesTheTruncation(db, path)
    done = purge_erased(cast(sqlite3.Connection, seen))
    db.close()
    assert done is True
    assert seen.left_to_copy == [0]
    assert index_blocks_holding(path, word) == 0 and _files_holding(path, word) == []


class _RecordingTurn(WritersTurn):
    """A ``WritersTurn`` that tells whether it is held, for a trace of the statements run inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.held = False

    @contextmanager
    def taken(self, seconds: float) -> Iterator[float | None]:
        with super().taken(seconds) as left:
            self.held = True
            try:
                yield left
            finally:
                self.held = False


def test_every_step_of_a_purge_that_locks_writers_out_takes_the_processs_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The merge's steps, the ``TRUNCATE`` checkpoint and the marks of what was purged (the first write after the
    truncation, which syncs the restarted log's header) each run inside the turn of the process's writers (so a
    write of the process waits for them on it, not in SQLite's busy handler), one turn per step: the pauses between
    steps and the ``PASSIVE`` checkpoint, which locks no writer out, run outside it."""
    monkeypatch.setattr(sqlite_erasure, "MERGE_PAGES", 1)
    monkeypatch.setattr(sqlite_erasure, "MIN_PAUSE_SECONDS", 0.0)
    path, word = _file_owing_a_purge(tmp_path, 40, monkeypatch)
    db = sqlite3.connect(path, isolation_level=None, timeout=0)
    db.execute("PRAGMA secure_delete=ON")
    turn, trace = _RecordingTurn(), []
    db.set_trace_callback(lambda sql: trace.append((sql.split()[0] if "checkpoint" not in sql else sql, turn.held)))
    assert purge_erased(db, turn=turn) is True
    db.close()
    begins = [held for sql, held in trace if sql == "BEGIN"]
    assert len(begins) >= 2 and all(begins)  # a merge step and its last, at the least
    assert ("PRAGMA wal_checkpoint(TRUNCATE)", True) in trace
    assert ("PRAGMA wal_checkpoint(PASSIVE)", False) in trace
    marks = [held for sql, held in trace if sql == "UPDATE"]
    assert marks and all(marks), trace
    assert trace[-1] == ("COMMIT", True)  # the marks in one transaction, committed inside the turn
    assert index_blocks_holding(path, word) == 0 and _files_holding(path, word) == []


class _TurnHeldElsewhere(WritersTurn):
    """A process's writers' turn that another writer holds from the purge's ``PASSIVE`` checkpoint on: taking it then
    waits as long as it is allowed to and goes on without it, as a turn held longer would."""

    def __init__(self) -> None:
        super().__init__()
        self.held_elsewhere = False
        self.waits: list[float] = []

    @contextmanager
    def taken(self, seconds: float) -> Iterator[float | None]:
        if not self.held_elsewhere:
            with super().taken(seconds) as left:
                yield left
            return
        self.waits.append(seconds)
        time.sleep(seconds)
        yield 0.0


def test_the_truncations_wait_for_its_turn_stays_within_retry_seconds(tmp_path: Path) -> None:
    """A reader of an older state refuses the truncation and another writer of the process holds the turn: the
    purge gives up after ``retry_seconds`` (0.2), each try waiting for its turn only as long as is left of them (it
    waited ``TURN_WAIT_SECONDS``, 1 s, for the first try)."""
    path = tmp_path / "m.sqlite3"
    store, service = _service(path, DeletionMode.IMMEDIATE)
    for n in range(3):
        service.append(ALEX, INSTANCE, Scope.USER, None, f"- fact {n}")
    store.close()
    reader, purger = (sqlite3.connect(path, isolation_level=None, timeout=10) for _ in range(2))
    purger.execute("DELETE FROM entries WHERE rowid = (SELECT min(rowid) FROM entries)")
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM entries").fetchone()
    turn = _TurnHeldElsewhere()
    purger.set_trace_callback(lambda sql: "PASSIVE" in sql and setattr(turn, "held_elsewhere", True))
    started = time.monotonic()
    done = purge_erased(purger, retry_seconds=0.2, turn=turn)
    took = time.monotonic() - started
    reader.execute("COMMIT")
    for connection in (reader, purger):
        connection.close()
    assert done is False and turn.waits and max(turn.waits) <= 0.2 and took < 0.6, (turn.waits, took)
