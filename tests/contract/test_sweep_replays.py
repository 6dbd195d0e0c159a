"""The sweep executes approved requests on every store, replayable after a crash at any step (``domain.custody_sweep``).

What a request covers is found from its hold on each run, never listed in the request: a Cosmos DB item holds 2 MB,
and a clear of a large memory would pass it, making the request unwritable and the sweep stop. A request that fails
is left for the next run and holds up none of the others.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any, cast

import pytest

from memory_core.domain.custody import CustodyService
from memory_core.domain.deletion import DeletionRequest, DeletionStatus
from memory_core.domain.errors import PayloadTooLarge
from memory_core.domain.file_index import INDEX_ID, INDEX_KIND
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import SHARED_OWNER, Scope, Share, shared_copy_id
from memory_core.domain.records import Partition, RecordKind, deletions_partition
from memory_core.domain.service import DeletionMode, MemoryService, PendingDeletion, WriteOptions
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock

INSTANCE = "sweeps"
AGENT = AgentContext("/instances/sweeps/providers/FoundationaLLM.Agent/agents/" + "a" * 960)  # an id at its longest


class Crash(Exception):
    pass


def _service(store: MemoryStore) -> MemoryService:
    return MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)


def _caller() -> Caller:
    return Caller(upn=f"sweeps-{uuid.uuid4().hex[:10]}@contoso.com")


def _approved_clear(
    service: MemoryService, caller: Caller, scope: Scope = Scope.USER, agent: AgentContext | None = None
) -> str:
    outcome = service.clear(caller, INSTANCE, scope, agent, confirm=True)
    assert isinstance(outcome, PendingDeletion)
    service.custody.approve("op", INSTANCE, outcome.request_id)
    return outcome.request_id


def _crashing_at(store: MemoryStore, service: MemoryService, step: str) -> CustodyService:
    def crash(at: str, request: DeletionRequest) -> None:
        if at == step:
            raise Crash(at)

    return CustodyService(store, service.audit, clock=TickingClock(), new_id=lambda: uuid.uuid4().hex, fault=crash)


def _index(store: MemoryStore, caller: Caller) -> str:
    record = store.get_record(Partition(INSTANCE, caller.upn), INDEX_KIND, INDEX_ID)
    return json.dumps(record.data) if record else ""


def _request_record(store: MemoryStore, request_id: str) -> dict[str, Any]:
    (record,) = [r for r in store.query_records(deletions_partition(INSTANCE), RecordKind.DELETION_REQUEST)
                 if r.data["id"] == request_id]
    return record.data


def test_a_planned_clear_lists_none_of_its_entries_in_the_request(store: MemoryStore) -> None:
    """200 agent-scope entries under a 1,000-character agent id: the request, counted at its first run, stays a few
    hundred bytes (one planned entry each made it 2.3 MB at 1,900 entries, past a Cosmos DB item)."""
    service, caller = _service(store), _caller()
    for n in range(200):
        service.append(caller, INSTANCE, Scope.AGENT, AGENT, f"- fact {n}")
    request_id = _approved_clear(service, caller, Scope.AGENT, AGENT)
    with pytest.raises(Crash):
        _crashing_at(store, service, "planned").sweep(instance_id=INSTANCE)
    stored = _request_record(store, request_id)
    assert stored["erased_entries"] == 200 and len(json.dumps(stored)) < 3 * len(AGENT.object_id)
    (done,) = service.custody.sweep(instance_id=INSTANCE).executed
    assert done.erased_entries == 200 and store.load_partition(INSTANCE, caller.upn)[0].entries == []


@pytest.mark.parametrize("step", ["planned", "erased", "sealed", "unheld"])
def test_a_sweep_crashed_at_any_step_leaves_no_file_name_and_counts_once(store: MemoryStore, step: str) -> None:
    """A memory-tool file and two appended facts, cleared and approved; the sweep crashes after ``step`` and runs
    again: nothing is stored, the file's path is gone from the index, and the request counts 3 entries erased."""
    service, caller = _service(store), _caller()
    MemoryFiles(service).execute(caller, INSTANCE, None, {"command": "create", "path": "/memories/health/notes.md",
                                                          "file_text": "PRIVATE-DIAGNOSIS\n"})
    service.append(caller, INSTANCE, Scope.USER, None, "- fact 1")
    service.append(caller, INSTANCE, Scope.USER, None, "- fact 2")
    _approved_clear(service, caller)
    with pytest.raises(Crash):
        _crashing_at(store, service, step).sweep(instance_id=INSTANCE)
    (done,) = service.custody.sweep(instance_id=INSTANCE).executed
    assert done.status is DeletionStatus.EXECUTED and done.erased_entries == 3
    assert all(s.entries == [] for s in store.load_partition(INSTANCE, caller.upn))
    assert "health" not in _index(store, caller) and "notes.md" not in _index(store, caller)
    assert service.custody.sweep(instance_id=INSTANCE).executed == []


