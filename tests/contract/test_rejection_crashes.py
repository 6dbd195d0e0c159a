"""An operator's rejection across a crash between its writes, on every store: the next sweep finishes it.

Each test stops a rejection between two of its writes (a ``Crash`` raised from a wrapped store call), then runs a
sweep as a restarted process would, and checks the custody invariants: a hold belongs to a pending or approved
request (the holds of a rejected one are lifted, even once the request expired), and a rejection's event is written
once, or none when no rejection was decided.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory_core.domain.audit import AuditAction
from memory_core.domain.deletion import DeletionStatus
from memory_core.domain.errors import Conflict, NotFound
from memory_core.domain.journals import SETTLE
from memory_core.domain.models import SHARED_OWNER, Scope, Share
from memory_core.domain.records import Partition, Record, RecordKind, deletions_partition
from memory_core.domain.service import MemoryService
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock
from tests.support.custody_crashes import (
    INSTANCE,
    LATER_ID,
    Crash,
    crash_once,
    custody_service,
    fresh_caller,
    later_request,
    pending_clear,
)


def _holds(store: MemoryStore, *owners: str) -> list[Record]:
    return [h for owner in owners for h in store.query_records(Partition(INSTANCE, owner), RecordKind.HOLD)]


def test_a_rejection_stopped_before_its_holds_were_lifted_is_finished_by_the_sweep(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process stops after the rejection is stored, before its holds are lifted: a retried rejection hears
    "not pending" and no sweep executes a rejected request, so the holds hid the cleared memory for good. The sweep
    after the journal settled lifts them and writes the rejection's event once."""
    clock = TickingClock()
    service, caller = custody_service(store, clock), fresh_caller("alex")
    request_id = pending_clear(service, caller, Share.TEAM)
    crash_once(monkeypatch, store, "delete_record", lambda partition, kind, *a, **k: kind == RecordKind.HOLD)
    with pytest.raises(Crash):
        service.custody.reject("op", INSTANCE, request_id, "kept by policy")
    monkeypatch.undo()
    assert service.custody.sweep(instance_id=INSTANCE).executed == []  # under way: left to finish itself
    assert _holds(store, caller.upn, SHARED_OWNER)
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    service.custody.sweep(instance_id=INSTANCE)
    assert _holds(store, caller.upn, SHARED_OWNER) == []
    assert "prefers tea" in service.get(caller, INSTANCE, Scope.USER, None).content_markdown
    (request,) = service.custody.list(INSTANCE)
    assert request.status is DeletionStatus.REJECTED
    actions = [e.action for e in service.audit.read(INSTANCE, caller.upn)]
    assert actions.count(AuditAction.DELETION_REJECTED) == 1


def test_a_rejection_of_a_request_approved_meanwhile_lifts_no_hold(store: MemoryStore) -> None:
    """A rejection that lost to an approval leaves its journal for the sweep, which finds the request approved:
    the holds stay until the sweep has erased what they hide."""
    clock = TickingClock()
    service, caller = custody_service(store, clock), fresh_caller("alex")
    request_id = pending_clear(service, caller)
    service.custody.approve("op", INSTANCE, request_id)
    with pytest.raises(Exception, match="not pending"):
        service.custody.reject("op", INSTANCE, request_id, "too late")
    clock.now += SETTLE
    (done,) = service.custody.sweep(instance_id=INSTANCE).executed
    assert done.status is DeletionStatus.EXECUTED
    assert store.load_partition(INSTANCE, caller.upn)[0].entries == []
    assert store.query_records(deletions_partition(INSTANCE), "rejection") == []  # the journal closed


def _expire(store: MemoryStore, service: MemoryService, request_id: str) -> None:
    """The decided request's record erased as its retention would erase it (a day after its decision at the earliest):
    Cosmos DB's ttl expires it with no sweep, before any sweep replays the rejection's journal. Erased by hand, on
    both stores, since the test server keeps no clock of its own to expire it by."""
    (request,) = [r for r in service.custody.list(INSTANCE) if r.id == request_id]
    store.delete_record(deletions_partition(INSTANCE), RecordKind.DELETION_REQUEST, request.record_id)


