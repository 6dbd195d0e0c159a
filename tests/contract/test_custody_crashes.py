"""Custody across a crash between its writes, on every store: a deletion request's filing and approval, the sweep,
and the memory tool's commands under custody; what a stopped process left, the next sweep finishes.

Each test stops one of them between two of its writes (a ``Crash`` raised from a wrapped store call), then runs a
sweep as a restarted process would, and checks the custody invariants: a team copy goes with the entry it copies,
every executed request has its ``deletion_executed`` event, and every approved one its ``deletion_approved`` event,
once. An operator's rejection stopped so: ``test_rejection_crashes``; a dismissal: ``test_dismissal_crashes``.
"""

from __future__ import annotations

import pytest

from memory_core.domain.audit import AuditAction
from memory_core.domain.deletion import DeletionStatus
from memory_core.domain.journals import SETTLE
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import SHARED_OWNER, Scope, Share
from memory_core.domain.records import RecordKind
from memory_core.domain.service import PendingDeletion, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock
from tests.support.custody_crashes import (
    INSTANCE,
    Crash,
    crash_once,
    custody_service,
    fresh_caller,
    pending_clear,
)


@pytest.mark.parametrize("kind", ["clear", "purge"])
def test_a_request_filed_without_the_hold_on_team_copies_erases_the_copies_too(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The process stops after the request and the author's hold are stored, before the hold on their team copies:
    once approved and swept, the teammate no longer reads the copy of the erased entry (the sweep planned the
    copies from a stored shared hold, and with none kept them)."""
    clock = TickingClock()
    service, author, teammate = custody_service(store, clock), fresh_caller("author"), fresh_caller("teammate")
    service.append(author, INSTANCE, Scope.USER, None, "- the launch is code-named BLUEFIN",
                   WriteOptions(share=Share.TEAM))
    crash_once(monkeypatch, store, "put_record",
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


def test_a_sweep_stopped_at_its_event_executes_and_audits_the_request_on_the_next_run(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep stops after it erased, sealed and lifted the holds, as it writes the ``deletion_executed`` event:
    the next run executes the request and the trail holds the event (written after the request was marked
    executed, it was lost for good: an executed request is no later sweep's)."""
    clock = TickingClock()
    service, caller = custody_service(store, clock), fresh_caller("alex")
    request_id = pending_clear(service, caller)
    service.custody.approve("op", INSTANCE, request_id)
    crash_once(monkeypatch, store, "put_record", lambda record, *a, **k: record.kind == RecordKind.AUDIT
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
    service, author, teammate = custody_service(store, clock), fresh_caller("author"), fresh_caller("teammate")
    service.append(author, INSTANCE, Scope.USER, None, "- the launch is code-named BLUEFIN",
                   WriteOptions(share=Share.TEAM))
    ((entry,),) = [s.entries for s in store.load_partition(INSTANCE, author.upn)]
    crash_once(monkeypatch, store, "delete_entries", lambda key, *a, **k: key.upn == SHARED_OWNER)
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
    service, caller = custody_service(store, clock), fresh_caller("alex")
    service.append(caller, INSTANCE, Scope.USER, None, "- prefers tea")
    outcome = service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert isinstance(outcome, PendingDeletion)
    if crash == "after-the-decision":
        crash_once(monkeypatch, store, "put_record", lambda record, *a, **k: record.kind == RecordKind.AUDIT
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
    service, caller = custody_service(store, clock), fresh_caller("alex")
    service.append(caller, INSTANCE, Scope.USER, None, "- prefers tea")
    ((entry,),) = [s.entries for s in store.load_partition(INSTANCE, caller.upn)]
    crash_once(monkeypatch, store, "delete_record", lambda partition, kind, *a, **k: kind == "file_retirement")
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
