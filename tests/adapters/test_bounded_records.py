"""A page of records costs the same store work however many records the partition holds.

Issue #14's acceptance: an audit read at 100,000 events costs what it costs at
100. SQLite: statements, rows read back and VM steps (SQLite's own measure of
the work of scans and seeks) are counted by ``SqliteMemoryStore.measure()``.
Cosmos DB: round trips and the items answered; the test server scans every item
of the container for any query, so its latency and flat 1 RU say nothing here -
what the app controls and this shows is one TOP/ORDER BY query per page (a real
account serves it from the index: docs/cosmos.md).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_core.adapters import cosmos_documents as docs
from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain import hold_requests
from memory_core.domain.audit import AuditAction, AuditEvent
from memory_core.domain.deletion import DeletionKind, DeletionRequest, DeletionStatus
from memory_core.domain.records import Partition, Record, RecordKind
from memory_core.domain.service import MemoryService

UPN = "alex@contoso.com"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _events(instance: str, count: int) -> list[Record]:
    records = []
    for n in range(count):
        event = AuditEvent(T0 + timedelta(microseconds=n), UPN, AuditAction.APPEND, instance, UPN, entry_id=f"e{n}")
        records.append(Record(Partition(instance, UPN), RecordKind.AUDIT,
                              f"{event.time.isoformat()}~{n:012x}", event.to_data()))
    return records


def _seed_sqlite(path: Path, records: list[Record]) -> None:
    # Written in one transaction straight into the store's table: 100,000 events
    # one put_record at a time would dominate the test's run time.
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO records (instance_id, owner, kind, id, data, etag) VALUES (?,?,?,?,?,?)",
            [(r.partition.instance_id, r.partition.owner, r.kind, r.id, json.dumps(r.data), "etag") for r in records],
        )


def _page_cost(store: SqliteMemoryStore | CosmosMemoryStore, instance: str, **paging: object) -> tuple[object, int]:
    service = MemoryService(store)
    with store.measure() as metrics:
        page = service.audit_page(instance, UPN, limit=100, **paging)  # type: ignore[arg-type]
    return metrics, len(page.items)


def test_sqlite_audit_page_at_100000_events_costs_what_it_costs_at_100(tmp_path: Path) -> None:
    """One statement, a page of rows and (within 10%) the same VM steps at 100 and at 100,000 events,
    for the first page, a deep page, and newest first."""
    store = SqliteMemoryStore(tmp_path / "bounded.sqlite3")
    try:
        _seed_sqlite(tmp_path / "bounded.sqlite3", _events("small", 100) + _events("large", 100_000))
        deep = MemoryService(store).audit_page("large", UPN, limit=100)
        for paging in ({}, {"newest_first": True}):
            small, small_items = _page_cost(store, "small", **paging)
            large, large_items = _page_cost(store, "large", **paging)
            print(f"\n{paging}: 100 events {small}; 100,000 events {large}")
            assert small_items == large_items == 100
            # One statement each; rows: the page, plus the one that shows more follow where more do.
            assert (small.round_trips, small.rows, large.round_trips, large.rows) == (1, 100, 1, 101)  # type: ignore[attr-defined]
            assert large.vm_steps <= small.vm_steps * 1.1 + 2  # type: ignore[attr-defined]
        deeper, _ = _page_cost(store, "large", continuation=deep.continuation)
        assert (deeper.round_trips, deeper.rows) == (1, 101)  # type: ignore[attr-defined]
    finally:
        store.close()


def test_cosmos_audit_page_is_one_query_whatever_the_trail(cosmos: CosmosMemoryStore) -> None:
    """One round trip answering 101 items (a page and one to know more follow) at 100 and at 3,000 events."""
    small, large = f"small-{uuid.uuid4().hex[:6]}", f"large-{uuid.uuid4().hex[:6]}"
    with cosmos._operation("seed") as calls:
        for instance, count in ((small, 100), (large, 3_000)):
            items = [docs.record_item(r) for r in _events(instance, count)]
            for at in range(0, count, 100):
                calls.execute_batch([("create", (i,)) for i in items[at:at + 100]], [instance, UPN])
    try:
        for paging in ({}, {"newest_first": True}):
            small_cost, small_items = _page_cost(cosmos, small, **paging)
            large_cost, large_items = _page_cost(cosmos, large, **paging)
            assert small_items == large_items == 100
            assert small_cost.round_trips == large_cost.round_trips == 1  # type: ignore[attr-defined]
        events = MemoryService(cosmos).audit_page(large, UPN, limit=100, newest_first=True).items
        assert [e.entry_id for e in events] == [f"e{n}" for n in range(2_999, 2_899, -1)]
    finally:
        # The Cosmos test server scans its whole container on every query: leave nothing behind.
        with cosmos._operation("unseed") as calls:
            for instance, count in ((small, 100), (large, 3_000)):
                ids = [docs.record_item(r)["id"] for r in _events(instance, count)]
                for at in range(0, count, 100):
                    calls.execute_batch([("delete", (i,)) for i in ids[at:at + 100]], [instance, UPN])


INDEXES = ("deletion_requests_by_status", "deletion_requests_by_user", "deletion_requests_by_user_and_status",
           "deletion_requests_by_id")


def _requests(instance: str, finished: int) -> list[Record]:
    """``finished`` executed requests of 500 other users, then Alex's one pending and one approved request."""
    made = [DeletionRequest(f"r{n}", instance, f"user{n % 500}@contoso.com", DeletionKind.FORGET,
                            DeletionStatus.EXECUTED, "someone", T0 + timedelta(seconds=n), scope="user")
            for n in range(finished)]
    made += [DeletionRequest(f"alex-{status}", instance, UPN, DeletionKind.FORGET, status, UPN,
                             T0 + timedelta(days=1, seconds=n), scope="user")
             for n, status in enumerate((DeletionStatus.PENDING, DeletionStatus.APPROVED))]
    return [r.to_record() for r in made]


