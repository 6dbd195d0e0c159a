"""Retention: audit events and finished deletion requests expire; memory, holds and undecided requests never do.

On the SQLite store (the sweep step erases what expired); Cosmos DB's per-item
ttl is checked in tests/adapters/test_cosmos_retention.py.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.deletion import DeletionStatus
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import Scope
from memory_core.domain.records import Partition, Record, RecordKind
from memory_core.domain.service import DeletionMode, MemoryService, PendingDeletion
from memory_core.settings import Settings
from tests.support.clock import TickingClock

ALEX = Caller(upn="alex@contoso.com", name="Alex")


def _service(store: SqliteMemoryStore, clock: TickingClock, days: int | None) -> MemoryService:
    retention = timedelta(days=days) if days is not None else None
    return MemoryService(store, clock=clock, deletion_mode=DeletionMode.OPERATOR_APPROVAL,
                         audit_retention=retention, finished_deletion_retention=retention)


def _audit(store: SqliteMemoryStore) -> list[Record]:
    return store.query_records(Partition("i", ALEX.upn), RecordKind.AUDIT)


def test_audit_events_expire_at_the_sweep_after_the_retention(store: SqliteMemoryStore) -> None:
    """30 days: the sweep 29 days on keeps the events, 31 days on erases them; the memory stays."""
    clock = TickingClock()
    service = _service(store, clock, 30)
    service.append(ALEX, "i", Scope.USER, None, "- kept forever")
    clock.now += timedelta(days=29)
    service.custody.sweep()
    assert [r.data["action"] for r in _audit(store)] == ["append"]
    clock.now += timedelta(days=2)
    service.custody.sweep()
    assert _audit(store) == []
    assert "kept forever" in service.get(ALEX, "i", Scope.USER, None).content_markdown


def test_finished_requests_expire_but_holds_and_undecided_requests_never(store: SqliteMemoryStore) -> None:
    """Executed and rejected requests go after the retention; pending and approved ones, and holds, stay."""
    clock = TickingClock()
    service = _service(store, clock, 7)
    ids = {}
    for name in ("executed", "rejected", "approved", "pending"):  # one agent scope each
        service.append(ALEX, "i", Scope.AGENT, AgentContext(f"/agents/{name}"), f"- {name}")
        outcome = service.clear(ALEX, "i", Scope.AGENT, AgentContext(f"/agents/{name}"), confirm=True)
        assert isinstance(outcome, PendingDeletion)
        ids[name] = outcome.request_id
    service.custody.approve("op", "i", ids["executed"])
    service.custody.sweep()
    service.custody.reject("op", "i", ids["rejected"], "no")
    service.custody.approve("op", "i", ids["approved"])
    clock.now += timedelta(days=8)
    store.erase_expired_records(clock.now)  # the sweep's own step, without executing "approved"
    left = {r.id: r.status.value for r in service.custody.list("i")}
    assert set(left.values()) == {DeletionStatus.APPROVED.value, DeletionStatus.PENDING.value}
    holds = store.query_records(Partition("i", ALEX.upn), RecordKind.HOLD)
    assert {h.id for h in holds} == {ids["approved"], ids["pending"]}
    assert "- pending" not in service.get(ALEX, "i", Scope.AGENT, AgentContext("/agents/pending")).content_markdown


def test_without_retention_nothing_expires(store: SqliteMemoryStore) -> None:
    """The default keeps every audit event and every finished request forever."""
    clock = TickingClock()
    service = _service(store, clock, None)
    service.append(ALEX, "i", Scope.USER, None, "- x")
    outcome = service.clear(ALEX, "i", Scope.USER, None, confirm=True)
    assert isinstance(outcome, PendingDeletion)
    service.custody.approve("op", "i", outcome.request_id)
    service.custody.sweep()
    clock.now += timedelta(days=36500)
    service.custody.sweep()
    assert len(_audit(store)) == 4 and [r.status for r in service.custody.list("i")] == [DeletionStatus.EXECUTED]


def test_settings_default_to_keep_forever() -> None:
    """MEMORY_AUDIT_RETENTION_DAYS and MEMORY_DELETION_RETENTION_DAYS are unset by default, >= 1 when set."""
    settings = Settings()
    assert settings.memory_audit_retention_days is None and settings.memory_deletion_retention_days is None
    assert Settings(memory_audit_retention_days=90).memory_audit_retention_days == 90
    with pytest.raises(ValueError):
        Settings(memory_deletion_retention_days=0)


def test_a_version_4_database_gains_expiry(tmp_path: Path) -> None:
    """A file written before retention opens, keeps its records and can store expiring ones."""
    path = tmp_path / "v2.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE records (instance_id TEXT NOT NULL, owner TEXT NOT NULL, kind TEXT NOT NULL, id TEXT NOT NULL,"
            " data TEXT NOT NULL, etag TEXT NOT NULL, PRIMARY KEY (instance_id, owner, kind, id));"
            "INSERT INTO records VALUES ('i', 'u', 'audit', 'old', '{}', 'e');"
            "PRAGMA user_version=4;"
        )
    store = SqliteMemoryStore(path)
    try:
        store.put_record(Record(Partition("i", "u"), "audit", "new", {}, expires_on=datetime(2026, 1, 1, tzinfo=UTC)))
        assert store.erase_expired_records(datetime(2026, 1, 2, tzinfo=UTC)) == 1
        assert [r.id for r in store.query_records(Partition("i", "u"), "audit")] == ["old"]
    finally:
        store.close()
