"""Custody across a crash between its writes, on every store: what a stopped process left, the next sweep finishes.

Each test stops a deletion request's filing, an operator's rejection or dismissal, or the sweep between two of its
writes (a ``Crash`` raised from a wrapped store call, or from the sweep's fault seam), then runs a sweep as a
restarted process would, and checks the custody invariants: a team copy goes with the entry it copies, a hold belongs
to a pending or approved request, every executed request has its ``deletion_executed`` event, and every dismissed
request its ``deletion_dismissed`` event, once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from memory_core.domain.audit import AuditAction
from memory_core.domain.deletion import DeletionStatus
from memory_core.domain.dismissals import KIND as DISMISSAL_KIND
from memory_core.domain.dismissals import SWEPT, record_sha256
from memory_core.domain.errors import Conflict, NotFound
from memory_core.domain.identity import Caller
from memory_core.domain.journals import SETTLE
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import SHARED_OWNER, Scope, Share
from memory_core.domain.records import Partition, Record, RecordKind, deletions_partition
from memory_core.domain.service import DeletionMode, MemoryService, PendingDeletion, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock
from tests.support.later_release import put_unreadable_request

INSTANCE = "crashes"


class Crash(Exception):
    pass


def _service(store: MemoryStore, clock: TickingClock) -> MemoryService:
    return MemoryService(store, clock=clock, deletion_mode=DeletionMode.OPERATOR_APPROVAL,
                         default_sharing=SharingPolicy.TEAM, allow_sharing_override=True)


def _caller(name: str) -> Caller:
    return Caller(upn=f"{name}-{uuid.uuid4().hex[:10]}@contoso.com")


def _crash_once(monkeypatch: pytest.MonkeyPatch, store: MemoryStore, method: str, when: Callable[..., bool]) -> None:
    """The first call of ``store.method`` that ``when`` picks raises ``Crash`` before it writes anything."""
    real = getattr(store, method)
    armed = [True]

    def stopped(*args: Any, **kwargs: Any) -> Any:
        if armed[0] and when(*args, **kwargs):
            armed[0] = False
            raise Crash(method)
        return real(*args, **kwargs)

    monkeypatch.setattr(store, method, stopped)


def _pending_clear(service: MemoryService, caller: Caller, share: Share = Share.PRIVATE) -> str:
    """``caller`` appends one entry to user memory and clears it: the id of the clear's pending request."""
    service.append(caller, INSTANCE, Scope.USER, None, "- prefers tea", WriteOptions(share=share))
    outcome = service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert isinstance(outcome, PendingDeletion)
    return outcome.request_id


def _holds(store: MemoryStore, *owners: str) -> list[Record]:
    return [h for owner in owners for h in store.query_records(Partition(INSTANCE, owner), RecordKind.HOLD)]


