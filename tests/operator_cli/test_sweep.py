"""The operator command line's sweep: its answer and exit status against a real local server, in steps with a
progress line after each call, and its walk against a service in this process where a fault or a misbehaving
answer is injected."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import cast

import httpx
import pytest

from memory_core import operator_cli
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.client import CoreApiClient
from memory_core.client_errors import CoreApiFailure
from memory_core.domain.custody import CustodyService
from memory_core.domain.deletion import DeletionRequest
from memory_core.domain.errors import PayloadTooLarge
from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope
from memory_core.domain.service import DeletionMode, MemoryService, PendingDeletion
from memory_core.wire.deletions import SweepResponse
from tests.support.clock import TickingClock
from tests.support.later_release import put_unreadable_request_beside
from tests.support.local_server import OPERATOR_KEY, RunningServer
from tests.support.operator_command import run_operator


def test_sweep_prints_the_answer_as_json_and_what_it_did_on_stderr(server: RunningServer, instance_id: str) -> None:
    """A sweep that executes every approved request: the JSON answer on stdout (``left`` empty), one line on
    stderr saying so, exit code 0."""
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append", json={"scope": "user", "content_markdown": "- x"})
        request_id = http.post(f"/instances/{instance_id}/memory/clear",
                               json={"scope": "user", "confirm": True}).json()["request_id"]
    run_operator(server, "--instance", instance_id, "approve", request_id)
    swept = run_operator(server, "--instance", instance_id, "sweep")
    answer = json.loads(swept.stdout)
    assert swept.returncode == 0
    assert [r["id"] for r in answer["executed"]] == [request_id] and answer["left"] == []
    assert "the sweep executed 1 request and left 0 for a later sweep" in swept.stderr


def test_a_sweep_that_leaves_a_request_names_it_and_exits_7(server: RunningServer, instance_id: str) -> None:
    """A sweep that leaves an approved request: the JSON answer names it under ``left``, stderr has one line per
    request left (id, kind, user, reason, message), and the exit code is 7 (not one of the error table's)."""
    put_unreadable_request_beside(server, instance_id)
    swept = run_operator(server, "--instance", instance_id, "sweep")
    (left,) = json.loads(swept.stdout)["left"]
    assert swept.returncode == operator_cli.SWEEP_LEFT_EXIT == 7
    assert left["request_id"] == "from-a-later-release" and left["reason"] == "unreadable"
    assert "the sweep executed 0 requests and left 1 for a later sweep:" in swept.stderr
    assert "  from-a-later-release  ?  later@contoso.com  unreadable: the stored deletion request" in swept.stderr


def _approved_purges(server: RunningServer, instance_id: str, count: int) -> list[str]:
    """``count`` approved purges (one a user), in the order they were approved."""
    op, api = {"X-API-KEY": OPERATOR_KEY}, f"{server.api}/instances/{instance_id}/operator"
    ids = []
    for n in range(count):
        filed = httpx.post(f"{api}/purges", headers=op, json={"upn": f"steps-{n}@contoso.com"})
        filed.raise_for_status()
        ids.append(filed.json()["request_id"])
        httpx.post(f"{api}/deletions/{ids[-1]}/approve", headers=op).raise_for_status()
    return ids


def test_sweep_walks_in_steps_with_a_progress_line_after_each_call(server: RunningServer, instance_id: str) -> None:
    """Three approved purges and one request this release cannot read, --step 1: three calls, a line on stderr after
    each but the last (executed and left so far, approved to go), then the one JSON answer of the whole sweep
    (every request executed, in approval order, the unreadable one left once) and exit 7 for it."""
    put_unreadable_request_beside(server, instance_id)
    approved = _approved_purges(server, instance_id, 3)
    swept = run_operator(server, "--instance", instance_id, "sweep", "--step", "1")
    answer = json.loads(swept.stdout)
    assert swept.returncode == operator_cli.SWEEP_LEFT_EXIT
    assert [r["id"] for r in answer["executed"]] == approved
    assert [left["request_id"] for left in answer["left"]] == ["from-a-later-release"]
    assert (answer["remaining"], answer["continuation"]) == (0, None)
    assert swept.stderr.splitlines()[:3] == [
        "memory-core operator: swept 1 executed, 1 left so far; 2 approved to go",
        "memory-core operator: swept 2 executed, 1 left so far; 1 approved to go",
        "memory-core operator: the sweep executed 3 requests and left 1 for a later sweep:",
    ]


def test_sweep_refuses_a_step_out_of_range(server: RunningServer, instance_id: str) -> None:
    """--step 0: the service answers 400, the command exits 2 with the message, and nothing is executed."""
    (request_id,) = _approved_purges(server, instance_id, 1)
    swept = run_operator(server, "--instance", instance_id, "sweep", "--step", "0")
    listed = run_operator(server, "--instance", instance_id, "list", "--status", "approved")
    assert swept.returncode == 2 and "400" in swept.stderr and "limit" in swept.stderr
    assert request_id in listed.stdout


class _InProcessSweeps:
    """``CoreApiClient.sweep`` answered by a service in this process (a real SQLite store): a fault can be injected
    into its sweep, which a server cannot have."""

    def __init__(self, custody: CustodyService) -> None:
        self.custody, self.calls = custody, 0

    async def sweep(self, instance_id: str, headers: dict[str, str], *, limit: int | None = None,
                    continuation: str | None = None) -> SweepResponse:
        self.calls += 1
        return SweepResponse.from_result(self.custody.sweep("op", instance_id, limit=limit,
                                                            continuation=continuation))


def test_sweep_stops_on_a_request_that_keeps_failing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The first of three approved requests fails on every try: the walk leaves it once, executes the other two and
    ends after three calls of one (the service goes on after a request it left), never trying it again."""
    store = SqliteMemoryStore(tmp_path / "s.sqlite3")
    try:
        service = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)
        approved = []
        for n in range(3):
            caller = Caller(upn=f"u{n}@contoso.com")
            service.append(caller, "i", Scope.USER, None, "- a fact")
            outcome = service.clear(caller, "i", Scope.USER, None, confirm=True)
            assert isinstance(outcome, PendingDeletion)
            service.custody.approve("op", "i", outcome.request_id)
            approved.append(outcome.request_id)
        tries: list[str] = []

        def refuse(at: str, request: DeletionRequest) -> None:
            if at == "planned" and request.id == approved[0]:
                tries.append(request.id)
                raise PayloadTooLarge("the request is too large")

        sweeps = _InProcessSweeps(CustodyService(store, service.audit, clock=TickingClock(),
                                                 new_id=lambda: uuid.uuid4().hex, fault=refuse))
        whole = asyncio.run(operator_cli._sweep(cast(CoreApiClient, sweeps), "i", {}, 1))
    finally:
        store.close()
    assert [r.id for r in whole.executed] == approved[1:]
    assert [(left.request_id, left.reason) for left in whole.left] == [(approved[0], "refused")]
    assert sweeps.calls == 3 and tries == [approved[0]]
    assert capsys.readouterr().err.splitlines() == [
        "memory-core operator: swept 0 executed, 1 left so far; 2 approved to go",
        "memory-core operator: swept 1 executed, 1 left so far; 1 approved to go",
    ]


def test_a_sweep_whose_continuation_repeats_stops_with_an_error() -> None:
    """A service (or a proxy) that answers the same step again would keep `sweep` calling for ever: the second time
    a continuation comes back, the walk stops with CoreApiFailure."""
    calls: list[str | None] = []

    class Repeating:
        async def sweep(self, instance_id: str, headers: dict[str, str], *, limit: int | None = None,
                        continuation: str | None = None) -> SweepResponse:
            calls.append(continuation)
            return SweepResponse(executed=[], left=[], remaining=1, continuation="same-token")

    with pytest.raises(CoreApiFailure, match="repeated a sweep continuation after 0 executed"):
        asyncio.run(operator_cli._sweep(cast(CoreApiClient, Repeating()), "i", {}, 1))
    assert calls == [None, "same-token"]


def test_sweep_against_a_service_older_than_the_bound_makes_one_call() -> None:
    """A service that ignores ?limit= sweeps everything and answers neither remaining nor continuation: the walk is
    that one call."""
    calls: list[str | None] = []

    class Older:
        async def sweep(self, instance_id: str, headers: dict[str, str], *, limit: int | None = None,
                        continuation: str | None = None) -> SweepResponse:
            calls.append(continuation)
            return SweepResponse.model_validate({"executed": [], "left": []})

    whole = asyncio.run(operator_cli._sweep(cast(CoreApiClient, Older()), "i", {}, 1))
    assert calls == [None] and whole.executed == [] and whole.left == []
