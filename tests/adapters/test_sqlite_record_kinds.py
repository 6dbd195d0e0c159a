"""The record kind written into the SQLite store's statements (``sqlite_records.with_kind``).

``records`` has partial indexes on ``kind``; a kind bound as ``?`` made SQLite prepare the statement again at
every call. These pin that every statement the records paths run is prepared once (counted by SQLite itself), that
a kind which could change a statement is refused, and that kinds made up at run time do not grow the texts kept.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest

from memory_core.adapters import sqlite_database
from memory_core.adapters.sqlite_records import KIND_TEXTS, with_kind
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.models import EntryKind, Hold, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.records import ABSENT, Partition, Record, RecordKind

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
UPN = "alex@contoso.com"
PARTITION = Partition("kinds", UPN)
_REPREPARE = 5  # SQLITE_STMTSTATUS_REPREPARE
_ROW, _DONE = 100, 101


class _Recording(sqlite3.Connection):
    """A real connection that keeps the text and parameters of every statement it runs."""

    ran: ClassVar[list[tuple[str, tuple[Any, ...]]]] = []  # the test's own list, set by its fixture

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:  # type: ignore[override]
        self.ran.append((sql, tuple(parameters)))
        return super().execute(sql, parameters)


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[SqliteMemoryStore, list[Any]]]:
    ran: ClassVar[list[tuple[str, tuple[Any, ...]]]] = []  # the test's own list, set by its fixture
    monkeypatch.setattr(_Recording, "ran", ran)
    connect = sqlite3.connect
    monkeypatch.setattr(sqlite_database.sqlite3, "connect", lambda *a, **k: connect(*a, factory=_Recording, **k))
    store = SqliteMemoryStore(tmp_path / "kinds.sqlite3")
    yield store, ran
    store.close()


def _every_record_path(store: SqliteMemoryStore) -> None:
    """One call of each store operation that picks records by kind (and the loads and append that read some)."""
    request = Record(PARTITION, RecordKind.DELETION_REQUEST, "r1", {"status": "pending", "upn": UPN})
    stored = store.put_record(request)
    store.put_record(Record(PARTITION, request.kind, request.id, {"status": "approved", "upn": UPN}, stored.etag))
    store.create_record(Record(PARTITION, RecordKind.AUDIT, "a1", {"action": "append"}))
    store.put_records([Record(PARTITION, RecordKind.AUDIT, "a2", {}, ABSENT)])
    store.put_record(Record(PARTITION, RecordKind.HOLD, "h1", Hold("h1", None).to_data()))
    assert store.get_record(PARTITION, RecordKind.DELETION_REQUEST, "r1") is not None
    assert store.query_records(PARTITION, RecordKind.DELETION_REQUEST, {"status": "approved"})
    assert store.page_records(PARTITION, RecordKind.AUDIT, limit=1, after="a9", descending=True)
    assert store.query_records_of_owner(UPN, RecordKind.DELETION_REQUEST, {"upn": UPN})
    key = ProfileKey(PARTITION.instance_id, UPN, Scope.USER)
    store.append(MemoryProfile(key, "Alex", "alex", None, T0, T0),
                 MemoryEntry(uuid.uuid4().hex, key, "- a fact", EntryKind.APPEND, T0, UPN))  # the partition's seal
    assert store.load([key])[0].holds  # the partition's holds
    store.seal_partition(PARTITION.instance_id, UPN, T0)
    assert not store.delete_record(PARTITION, RecordKind.AUDIT, "gone", "its-etag")  # the delete and its check
    assert store.delete_record(PARTITION, RecordKind.AUDIT, "a1")


def _reprepared(path: Path, sql: str, params: tuple[Any, ...], steps: int) -> int:
    """How many times SQLite prepared ``sql`` again over ``steps`` runs, each with ``params`` bound anew, on its
    own connection to ``path`` (``sqlite3`` does not hand out its statements), inside a rolled-back transaction."""
    found = ctypes.util.find_library("sqlite3")
    if found is None:
        pytest.skip("no libsqlite3 to count re-preparations with")
    lib = ctypes.CDLL(found)
    lib.sqlite3_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.sqlite3_prepare_v2.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                       ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    lib.sqlite3_bind_text.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p]
    lib.sqlite3_bind_int64.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int64]
    lib.sqlite3_bind_null.argtypes = [ctypes.c_void_p, ctypes.c_int]
    for name in ("sqlite3_step", "sqlite3_reset", "sqlite3_finalize"):
        getattr(lib, name).argtypes = [ctypes.c_void_p]
    lib.sqlite3_stmt_status.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    lib.sqlite3_exec.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.sqlite3_close.argtypes = [ctypes.c_void_p]
    db, stmt = ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.sqlite3_open(str(path).encode(), ctypes.byref(db)) == 0
    try:
        assert lib.sqlite3_exec(db, b"BEGIN IMMEDIATE", None, None, None) == 0
        assert lib.sqlite3_prepare_v2(db, sql.encode(), -1, ctypes.byref(stmt), None) == 0, sql
        for _ in range(steps):
            for i, value in enumerate(params, 1):
                if value is None:
                    lib.sqlite3_bind_null(stmt, i)
                elif isinstance(value, int):
                    lib.sqlite3_bind_int64(stmt, i, value)
                else:
                    lib.sqlite3_bind_text(stmt, i, str(value).encode(), -1, ctypes.c_void_p(-1))  # SQLITE_TRANSIENT
            while (code := lib.sqlite3_step(stmt)) == _ROW:
                pass
            assert code == _DONE, sql
            lib.sqlite3_reset(stmt)
        return int(lib.sqlite3_stmt_status(stmt, _REPREPARE, 0))
    finally:
        lib.sqlite3_finalize(stmt)
        lib.sqlite3_exec(db, b"ROLLBACK", None, None, None)
        lib.sqlite3_close(db)


def test_every_statement_on_records_is_prepared_once(
    recorded: tuple[SqliteMemoryStore, list[Any]], tmp_path: Path
) -> None:
    """Each statement the records paths ran against ``records``, run 20 times with its parameters bound anew,
    is prepared again 0 times by SQLite's own count (with the kind bound, every run was: 20)."""
    store, ran = recorded
    _every_record_path(store)
    store.close()
    on_records = {(sql, params) for sql, params in ran if " records " in f"{sql} " and "kind" in sql and params}
    assert len({sql for sql, _ in on_records}) >= 10  # every path above reached its statements
    reprepared = {sql: _reprepared(tmp_path / "kinds.sqlite3", sql, params, 20) for sql, params in on_records}
    assert reprepared == dict.fromkeys(reprepared, 0)


