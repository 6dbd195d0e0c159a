"""What a sweep reports: the approved requests it left for a later run, and why (``domain.sweeps``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.custody import CustodyService
from memory_core.domain.deletion import DeletionKind, DeletionRequest, DeletionStatus
from memory_core.domain.errors import Conflict, MemoryCoreError, PayloadTooLarge, TimedOut, Unavailable
from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope
from memory_core.domain.service import DeletionMode, MemoryService, PendingDeletion
from memory_core.domain.sweeps import LeftReason, LeftRequest, SweepResult
from tests.support.clock import TickingClock

ALEX = Caller(upn="alex@contoso.com")


@pytest.mark.parametrize(("error", "reason", "code"), [
    (TimedOut("the memory store did not answer in time; retry later"), LeftReason.DEADLINE, "unavailable"),
    (Unavailable("the memory store cannot be reached; retry later"), LeftReason.STORE_UNAVAILABLE, "unavailable"),
    (Unavailable("refused the credential", code="store_access_denied"), LeftReason.STORE_UNAVAILABLE,
     "store_access_denied"),
    (Conflict("the memory profile kept changing during the sweep"), LeftReason.CONFLICT, "conflict"),
    (PayloadTooLarge("the write is larger than a Cosmos DB item may be (2 MB)"), LeftReason.REFUSED,
     "payload_too_large"),
], ids=["deadline", "unavailable", "access-denied", "conflict", "refused"])
def test_a_request_whose_step_fails_is_reported_left_with_the_reason_and_the_error(
    store: SqliteMemoryStore, error: MemoryCoreError, reason: LeftReason, code: str,
) -> None:
    """A step of the approved clear raises ``error``: the run reports it left (id, kind, user, reason, the error's
    code and message), executes nothing, and leaves the request approved."""
    service = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    service.append(ALEX, "i", Scope.USER, None, "- a fact")
    outcome = service.clear(ALEX, "i", Scope.USER, None, confirm=True)
    assert isinstance(outcome, PendingDeletion)
    service.custody.approve("op", "i", outcome.request_id)

    def fail(step: str, request: DeletionRequest) -> None:
        if step == "erased":
            raise error

    result = CustodyService(store, service.audit, clock=TickingClock(), new_id=lambda: "x", fault=fail).sweep()

    assert result == SweepResult([], [LeftRequest(outcome.request_id, "i", ALEX.upn, DeletionKind.CLEAR, reason, code,
                                                  error.message)])
    assert service.custody.get("i", outcome.request_id).status is DeletionStatus.APPROVED


def _left(n: int, reason: LeftReason = LeftReason.DEADLINE) -> LeftRequest:
    return LeftRequest(f"r{n}", "i", ALEX.upn, DeletionKind.CLEAR, reason, "unavailable", "no answer in time")


def test_the_summary_names_each_request_left_with_its_kind_and_reason() -> None:
    """The timer's log line: counts, then each left request as id (kind: reason); an unreadable one's kind is
    unknown."""
    executed = DeletionRequest("done", "i", ALEX.upn, DeletionKind.FORGET, DeletionStatus.EXECUTED, "op",
                               datetime(2026, 1, 1, tzinfo=UTC))
    unreadable = LeftRequest("later", "i", None, None, LeftReason.UNREADABLE, "unreadable_request", "cannot be read")
    result = SweepResult([executed], [_left(1), unreadable])
    assert result.summary() == ("executed 1 deletion request(s), left 2 for a later sweep: r1 (clear: deadline), "
                                "later (unknown kind: unreadable)")
    assert SweepResult([executed]).summary() == "executed 1 deletion request(s), left 0 for a later sweep"


def test_the_summary_names_at_most_twenty_and_counts_the_rest() -> None:
    """A run that left thousands (the store down) logs one line of bounded length."""
    line = SweepResult([], [_left(n) for n in range(1000)]).summary()
    assert "r19 (clear: deadline)" in line and "r20 " not in line and line.endswith(" and 980 more")
