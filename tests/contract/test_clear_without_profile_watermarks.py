"""A clear of a scope that has no profile yet, on every store: its watermark holds against a slow append all the same.

A clear's watermark lives in its scope's profile (``cleared_on``), and the store refuses an entry stamped at or
before it (``EntryBeforeClear``), so its writer stamps it after the clear. A scope may have no profile when its
clear is executed: an agent's first write still on its way, a clear of a scope nobody wrote to yet. An approved
clear (the sweep's seal, ``domain.seals.advance_watermark``) and the sweep's replay of an immediate clear stopped
before its watermark stored nothing then: an entry stamped before the watermark and stored after the sweep's read
was erased by no step, and showed once the hold was lifted (before 2026-12-07). Now the clear makes the profile,
carrying its watermark, created only where none is stored (``save_profile`` with ``records.ABSENT``), and the
person's agent list shows that scope with 0 entries, like one whose entries were all forgotten.

Each test puts the late write at one point by wrapping the sweeping store (the read the erasure is planned from),
so the interleaving is the same every run; the writer is another store object over the same data (another process).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain.errors import Conflict, EntryBeforeClear
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.journals import SETTLE
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.overview import agent_scopes
from memory_core.domain.records import ABSENT
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import PendingDeletion
from tests.support.clock import TickingClock

T0 = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)
OPERATOR = "olivia@contoso.com"
PLANNER = AgentContext("/agents/planner", name="Planner")


class Crash(Exception):
    pass


def _stored_under(store: MemoryStore, instance: str, upn: str, watermark: datetime) -> list[str]:
    """The texts of the entries of ``upn``'s agent scopes stamped at or before ``watermark`` still stored."""
    return [e.content_markdown for s in store.load_partition(instance, upn) for e in s.entries
            if s.key.scope is Scope.AGENT and e.created_on <= watermark]


_COVER_READS = ("load_partition", "partition_facts", "load", "entry_facts")


def _after_the_first_read_of(monkeypatch: pytest.MonkeyPatch, store: MemoryStore, upn: str,
                             then: Callable[[], None]) -> None:
    """Runs ``then`` once, just after the store's first read of ``upn``'s memory of a kind that finds what a clear
    covers: a whole partition (or its facts, ``partition_facts``), whole scopes, or the ids under a watermark
    (``entry_facts``), whichever the code under test uses, so the test keeps its interleaving when that code changes
    how it reads."""
    originals = {name: getattr(store, name) for name in _COVER_READS}

    def names(name: str, args: tuple[Any, ...]) -> bool:
        if name in ("load_partition", "partition_facts"):
            return bool(args[1] == upn)
        if name == "load":
            return any(key.upn == upn for key in args[0])
        return bool(args[0].key.upn == upn)

    def reading(name: str) -> Callable[..., Any]:
        def read(*args: Any) -> Any:
            answer = originals[name](*args)
            if names(name, args):
                for original, method in originals.items():
                    monkeypatch.setattr(store, original, method)
                then()
            return answer
        return read

    for name in _COVER_READS:
        monkeypatch.setattr(store, name, reading(name))


