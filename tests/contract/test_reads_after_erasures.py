"""Reads right after an erasure, and of memory a pending clear hides, on every store: a kept snapshot
is brought up to date instead of built again (``domain.refreshed_snapshots``), a full load skips
what a watermark hides where the store can (``domain.visible_loads``), and neither ever shows an erased or hidden
entry, in any read of any process.

The keeping process reads through one ``MemoryService``; others write through their own services
over other store objects on the same data (other processes). The truth every read is checked
against comes from a process that keeps nothing and loads in full (``_Unkept``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memory_core.domain.checkpoints import Checkpointing
from memory_core.domain.identity import Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.snapshots import SnapshotCache
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import PendingDeletion
from memory_core.domain.visible_loads import UnhiddenLoads, load_unhidden
from tests.contract.test_memory_file_entries import AGENT, INSTANCE, _caller
from tests.support.random_walk import RandomWalk

BUDGET = 160  # a few entries' worth: budgeted reads of the walk's memory leave entries out
PAGE = 3
OPERATOR = "operator@contoso.com"


class _Unkept:
    """A store as a process that keeps nothing sees it: without stamps, checkpoints or entry ids, so
    every read loads the memory in full and renders it now (the truth reads are checked against)."""

    _HIDDEN = frozenset({"partition_stamp", "entry_sequence", "load_since", "load_present", "read_checkpoint",
                         "keep_checkpoint", "one_read"})

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name in self._HIDDEN:
            raise AttributeError(name)
        return getattr(self._store, name)


def _snapshots(service: MemoryService) -> SnapshotCache:
    assert service._snapshots is not None
    return service._snapshots


def _reads(service: MemoryService, caller: Caller) -> dict[str, object]:
    """Every private read the walk checks: gets, budgeted gets and a walk of every entries page, of
    user, agent and combined scope."""
    found: dict[str, object] = {}
    for scope, agent in ((Scope.USER, None), (Scope.AGENT, AGENT), (Scope.COMBINED, AGENT)):
        found[f"get {scope}"] = service.get(caller, INSTANCE, scope, agent)
        found[f"budgeted {scope}"] = service.get_within(caller, INSTANCE, scope, agent, BUDGET)
        found[f"whole budget {scope}"] = service.get_within(caller, INSTANCE, scope, agent, 100_000)
        pages, token = [], None
        while True:
            page = service.entries_page(caller, INSTANCE, scope, agent, limit=PAGE, continuation=token)
            pages.append([e.id for e in page.items])
            token = page.continuation
            if token is None:
                break
        found[f"pages {scope}"] = pages
    return found


def _truth(stores: Callable[[], MemoryStore], caller: Caller) -> dict[str, object]:
    return _reads(MemoryService(_Unkept(stores())), caller)  # type: ignore[arg-type]


def _checkpointing_early(service: MemoryService) -> MemoryService:
    """``service`` with checkpoints kept from 3 entries shown on (not 256), so the walk's small memory
    is checkpointed and fresh processes start from its checkpoints."""
    cache = _snapshots(service)
    cache._checkpoints = Checkpointing(service.store, min_sections=3, refresh_sections=3)  # type: ignore[arg-type]
    return service


@pytest.mark.parametrize(("mode", "seed"), [(DeletionMode.IMMEDIATE, 16), (DeletionMode.OPERATOR_APPROVAL, 17)])
def test_after_any_walk_of_custody_steps_every_read_of_every_process_is_what_a_full_load_shows(
    stores: Callable[[], MemoryStore], mode: DeletionMode, seed: int, request: pytest.FixtureRequest
) -> None:
    """Two processes take random steps on one memory (appends, imports, forgets, clears, approvals and
    the sweep, rejections, memory tool edits; seeded, so a failure replays). After every step the
    keeping process's reads, and a fresh process's (which starts from the store's checkpoints), are
    exactly what a process that keeps nothing loads and renders."""
    walk = RandomWalk(seed, INSTANCE)
    keeper = _checkpointing_early(MemoryService(stores(), deletion_mode=mode))
    other = _checkpointing_early(MemoryService(stores(), deletion_mode=mode))
    caller = _caller()
    steps = 80 if "sqlite" in request.node.callspec.id else 40
    for step in range(steps):
        walk.any_step(walk.choice([keeper, other, other]), caller, AGENT, step)
        truth = _truth(stores, caller)
        assert _reads(keeper, caller) == truth, f"seed {seed}, step {step}: the keeping process"
        fresh = _checkpointing_early(MemoryService(stores(), deletion_mode=mode))
        assert _reads(fresh, caller) == truth, f"seed {seed}, step {step}: a fresh process"
    assert _snapshots(keeper).refreshes > 5  # brought up to date after erasures, not only built


@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
def test_an_entry_another_process_forgot_is_dropped_from_the_kept_snapshot_without_building_it_again(
    stores: Callable[[], MemoryStore], mode: DeletionMode
) -> None:
    reader, writer, caller = MemoryService(stores()), MemoryService(stores(), deletion_mode=mode), _caller()
    ids = [str(writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n} about trains").entry_id)
           for n in range(4)]
    assert "fact 2" in reader.get(caller, INSTANCE, Scope.USER, None).content_markdown
    rebuilds = _snapshots(reader).rebuilds

    writer.forget(caller, INSTANCE, ids[2])  # under approval: hidden by a hold until an operator decides
    writer.append(caller, INSTANCE, Scope.USER, None, "- a fact stored after the forget")

    view = reader.get(caller, INSTANCE, Scope.USER, None)
    assert "fact 2" not in view.content_markdown and "stored after the forget" in view.content_markdown
    assert view == _truth(stores, caller)[f"get {Scope.USER}"]
    assert (_snapshots(reader).rebuilds, _snapshots(reader).refreshes) == (rebuilds, 1)


def test_a_rejected_clear_shows_the_memory_again_in_a_process_that_kept_it_hidden(
    stores: Callable[[], MemoryStore]
) -> None:
    reader, writer, caller = MemoryService(stores()), MemoryService(stores()), _caller()
    for n in range(3):
        writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n}")
    assert "fact 1" in reader.get(caller, INSTANCE, Scope.USER, None).content_markdown
    pending = writer.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert isinstance(pending, PendingDeletion)
    assert reader.get(caller, INSTANCE, Scope.USER, None).content_markdown == ""
    writer.custody.reject(OPERATOR, INSTANCE, pending.request_id, "kept")
    assert "fact 1" in reader.get(caller, INSTANCE, Scope.USER, None).content_markdown
    assert _reads(reader, caller) == _truth(stores, caller)


def test_a_full_load_under_a_pending_clear_reads_only_the_entries_stored_after_it_where_the_store_can(
    stores: Callable[[], MemoryStore]
) -> None:
    """SQLite skips what the clear hides, in the same read transaction; a store that cannot do it in one
    read (Cosmos DB) loads in full. Either way the load shows what a full load shows."""
    writer, caller = MemoryService(stores()), _caller()
    for n in range(5):
        writer.append(caller, INSTANCE, Scope.USER, None, f"- hidden fact {n}")
    writer.append(caller, INSTANCE, Scope.AGENT, AGENT, "- the agent's note, not cleared")
    assert isinstance(writer.clear(caller, INSTANCE, Scope.USER, None, confirm=True), PendingDeletion)
    after = writer.append(caller, INSTANCE, Scope.USER, None, "- stored after the clear")
    store = stores()
    keys = [ProfileKey(INSTANCE, caller.upn, Scope.USER), ProfileKey(INSTANCE, caller.upn, Scope.AGENT, AGENT.object_id)]

    loaded = load_unhidden(store, keys)  # type: ignore[arg-type]
    full = store.load_since(keys, None)  # type: ignore[attr-defined]

    assert [s.visible_entries() for s in loaded.states] == [s.visible_entries() for s in full.states]
    assert [e.id for e in loaded.states[0].visible_entries()] == [after.entry_id]
    assert (loaded.stamp, loaded.sequence) == (full.stamp, full.sequence)
    assert [e.content_markdown for e in loaded.states[1].entries] == ["- the agent's note, not cleared"]
    if isinstance(store, UnhiddenLoads):
        assert [e.id for e in loaded.states[0].entries] == [after.entry_id]
    else:
        assert len(loaded.states[0].entries) == 6


def test_a_snapshot_restored_from_a_checkpoint_is_built_again_after_an_erasure(
    stores: Callable[[], MemoryStore]
) -> None:
    writer, caller = MemoryService(stores(), deletion_mode=DeletionMode.IMMEDIATE), _caller()
    ids = [str(writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n}").entry_id) for n in range(4)]
    _checkpointing_early(writer).get(caller, INSTANCE, Scope.USER, None)  # keeps a checkpoint
    reader = _checkpointing_early(MemoryService(stores()))
    reader.get(caller, INSTANCE, Scope.USER, None)
    assert _snapshots(reader).restores == 1
    writer.forget(caller, INSTANCE, ids[1])
    view = reader.get(caller, INSTANCE, Scope.USER, None)
    assert "fact 1" not in view.content_markdown and "fact 3" in view.content_markdown
    assert (_snapshots(reader).refreshes, _snapshots(reader).rebuilds) == (0, 1)



def test_a_snapshot_grown_by_many_appends_then_cut_by_several_erasures_at_once_is_what_a_full_load_shows(
    stores: Callable[[], MemoryStore]
) -> None:
    """More appends than a snapshot holds as parts (they are joined), then several entries erased in one
    write: each is cut out of the kept snapshot, and nothing else."""
    reader, writer, caller = MemoryService(stores()), MemoryService(stores()), _caller()
    ids = []
    for n in range(40):
        ids.append(str(writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n}").entry_id))
        reader.get(caller, INSTANCE, Scope.USER, None)  # grown by each append
    assert _snapshots(reader).rebuilds == 1
    erased = [ids[0], ids[17], ids[18], ids[39]]
    writer.store.delete_entries(ProfileKey(INSTANCE, caller.upn, Scope.USER), erased)

    view = reader.get(caller, INSTANCE, Scope.USER, None)

    assert view == _truth(stores, caller)[f"get {Scope.USER}"]
    assert all(f"fact {n}\n" not in view.content_markdown for n in (0, 17, 18, 39))
    assert "fact 16" in view.content_markdown and "fact 38" in view.content_markdown
    assert (_snapshots(reader).rebuilds, _snapshots(reader).refreshes) == (1, 1)