@pytest.mark.parametrize("kind", ["clear", "purge"])
def test_a_request_filed_without_the_hold_on_team_copies_erases_the_copies_too(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The process stops after the request and the author's hold are stored, before the hold on their team copies:
    once approved and swept, the teammate no longer reads the copy of the erased entry (the sweep planned the
    copies from a stored shared hold, and with none kept them)."""
    clock = TickingClock()
    service, author, teammate = _service(store, clock), _caller("author"), _caller("teammate")
    service.append(author, INSTANCE, Scope.USER, None, "- the launch is code-named BLUEFIN", WriteOptions(share=Share.TEAM))
    _crash_once(monkeypatch, store, "put_record",
                lambda record, *a, **k: record.kind == RecordKind.HOLD and record.partition.owner == SHARED_OWNER)
    with pytest.raises(Crash):
        if kind == "clear":
            service.clear(author, INSTANCE, Scope.USER, None, confirm=True)
        else:
            service.custody.request_purge("op", INSTANCE, author.upn)
    monkeypatch.undo()
    (request,) = service.custody.list(INSTANCE)
    service.custody.approve("op", INSTANCE, request.id)
    (done,) = service.custody.sweep(instance_id=INSTANCE).executed
    assert done.id == request.id
    assert "BLUEFIN" not in service.get(teammate, INSTANCE, Scope.USER, None, SharingPolicy.TEAM).content_markdown
    assert all(s.entries == [] for s in store.load_partition(INSTANCE, SHARED_OWNER))


def test_a_rejection_stopped_before_its_holds_were_lifted_is_finished_by_the_sweep(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process stops after the rejection is stored, before its holds are lifted: a retried rejection hears
    "not pending" and no sweep executes a rejected request, so the holds hid the cleared memory for good. The sweep
    after the journal settled lifts them and writes the rejection's event once."""
    clock = TickingClock()
    service, caller = _service(store, clock), _caller("alex")
    request_id = _pending_clear(service, caller, Share.TEAM)
    _crash_once(monkeypatch, store, "delete_record", lambda partition, kind, *a, **k: kind == RecordKind.HOLD)
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
    service, caller = _service(store, clock), _caller("alex")
    request_id = _pending_clear(service, caller)
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
    service, caller, teammate = _service(store, clock), _caller("alex"), _caller("teammate")
    request_id = _pending_clear(service, caller, Share.TEAM)
    owner = caller.upn if stopped_at == "the-users-hold" else SHARED_OWNER
    _crash_once(monkeypatch, store, "delete_record",
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
    service, caller = _service(store, clock), _caller("alex")
    request_id = _pending_clear(service, caller)
    _crash_once(monkeypatch, store, "put_record", lambda record, *a, **k: record.kind == RecordKind.DELETION_REQUEST
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
    service = _service(store, TickingClock())
    _later_request(store)
    with pytest.raises(NotFound):
        service.custody.reject("op", INSTANCE, "no-such-request", "kept by policy")
    with pytest.raises(Conflict) as refused:
        service.custody.reject("op", INSTANCE, LATER_ID, "kept by policy")
    assert refused.value.code == "unreadable_request"
    assert store.query_records(deletions_partition(INSTANCE), "rejection") == []


def test_a_sweep_stopped_at_its_event_executes_and_audits_the_request_on_the_next_run(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep stops after it erased, sealed and lifted the holds, as it writes the ``deletion_executed`` event:
    the next run executes the request and the trail holds the event (written after the request was marked
    executed, it was lost for good: an executed request is no later sweep's)."""
    clock = TickingClock()
    service, caller = _service(store, clock), _caller("alex")
    request_id = _pending_clear(service, caller)
    service.custody.approve("op", INSTANCE, request_id)
    _crash_once(monkeypatch, store, "put_record", lambda record, *a, **k: record.kind == RecordKind.AUDIT
                and record.data.get("action") == AuditAction.DELETION_EXECUTED.value)
    with pytest.raises(Crash):
        service.custody.sweep(instance_id=INSTANCE)
    monkeypatch.undo()
    assert [r.id for r in service.custody.sweep(instance_id=INSTANCE).executed] == [request_id]
    assert store.load_partition(INSTANCE, caller.upn)[0].entries == []
    actions = [e.action for e in service.audit.read(INSTANCE, caller.upn)]
    assert actions.count(AuditAction.DELETION_EXECUTED) == 1


def test_a_memory_tool_edit_stopped_while_dropping_a_team_shared_version_withdraws_its_copy(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An insert into a team-shared fact's file keeps its whole text in a private new version and drops the old one
    with its team copy. The process stops as it erases the copy: after the sweep the copy is gone and the drop is
    audited (the entry was erased first, and the retirement's replay skips a version no longer stored)."""
    clock = TickingClock()
    service, author, teammate = _service(store, clock), _caller("author"), _caller("teammate")
    service.append(author, INSTANCE, Scope.USER, None, "- the launch is code-named BLUEFIN", WriteOptions(share=Share.TEAM))
    ((entry,),) = [s.entries for s in store.load_partition(INSTANCE, author.upn)]
    _crash_once(monkeypatch, store, "delete_entries", lambda key, *a, **k: key.upn == SHARED_OWNER)
    with pytest.raises(Crash):
        MemoryFiles(service).execute(author, INSTANCE, None, {
            "command": "insert", "path": f"/memories/appended/{entry.id}.md", "insert_line": 0,
            "insert_text": "- it ships in March"})
    monkeypatch.undo()
    clock.now += 2 * SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    assert store.get_entry(INSTANCE, author.upn, entry.id) is None
    assert all(s.entries == [] for s in store.load_partition(INSTANCE, SHARED_OWNER))
    assert "BLUEFIN" not in service.get(teammate, INSTANCE, Scope.USER, None, SharingPolicy.TEAM).content_markdown
    assert "BLUEFIN" in service.get(author, INSTANCE, Scope.USER, None).content_markdown
    events = [e for e in service.audit.read(INSTANCE, author.upn)
              if e.action is AuditAction.MEMORY_FILE and e.entry_id == entry.id]
    assert events and events[0].content_sha256 == entry.content_sha256


@pytest.mark.parametrize("crash", ["after-the-decision", "after-the-event"])
def test_an_approval_stopped_between_its_decision_and_its_event_is_audited_once_by_the_sweep(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, crash: str
) -> None:
    """The process stops after the approval is stored, as it writes the ``deletion_approved`` event (or just after
    it): a retried approval hears "not pending", so the trail kept an approved, then executed request with no
    approval in it. The sweep writes the event the decision names (one record whoever writes it: never twice)."""
    clock = TickingClock()
    service, caller = _service(store, clock), _caller("alex")
    service.append(caller, INSTANCE, Scope.USER, None, "- prefers tea")
    outcome = service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert isinstance(outcome, PendingDeletion)
    if crash == "after-the-decision":
        _crash_once(monkeypatch, store, "put_record", lambda record, *a, **k: record.kind == RecordKind.AUDIT
                    and record.data.get("action") == AuditAction.DELETION_APPROVED.value)
        with pytest.raises(Crash):
            service.custody.approve("op", INSTANCE, outcome.request_id)
        monkeypatch.undo()
        with pytest.raises(Exception, match="not pending"):
            service.custody.approve("op", INSTANCE, outcome.request_id)
    else:
        service.custody.approve("op", INSTANCE, outcome.request_id)
    (done,) = service.custody.sweep(instance_id=INSTANCE).executed
    service.custody.sweep(instance_id=INSTANCE)
    assert done.id == outcome.request_id
    events = [e for e in service.audit.read(INSTANCE, caller.upn) if e.request_id == outcome.request_id]
    actions = [e.action for e in events]
    assert actions.count(AuditAction.DELETION_APPROVED) == 1
    assert actions.index(AuditAction.DELETION_APPROVED) < actions.index(AuditAction.DELETION_EXECUTED)
    (approved,) = [e for e in events if e.action is AuditAction.DELETION_APPROVED]
    assert approved.actor == "op" and approved.time == done.decided_on


def test_a_memory_tool_delete_stopped_before_its_journal_closed_files_no_second_request_after_a_rejection(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A memory-tool delete under approval files its forget, then stops before it erases its retirement journal. An
    operator rejects the request within the journal's 2 minutes: the entry shows again. The sweep that replays the
    journal afterwards finds the forget made (a request for the entry filed since the command began) and files no
    second request for the operator to reject again."""
    clock = TickingClock()
    service, caller = _service(store, clock), _caller("alex")
    service.append(caller, INSTANCE, Scope.USER, None, "- prefers tea")
    ((entry,),) = [s.entries for s in store.load_partition(INSTANCE, caller.upn)]
    _crash_once(monkeypatch, store, "delete_record", lambda partition, kind, *a, **k: kind == "file_retirement")
    with pytest.raises(Crash):
        MemoryFiles(service).execute(caller, INSTANCE, None, {
            "command": "delete", "path": f"/memories/appended/{entry.id}.md"})
    monkeypatch.undo()
    (request,) = service.custody.list(INSTANCE)
    service.custody.reject("op", INSTANCE, request.id, "kept by policy")
    clock.now += 2 * SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    assert [(r.id, r.status) for r in service.custody.list(INSTANCE)] == [(request.id, DeletionStatus.REJECTED)]
    assert "prefers tea" in service.get(caller, INSTANCE, Scope.USER, None).content_markdown


LATER, LATER_ID = "later@contoso.com", "from-a-later-release"  # ``put_unreadable_request``'s user and request


def _later_request(store: MemoryStore) -> Record:
    """A pending request of a later release's kind, stored: the record an operator dismisses."""
    put_unreadable_request(store, INSTANCE, status="pending", request_id=LATER_ID)
    (record,) = store.query_records(deletions_partition(INSTANCE), RecordKind.DELETION_REQUEST, {"id": LATER_ID})
    return record


def _dismissed_events(service: MemoryService) -> list[Any]:
    return [e for e in service.audit.read(INSTANCE, LATER) if e.action is AuditAction.DELETION_DISMISSED]


def _dismissal_journals(store: MemoryStore) -> list[Record]:
    return store.query_records(deletions_partition(INSTANCE), DISMISSAL_KIND)


def test_a_dismissal_stopped_after_its_erasure_is_audited_once_by_the_sweep(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process stops after the record is erased, as it writes the ``deletion_dismissed`` event: a retried
    dismissal hears 404, so the erasure had no event (before, only a log line). The sweep after the journal settled
    writes it, naming the record, its digest and the operator, once however often it runs; the journal was marked
    ``erased`` right after the erasure, so the event claims the dismissal, with no doubt (``SWEPT``)."""
    clock = TickingClock()
    service = _service(store, clock)
    record = _later_request(store)
    _crash_once(monkeypatch, store, "create_record", lambda record, *a, **k: record.kind == RecordKind.AUDIT
                and record.data.get("action") == AuditAction.DELETION_DISMISSED.value)
    with pytest.raises(Crash):
        service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    monkeypatch.undo()
    assert service.custody.page(INSTANCE, None, limit=10).unreadable == []  # erased
    service.custody.sweep(instance_id=INSTANCE)
    assert _dismissed_events(service) == []  # under way: left to finish itself
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    service.custody.sweep(instance_id=INSTANCE)
    (event,) = _dismissed_events(service)
    assert (event.actor, event.request_id, event.content_sha256) == ("op", LATER_ID, record_sha256(record))
    assert event.detail is not None and record.id in event.detail and SWEPT not in event.detail
    assert _dismissal_journals(store) == []


def test_a_journal_an_earlier_build_left_between_its_erasure_and_its_mark_is_audited_as_not_known_to_be_its(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dismissal of an earlier build erased the record, then stopped as it marked the journal ``erased`` (its
    erasure and its mark were two writes; now they are one unit, ``MemoryStore.delete_record_and_put``): the sweep
    finds the record gone and an unmarked journal, which it cannot tell from an erasure by another hand; it writes
    the event once, saying so (``SWEPT``)."""
    clock = TickingClock()
    service = _service(store, clock)
    record = _later_request(store)
    _crash_before_the_erasure(service, store, monkeypatch)
    assert store.delete_record(record.partition, RecordKind.DELETION_REQUEST, record.id, etag=record.etag)
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    service.custody.sweep(instance_id=INSTANCE)
    (event,) = _dismissed_events(service)
    assert event.content_sha256 == record_sha256(record)
    assert event.detail is not None and SWEPT in event.detail
    assert _dismissal_journals(store) == []


def _crash_after_the_erasure(service: MemoryService, store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dismissal that erases the request record and stops as it writes its event."""
    _crash_once(monkeypatch, store, "create_record", lambda record, *a, **k: record.kind == RecordKind.AUDIT
                and record.data.get("action") == AuditAction.DELETION_DISMISSED.value)
    with pytest.raises(Crash):
        service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    monkeypatch.undo()


def _stored_again(store: MemoryStore) -> Record:
    """The request stored again by a later release, under the same key, as it now stands (another status)."""
    put_unreadable_request(store, INSTANCE, status="done", request_id=LATER_ID)
    (record,) = store.query_records(deletions_partition(INSTANCE), RecordKind.DELETION_REQUEST, {"id": LATER_ID})
    return record


def test_a_dismissal_of_a_request_stored_again_finishes_the_journal_of_the_version_a_crash_erased(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dismissal erases the request and stops before its event; a later release stores the request again (under the
    same key, a new etag) and the operator dismisses that version. The first dismissal did erase its version (its
    journal is marked so): the second finishes that journal, and the trail holds both events, each with its
    version's digest and neither in doubt (before, the second dismissal erased the first's journal as one of a
    version no one erased, and the first erasure was never audited)."""
    clock = TickingClock()
    service = _service(store, clock)
    first = _later_request(store)
    _crash_after_the_erasure(service, store, monkeypatch)
    second = _stored_again(store)
    assert second.id == first.id and record_sha256(second) != record_sha256(first)
    service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    assert _dismissal_journals(store) == []
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    events = _dismissed_events(service)
    assert len(events) == 2
    assert {e.content_sha256 for e in events} == {record_sha256(first), record_sha256(second)}
    assert all(e.detail is not None and SWEPT not in e.detail for e in events)


def test_a_journal_of_an_erasure_whose_request_was_stored_again_is_audited_by_the_sweep(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dismissal erases the request and stops before its event; a later release stores the request again, and no
    one dismisses it. The record is stored under the journal's key, but the journal is marked ``erased``: the sweep
    writes the first dismissal's event once (before, it dropped the journal as one a rewrite won), and the request
    stored again stays listed."""
    clock = TickingClock()
    service = _service(store, clock)
    first = _later_request(store)
    _crash_after_the_erasure(service, store, monkeypatch)
    _stored_again(store)
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    service.custody.sweep(instance_id=INSTANCE)
    (event,) = _dismissed_events(service)
    assert event.content_sha256 == record_sha256(first) and event.detail is not None and SWEPT not in event.detail
    assert _dismissal_journals(store) == []
    assert [(u.id, u.status) for u in service.custody.page(INSTANCE, None, limit=10).unreadable] == [(LATER_ID, "done")]


def test_a_dismissal_stopped_before_its_erasure_leaves_the_request_and_writes_no_event(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process stops after the journal is written, as it erases the record: the request stays stored as it was
    (listed, dismissible), and the sweep drops the journal with no event. A dismissal after it is audited once."""
    clock = TickingClock()
    service = _service(store, clock)
    record = _later_request(store)
    _crash_once(monkeypatch, store, "delete_record_and_put", lambda *a, **k: True)
    with pytest.raises(Crash):
        service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    monkeypatch.undo()
    assert _dismissal_journals(store) != []
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    service.custody.sweep(instance_id=INSTANCE)
    assert _dismissal_journals(store) == []
    stored = store.get_record(deletions_partition(INSTANCE), RecordKind.DELETION_REQUEST, record.id)
    assert stored is not None and (stored.data, stored.etag) == (record.data, record.etag)
    assert [u.id for u in service.custody.page(INSTANCE, None, limit=10).unreadable] == [LATER_ID]
    assert _dismissed_events(service) == []

    service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    assert len(_dismissed_events(service)) == 1


def test_a_dismissal_retried_at_once_after_a_crash_before_its_erasure_is_audited_once(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retry, before the sweep dropped the first attempt's journal, takes that journal over (one per version of
    the record): the record is erased and audited once, and the sweep afterwards writes no second event."""
    clock = TickingClock()
    service = _service(store, clock)
    _later_request(store)
    _crash_once(monkeypatch, store, "delete_record_and_put", lambda *a, **k: True)
    with pytest.raises(Crash):
        service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    monkeypatch.undo()
    service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    assert len(_dismissed_events(service)) == 1
    assert _dismissal_journals(store) == []


def test_a_dismissal_replayed_after_its_event_was_written_writes_none_again(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process stops after the event, as it erases its journal: the sweep finishes the journal (the record is
    gone) and finds the event written: it erases the journal and leaves the event as the dismissal wrote it."""
    clock = TickingClock()
    service = _service(store, clock)
    _later_request(store)
    _crash_once(monkeypatch, store, "delete_record", lambda partition, kind, *a, **k: kind == DISMISSAL_KIND)
    with pytest.raises(Crash):
        service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    monkeypatch.undo()
    (written,) = _dismissed_events(service)
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    service.custody.sweep(instance_id=INSTANCE)
    assert _dismissed_events(service) == [written]
    assert _dismissal_journals(store) == []


def _crash_before_the_erasure(service: MemoryService, store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dismissal that stops after its journal, as it erases the request record: the record stays as stored."""
    _crash_once(monkeypatch, store, "delete_record_and_put", lambda *a, **k: True)
    with pytest.raises(Crash):
        service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    monkeypatch.undo()


def test_a_dismissal_of_a_rewritten_request_closes_the_journal_of_the_version_a_crash_left_and_is_audited_once(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dismissal stops before its erasure; a later release rewrites the request (still unreadable here) and the
    operator dismisses that version. The first journal named a version no one erased: the second dismissal closes it
    before it begins its own, so the trail holds one event, with the rewritten version's digest (before, the sweep
    finished the old journal too, as the record was gone, and the trail told of two dismissals)."""
    clock = TickingClock()
    service = _service(store, clock)
    record = _later_request(store)
    _crash_before_the_erasure(service, store, monkeypatch)
    rewritten = store.put_record(replace(record, data={**record.data, "status": "done"}))
    assert rewritten.etag != record.etag
    service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    assert _dismissal_journals(store) == []  # the old version's closed by the dismissal itself
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    (event,) = _dismissed_events(service)
    assert event.content_sha256 == record_sha256(rewritten) != record_sha256(record)
    assert event.detail is not None and SWEPT not in event.detail


def test_a_journal_whose_request_was_rewritten_is_dropped_by_the_sweep_with_no_event(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dismissal stops before its erasure and the request is rewritten (stored under another etag): the rewrite
    won; the sweep drops the journal, writes nothing, and the request stays listed as rewritten."""
    clock = TickingClock()
    service = _service(store, clock)
    record = _later_request(store)
    _crash_before_the_erasure(service, store, monkeypatch)
    store.put_record(replace(record, data={**record.data, "status": "done"}))
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    assert _dismissal_journals(store) == []
    assert _dismissed_events(service) == []
    assert [u.status for u in service.custody.page(INSTANCE, None, limit=10).unreadable] == ["done"]


def test_a_journal_whose_request_another_hand_erased_is_audited_as_not_known_to_be_this_dismissals(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dismissal stops before its erasure; the record is then erased by another hand (a later release deciding it,
    an expiry), which wrote no event here. The sweep cannot tell who erased it: it writes the event once, saying so
    (``SWEPT``), rather than claiming a dismissal (before, it did)."""
    clock = TickingClock()
    service = _service(store, clock)
    record = _later_request(store)
    _crash_before_the_erasure(service, store, monkeypatch)
    assert store.delete_record(record.partition, RecordKind.DELETION_REQUEST, record.id)
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    service.custody.sweep(instance_id=INSTANCE)
    (event,) = _dismissed_events(service)
    assert event.detail is not None and SWEPT in event.detail
    assert _dismissal_journals(store) == []


def test_a_journal_whose_request_was_erased_and_told_by_another_hand_is_dropped_with_no_event(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, but the hand that erased the request told it in the trail (a later event naming the request, as a
    later release executing it writes): the sweep drops the journal and writes no dismissal."""
    clock = TickingClock()
    service = _service(store, clock)
    record = _later_request(store)
    _crash_before_the_erasure(service, store, monkeypatch)
    assert store.delete_record(record.partition, RecordKind.DELETION_REQUEST, record.id)
    service.audit.record(AuditAction.DELETION_EXECUTED, actor="sweep", instance_id=INSTANCE, upn=LATER,
                         request_id=LATER_ID)
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    assert _dismissed_events(service) == []
    assert _dismissal_journals(store) == []