def test_a_request_that_fails_holds_up_none_of_the_others(store: MemoryStore, caplog: pytest.LogCaptureFixture) -> None:
    """The first approved request fails (a store refusal, such as Cosmos DB's 413): the next is executed in the
    same run, the failure is logged with the request's id, and the failed one is executed in a later run."""
    service, first, second = _service(store), _caller(), _caller()
    service.append(first, INSTANCE, Scope.USER, None, "- first's fact")
    service.append(second, INSTANCE, Scope.USER, None, "- second's fact")
    failing_id = _approved_clear(service, first)
    other_id = _approved_clear(service, second)

    def refuse(at: str, request: DeletionRequest) -> None:
        if at == "planned" and request.id == failing_id:
            raise PayloadTooLarge("the request is too large")

    failing = CustodyService(store, service.audit, clock=TickingClock(), new_id=lambda: uuid.uuid4().hex, fault=refuse)
    with caplog.at_level(logging.WARNING, logger="memory_core.custody"):
        assert [r.id for r in failing.sweep(instance_id=INSTANCE).executed] == [other_id]
    assert failing_id in caplog.text
    assert [r.id for r in service.custody.sweep(instance_id=INSTANCE).executed] == [failing_id]
    assert all(s.entries == [] for u in (first, second) for s in store.load_partition(INSTANCE, u.upn))


class _PartitionReadsCounted:
    """The store, counting whole-partition reads: loads, and the facts of every entry a purge is planned from
    (everything else passes through)."""

    def __init__(self, store: MemoryStore) -> None:
        self._store, self.partition_loads = store, 0

    def load_partition(self, instance_id: str, upn: str) -> Any:
        self.partition_loads += 1
        return self._store.load_partition(instance_id, upn)

    def partition_facts(self, instance_id: str, upn: str) -> Any:
        self.partition_loads += 1
        return self._store.partition_facts(instance_id, upn)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_forget_is_swept_from_point_reads_not_from_the_users_whole_memory(store: MemoryStore) -> None:
    """Forgets of a private and a team-shared entry among 40 others, approved: the sweep erases exactly the two
    entries and the shared one's team copy without loading a whole partition (a sweep of 1,000 forgets of a
    10,000-entry memory read it 1,000 times and ran past 230 s), and leaves everything else stored."""
    service, caller = _service(store), _caller()
    ids = [str(service.append(caller, INSTANCE, Scope.USER, None, f"- fact {n}").entry_id) for n in range(40)]
    shared = str(service.append(caller, INSTANCE, Scope.USER, None, "- shared fact",
                                WriteOptions(share=Share.TEAM)).entry_id)
    for entry_id in (ids[7], shared):
        outcome = service.forget(caller, INSTANCE, entry_id)
        assert isinstance(outcome, PendingDeletion)
        service.custody.approve("op", INSTANCE, outcome.request_id)
    assert store.get_entry(INSTANCE, SHARED_OWNER, shared_copy_id(shared)) is not None
    counted = _PartitionReadsCounted(store)
    sweeper = CustodyService(cast(MemoryStore, counted), service.audit, clock=TickingClock(),
                             new_id=lambda: uuid.uuid4().hex)
    done = sweeper.sweep(instance_id=INSTANCE).executed
    assert [r.erased_entries for r in done] == [1, 1] and counted.partition_loads == 0
    stored = {e.id for s in store.load_partition(INSTANCE, caller.upn) for e in s.entries}
    assert stored == set(ids) - {ids[7]}
    assert store.get_entry(INSTANCE, SHARED_OWNER, shared_copy_id(shared)) is None