def test_sqlite_deletion_listings_by_status_or_user_cost_the_same_at_10_and_10000_finished_requests(
    tmp_path: Path,
) -> None:
    """The operator's pending list and a user's pending, approved or whole list read the same rows and (within 10%)
    the same VM steps whether the instance's one partition of requests holds 10 finished requests or 10,000: the
    schema's partial indexes on status, on user, and on user and status, seek to them."""
    store = SqliteMemoryStore(tmp_path / "requests.sqlite3")
    try:
        _seed_sqlite(tmp_path / "requests.sqlite3", _requests("small", 10) + _requests("large", 10_000))
        custody = MemoryService(store).custody
        for status, upn, expected in ((DeletionStatus.PENDING, None, ["alex-pending"]),
                                      (DeletionStatus.PENDING, UPN, ["alex-pending"]),
                                      (DeletionStatus.APPROVED, UPN, ["alex-approved"]),
                                      (None, UPN, ["alex-pending", "alex-approved"])):
            costs = []
            for instance in ("small", "large"):
                with store.measure() as metrics:
                    page = custody.page(instance, status, limit=100, upn=upn)
                assert [r.id for r in page.items] == expected
                costs.append(metrics)
            small, large = costs
            print(f"\n{status} {upn}: 10 finished {small}; 10,000 finished {large}")
            assert (small.round_trips, small.rows, large.round_trips, large.rows) == (1, len(expected)) * 2
            assert large.vm_steps <= small.vm_steps * 1.1 + 2
    finally:
        store.close()


def test_sqlite_whether_a_holds_request_is_stored_costs_the_same_at_10_and_10000_finished_requests(
    tmp_path: Path,
) -> None:
    """``hold_requests.request_stored`` (once per hold an orphan-holds page reads) for a stored request reads the same
    rows and (within 10%) VM steps beside 10 or 10,000 finished requests: ``deletion_requests_by_id`` seeks to it.
    Before (no index), each read every request of the instance."""
    store = SqliteMemoryStore(tmp_path / "requests.sqlite3")
    try:
        _seed_sqlite(tmp_path / "requests.sqlite3", _requests("small", 10) + _requests("large", 10_000))
        costs = []
        for instance in ("small", "large"):
            with store.measure() as metrics:
                assert hold_requests.request_stored(store, instance, "alex-pending")
            costs.append(metrics)
        small, large = costs
        print(f"\n10 finished {small}; 10,000 finished {large}")
        assert (small.round_trips, small.rows, large.round_trips, large.rows) == (1, 1) * 2
        assert large.vm_steps <= small.vm_steps * 1.1 + 2
    finally:
        store.close()


def test_a_version_7_file_gains_the_deletion_request_indexes(tmp_path: Path) -> None:
    """Opening a file of the previous layout creates the indexes in its upgrade, and its requests still list."""
    path = tmp_path / "old.sqlite3"
    SqliteMemoryStore(path).close()
    _seed_sqlite(path, _requests("i", 3))
    with sqlite3.connect(path) as db:
        for name in INDEXES:
            db.execute(f"DROP INDEX {name}")
        db.execute("PRAGMA user_version=7")
    store = SqliteMemoryStore(path)
    try:
        names = {row[0] for row in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert set(INDEXES) <= names
        assert [r.id for r in MemoryService(store).custody.page("i", DeletionStatus.PENDING, limit=10, upn=UPN).items
                ] == ["alex-pending"]
    finally:
        store.close()


def test_cosmos_deletion_listings_by_status_or_user_are_one_query(cosmos: CosmosMemoryStore) -> None:
    """The operator's pending list and a user's pending, approved and whole lists are each one round trip answering
    only their requests, with 200 finished requests of other users beside them (a real account serves the filters
    on ``/data/*`` from its index: docs/cosmos.md)."""
    instance = f"requests-{uuid.uuid4().hex[:6]}"
    records = _requests(instance, 200)
    for record in records:
        cosmos.put_record(record)
    custody = MemoryService(cosmos).custody
    try:
        for status, upn, expected in ((DeletionStatus.PENDING, None, ["alex-pending"]),
                                      (DeletionStatus.PENDING, UPN, ["alex-pending"]),
                                      (DeletionStatus.APPROVED, UPN, ["alex-approved"]),
                                      (None, UPN, ["alex-pending", "alex-approved"])):
            with cosmos.measure() as metrics:
                page = custody.page(instance, status, limit=100, upn=upn)
            assert [r.id for r in page.items] == expected
            assert metrics.round_trips == 1  # type: ignore[attr-defined]
    finally:
        # The Cosmos test server scans its whole container on every query: leave nothing behind.
        for record in records:
            cosmos.delete_record(record.partition, record.kind, record.id)
