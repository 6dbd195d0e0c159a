"""A budgeted read built with nothing kept labels itself with the stamp its heads were read with, on every
store, and never shows memory another process's write changed since.

A process with no kept budgeted read does not read the partition's stamp first: the heads, the stamp and
the entry sequence come from one view (``ChangeStamps.load_stamped_heads``; on Cosmos DB the heads query,
which returns the stamp item anyway), and the read is kept under that stamp (``StampedAnswers.answer``'s
``labelled``). Every write below lands right after that view, before the read's page and count
(``_AfterHeads``), or between two reads: the next budgeted read shows what a process that keeps nothing
shows (``_Unkept``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from memory_core.domain.identity import Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.snapshots import ChangeStamps, StampedLoad
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import MemoryView
from tests.contract.test_memory_file_entries import AGENT, INSTANCE, _caller
from tests.contract.test_reads_after_erasures import OPERATOR, _Unkept
from tests.support.writes_between_reads import writes_between_reads

BUDGETS = (120, 100_000)  # about one entry's worth (the fill leaves entries out), and the whole memory
POLICIES = (SharingPolicy.PRIVATE, SharingPolicy.TEAM)


class _AfterHeads:
    """A store whose next ``load_stamped_heads`` runs ``meanwhile`` right after its view was read: another
    process's write between a budgeted read's heads and its page."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self.meanwhile: Callable[[], object] | None = None
        self.labelled = 0

    def load_stamped_heads(self, keys: Sequence[ProfileKey]) -> StampedLoad:
        assert isinstance(self._store, ChangeStamps)
        loaded = self._store.load_stamped_heads(keys)
        self.labelled += 1
        meanwhile, self.meanwhile = self.meanwhile, None
        if meanwhile is not None:
            meanwhile()
        return loaded

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _service(store: object, **options: Any) -> MemoryService:
    return MemoryService(store, allow_sharing_override=True, **options)  # type: ignore[arg-type]


def _budgeted(service: MemoryService, caller: Caller) -> list[tuple[str, object]]:
    views: list[MemoryView] = [
        service.get_within(caller, INSTANCE, scope, agent, budget, sharing=policy)
        for scope, agent in ((Scope.USER, None), (Scope.COMBINED, AGENT))
        for budget in BUDGETS for policy in POLICIES]
    return [(view.content_markdown, view.budget) for view in views]


def _truth(stores: Callable[[], MemoryStore], caller: Caller) -> list[tuple[str, object]]:
    return _budgeted(_service(_Unkept(stores())), caller)


def test_the_heads_stamp_and_sequence_of_one_view_are_what_the_store_reads_of_each(
    stores: Callable[[], MemoryStore]
) -> None:
    store, caller = stores(), _caller()
    assert isinstance(store, ChangeStamps)
    writer = _service(stores())
    key = ProfileKey(INSTANCE, caller.upn, Scope.USER)
    missing = ProfileKey(INSTANCE, caller.upn, Scope.AGENT, "/agents/none")
    for n in range(3):
        writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n}")
    loaded = store.load_stamped_heads([key, missing])
    assert loaded.stamp == store.partition_stamp(INSTANCE, caller.upn)
    assert loaded.sequence == store.entry_sequence(INSTANCE, caller.upn)
    assert loaded.states == store.load_heads([key, missing])
    assert all(not state.entries for state in loaded.states) and loaded.states[0].profile is not None
    later = writer.append(caller, INSTANCE, Scope.USER, None, "- stored after the view")
    added = store.load_since([key], loaded.sequence)
    assert [e.id for e in added.states[0].entries] == [later.entry_id]
    assert added.stamp.only_added_since(loaded.stamp) and added.stamp != loaded.stamp


def test_a_budgeted_read_shows_what_another_process_appended_after_it(stores: Callable[[], MemoryStore]) -> None:
    caller, writer = _caller(), _service(stores())
    for n in range(6):
        writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n} about trains, long enough to fill a line")
    reading = _AfterHeads(stores())
    reader = _service(reading)
    first = reader.get_within(caller, INSTANCE, Scope.USER, None, 120)
    assert reading.labelled == 1 and first.budget is not None and first.budget.omitted_entries > 0
    writer.append(caller, INSTANCE, Scope.USER, None, "- appended by another process")
    again = reader.get_within(caller, INSTANCE, Scope.USER, None, 120)
    assert "- appended by another process" in again.content_markdown
    assert reading.labelled == 1  # kept, checked by its stamp and grown: no second build
    assert _budgeted(reader, caller) == _truth(stores, caller)


@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
def test_a_write_between_a_budgeted_reads_heads_and_its_page_shows_at_the_next_read(
    stores: Callable[[], MemoryStore], mode: DeletionMode
) -> None:
    """An append, a forget (under approval: a hold), a clear, a rejected clear, an import replace, an own
    team-shared entry and a teammate's sharing, each by another process right after a fresh process's heads
    were read: that read is kept under the older stamp, so the next read of every budget shows the write."""
    caller, teammate = _caller(), Caller(upn=f"mate-{uuid.uuid4().hex[:8]}@contoso.com")
    writer = _service(stores(), deletion_mode=mode)
    ids = [str(writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n} about trains, long enough to fill a line"
                             ).entry_id) for n in range(6)]
    writer.append(caller, INSTANCE, Scope.AGENT, AGENT, "- the agent's fact about trains")
    steps = writes_between_reads(writer, INSTANCE, caller, teammate, ids[-1], operator=OPERATOR, own_share=True)
    for name, step in steps:
        reading = _AfterHeads(stores())  # a fresh process: nothing kept, so its first read is labelled
        reader = _service(reading)
        reading.meanwhile = step
        reader.get_within(caller, INSTANCE, Scope.USER, None, BUDGETS[0])
        assert reading.labelled >= 1 and reading.meanwhile is None, name
        assert _budgeted(reader, caller) == _truth(stores, caller), name
        step_again = _AfterHeads(stores())  # and a write between two reads of a process that kept one
        kept = _service(step_again)
        assert _budgeted(kept, caller) == _truth(stores, caller), name
        writer.append(caller, INSTANCE, Scope.USER, None, f"- after {name}")
        assert _budgeted(kept, caller) == _truth(stores, caller), name
