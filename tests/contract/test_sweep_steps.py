"""The sweep in steps, on every store (``Sweep.run``'s ``limit`` and ``continuation``).

A step tries at most ``limit`` approved requests, in the order they were approved, and says how many it did not
reach; the next step goes on after the last one it tried. Nothing but the requests themselves is kept between steps,
so a walk may stop anywhere, two may overlap, and a request that keeps failing is left once per walk.
"""

from __future__ import annotations

import base64
import uuid

import pytest

from memory_core.domain.custody import CustodyService
from memory_core.domain.deletion import DeletionRequest, DeletionStatus
from memory_core.domain.errors import InvalidInput, PayloadTooLarge
from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope
from memory_core.domain.paging import encode_token
from memory_core.domain.service import DeletionMode, MemoryService, PendingDeletion
from memory_core.domain.store import MemoryStore
from memory_core.domain.sweeps import SweepResult
from tests.support.clock import TickingClock


def _instance() -> str:
    return f"steps-{uuid.uuid4().hex[:10]}"


def _approved_clears(service: MemoryService, instance: str, count: int) -> list[str]:
    """``count`` approved clears, one a user, in the order they were approved."""
    ids = []
    for _ in range(count):
        caller = Caller(upn=f"steps-{uuid.uuid4().hex[:10]}@contoso.com")
        service.append(caller, instance, Scope.USER, None, "- a fact")
        outcome = service.clear(caller, instance, Scope.USER, None, confirm=True)
        assert isinstance(outcome, PendingDeletion)
        service.custody.approve("op", instance, outcome.request_id)
        ids.append(outcome.request_id)
    return ids


def _walk(custody: CustodyService, instance: str, limit: int) -> list[SweepResult]:
    """Every step of one walk, until a step answers no continuation (at most 20: a walk that does not end fails)."""
    steps = [custody.sweep(instance_id=instance, limit=limit)]
    while steps[-1].continuation is not None and len(steps) < 20:
        steps.append(custody.sweep(instance_id=instance, limit=limit, continuation=steps[-1].continuation))
    return steps


def test_a_walk_executes_each_approved_request_once_in_approval_order(store: MemoryStore) -> None:
    """Five approved requests, two a step: three steps execute 2, 2, 1 of them in the order they were approved,
    saying 3, 1, 0 remain; the last answers no continuation, and every request is executed."""
    service, instance = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL), \
        _instance()
    approved = _approved_clears(service, instance, 5)
    steps = _walk(service.custody, instance, limit=2)
    assert [[r.id for r in s.executed] for s in steps] == [approved[:2], approved[2:4], approved[4:]]
    assert [s.remaining for s in steps] == [3, 1, 0]
    assert [s.continuation is None for s in steps] == [False, False, True]
    assert all(s.left == [] for s in steps)
    assert {service.custody.get(instance, i).status for i in approved} == {DeletionStatus.EXECUTED}


def test_no_limit_executes_every_approved_request_in_one_run(store: MemoryStore) -> None:
    """Without a limit the run is the sweep as it was: every approved request, nothing remaining, no continuation."""
    service, instance = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL), \
        _instance()
    approved = _approved_clears(service, instance, 3)
    result = service.custody.sweep(instance_id=instance)
    assert [r.id for r in result.executed] == approved
    assert (result.remaining, result.continuation) == (0, None)


def test_a_request_that_keeps_failing_is_left_once_and_the_walk_ends(store: MemoryStore) -> None:
    """The second of three approved requests fails on every run: a walk of one a step leaves it once (not counted
    as remaining after it), executes the other two, and ends; the next walk tries it again."""
    service, instance = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL), \
        _instance()
    first, failing_id, last = _approved_clears(service, instance, 3)

    def refuse(at: str, request: DeletionRequest) -> None:
        if at == "planned" and request.id == failing_id:
            raise PayloadTooLarge("the request is too large")

    failing = CustodyService(store, service.audit, clock=TickingClock(), new_id=lambda: uuid.uuid4().hex, fault=refuse)
    steps = _walk(failing, instance, limit=1)
    assert [([r.id for r in s.executed], [left.request_id for left in s.left], s.remaining) for s in steps] == [
        ([first], [], 2), ([], [failing_id], 1), ([last], [], 0)]
    assert steps[-1].continuation is None
    again = _walk(failing, instance, limit=1)
    assert [[left.request_id for left in s.left] for s in again] == [[failing_id]]
    assert service.custody.get(instance, failing_id).status is DeletionStatus.APPROVED


def test_two_walks_at_once_execute_each_request_once(store: MemoryStore) -> None:
    """Walk A takes a step, walk B (another operator, or A's operator again after a crash between steps) sweeps the
    rest, a request approved meanwhile included; A's next step finds none left to execute and ends."""
    service, instance = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL), \
        _instance()
    approved = _approved_clears(service, instance, 3)
    a_first = service.custody.sweep(instance_id=instance, limit=1)
    approved += _approved_clears(service, instance, 1)
    b = _walk(service.custody, instance, limit=10)
    a_next = service.custody.sweep(instance_id=instance, limit=1, continuation=a_first.continuation)
    assert [r.id for r in a_first.executed] == approved[:1] and a_first.remaining == 2
    assert [r.id for s in b for r in s.executed] == approved[1:]
    assert (a_next.executed, a_next.left, a_next.remaining, a_next.continuation) == ([], [], 0, None)
    assert {service.custody.get(instance, i).status for i in approved} == {DeletionStatus.EXECUTED}


def test_a_step_sees_requests_approved_after_the_walk_began(store: MemoryStore) -> None:
    """A request approved between two steps comes after every one approved before it: the walk reaches it."""
    service, instance = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL), \
        _instance()
    approved = _approved_clears(service, instance, 2)
    first = service.custody.sweep(instance_id=instance, limit=1)
    approved += _approved_clears(service, instance, 1)
    rest = service.custody.sweep(instance_id=instance, limit=5, continuation=first.continuation)
    assert [r.id for r in rest.executed] == approved[1:] and rest.remaining == 0


@pytest.mark.parametrize("token", [
    "not-a-token",
    encode_token("deletions", ["2026-01-01T00:00:00+00:00", "x"]),  # another listing's
    encode_token("sweep", ["yesterday", "x"]),
    encode_token("sweep", ["2026-01-01T00:00:00", "x"]),  # no time zone
    encode_token("sweep", ["2026-01-01T00:00:00+00:00"]),
    base64.urlsafe_b64encode(b"[" * 1500).decode("ascii"),  # nested past json's recursion limit: was a 500
], ids=["garbage", "another-listing", "no-time", "naive-time", "short", "nested"])
def test_a_malformed_continuation_is_refused(store: MemoryStore, token: str) -> None:
    """``invalid_continuation`` (400 over HTTP), before anything is executed."""
    service, instance = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL), \
        _instance()
    (request_id,) = _approved_clears(service, instance, 1)
    with pytest.raises(InvalidInput) as refused:
        service.custody.sweep(instance_id=instance, limit=1, continuation=token)
    assert refused.value.code == "invalid_continuation"
    assert service.custody.get(instance, request_id).status is DeletionStatus.APPROVED
