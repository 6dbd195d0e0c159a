"""A sweep reports, on every store, the approved requests it left for a later run and why (``domain.sweeps``).

A step that runs past the store's deadline (Cosmos DB: ``COSMOS_OPERATION_TIMEOUT``, the SDK's retries included;
SQLite: its busy timeout, another writer holding the file) leaves its request approved for the next run, and the run
goes on. The run's result names it (id, kind, user, reason ``deadline``), so the operator's answer, the CLI and the
timer's log line can; a run that executes every approved request leaves none.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, cast

import pytest
import requests
from azure.core.pipeline.transport import RequestsTransport, RequestsTransportResponse

from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.custody import CustodyService
from memory_core.domain.deletion import DeletionKind, DeletionStatus
from memory_core.domain.identity import Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.records import RecordKind, deletions_partition
from memory_core.domain.service import DeletionMode, MemoryService, PendingDeletion
from memory_core.domain.store import MemoryStore
from memory_core.domain.sweeps import LeftReason, LeftRequest
from tests.adapters.cosmos_support import cosmos_settings, own_container
from tests.support.clock import TickingClock
from tests.support.cosmos_server import CosmosServer
from tests.support.later_release import put_unreadable_request
from tests.support.server_threads import write_locked

INSTANCE = "sweep-reports"

Blocked = Callable[[], AbstractContextManager[None]]


class _Throttling(RequestsTransport):
    """Passes every request on, but answers item requests 429 (retry after 400 ms) while ``on``: a throttled account,
    which the SDK retries until the operation's deadline."""

    def __init__(self) -> None:
        super().__init__()
        self.on = False

    def send(self, request, **kwargs):  # type: ignore[no-untyped-def]
        if not self.on or "/docs" not in request.url:
            return super().send(request, **kwargs)
        raw = requests.Response()
        raw.status_code = 429
        raw.headers.update({"content-type": "application/json", "x-ms-request-charge": "0",
                            "x-ms-retry-after-ms": "400", "x-ms-substatus": "3200"})
        raw._content = b'{"code": "TooManyRequests", "message": "injected by the test transport"}'
        raw.url = request.url
        return RequestsTransportResponse(request, raw)


@pytest.fixture(params=["sqlite", "cosmos"])
def slow_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[MemoryStore, Blocked]]:
    """A store with a short deadline (SQLite 1 s, Cosmos DB 3 s), and a block inside which its writes run past it:
    SQLite's file held by another writer's transaction; a Cosmos DB account throttling every item request.

    Cosmos DB's deadline covers a whole operation, round trips to the test server included: on a loaded machine
    (the suite's parallel workers beside it) an unthrottled read took over 1 s and was reported left too."""
    if request.param == "sqlite":
        path = tmp_path / "slow.sqlite3"
        sqlite = SqliteMemoryStore(path, busy_timeout_seconds=1)
        yield sqlite, lambda: write_locked(str(path))
        sqlite.close()
        return
    account = cast(CosmosServer, request.getfixturevalue("cosmos_account"))
    with own_container(account, "sweep-reports") as container:
        transport = _Throttling()
        cosmos = CosmosMemoryStore.from_settings(
            cosmos_settings(account, container=container, cosmos_operation_timeout=3), transport=transport)

        @contextmanager
        def throttled() -> Iterator[None]:
            transport.on = True
            try:
                yield
            finally:
                transport.on = False

        yield cosmos, throttled
        cosmos.close()


class _DeletesPastTheDeadline:
    """The store, its entry deletions made while ``blocked`` (everything else passes through)."""

    def __init__(self, store: MemoryStore, blocked: Blocked) -> None:
        self._store, self._blocked, self.blocked_once = store, blocked, threading.Event()

    def delete_entries(self, key: ProfileKey, entry_ids: Sequence[str]) -> int:
        if self.blocked_once.is_set():
            return self._store.delete_entries(key, entry_ids)
        self.blocked_once.set()
        with self._blocked():
            return self._store.delete_entries(key, entry_ids)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _service(store: MemoryStore) -> MemoryService:
    return MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)


