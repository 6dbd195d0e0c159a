"""What a kept snapshot knows of its entries (columns, sections as spans of its document, the newest
few whole) is enough to bring it up to date after any write, exactly.

A seeded random walk over the embedded store (the contract suite runs the custody steps on Cosmos DB
too; ``tests/contract/test_compacted_snapshots.py``) mixes what the service never writes by itself
with what it does: entries whose writer's clock ran behind or ahead, replaces and empty replaces, entries
of other authors, erasures of any entry, clear watermarks moved, forgets and clears under approval
and their decisions. After every step, every private read of the keeping process (full gets, entries
listings, budgeted gets: grown, answered from a snapshot, or built again) equals what a process that
keeps nothing renders, and what it keeps is counted within its measured size. (Budgeted gets were once
left out: a kept one compared appended entries and ``updated_on`` with the newest entry with content,
not an empty replace newer than it; seeds 3, 8, 16 and 37 differed, at steps 1, 17, 21 and 0.)
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.deletion import DeletionStatus
from memory_core.domain.errors import MemoryCoreError
from memory_core.domain.identity import Caller
from memory_core.domain.known_entries import TAIL, KnownEntries
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from tests.contract.test_reads_after_erasures import OPERATOR, _Unkept

CALLER = Caller(upn="walker@contoso.com", name="Walker")
INSTANCE = "known"
KEY = ProfileKey(INSTANCE, CALLER.upn, Scope.USER)
START = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[Callable[[], SqliteMemoryStore]]:
    made: list[SqliteMemoryStore] = []

    def another() -> SqliteMemoryStore:
        made.append(SqliteMemoryStore(tmp_path / "known.sqlite3"))
        return made[-1]

    yield another
    for store in made:
        store.close()


BUDGETS = (60, 200, 1000)
"""Budgeted reads that show a part of the walk's memory (one entry or a few) or all of it."""


def _reads(service: MemoryService) -> tuple[object, ...]:
    """The full get, the entries listing, and budgeted reads (each kept and grown or answered from a
    snapshot by the keeping process)."""
    return (service.get(CALLER, INSTANCE, Scope.USER, None), service.entries(CALLER, INSTANCE, Scope.USER, None),
            *(service.get_within(CALLER, INSTANCE, Scope.USER, None, budget) for budget in BUDGETS))


def _stored(store: MemoryStore, rnd: random.Random, step: int) -> None:
    """An entry written straight to the store: any time around the others, any kind, any author."""
    kind = rnd.choice([EntryKind.APPEND] * 6 + [EntryKind.IMPORT, EntryKind.REPLACE, EntryKind.HELD_REPLACE])
    text = "" if kind is EntryKind.REPLACE and rnd.random() < 0.3 else f"- stored {step} {rnd.random():.6f}"
    moment = START + timedelta(minutes=rnd.randrange(-50, 400), microseconds=rnd.randrange(1000))
    author = rnd.choice([CALLER.upn, CALLER.upn, "operator@contoso.com"])
    entry = MemoryEntry(uuid.uuid4().hex, KEY, text, kind, moment, author,
                        agent_name=rnd.choice([None, "Travel", "Benefits"]))
    store.append(MemoryProfile(KEY, None, None, None, START, START), entry)


def _step(rnd: random.Random, service: MemoryService, store: MemoryStore, step: int) -> None:
    roll = rnd.random()
    try:
        if roll < 0.35:
            _stored(store, rnd, step)
        elif roll < 0.5:
            service.append(CALLER, INSTANCE, Scope.USER, None, f"- appended {step}")
        elif roll < 0.65:
            (state,) = store.load([KEY])
            if state.entries:
                erased = rnd.sample(state.entries, min(len(state.entries), rnd.choice([1, 1, 2, TAIL + 1])))
                store.delete_entries(KEY, [e.id for e in erased])
        elif roll < 0.72:
            (state,) = store.load([KEY])
            if state.profile is not None:
                moment = START + timedelta(minutes=rnd.randrange(-60, 420))
                store.save_profile(replace(state.profile, cleared_on=rnd.choice([None, moment])))
        elif roll < 0.85:
            entries = service.entries(CALLER, INSTANCE, Scope.USER, None)
            if entries:
                service.forget(CALLER, INSTANCE, rnd.choice(entries).id)
        elif roll < 0.9:
            service.clear(CALLER, INSTANCE, Scope.USER, None, confirm=True)
        else:
            pending = service.custody.list(INSTANCE, DeletionStatus.PENDING)
            if pending:
                request = rnd.choice(pending)
                if rnd.random() < 0.5:
                    service.custody.approve(OPERATOR, INSTANCE, request.id)
                    service.custody.sweep()
                else:
                    service.custody.reject(OPERATOR, INSTANCE, request.id, "kept")
    except MemoryCoreError:
        pass


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6, 7, 8])
def test_after_any_walk_of_writes_a_kept_snapshot_reads_what_rendering_from_scratch_shows(
    stores: Callable[[], SqliteMemoryStore], seed: int
) -> None:
    rnd = random.Random(seed)
    keeper = MemoryService(stores())
    writer = MemoryService(stores(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    truth = MemoryService(_Unkept(stores()))  # type: ignore[arg-type]
    raw = stores()
    for n in range(12):
        _stored(raw, rnd, n)
    for step in range(150):
        _step(rnd, writer, raw, step)
        assert _reads(keeper) == _reads(truth), f"seed {seed}, step {step}"
    assert keeper._snapshots is not None and keeper._snapshots.refreshes > 20


def test_a_snapshot_keeps_its_entries_as_columns_not_objects(stores: Callable[[], SqliteMemoryStore]) -> None:
    """Only the newest ``TAIL`` shown entries are held whole; the others are their facts."""
    service = MemoryService(stores())
    for n in range(40):
        service.append(CALLER, INSTANCE, Scope.USER, None, f"- fact {n}")
    service.get(CALLER, INSTANCE, Scope.USER, None)
    assert service._snapshots is not None
    snapshots = service._snapshots.peek([KEY], CALLER.upn)
    assert snapshots is not None
    known = snapshots.scopes[0].known
    assert isinstance(known, KnownEntries)
    assert len(known.shown) == 40 and len(known.tail) == TAIL and known.unshown == ()
    assert [e.content_markdown for e in known.tail] == [f"- fact {n}" for n in range(40 - TAIL, 40)]