@pytest.mark.parametrize("stopped_at", ["the-users-hold", "the-team-shared-hold"])
def test_a_rejection_stopped_before_its_holds_were_lifted_whose_request_expired_is_finished_by_the_sweep(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, stopped_at: str
) -> None:
    """The process stops after the rejection is stored, as it lifts the user's hold (or, that one lifted, the one on
    their team-shared copies), and the rejected request expires before any sweep finishes the rejection. Before, the
    sweep found no request for the journal, which named no user, and closed it: the holds hid the memory for good
    (until an operator's orphan-holds release). The journal names the user now: the sweep lifts what still stands,
    the memory shows again to the user and the teammate, and the user's trail tells it once, a ``hold_released`` by
    the sweep naming the rejecting operator; no orphan is left to list, and the journal is closed."""
    clock = TickingClock()
    service, caller, teammate = custody_service(store, clock), fresh_caller("alex"), fresh_caller("teammate")
    request_id = pending_clear(service, caller, Share.TEAM)
    owner = caller.upn if stopped_at == "the-users-hold" else SHARED_OWNER
    crash_once(monkeypatch, store, "delete_record",
                lambda partition, kind, *a, **k: kind == RecordKind.HOLD and partition.owner == owner)
    with pytest.raises(Crash):
        service.custody.reject("op", INSTANCE, request_id, "kept by policy")
    monkeypatch.undo()
    _expire(store, service, request_id)
    clock.now += timedelta(days=1)

    service.custody.sweep(instance_id=INSTANCE)
    service.custody.sweep(instance_id=INSTANCE)

    assert _holds(store, caller.upn, SHARED_OWNER) == []
    assert "prefers tea" in service.get(caller, INSTANCE, Scope.USER, None).content_markdown
    assert "prefers tea" in service.get(teammate, INSTANCE, Scope.USER, None, SharingPolicy.TEAM).content_markdown
    assert store.query_records(deletions_partition(INSTANCE), "rejection") == []
    (event,) = [e for e in service.audit.read(INSTANCE, caller.upn) if e.action is AuditAction.HOLD_RELEASED]
    assert (event.actor, event.request_id) == ("sweep", request_id)
    lifted = 2 if stopped_at == "the-users-hold" else 1
    assert event.detail is not None and f"released {lifted} hold(s)" in event.detail and "by op" in event.detail
    assert service.custody.orphan_holds(INSTANCE, limit=100).holds == []


def test_a_rejection_stopped_before_its_decision_whose_request_was_executed_and_expired_lifts_and_tells_nothing(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process stops as the rejection stores its decision: the request stays pending, an operator approves it
    and a sweep executes it within the journal's 2 minutes (the sweep lifts its holds), then the executed request
    expires. The journal's replay finds no request: it lifts nothing, writes no event (no ``hold_released``, no
    ``deletion_rejected``: no rejection was decided) and is closed; the erased memory stays erased."""
    clock = TickingClock()
    service, caller = custody_service(store, clock), fresh_caller("alex")
    request_id = pending_clear(service, caller)
    crash_once(monkeypatch, store, "put_record", lambda record, *a, **k: record.kind == RecordKind.DELETION_REQUEST
                and record.data.get("status") == DeletionStatus.REJECTED.value)
    with pytest.raises(Crash):
        service.custody.reject("op", INSTANCE, request_id, "kept by policy")
    monkeypatch.undo()
    service.custody.approve("op", INSTANCE, request_id)
    (done,) = service.custody.sweep(instance_id=INSTANCE).executed
    assert done.id == request_id and store.query_records(deletions_partition(INSTANCE), "rejection")  # waiting
    _expire(store, service, request_id)
    clock.now += timedelta(days=1)

    service.custody.sweep(instance_id=INSTANCE)

    assert store.query_records(deletions_partition(INSTANCE), "rejection") == []
    actions = [e.action for e in service.audit.read(INSTANCE, caller.upn)]
    assert AuditAction.HOLD_RELEASED not in actions and AuditAction.DELETION_REJECTED not in actions
    assert store.load_partition(INSTANCE, caller.upn)[0].entries == []
    assert "prefers tea" not in service.get(caller, INSTANCE, Scope.USER, None).content_markdown


def test_a_rejection_of_no_request_or_of_one_this_release_cannot_read_journals_nothing(store: MemoryStore) -> None:
    """Refused before anything is written: 404 for no such request, 409 ``unreadable_request`` for a later release's
    (a journal of either would name no user for the sweep, and finish nothing)."""
    service = custody_service(store, TickingClock())
    later_request(store)
    with pytest.raises(NotFound):
        service.custody.reject("op", INSTANCE, "no-such-request", "kept by policy")
    with pytest.raises(Conflict) as refused:
        service.custody.reject("op", INSTANCE, LATER_ID, "kept by policy")
    assert refused.value.code == "unreadable_request"
    assert store.query_records(deletions_partition(INSTANCE), "rejection") == []