def test_a_bound_kind_is_prepared_again_at_every_run(tmp_path: Path) -> None:
    """What the above guards against, on the same schema: the same read with the kind bound (the mechanism)."""
    SqliteMemoryStore(tmp_path / "kinds.sqlite3").close()
    sql = "SELECT data FROM records WHERE instance_id=? AND owner=? AND kind=? AND id=?"
    assert _reprepared(tmp_path / "kinds.sqlite3", sql, ("i", UPN, RecordKind.HOLD, "h1"), 20) == 20


@pytest.mark.parametrize("kind", ["", "Hold", "a-b", "x' OR '1'='1", "hold'--", "k" * 41, "hold\n"])
def test_a_kind_that_could_change_a_statement_is_refused(tmp_path: Path, kind: str) -> None:
    """Only lowercase letters, digits and underscores (1-40) are written into a statement; any other kind is
    refused with ``ValueError`` by every call that takes one (a ``Record`` of it cannot even be made, so none is
    written that could not be read back), and nothing is read or written."""
    store = SqliteMemoryStore(tmp_path / "kinds.sqlite3")
    try:
        kept = store.put_record(Record(PARTITION, RecordKind.AUDIT, "a1", {"action": "append"}))
        calls = [
            lambda: store.get_record(PARTITION, kind, "a1"),
            lambda: store.query_records(PARTITION, kind),
            lambda: store.page_records(PARTITION, kind, limit=5),
            lambda: store.query_records_of_owner(UPN, kind),
            lambda: store.delete_record(PARTITION, kind, "a1"),
            lambda: store.delete_record(PARTITION, kind, "a1", kept.etag),
            lambda: store.put_record(_slipped_past(Record(PARTITION, RecordKind.AUDIT, "a1", {}, kept.etag), kind)),
            lambda: Record(PARTITION, kind, "a2", {}),
        ]
        for call in calls:
            with pytest.raises(ValueError, match="not a record kind"):
                call()
        assert store.query_records(PARTITION, RecordKind.AUDIT) == [kept]
    finally:
        store.close()


def _slipped_past(record: Record, kind: str) -> Record:
    """``record`` with ``kind`` set after it was made, past ``Record``'s own check: what reaches the store's guard
    (``with_kind``) if that check were ever bypassed."""
    object.__setattr__(record, "kind", kind)
    return record


def test_kinds_made_up_at_run_time_keep_at_most_the_cached_texts(tmp_path: Path) -> None:
    """Kinds are code constants, but a caller naming new ones without end grows no cache past ``KIND_TEXTS``
    texts (sqlite3's own cache of prepared statements is bounded per connection too)."""
    store = SqliteMemoryStore(tmp_path / "kinds.sqlite3")
    try:
        for n in range(KIND_TEXTS + 100):
            kind = "kind_" + "".join(chr(ord("a") + int(d)) for d in str(n))
            assert store.get_record(PARTITION, kind, "a1") is None
        assert with_kind.cache_info().currsize <= KIND_TEXTS
        assert store.get_record(PARTITION, RecordKind.AUDIT, "a1") is None  # and the usual kinds still work
    finally:
        store.close()
