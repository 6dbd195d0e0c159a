"""What a clear finds to erase, on every store: the facts of the entries under its watermark, never the entries whole.

A clear of a large memory loaded its scope's entries, text and all, to find the ids its watermark covers (at once,
``domain.erasures``), and the sweep's plan of an approved clear loaded the person's whole partition and the
instance's shared one (``domain.custody_sweep``). Both ask the store for the ids and the facts the erasure needs now
(``MemoryStore.entry_facts``). Custody stays exact: nothing at or under the watermark survives, in the author's scope
or among their team copies; nothing after it is erased, nor another scope's entries or another author's copies.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain.deletion import DeletionStatus
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope, Share
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import EntryFacts, EntryWindow, MemoryStore
from memory_core.domain.views import PendingDeletion
from tests.support.clock import TickingClock
from tests.support.seeding import entries_at
from tests.support.team_copy_races import TEAM, caller, team_service

T0 = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)


def _key(scope: Scope = Scope.USER, agent: str | None = None) -> ProfileKey:
    return ProfileKey(f"facts-{uuid.uuid4().hex[:8]}", "alex@contoso.com", scope, agent)


def _facts(entry: MemoryEntry) -> EntryFacts:
    return EntryFacts(entry.id, entry.created_on, entry.share, entry.author_upn)


def test_entry_facts_are_the_windows_entries_in_time_then_id_order(store: MemoryStore) -> None:
    """``up_to`` keeps the entries at or before it, of the key's profile only; entries of one time come in id
    order; each answers its id, time, share and author, and nothing of its text; one round trip."""
    key = _key()
    times = [T0, T0 + timedelta(seconds=1), T0 + timedelta(seconds=1), T0 + timedelta(seconds=2),
             T0 + timedelta(seconds=3)]
    seeded = entries_at(store, key, times, ids=["e0", "e1-b", "e1-a", "e2", "e3"])
    entries_at(store, ProfileKey(key.instance_id, key.upn, Scope.AGENT, "/agents/a"), [T0])
    entries_at(store, ProfileKey(key.instance_id, "sam@contoso.com", Scope.USER), [T0])
    shared = MemoryEntry("e4", key, "- shared", EntryKind.APPEND, T0 + timedelta(seconds=2), key.upn,
                         share=Share.TEAM)
    store.append(MemoryProfile(key, "Alex", None, None, T0, T0), shared)

    with store.measure() as metrics:
        facts = store.entry_facts(EntryWindow(key, up_to=times[3]))

    assert metrics.round_trips == 1  # one statement, one query
    assert facts == [_facts(e) for e in [seeded[0], seeded[2], seeded[1], seeded[3], shared]]
    assert [f.id for f in store.entry_facts(EntryWindow(key))] == ["e0", "e1-a", "e1-b", "e2", "e4", "e3"]
    # ``up_to`` is inclusive: an entry stamped exactly at it is under it (a clear erases what is at or before its
    # watermark), and so is each of two entries stamped at one time; a microsecond before the first, nothing is.
    assert store.entry_facts(EntryWindow(key, up_to=T0)) == [_facts(seeded[0])]
    assert store.entry_facts(EntryWindow(key, up_to=times[2])) == [_facts(e) for e in [seeded[0], seeded[2], seeded[1]]]
    assert store.entry_facts(EntryWindow(key, up_to=T0 - timedelta(microseconds=1))) == []
    assert store.entry_facts(EntryWindow(_key())) == []


@contextmanager
def _whole_loads(monkeypatch: pytest.MonkeyPatch, store: MemoryStore) -> Iterator[list[str]]:
    """Inside the block, record the text of every entry a load answered whole (``load``, ``load_partition``), and
    each whole partition read as facts (``partition_facts``, a purge's plan: every entry of every scope, without
    text) as ``partition_facts <upn>``."""
    loads: list[str] = []
    for name in ("load", "load_partition"):
        real = getattr(store, name)

        def recording(*args: Any, real: Any = real) -> Any:
            states = real(*args)
            loads.extend(e.content_markdown for s in states for e in s.entries)
            return states

        monkeypatch.setattr(store, name, recording)
    real_facts = store.partition_facts

    def facts_recorded(instance_id: str, upn: str) -> Any:
        loads.append(f"partition_facts {upn}")
        return real_facts(instance_id, upn)

    monkeypatch.setattr(store, "partition_facts", facts_recorded)
    yield loads
    monkeypatch.undo()


def _seed_team(store: MemoryStore, mode: DeletionMode) -> tuple[MemoryService, Caller, str]:
    """An author with private and team-shared entries, a teammate with a team-shared one, the author's agent scope
    with one entry, and one entry of the author's stamped an hour ahead of the clock: after the clear's watermark."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    service = team_service(store, clock, mode)
    author, mate, instance = caller("author"), caller("mate"), f"facts-{uuid.uuid4().hex[:8]}"
    for n in range(3):
        service.append(author, instance, Scope.USER, None, f"- shared {n}", TEAM)
        service.append(author, instance, Scope.USER, None, f"- private {n}")
    service.append(mate, instance, Scope.USER, None, "- the mate's", TEAM)
    service.append(author, instance, Scope.AGENT, AgentContext("/agents/a"), "- the agent's")
    key = ProfileKey(instance, author.upn, Scope.USER)
    (state,) = store.load([key])
    later = MemoryEntry("later", key, "- stamped after the clear", EntryKind.APPEND, T0 + timedelta(hours=1),
                        author.upn)
    assert state.profile is not None
    store.append(state.profile, later)
    return service, author, instance


def _left(store: MemoryStore, instance: str, author: Caller) -> tuple[list[str], list[str], list[str]]:
    """The texts of the author's user scope, of their agent scope, and of every author's copies shared in the user
    scope."""
    user, agent = (ProfileKey(instance, author.upn, Scope.USER), ProfileKey(instance, author.upn, Scope.AGENT,
                                                                             "/agents/a"))
    (own, theirs, shared) = store.load([user, agent]) + store.load([user.shared()])
    return ([e.content_markdown for e in own.entries], [e.content_markdown for e in theirs.entries],
            sorted(e.content_markdown for e in shared.entries))


def test_an_immediate_clear_erases_what_its_watermark_covers_without_loading_it(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, author, instance = _seed_team(store, DeletionMode.IMMEDIATE)
    with _whole_loads(monkeypatch, store) as loads:
        service.clear(author, instance, Scope.USER, None, confirm=True)
    assert loads == ["- stamped after the clear"]  # the answer's view of what is left, read after the erasure
    assert _left(store, instance, author) == (["- stamped after the clear"], ["- the agent's"], ["- the mate's"])


def test_the_sweep_of_an_approved_clear_plans_it_without_loading_a_partition(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, author, instance = _seed_team(store, DeletionMode.OPERATOR_APPROVAL)
    request = service.clear(author, instance, Scope.USER, None, confirm=True)
    assert isinstance(request, PendingDeletion)
    service.custody.approve("operator", instance, request.request_id)
    with _whole_loads(monkeypatch, store) as loads:
        result = service.custody.sweep("operator", instance)
    assert loads == []
    assert [(r.id, r.status, r.erased_entries) for r in result.executed] == [
        (request.request_id, DeletionStatus.EXECUTED, 6)]
    assert _left(store, instance, author) == (["- stamped after the clear"], ["- the agent's"], ["- the mate's"])
