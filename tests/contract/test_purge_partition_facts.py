"""What a purge finds to erase, on every store: the facts of every scope of the partition, never the entries whole.

The sweep's plan of an approved purge loaded the person's whole partition and the instance's whole ``~shared``
partition, every entry with its text, and its seal loaded the person's partition whole again
(``domain.custody_sweep``, ``domain.seals``). Both ask the store for the scopes and their entries' facts now
(``MemoryStore.partition_facts``). Custody stays exact: the same ids are erased as the rule of the hold picks from the
entries loaded whole, the request counts the same entries and profiles, the audit says the same, and a sweep stopped
at any step and run again erases and counts the same.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain.audit import AuditAction
from memory_core.domain.custody import CustodyService
from memory_core.domain.custody_sweep import shared_hold
from memory_core.domain.deletion import DeletionRequest, DeletionStatus
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import (
    SHARED_OWNER,
    EntryKind,
    Hold,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Scope,
)
from memory_core.domain.service import DeletionMode, MemoryService, WriteOptions
from memory_core.domain.store import EntryFacts, MemoryStore, ScopeFacts
from tests.support.clock import TickingClock
from tests.support.seeding import entries_at
from tests.support.team_copy_races import TEAM, caller, team_service

T0 = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)
AGENT = AgentContext("/agents/planner", name="Planner")
PRIVATE = WriteOptions()


class Crash(Exception):
    pass


def _facts(entry: MemoryEntry) -> EntryFacts:
    return EntryFacts(entry.id, entry.created_on, entry.share, entry.author_upn)


def _as_facts(store: MemoryStore, instance: str, upn: str) -> list[ScopeFacts]:
    """``load_partition``'s answer, each entry cut to its facts: what ``partition_facts`` must answer."""
    return [ScopeFacts(s.key, tuple(_facts(e) for e in s.entries)) for s in store.load_partition(instance, upn)]


def test_partition_facts_are_every_scope_with_its_entries_facts_in_time_then_id_order(store: MemoryStore) -> None:
    """Every scope of the owner, a profile without entries among them, in profile id order, as ``load_partition``
    finds them; each scope's entries in ``(created_on, id)`` order, with their id, time, share and author only;
    nothing of another owner or instance; one round trip; a partition with nothing stored answers no scope."""
    instance, upn = f"facts-{uuid.uuid4().hex[:8]}", "alex@contoso.com"
    user, agent = ProfileKey(instance, upn, Scope.USER), ProfileKey(instance, upn, Scope.AGENT, AGENT.object_id)
    empty = ProfileKey(instance, upn, Scope.AGENT, "/agents/never-wrote")
    times = [T0, T0 + timedelta(seconds=1), T0 + timedelta(seconds=1), T0 + timedelta(seconds=2)]
    mine = entries_at(store, user, times, ids=["u0", "u1-b", "u1-a", "u2"])
    theirs = entries_at(store, agent, [T0 + timedelta(seconds=5), T0], ids=["a1", "a0"])
    store.save_profile(MemoryProfile(empty, "Alex", None, "Never", T0, T0))
    entries_at(store, ProfileKey(instance, "sam@contoso.com", Scope.USER), [T0])
    entries_at(store, ProfileKey(f"other-{instance}", upn, Scope.USER), [T0])

    with store.measure() as metrics:
        scopes = store.partition_facts(instance, upn)

    assert metrics.round_trips == 1  # one statement, one query
    assert scopes == sorted([
        ScopeFacts(user, tuple(_facts(e) for e in [mine[0], mine[2], mine[1], mine[3]])),
        ScopeFacts(agent, (_facts(theirs[1]), _facts(theirs[0]))),
        ScopeFacts(empty, ()),
    ], key=lambda s: s.key.profile_id)
    assert scopes == _as_facts(store, instance, upn)
    assert store.partition_facts(instance, "nobody@contoso.com") == []


def _seed(store: MemoryStore) -> tuple[MemoryService, Caller, Caller, str]:
    """An author with private and team-shared entries in the user scope and an agent's, and a profile with no
    entries; a teammate with a team-shared entry; a third user with one entry."""
    service = team_service(store, TickingClock(T0, timedelta(microseconds=1)), DeletionMode.OPERATOR_APPROVAL)
    author, mate, other = caller("author"), caller("mate"), caller("other")
    instance = f"purge-{uuid.uuid4().hex[:8]}"
    for n in range(3):
        service.append(author, instance, Scope.USER, None, f"- shared {n}", TEAM)
        service.append(author, instance, Scope.USER, None, f"- private {n}")
        service.append(author, instance, Scope.AGENT, AGENT, f"- the agent's {n}", TEAM if n == 0 else PRIVATE)
    store.save_profile(MemoryProfile(ProfileKey(instance, author.upn, Scope.AGENT, "/agents/idle"),
                                     "Author", None, "Idle", T0, T0))
    service.append(mate, instance, Scope.USER, None, "- the mate's", TEAM)
    service.append(other, instance, Scope.USER, None, "- the other's")
    return service, author, other, instance


