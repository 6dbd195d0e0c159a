"""Deletion custody: holds hide, operators decide, the sweep erases idempotently."""

from __future__ import annotations

import logging

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.composition import ScannerOnFirstScan
from memory_core.domain.custody import CustodyService
from memory_core.domain.deletion import DeletionRequest, DeletionStatus
from memory_core.domain.errors import Conflict, InvalidInput, NotFound, SecretDetected
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import ProfileKey, Scope, Share
from memory_core.domain.service import DeletionMode, ImportMode, MemoryService, PendingDeletion, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from tests.support.clock import TickingClock

ALEX = Caller(upn="alex@contoso.com", name="Alex")
AGENT = AgentContext("/agents/a", "A")


class Crash(Exception):
    pass


@pytest.fixture
def service(store: SqliteMemoryStore) -> MemoryService:
    return MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)


def _text(service: MemoryService, scope: Scope = Scope.USER) -> str:
    return service.get(ALEX, "i", scope, AGENT if scope is not Scope.USER else None).content_markdown


def _pending_clear(service: MemoryService) -> str:
    service.append(ALEX, "i", Scope.USER, None, "- one")
    service.append(ALEX, "i", Scope.USER, None, "- two")
    outcome = service.clear(ALEX, "i", Scope.USER, None, confirm=True)
    assert isinstance(outcome, PendingDeletion)
    return outcome.request_id


def test_clear_hides_at_once_but_erases_nothing(service: MemoryService, store: SqliteMemoryStore) -> None:
    """A pending clear hides the scope from reads while every entry is still stored."""
    _pending_clear(service)
    assert _text(service) == ""
    assert service.entries(ALEX, "i", Scope.USER, None) == []
    assert len(store.load_partition("i", ALEX.upn)[0].entries) == 2


def test_memory_written_after_the_clear_request_stays_visible(service: MemoryService) -> None:
    """Only what existed at the request is hidden; later appends show."""
    _pending_clear(service)
    service.append(ALEX, "i", Scope.USER, None, "- after")
    assert "- after" in _text(service) and "- one" not in _text(service)


def test_rejection_restores_the_memory(service: MemoryService) -> None:
    """Rejecting the request shows the hidden entries again."""
    request_id = _pending_clear(service)
    rejected = service.custody.reject("op", "i", request_id, "not verified")
    assert rejected.status is DeletionStatus.REJECTED and rejected.reason == "not verified"
    assert "- one" in _text(service) and "- two" in _text(service)


def test_approval_alone_erases_nothing(service: MemoryService, store: SqliteMemoryStore) -> None:
    """Approved requests stay hidden and stored until the sweep runs."""
    request_id = _pending_clear(service)
    service.custody.approve("op", "i", request_id)
    assert _text(service) == ""
    assert len(store.load_partition("i", ALEX.upn)[0].entries) == 2


def test_sweep_erases_approved_requests_and_records_counts(service: MemoryService, store: SqliteMemoryStore) -> None:
    """The sweep erases the approved request's entries and marks it executed with its counts."""
    request_id = _pending_clear(service)
    service.custody.approve("op", "i", request_id)
    (executed,) = service.custody.sweep().executed
    assert executed.id == request_id and executed.status is DeletionStatus.EXECUTED
    assert executed.erased_entries == 2
    assert store.load_partition("i", ALEX.upn)[0].entries == []
    assert service.get(ALEX, "i", Scope.USER, None).created_on is not None  # profile kept