@pytest.mark.parametrize("known", [True, False], ids=["user-scope-written", "nothing-written"])
def test_an_entry_stamped_before_an_approved_clear_of_a_scope_without_a_profile_is_refused_after_the_sweeps_read(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch, known: bool
) -> None:
    """An agent's first entry is stamped, then its scope is cleared (approved, swept) before the entry is stored:
    the scope has no profile when the sweep seals. The entry reaches the store just after the sweep read what to
    erase: refused, and written again after the watermark, so no entry under the watermark is left stored once the
    hold is lifted; the late one shows as made after the clear."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    appending, sweeping = stores(), stores()
    writer = MemoryService(appending, clock=clock, deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    custodian = MemoryService(sweeping, clock=clock, deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    alex, instance = Caller(upn=f"alex-{uuid.uuid4().hex[:8]}@contoso.com"), f"noprof-{uuid.uuid4().hex[:8]}"
    if known:
        writer.append(alex, instance, Scope.USER, None, "- known before")
    append_entry = appending.append_with_records
    refused: list[EntryBeforeClear] = []
    watermarks: list[datetime] = []

    def late_entry(profile: MemoryProfile, entry: MemoryEntry, records: Any) -> MemoryProfile:
        monkeypatch.setattr(appending, "append_with_records", append_entry)
        pending = custodian.clear(alex, instance, Scope.AGENT, PLANNER, confirm=True)
        assert isinstance(pending, PendingDeletion)
        request = custodian.custody.get(instance, pending.request_id)
        assert request.watermark is not None and entry.created_on <= request.watermark
        watermarks.append(request.watermark)

        def store_late() -> None:  # just after the plan's read of the user's memory
            try:
                append_entry(profile, entry, records)
            except EntryBeforeClear as refusal:
                refused.append(refusal)

        _after_the_first_read_of(monkeypatch, sweeping, alex.upn, store_late)
        custodian.custody.approve(OPERATOR, instance, request.id)
        custodian.custody.sweep(instance_id=instance)
        if refused:
            raise refused[0]  # as the store answered the writer: it stamps the entry after the watermark
        return profile

    monkeypatch.setattr(appending, "append_with_records", late_entry)
    view = writer.append(alex, instance, Scope.AGENT, PLANNER, "- raced the clear")

    (watermark,) = watermarks
    assert _stored_under(sweeping, instance, alex.upn, watermark) == []
    assert [r.cleared_on for r in refused] == [watermark]
    stored = sweeping.get_entry(instance, alex.upn, view.entry_id or "")
    assert stored is not None and stored.created_on > watermark
    assert "raced the clear" in custodian.get(alex, instance, Scope.AGENT, PLANNER).content_markdown
    (listed,) = agent_scopes(sweeping, instance, alex.upn).items
    assert listed.entry_count == 1


def test_a_replayed_clear_of_a_scope_without_a_profile_refuses_an_entry_stored_after_the_replays_read(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An immediate clear of an agent's scope with no profile stops before its watermark is stored (the profile it
    makes, ``cleared_on`` set); the sweep replays it. An entry stamped before the watermark and stored just after
    the replay read what to erase is refused: the replay stored the watermark first, in a profile of its own."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    writing, clearing = stores(), stores()
    custodian = MemoryService(clearing, clock=clock, deletion_mode=DeletionMode.IMMEDIATE)
    alex, instance = Caller(upn=f"alex-{uuid.uuid4().hex[:8]}@contoso.com"), f"noprof-{uuid.uuid4().hex[:8]}"
    key = ProfileKey(instance, alex.upn, Scope.AGENT, PLANNER.object_id)
    made = clock()  # an entry stamped here is covered by the clear, whose watermark is chosen after
    save_profile = clearing.save_profile

    def stopped(profile: MemoryProfile) -> MemoryProfile:
        monkeypatch.setattr(clearing, "save_profile", save_profile)
        raise Crash("save_profile")

    monkeypatch.setattr(clearing, "save_profile", stopped)
    with pytest.raises(Crash):
        custodian.clear(alex, instance, Scope.AGENT, PLANNER, confirm=True)
    assert clearing.load_heads([key])[0].profile is None

    late = MemoryEntry(id=uuid.uuid4().hex, key=key, content_markdown="- raced the clear", kind=EntryKind.APPEND,
                       created_on=made, author_upn=alex.upn)
    refused: list[EntryBeforeClear] = []

    def store_late() -> None:  # just after the replay's read of what the clear covers
        try:
            writing.append(MemoryProfile(key, None, None, None, made, made), late)
        except EntryBeforeClear as refusal:
            refused.append(refusal)

    _after_the_first_read_of(monkeypatch, clearing, alex.upn, store_late)
    clock.now += SETTLE + timedelta(seconds=1)
    custodian.custody.sweep(instance_id=instance)

    assert len(refused) == 1
    assert clearing.get_entry(instance, alex.upn, late.id) is None
    (state,) = clearing.load_heads([key])
    assert state.profile is not None and state.profile.cleared_on is not None and state.profile.cleared_on > made
    assert "raced the clear" not in custodian.get(alex, instance, Scope.AGENT, PLANNER).content_markdown


@pytest.mark.parametrize("mode", [DeletionMode.OPERATOR_APPROVAL, DeletionMode.IMMEDIATE], ids=["approved", "immediate"])
def test_a_clear_of_a_scope_nobody_wrote_to_lists_the_agent_with_0_and_an_entry_forgotten_after_keeps_it_listed(
    store: MemoryStore, mode: DeletionMode
) -> None:
    """The profile a clear makes to hold its watermark lists its agent with 0 entries (as an immediate clear of
    such a scope always did); the agent's first entry, stored after the clear, counts; and once that entry is
    forgotten the agent stays listed with 0, as any agent that held memory about the person does."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    service = MemoryService(store, clock=clock, deletion_mode=mode)
    alex, instance = Caller(upn=f"alex-{uuid.uuid4().hex[:8]}@contoso.com"), f"noprof-{uuid.uuid4().hex[:8]}"
    key = ProfileKey(instance, alex.upn, Scope.AGENT, PLANNER.object_id)

    def swept(answer: object) -> None:
        if isinstance(answer, PendingDeletion):
            service.custody.approve(OPERATOR, instance, answer.request_id)
            service.custody.sweep(instance_id=instance)

    def listed() -> list[tuple[str, int]]:
        return [(a.agent_object_id, a.entry_count) for a in agent_scopes(store, instance, alex.upn).items]

    swept(service.clear(alex, instance, Scope.AGENT, PLANNER, confirm=True))
    (state,) = store.load_heads([key])
    assert state.profile is not None and state.profile.cleared_on is not None  # the watermark, held
    assert listed() == [(PLANNER.object_id, 0)]
    view = service.append(alex, instance, Scope.AGENT, PLANNER, "- first words")
    assert listed() == [(PLANNER.object_id, 1)]
    swept(service.forget(alex, instance, view.entry_id or ""))
    assert listed() == [(PLANNER.object_id, 0)]


def test_a_profile_saved_create_only_keeps_the_one_stored(store: MemoryStore) -> None:
    """``save_profile`` with ``records.ABSENT`` creates the profile where none is stored, and where one is (a first
    append made it meanwhile) answers ``Conflict`` and leaves it as it was."""
    key = ProfileKey(f"noprof-{uuid.uuid4().hex[:8]}", "alex@contoso.com", Scope.AGENT, PLANNER.object_id)
    made = store.save_profile(MemoryProfile(key, None, None, None, T0, T0, T0, etag=ABSENT))
    assert made.cleared_on == T0 and made.etag not in (None, ABSENT)
    with pytest.raises(Conflict):
        store.save_profile(MemoryProfile(key, "Other", None, None, T0, T0, None, etag=ABSENT))
    (state,) = store.load_heads([key])
    assert state.profile is not None and state.profile.name is None and state.profile.cleared_on == T0
