"""Deletions that race each other answer alike on every store (``domain.custody``, ``domain.entry_removals``).

Cosmos DB lets concurrent writers overlap where SQLite's writes wait for each other, so each race is set up here
deterministically, on each store: the second call runs inside the first, at the moment the first has read what it
decides from.

- Two decisions on one pending request: the one that writes second hears ``not_pending``, as any later call does
  (it heard ``conflict``, "the stored record changed", on Cosmos DB only); a request rewritten but still pending is
  decided.
- Two forgets of one entry: one is taken (one erasure and one ``forget`` event, or one deletion request), the other
  is ``NotFound`` (on Cosmos DB both were taken: two events, or two requests of which either kept the entry hidden
  after the other was rejected).
- A stored request this release cannot read is not decided: ``Conflict`` ``unreadable_request``, not a crash.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain.audit import AuditAction
from memory_core.domain.deletion import DeletionStatus
from memory_core.domain.errors import Conflict, NotFound
from memory_core.domain.file_index import INDEX_KIND
from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope
from memory_core.domain.records import Record, RecordKind, deletions_partition
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import Forgotten, PendingDeletion
from tests.support.clock import TickingClock

INSTANCE = "races"


def _service(store: MemoryStore, mode: DeletionMode = DeletionMode.OPERATOR_APPROVAL) -> tuple[MemoryService, Caller]:
    clock = TickingClock(datetime(2026, 12, 7, 12, 0, tzinfo=UTC), timedelta(microseconds=1))
    return MemoryService(store, deletion_mode=mode, clock=clock), Caller(upn=f"r-{uuid.uuid4().hex[:10]}@contoso.com")


def _inside(monkeypatch: pytest.MonkeyPatch, store: MemoryStore, method: str, when: Callable[..., bool],
            interloper: Callable[[], object], *, after: bool = False) -> list[object]:
    """Run ``interloper`` once, just before (``after``: just after) the first call of ``store.method`` whose
    arguments ``when`` accepts; answers what it answered or raised (one item, once it ran)."""
    real = getattr(store, method)
    ran: list[object] = []

    def interlope() -> None:
        ran.append(None)
        try:
            ran[0] = interloper()
        except Exception as error:  # what it raised is what the test checks
            ran[0] = error

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if ran or not when(*args, **kwargs):
            return real(*args, **kwargs)
        if not after:
            interlope()
            return real(*args, **kwargs)
        answer = real(*args, **kwargs)
        interlope()
        return answer

    monkeypatch.setattr(store, method, wrapped)
    return ran


def _is_request(record: Record, *_: Any, **__: Any) -> bool:
    return record.kind == RecordKind.DELETION_REQUEST


def _pending_forget(service: MemoryService, caller: Caller) -> str:
    entry_id = str(service.append(caller, INSTANCE, Scope.USER, None, "- a fact").entry_id)
    pending = service.forget(caller, INSTANCE, entry_id)
    assert isinstance(pending, PendingDeletion)
    return pending.request_id


def test_the_decision_that_writes_second_hears_not_pending(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    service, caller = _service(store)
    request_id = _pending_forget(service, caller)
    rejected = _inside(monkeypatch, store, "put_record", _is_request,
                       lambda: service.custody.reject("op-b", INSTANCE, request_id, "not this one"))
    with pytest.raises(Conflict) as lost:
        service.custody.approve("op-a", INSTANCE, request_id)
    assert lost.value.code == "not_pending"
    assert getattr(rejected[0], "status", None) is DeletionStatus.REJECTED
    assert service.custody.get(INSTANCE, request_id).status is DeletionStatus.REJECTED


def test_a_request_rewritten_while_still_pending_is_decided(store: MemoryStore,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    service, caller = _service(store)
    request_id = _pending_forget(service, caller)
    (record,) = store.query_records(deletions_partition(INSTANCE), RecordKind.DELETION_REQUEST, {"id": request_id})
    _inside(monkeypatch, store, "put_record", _is_request, lambda: store.put_record(record))  # a new etag, same state
    assert service.custody.approve("op", INSTANCE, request_id).status is DeletionStatus.APPROVED
    assert service.custody.get(INSTANCE, request_id).decided_by == "op"


def _is_index(*args: Any, **kwargs: Any) -> bool:
    return INDEX_KIND in (getattr(args[0], "kind", None), *args[:2])  # get_record(partition, kind, id) or a record


# Where the second forget runs: once the first found the entry visible, before it stands its fence (it reads the
# file index first); or while the first's fence stands (written: the user's first index record, made create-only).
MOMENTS = {"before-the-fence": ("get_record", False), "inside-the-fence": ("create_record", True)}


@pytest.mark.parametrize("moment", list(MOMENTS))
@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
def test_two_forgets_of_one_entry_take_one(store: MemoryStore, monkeypatch: pytest.MonkeyPatch,
                                           mode: DeletionMode, moment: str) -> None:
    service, caller = _service(store, mode)
    entry_id = str(service.append(caller, INSTANCE, Scope.USER, None, "- forget me").entry_id)
    method, after = MOMENTS[moment]
    second = _inside(monkeypatch, store, method, _is_index, lambda: service.forget(caller, INSTANCE, entry_id),
                     after=after)
    first: object
    try:
        first = service.forget(caller, INSTANCE, entry_id)
    except NotFound as error:
        first = error
    assert second, "the second forget ran"
    answers = [first, second[0]]
    # Run before the fence, the second is taken and the first, reading again inside its fence, finds it hidden;
    # run while the first's fence stands, the second finds that forget's fence and the first is taken.
    taken, refused = (second[0], first) if moment == "before-the-fence" else (first, second[0])
    assert isinstance(taken, Forgotten | PendingDeletion) and isinstance(refused, NotFound), answers
    if mode is DeletionMode.IMMEDIATE:
        events = [e for e in service.audit_trail(INSTANCE, caller.upn) if e.action is AuditAction.FORGET]
        assert [e.entry_id for e in events] == [entry_id]
    else:
        requests = service.custody.page(INSTANCE, None, limit=100, upn=caller.upn).items
        assert [r.entry_id for r in requests] == [entry_id]
        service.custody.reject("op", INSTANCE, requests[0].id, "keep it")
        # No other request keeps it hidden once the one taken is rejected.
        assert [e.id for e in service.entries(caller, INSTANCE, Scope.USER, None)] == [entry_id]


@pytest.mark.parametrize("change", [{"requested_by": None}, {"erased_entries": {"entries": 3}}, {"kind": "archive"}])
def test_a_request_this_release_cannot_read_is_not_decided(store: MemoryStore, change: dict[str, object]) -> None:
    service, _ = _service(store)
    data = {"id": "later", "instance_id": INSTANCE, "upn": "later@contoso.com", "kind": "purge", "status": "pending",
            "requested_by": "op", "requested_on": "2026-01-01T00:00:00+00:00", **change}
    store.put_record(Record(deletions_partition(INSTANCE), RecordKind.DELETION_REQUEST,
                            "2026-01-01T00:00:00.000000Z~later", data))
    for decide in (lambda: service.custody.approve("op", INSTANCE, "later"),
                   lambda: service.custody.reject("op", INSTANCE, "later", "no")):
        with pytest.raises(Conflict) as refused:
            decide()
        assert refused.value.code == "unreadable_request"
    (unreadable,) = service.custody.page(INSTANCE, None, limit=10).unreadable
    assert unreadable.id == "later"
