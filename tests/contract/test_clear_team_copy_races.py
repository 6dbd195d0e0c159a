"""A team-shared append racing an immediate clear, on every store: the team's copy goes with the entry it copies.

A team-shared write stores the entry in its author's memory, then its copy in the scope's shared partition
(``domain.team_copies``), in two writes with no fence. A clear saves its watermark, erases what its load finds under
it, then erases the author's copies its own read of the shared partition finds. A copy stored after that read
outlived its entry: a teammate kept reading what its author had cleared. The store now refuses such a copy in its
atomic write (``MemoryStore.append``: ``EntryBeforeClear`` once ``seal_copies`` sealed the clear's watermark).
Each test puts the copy's commit at that point by wrapping the store, so the interleaving is the same every run.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.domain.errors import EntryBeforeClear
from memory_core.domain.models import (
    SHARED_OWNER,
    EntryKind,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Scope,
    Share,
    shared_copy_id,
)
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock
from tests.support.team_copy_races import TEAM, StoreCopy, authors_copies, caller, hold_copy, team_service

T0 = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)


def _clear_before_copy(monkeypatch: pytest.MonkeyPatch, store: MemoryStore, clear: Callable[[], object]) -> None:
    """The next team copy stored through ``store`` is held back until ``clear`` has run whole: its entry is
    stored before the clear's watermark, the copy after the clear's erasure read which copies to erase."""

    def race(_copy: MemoryEntry, _store_copy: StoreCopy) -> None:
        clear()  # the writer's own write of the copy follows

    hold_copy(monkeypatch, store, race)


@pytest.mark.parametrize("same_process", [True, False], ids=["same-process", "other-process"])
def test_a_team_copy_stored_after_a_clear_read_the_copies_is_not_kept(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch, same_process: bool
) -> None:
    """The cleared entry's copy is refused: the teammate no longer reads it, and the shared partition holds none
    of the author's copies. Another process's copy knew the shared partition's stamp before the clear."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    appending = stores()
    clearing = appending if same_process else stores()
    writer, custodian = team_service(appending, clock), team_service(clearing, clock)
    author, teammate, instance = caller("author"), caller("mate"), f"race-{uuid.uuid4().hex[:8]}"
    writer.append(author, instance, Scope.USER, None, "- known before", TEAM)  # the writer knows the stamps
    _clear_before_copy(monkeypatch, appending,
                       lambda: custodian.clear(author, instance, Scope.USER, None, confirm=True))

    view = writer.append(author, instance, Scope.USER, None, "- raced the clear", TEAM)

    assert appending.get_entry(instance, author.upn, view.entry_id or "") is None  # the clear erased the entry
    assert clearing.get_entry(instance, SHARED_OWNER, shared_copy_id(view.entry_id or "")) is None
    assert authors_copies(clearing, instance, author) == []
    seen = custodian.get(teammate, instance, Scope.USER, None).content_markdown
    assert "raced the clear" not in seen and "known before" not in seen


def test_a_team_copy_of_an_entry_after_the_clear_is_stored(stores: Callable[[], MemoryStore]) -> None:
    """What the seal refuses is what the clear covers: the next team-shared entry's copy is stored and shows."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    one, two = stores(), stores()
    writer, custodian = team_service(one, clock), team_service(two, clock)
    author, teammate, instance = caller("author"), caller("mate"), f"race-{uuid.uuid4().hex[:8]}"
    writer.append(author, instance, Scope.USER, None, "- cleared", TEAM)
    custodian.clear(author, instance, Scope.USER, None, confirm=True)

    writer.append(author, instance, Scope.USER, None, "- after the clear", TEAM)

    seen = custodian.get(teammate, instance, Scope.USER, None).content_markdown
    assert "after the clear" in seen and "- cleared" not in seen


def test_a_store_refuses_a_team_copy_a_sealed_watermark_of_its_source_covers(
    stores: Callable[[], MemoryStore],
) -> None:
    """``EntryBeforeClear`` with the watermark, nothing written, also in a process whose caches predate the seal;
    another author's copy and a copy after the watermark are stored."""
    one, two = stores(), stores()
    instance = f"race-{uuid.uuid4().hex[:8]}"
    source = ProfileKey(instance, "alex@contoso.com", Scope.USER)
    shared = source.shared()
    seed = MemoryProfile(shared, None, None, None, T0, T0)

    def copy(text: str, at: datetime, author: str = source.upn) -> MemoryEntry:
        return MemoryEntry(id=shared_copy_id(uuid.uuid4().hex), key=shared, content_markdown=text,
                           kind=EntryKind.APPEND, created_on=at, author_upn=author, share=Share.TEAM)

    one.append(seed, copy("- first", T0))  # ``one`` knows the shared profile and the partition's stamp now
    one.append(MemoryProfile(source, "Alex", "alex", None, T0, T0),
               replace(copy("- own", T0), id=uuid.uuid4().hex, key=source))
    (state,) = two.load([source])
    assert state.profile is not None
    watermark = T0 + timedelta(seconds=1)
    two.save_profile(replace(state.profile, cleared_on=watermark))  # as a clear does: the watermark, then the seal
    two.seal_copies(source, watermark)

    for at in (T0 + timedelta(milliseconds=500), watermark):
        with pytest.raises(EntryBeforeClear) as refused:
            one.append(seed, copy(f"- at {at}", at))
        assert refused.value.cleared_on == watermark
    one.append(seed, copy("- another author's", T0 + timedelta(milliseconds=500), "sam@contoso.com"))
    one.append(seed, copy("- after", watermark + timedelta(microseconds=1)))
    (state,) = two.load([shared])
    assert [e.content_markdown for e in state.entries] == ["- first", "- another author's", "- after"]