def _approved_clear(service: MemoryService, entries: int) -> tuple[Caller, str]:
    caller = Caller(upn=f"reports-{uuid.uuid4().hex[:10]}@contoso.com")
    for n in range(entries):
        service.append(caller, INSTANCE, Scope.USER, None, f"- fact {n}")
    outcome = service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert isinstance(outcome, PendingDeletion)
    service.custody.approve("op", INSTANCE, outcome.request_id)
    return caller, outcome.request_id


def test_a_clear_past_the_stores_deadline_is_reported_left_and_a_later_sweep_executes_it(
    slow_store: tuple[MemoryStore, Blocked],
) -> None:
    """Two approved clears; the first one's erasure runs past the store's deadline: the run executes the second and
    reports the first left (its id, kind, user, reason ``deadline``), still approved; the next run executes it and
    reports none left."""
    store, blocked = slow_store
    service = _service(store)
    first, first_id = _approved_clear(service, 3)
    second, second_id = _approved_clear(service, 2)
    slow = _DeletesPastTheDeadline(store, blocked)
    sweeper = CustodyService(cast(MemoryStore, slow), service.audit, clock=TickingClock(),
                             new_id=lambda: uuid.uuid4().hex)

    result = sweeper.sweep(instance_id=INSTANCE)

    assert [r.id for r in result.executed] == [second_id]
    (left,) = result.left
    assert (left.request_id, left.instance_id, left.upn, left.kind, left.reason, left.code) == (
        first_id, INSTANCE, first.upn, DeletionKind.CLEAR, LeftReason.DEADLINE, "unavailable")
    assert service.custody.get(INSTANCE, first_id).status is DeletionStatus.APPROVED
    later = service.custody.sweep(instance_id=INSTANCE)
    assert [r.id for r in later.executed] == [first_id] and later.left == []
    assert all(s.entries == [] for u in (first, second) for s in store.load_partition(INSTANCE, u.upn))


def test_a_sweep_that_executes_every_approved_request_reports_none_left(store: MemoryStore) -> None:
    """A clear and a forget, approved: one run executes both and leaves none; a run with nothing to do neither."""
    service = _service(store)
    _, clear_id = _approved_clear(service, 2)
    caller = Caller(upn=f"reports-{uuid.uuid4().hex[:10]}@contoso.com")
    entry_id = str(service.append(caller, INSTANCE, Scope.USER, None, "- one fact").entry_id)
    forget = service.forget(caller, INSTANCE, entry_id)
    assert isinstance(forget, PendingDeletion)
    service.custody.approve("op", INSTANCE, forget.request_id)

    result = service.custody.sweep(instance_id=INSTANCE)

    assert sorted(r.id for r in result.executed) == sorted([clear_id, forget.request_id]) and result.left == []
    assert service.custody.sweep(instance_id=INSTANCE).left == []


def test_an_approved_request_this_release_cannot_read_is_reported_left_as_unreadable(store: MemoryStore) -> None:
    """An approved request of a kind this release does not know (a later release's): the run executes the others
    and reports it left, its kind unknown, reason ``unreadable``; it stays stored as it was."""
    service = _service(store)
    _, clear_id = _approved_clear(service, 1)
    put_unreadable_request(store, INSTANCE)

    result = service.custody.sweep(instance_id=INSTANCE)

    assert [r.id for r in result.executed] == [clear_id]
    (left,) = result.left
    assert left == LeftRequest("from-a-later-release", INSTANCE, "later@contoso.com", None, LeftReason.UNREADABLE,
                               "unreadable_request", left.message)
    assert "ValueError" in left.message and "archive" in left.message
    stored = store.query_records(deletions_partition(INSTANCE), RecordKind.DELETION_REQUEST, {"kind": "archive"})
    assert [r.data["status"] for r in stored] == ["approved"]