@pytest.mark.parametrize("reason", [
    "the user pasted ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2,
    "card " + "".join(chr(ord(c) + 0xFEE0) if c.isdigit() else c for c in "4111 1111 1111 1111") + " on file",
], ids=["token", "full-width card"])
def test_a_reason_holding_a_secret_decides_nothing(store: SqliteMemoryStore, reason: str) -> None:
    """With the real scanner, a secret in the reason raises SecretDetected naming the reason; the request stays
    pending, its memory hidden, and no event is written."""
    service = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL,
                            scanner=ScannerOnFirstScan())
    request_id = _pending_clear(service)
    trail_before = service.audit_trail("i", ALEX.upn)
    with pytest.raises(SecretDetected) as refused:
        service.custody.reject("op", "i", request_id, reason)
    assert refused.value.where == "reason"
    assert service.custody.get("i", request_id).status is DeletionStatus.PENDING
    assert _text(service) == "" and service.audit_trail("i", ALEX.upn) == trail_before
    assert service.custody.reject("op", "i", request_id, "checked with the user").status is DeletionStatus.REJECTED


def test_sweep_says_how_many_it_will_execute_and_each_one_it_has(
    service: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    """Progress for an operator waiting on a long sweep: the count first, then one line per executed request with
    its place, its entries and its time; a sweep with nothing approved says nothing."""
    first = _pending_clear(service)
    service.append(ALEX, "i", Scope.USER, None, "- three")
    second = service.forget(ALEX, "i", service.entries(ALEX, "i", Scope.USER, None)[0].id)
    assert isinstance(second, PendingDeletion)
    for request_id in (first, second.request_id):
        service.custody.approve("op", "i", request_id)
    with caplog.at_level(logging.INFO, logger="memory_core.custody"):
        service.custody.sweep()
    lines = [r.getMessage() for r in caplog.records if r.name == "memory_core.custody"]
    assert lines[0] == "sweep: 2 approved deletion requests to execute"
    assert lines[1].startswith(f"sweep: executed deletion request {first} (1 of 2): 2 entries erased in ")
    assert lines[2].startswith(f"sweep: executed deletion request {second.request_id} (2 of 2): 1 entries erased in ")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memory_core.custody"):
        service.custody.sweep()
    assert [r for r in caplog.records if r.name == "memory_core.custody"] == []


def test_sweep_ignores_pending_and_rejected_requests(service: MemoryService, store: SqliteMemoryStore) -> None:
    """Nothing is erased without approval."""
    pending = _pending_clear(service)
    assert service.custody.sweep().executed == []
    service.custody.reject("op", "i", pending, "no")
    assert service.custody.sweep().executed == []
    assert len(store.load_partition("i", ALEX.upn)[0].entries) == 2


def test_sweep_is_idempotent(service: MemoryService) -> None:
    """A second sweep finds nothing more to execute."""
    service.custody.approve("op", "i", _pending_clear(service))
    assert len(service.custody.sweep().executed) == 1
    assert service.custody.sweep().executed == []


@pytest.mark.parametrize("step", ["planned", "erased", "sealed", "unheld"])
def test_sweep_survives_a_crash_between_steps(step: str, service: MemoryService, store: SqliteMemoryStore) -> None:
    """A sweep that crashes after any step hides everything meanwhile and, re-run, executes once with the same counts."""
    request_id = _pending_clear(service)
    service.custody.approve("op", "i", request_id)

    def crash(at: str, request: DeletionRequest) -> None:
        if at == step:
            raise Crash(at)

    crashing = CustodyService(store, service.audit, clock=TickingClock(), new_id=lambda: "x", fault=crash)
    with pytest.raises(Crash):
        crashing.sweep()
    assert _text(service) == ""  # never half-erased or restored
    (executed,) = service.custody.sweep().executed
    assert executed.erased_entries == 2 and executed.status is DeletionStatus.EXECUTED
    assert service.custody.sweep().executed == []
    assert store.load_partition("i", ALEX.upn)[0].entries == []
    assert _text(service) == ""


def test_forget_hides_one_entry(service: MemoryService) -> None:
    """Forgetting an entry hides that entry only, pending approval."""
    kept = service.append(ALEX, "i", Scope.USER, None, "- keep")
    gone = service.append(ALEX, "i", Scope.USER, None, "- forget me")
    outcome = service.forget(ALEX, "i", gone.entry_id or "")
    assert isinstance(outcome, PendingDeletion)
    assert [e.id for e in service.entries(ALEX, "i", Scope.USER, None)] == [kept.entry_id]


def test_forget_of_unknown_or_hidden_entry_is_not_found(service: MemoryService) -> None:
    """An id that is not a visible entry of the caller raises NotFound."""
    gone = service.append(ALEX, "i", Scope.USER, None, "- x")
    service.forget(ALEX, "i", gone.entry_id or "")
    with pytest.raises(NotFound):
        service.forget(ALEX, "i", gone.entry_id or "")
    with pytest.raises(NotFound):
        service.forget(Caller(upn="blake@contoso.com"), "i", "nope")


def test_another_user_cannot_forget_my_entry(service: MemoryService) -> None:
    """Entry ids are looked up in the caller's own partition only."""
    mine = service.append(ALEX, "i", Scope.USER, None, "- mine")
    with pytest.raises(NotFound):
        service.forget(Caller(upn="blake@contoso.com"), "i", mine.entry_id or "")


def test_purge_erases_every_scope_of_the_user_after_approval(service: MemoryService, store: SqliteMemoryStore) -> None:
    """A purge hides then erases user and agent memory and the profiles."""
    service.append(ALEX, "i", Scope.USER, None, "- u")
    service.append(ALEX, "i", Scope.AGENT, AGENT, "- a")
    request = service.custody.request_purge("op", "i", ALEX.upn)
    assert _text(service, Scope.COMBINED) == ""
    service.custody.approve("op", "i", request.id)
    (executed,) = service.custody.sweep().executed
    assert executed.erased_entries == 2 and executed.erased_profiles == 2
    assert store.load_partition("i", ALEX.upn) == []


def test_decisions_only_apply_to_pending_requests(service: MemoryService) -> None:
    """Approving twice, or rejecting an approved request, is a Conflict."""
    request_id = _pending_clear(service)
    service.custody.approve("op", "i", request_id)
    with pytest.raises(Conflict):
        service.custody.approve("op", "i", request_id)
    with pytest.raises(Conflict):
        service.custody.reject("op", "i", request_id, "late")


def test_requests_of_another_instance_are_not_found(service: MemoryService) -> None:
    """An operator acting in instance j cannot decide a request of instance i."""
    request_id = _pending_clear(service)
    with pytest.raises(NotFound):
        service.custody.approve("op", "j", request_id)


def test_audit_records_every_step_without_content(service: MemoryService) -> None:
    """append, request, approval and execution each leave an event with hash and size, never the text."""
    service.append(ALEX, "i", Scope.USER, None, "- very private words")
    outcome = service.clear(ALEX, "i", Scope.USER, None, confirm=True)
    assert isinstance(outcome, PendingDeletion)
    service.custody.approve("op", "i", outcome.request_id)
    service.custody.sweep()
    events = service.audit_trail("i", ALEX.upn)
    assert [e.action.value for e in events] == ["append", "clear_requested", "deletion_approved", "deletion_executed"]
    assert events[0].content_sha256 and events[0].byte_count == len("- very private words")
    assert all("private" not in str(e.to_data()) for e in events)


def test_import_replace_under_approval_holds_the_old_content(service: MemoryService, store: SqliteMemoryStore) -> None:
    """A replace files a replace request: old entries hidden but stored, the new content shown at once."""
    service.append(ALEX, "i", Scope.USER, None, "- old")
    view = service.import_markdown(ALEX, "i", Scope.USER, None, "- new", ImportMode.REPLACE)
    assert view.pending is not None
    (request,) = service.custody.list("i", DeletionStatus.PENDING)
    assert (request.id, request.kind.value, request.scope) == (view.pending.request_id, "replace", "user")
    assert view.content_markdown == "# User memory\n\n- new\n" == _text(service)
    (state,) = store.load([ProfileKey("i", ALEX.upn, Scope.USER)])
    assert sorted(e.content_markdown for e in state.entries) == ["- new", "- old"]


def test_import_replace_holds_the_callers_team_shared_copies(store: SqliteMemoryStore) -> None:
    """The caller's team-shared copies are held with the originals; a rejection shows them again."""
    team = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL,
                         default_sharing=SharingPolicy.TEAM)
    blake = Caller(upn="blake@contoso.com")
    team.append(ALEX, "i", Scope.USER, None, "- team lunch", WriteOptions(share=Share.TEAM))
    assert "team lunch" in team.get(blake, "i", Scope.USER, None).content_markdown
    view = team.import_markdown(ALEX, "i", Scope.USER, None, "- private", ImportMode.REPLACE)
    assert "team lunch" not in team.get(blake, "i", Scope.USER, None).content_markdown
    assert view.pending is not None
    team.custody.reject("op", "i", view.pending.request_id, "keep")
    assert "team lunch" in team.get(blake, "i", Scope.USER, None).content_markdown


