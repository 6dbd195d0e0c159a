"""The SQLite store's read checkpoints: the table and triggers of schema 7, and the bound per partition."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_checkpoints import KEPT_PER_PARTITION
from memory_core.adapters.sqlite_schema import SCHEMA_VERSION
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.checkpoints import CHECKPOINT_MIN_SECTIONS, StoredCheckpoint, read_key
from memory_core.domain.identity import Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import MemoryService

ALEX = Caller(upn="alex@contoso.com", name="Alex")
USER_KEY = ProfileKey("i", ALEX.upn, Scope.USER)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    opened = SqliteMemoryStore(tmp_path / "checkpoints.sqlite3")
    yield opened
    opened.close()


def _stamped(store: SqliteMemoryStore) -> StoredCheckpoint:
    MemoryService(store).append(ALEX, "i", Scope.USER, None, "- a fact")
    return StoredCheckpoint(store.partition_stamp("i", ALEX.upn), "{}")


def test_a_partition_keeps_its_most_recently_kept_checkpoints_only(store: SqliteMemoryStore) -> None:
    checkpoint = _stamped(store)
    for n in range(KEPT_PER_PARTITION):
        assert store.keep_checkpoint("i", ALEX.upn, f"read-{n}", checkpoint)
    for _ in range(3):  # one read kept again and again must not push the others out
        assert store.keep_checkpoint("i", ALEX.upn, "read-0", checkpoint)
    assert all(store.read_checkpoint("i", ALEX.upn, f"read-{n}") for n in range(KEPT_PER_PARTITION))
    assert store.keep_checkpoint("i", ALEX.upn, "read-new", checkpoint)
    kept = [n for n in range(KEPT_PER_PARTITION) if store.read_checkpoint("i", ALEX.upn, f"read-{n}")]
    assert kept == [0, *range(2, KEPT_PER_PARTITION)]  # read-1 was the least recently kept
    assert store.read_checkpoint("i", ALEX.upn, "read-new") is not None


def test_another_partitions_writes_leave_a_checkpoint_alone(store: SqliteMemoryStore) -> None:
    checkpoint = _stamped(store)
    assert store.keep_checkpoint("i", ALEX.upn, "read", checkpoint)
    bea = Caller(upn="bea@contoso.com", name="Bea")
    service = MemoryService(store)
    entry_id = service.append(bea, "i", Scope.USER, None, "- Bea's").entry_id
    store.delete_entries(ProfileKey("i", bea.upn, Scope.USER), [entry_id or ""])
    service.append(ALEX, "other-instance", Scope.USER, None, "- Alex in another instance")
    assert store.read_checkpoint("i", ALEX.upn, "read") == checkpoint


def test_a_store_of_the_previous_layout_gains_checkpoints_and_their_triggers_on_open(tmp_path: Path) -> None:
    path = tmp_path / "v6.sqlite3"
    old = SqliteMemoryStore(path)
    service = MemoryService(old)
    for n in range(CHECKPOINT_MIN_SECTIONS + 1):
        service.append(ALEX, "i", Scope.USER, None, f"- fact {n}")
    old.close()
    db = sqlite3.connect(path)
    for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='trigger' AND name LIKE 'checkpoint_%'"):
        db.execute(f"DROP TRIGGER {name}")
    db.execute("DROP TABLE read_checkpoints")
    db.execute("PRAGMA user_version=6")
    db.commit()
    db.close()

    reopened = SqliteMemoryStore(path)
    try:
        upgraded = MemoryService(reopened)
        upgraded.get(ALEX, "i", Scope.USER, None)
        key = read_key([USER_KEY], ALEX.upn)
        assert reopened.read_checkpoint("i", ALEX.upn, key) is not None
        upgraded.clear(ALEX, "i", Scope.USER, None, confirm=True)  # a hold: the trigger erases the checkpoint
        assert reopened.read_checkpoint("i", ALEX.upn, key) is None
        assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    finally:
        reopened.close()


def test_a_checkpoint_the_domain_cannot_read_is_passed_over_for_a_full_read(store: SqliteMemoryStore) -> None:
    service = MemoryService(store)
    for n in range(CHECKPOINT_MIN_SECTIONS + 1):
        service.append(ALEX, "i", Scope.USER, None, f"- fact {n}")
    expected = service.get(ALEX, "i", Scope.USER, None).content_markdown
    key = read_key([USER_KEY], ALEX.upn)
    stamp = store.partition_stamp("i", ALEX.upn)
    for payload in ("not json", '{"format": 99}', '{"format": 1, "profiles": ["someone else"]}',
                    '{"format": 1, "sequence": 1, "profiles": ["memory:user:alex@contoso.com"], "scopes": [{}]}'):
        assert store.keep_checkpoint("i", ALEX.upn, key, StoredCheckpoint(stamp, payload))
        fresh = MemoryService(store)
        assert fresh.get(ALEX, "i", Scope.USER, None).content_markdown == expected
        assert fresh._snapshots is not None and (fresh._snapshots.restores, fresh._snapshots.rebuilds) == (0, 1)


@pytest.mark.alone
def test_a_read_does_not_wait_behind_another_processs_write_lock_to_keep_its_checkpoint(
    store: SqliteMemoryStore,
) -> None:
    import time

    service = MemoryService(store)
    for n in range(CHECKPOINT_MIN_SECTIONS):
        service.append(ALEX, "i", Scope.USER, None, f"- fact {n}")
    other = sqlite3.connect(store._db.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process, in the middle of a long write
    try:
        fresh = MemoryService(SqliteMemoryStore(store._db.path, busy_timeout_seconds=5))
        started = time.perf_counter()
        view = fresh.get(ALEX, "i", Scope.USER, None)
        assert time.perf_counter() - started < 1.0  # not the 5 s busy timeout
        assert "- fact 0" in view.content_markdown
        cache = fresh._snapshots
        assert cache is not None and cache._checkpoints is not None and cache._checkpoints.refused == 1
        assert fresh.store._db.connection().execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    finally:
        other.execute("ROLLBACK")
        other.close()
    fresh.get(ALEX, "i", Scope.USER, None)  # the lock is gone: the next read keeps it
    assert store.read_checkpoint("i", ALEX.upn, read_key([USER_KEY], ALEX.upn)) is not None