def _covered_whole(store: MemoryStore, request: DeletionRequest) -> tuple[set[tuple[str, str]], int]:
    """What the purge covers by the hold's rule over the partitions loaded whole (how the sweep planned a purge before
    2026-12-07): the (owner, id) of each covered entry of the user and of their copies, and the user's scopes."""
    hold, copies = Hold(request.id, request.profile_ids, request.watermark), shared_hold(request)
    states = store.load_partition(request.instance_id, request.upn)
    own = {(request.upn, e.id) for s in states for e in s.entries if hold.covers(e)}
    shared = {(SHARED_OWNER, e.id) for s in store.load_partition(request.instance_id, SHARED_OWNER)
              for e in s.entries if copies.covers(e)}
    return own | shared, len(states)


@contextmanager
def _erasures_and_whole_loads(monkeypatch: pytest.MonkeyPatch, store: MemoryStore) -> Iterator[dict[str, Any]]:
    """Inside the block, record every (owner, id) ``delete_entries`` erased and the text of every entry a load
    answered whole (``load``, ``load_partition``)."""
    seen: dict[str, Any] = {"erased": set(), "texts": []}
    real_delete = store.delete_entries

    def delete_entries(key: ProfileKey, entry_ids: Any) -> int:
        stored = {f.id for s in store.partition_facts(key.instance_id, key.upn) for f in s.entries}
        seen["erased"] |= {(key.upn, i) for i in entry_ids if i in stored}
        return real_delete(key, entry_ids)

    monkeypatch.setattr(store, "delete_entries", delete_entries)
    for name in ("load", "load_partition"):
        real = getattr(store, name)

        def recording(*args: Any, real: Any = real) -> Any:
            states = real(*args)
            seen["texts"].extend(e.content_markdown for s in states for e in s.entries)
            return states

        monkeypatch.setattr(store, name, recording)
    yield seen
    monkeypatch.undo()


@pytest.mark.parametrize("crash", [None, "planned", "erased", "sealed", "unheld", "audited"])
def test_a_purge_erases_and_audits_what_its_hold_covers_without_loading_a_partition(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, crash: str | None
) -> None:
    """The sweep of an approved purge (stopped after ``crash``, then run again) erases exactly the user's entries and
    their team copies that the hold's rule picks from the partitions loaded whole, none of the teammate's copy nor
    the other user's entry nor the user's entry written after the purge was filed; counts those entries and the
    user's scopes once in the request and in its ``deletion_executed`` event; and reads no entry's text."""
    service, author, other, instance = _seed(store)
    request = service.custody.request_purge("op", instance, author.upn)
    service.append(author, instance, Scope.USER, None, "- written after the purge was filed")
    approved = service.custody.approve("op", instance, request.id)
    expected, scopes = _covered_whole(store, approved)
    assert len(expected) == 9 + 4 and scopes == 3  # 9 entries, 4 copies; the user scope, the agent's, the idle one

    def stop(at: str, _: DeletionRequest) -> None:
        if at == crash:
            raise Crash(at)

    stopping = CustodyService(store, service.audit, clock=TickingClock(T0 + timedelta(hours=1)),
                              new_id=lambda: uuid.uuid4().hex, fault=stop)
    with _erasures_and_whole_loads(monkeypatch, store) as seen:
        if crash is not None:
            with pytest.raises(Crash):
                stopping.sweep("op", instance)
        (done,) = service.custody.sweep("op", instance).executed

    assert seen["erased"] == expected and seen["texts"] == []
    assert (done.id, done.status, done.erased_entries, done.erased_profiles) == (
        request.id, DeletionStatus.EXECUTED, 9, scopes)
    events = [e for e in service.audit.read(instance, author.upn) if e.action is AuditAction.DELETION_EXECUTED]
    assert [e.detail for e in events] == ["erased 9 entries, 3 profiles"] * (2 if crash == "audited" else 1)
    left = [(s.key.scope, e.content_markdown) for s in store.load_partition(instance, author.upn) for e in s.entries]
    assert left == [(Scope.USER, "- written after the purge was filed")]
    # The seal erased the profiles of the scopes it emptied, the one that held no entry included.
    assert [s.key for s in store.partition_facts(instance, author.upn)] == [
        ProfileKey(instance, author.upn, Scope.USER)]
    assert [e.content_markdown for s in store.load_partition(instance, SHARED_OWNER) for e in s.entries] == [
        "- the mate's"]
    assert [e.content_markdown for s in store.load_partition(instance, other.upn) for e in s.entries] == [
        "- the other's"]


def test_a_purge_erases_a_replace_like_an_append_and_the_profile_it_emptied(store: MemoryStore) -> None:
    """An import-replace's entry and an append's, both under the watermark, are erased from their facts alone (the
    kind is not among them), and so is the profile of the scope they leave empty."""
    service = MemoryService(store, clock=TickingClock(T0 + timedelta(hours=1)),
                            deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    instance, alex = f"purge-{uuid.uuid4().hex[:8]}", Caller(upn="alex@contoso.com")
    key = ProfileKey(instance, alex.upn, Scope.USER)
    profile = MemoryProfile(key, "Alex", None, None, T0, T0)
    store.append(profile, MemoryEntry("r", key, "- replaced", EntryKind.REPLACE, T0, alex.upn))
    store.append(profile, MemoryEntry("a", key, "- appended", EntryKind.APPEND, T0 + timedelta(seconds=1), alex.upn))
    request = service.custody.request_purge("op", instance, alex.upn)
    service.custody.approve("op", instance, request.id)
    (done,) = service.custody.sweep("op", instance).executed
    assert (done.erased_entries, done.erased_profiles) == (2, 1)
    assert store.partition_facts(instance, alex.upn) == []