def test_import_replace_survives_a_sweep_crash_like_a_clear(service: MemoryService, store: SqliteMemoryStore) -> None:
    """Approved, swept after a crash mid-way: the old content is erased once, the new stays."""
    service.append(ALEX, "i", Scope.USER, None, "- old")
    view = service.import_markdown(ALEX, "i", Scope.USER, None, "- new", ImportMode.REPLACE)
    assert view.pending is not None
    service.custody.approve("op", "i", view.pending.request_id)

    def crash(step: str, request: DeletionRequest) -> None:
        if step == "sealed":
            raise Crash(step)

    crashing = CustodyService(store, service.audit, clock=TickingClock(), new_id=lambda: "x", fault=crash)
    with pytest.raises(Crash):
        crashing.sweep()
    (done,) = service.custody.sweep().executed
    assert done.erased_entries == 1
    assert _text(service) == "# User memory\n\n- new\n"


def test_one_users_requests_page_apart_from_the_instances(service: MemoryService) -> None:
    """``page(upn=...)`` lists that user's requests only (an operator's purge of them included), with the
    status filter, oldest first; its tokens continue only listings of the same kind."""
    bob = Caller(upn="bob@contoso.com", name="Bob")
    alex_clear = _pending_clear(service)
    service.append(bob, "i", Scope.USER, None, "- bob's")
    bob_clear = service.clear(bob, "i", Scope.USER, None, confirm=True)
    assert isinstance(bob_clear, PendingDeletion)
    purge = service.custody.request_purge("olivia@contoso.com", "i", ALEX.upn)
    service.custody.approve("olivia@contoso.com", "i", alex_clear)

    def ids(status: DeletionStatus | None, upn: str | None, limit: int = 100) -> list[str]:
        return [r.id for r in service.custody.page("i", status, limit=limit, upn=upn).items]

    assert ids(None, ALEX.upn) == [alex_clear, purge.id]
    assert ids(None, bob.upn) == [bob_clear.request_id]
    assert ids(DeletionStatus.PENDING, ALEX.upn) == [purge.id]
    assert ids(DeletionStatus.APPROVED, ALEX.upn) == [alex_clear]
    assert ids(DeletionStatus.APPROVED, bob.upn) == []
    assert ids(None, None) == [alex_clear, bob_clear.request_id, purge.id]
    first = service.custody.page("i", None, limit=1, upn=ALEX.upn)
    assert [r.id for r in first.items] == [alex_clear]
    second = service.custody.page("i", None, limit=1, continuation=first.continuation, upn=ALEX.upn)
    assert [r.id for r in second.items] == [purge.id] and second.continuation is None
    with pytest.raises(InvalidInput):
        service.custody.page("i", None, limit=1, continuation=first.continuation)
    instance_token = service.custody.page("i", None, limit=1).continuation
    with pytest.raises(InvalidInput):
        service.custody.page("i", None, limit=1, continuation=instance_token, upn=ALEX.upn)
