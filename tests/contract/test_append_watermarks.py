"""The watermarks an append is checked against, on every store, alone and together (``MemoryStore.append``).

An append is refused (``EntryBeforeClear``, nothing written) when its entry was made at or before any watermark
that covers it: its scope's own ``cleared_on``, a purge's seal of the owner's whole partition
(``seal_partition``) and, for a team copy, its source scope's sealed ``cleared_on`` (``seal_copies``). The error
carries the latest that applies, which is what the writer stamps its entry after. SQLite reads each in the
append's transaction (``sqlite_writes``), Cosmos DB checks them against the partition stamp its batch is If-Match
on; these pin what either must keep answering however it reads them, each watermark alone and two at once in
either order.
"""

from __future__ import annotations

import uuid
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

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
TICK = timedelta(microseconds=1)
AGENT = "/agents/planner"


def _key(scope: Scope = Scope.USER, instance: str | None = None, upn: str = "alex@contoso.com") -> ProfileKey:
    return ProfileKey(instance or f"marks-{uuid.uuid4().hex[:8]}", upn, scope,
                      AGENT if scope is Scope.AGENT else None)


def _profile(key: ProfileKey) -> MemoryProfile:
    return MemoryProfile(key, "Alex", "alex", "Planner" if key.agent_object_id else None, T0, T0)


def _entry(key: ProfileKey, at: datetime, text: str = "- fact") -> MemoryEntry:
    return MemoryEntry(id=uuid.uuid4().hex, key=key, content_markdown=text, kind=EntryKind.APPEND, created_on=at,
                       author_upn=key.upn)


def _copy(source: ProfileKey, at: datetime) -> MemoryEntry:
    """A team copy of an entry of ``source``, as ``team_copies.share`` writes it."""
    return MemoryEntry(id=shared_copy_id(uuid.uuid4().hex), key=source.shared(), content_markdown="- shared",
                       kind=EntryKind.APPEND, created_on=at, author_upn=source.upn, share=Share.TEAM)


def _clear(store: MemoryStore, key: ProfileKey, watermark: datetime) -> None:
    """The scope's profile made (by a first append) and its ``cleared_on`` set to ``watermark``."""
    stored = store.append(_profile(key), _entry(key, T0))
    store.save_profile(MemoryProfile(key, stored.name, stored.user_name, stored.agent_name, stored.created_on,
                                     stored.updated_on, watermark, stored.etag))


def _refused_with(store: MemoryStore, profile: MemoryProfile, entry: MemoryEntry) -> datetime:
    with pytest.raises(EntryBeforeClear) as refused:
        store.append(profile, entry)
    assert store.get_entry(entry.key.instance_id, entry.key.upn, entry.id) is None
    return refused.value.cleared_on


def test_a_scopes_own_watermark_refuses_an_entry_made_at_or_before_it(store: MemoryStore) -> None:
    """An entry at the scope's ``cleared_on`` is refused with it; one a microsecond later is stored."""
    key, watermark = _key(), T0 + timedelta(seconds=5)
    _clear(store, key, watermark)
    assert _refused_with(store, _profile(key), _entry(key, watermark)) == watermark
    later = _entry(key, watermark + TICK)
    store.append(_profile(key), later)
    assert store.get_entry(key.instance_id, key.upn, later.id) is not None


def test_a_partition_seal_refuses_an_entry_of_a_scope_with_no_profile_and_creates_none(store: MemoryStore) -> None:
    """The seal holds for every scope of the owner, one never written to too: the refused append leaves no
    profile behind. An earlier seal afterwards does not move it back; an entry after it is stored."""
    key, watermark = _key(Scope.AGENT), T0 + timedelta(seconds=5)
    store.seal_partition(key.instance_id, key.upn, watermark)
    store.seal_partition(key.instance_id, key.upn, watermark - timedelta(seconds=1))  # never moved back
    assert _refused_with(store, _profile(key), _entry(key, watermark)) == watermark
    (state,) = store.load([key])
    assert state.profile is None and state.entries == []
    store.append(_profile(key), _entry(key, watermark + TICK))
    (state,) = store.load([key])
    assert state.profile is not None and len(state.entries) == 1


def test_a_partition_seal_leaves_other_owners_and_instances_alone(store: MemoryStore) -> None:
    """The seal is the owner's in one instance: the same owner elsewhere, and another owner here, still write."""
    key, watermark = _key(), T0 + timedelta(seconds=5)
    store.seal_partition(key.instance_id, key.upn, watermark)
    for other in (_key(instance=f"marks-{uuid.uuid4().hex[:8]}"),
                  _key(instance=key.instance_id, upn="bo@contoso.com")):
        store.append(_profile(other), _entry(other, T0 + TICK))
        (state,) = store.load([other])
        assert len(state.entries) == 1


@pytest.mark.parametrize("seal_later", [True, False], ids=["seal-later", "clear-later"])
def test_a_seal_and_a_scopes_watermark_at_once_refuse_up_to_the_later_of_the_two(
    store: MemoryStore, seal_later: bool
) -> None:
    """Both stored, either one the later: an entry at the earlier, and one between the two, are refused with the
    later (the writer stamps after it, so it must be the later); one after both is stored."""
    key = _key()
    early, late = T0 + timedelta(seconds=5), T0 + timedelta(seconds=9)
    _clear(store, key, early if seal_later else late)
    store.seal_partition(key.instance_id, key.upn, late if seal_later else early)
    assert _refused_with(store, _profile(key), _entry(key, early)) == late
    assert _refused_with(store, _profile(key), _entry(key, early + timedelta(seconds=2))) == late
    after = _entry(key, late + TICK)
    store.append(_profile(key), after)
    assert store.get_entry(key.instance_id, key.upn, after.id) is not None


def test_a_team_copy_is_refused_by_its_source_scopes_sealed_watermark(store: MemoryStore) -> None:
    """A copy made at or before its author's sealed clear is refused with that watermark; a later copy, and a copy
    of an author with no profile at all, are stored (nothing covers them)."""
    source, watermark = _key(), T0 + timedelta(seconds=5)
    _clear(store, source, watermark)
    store.seal_copies(source, watermark)
    shared = source.shared()
    assert shared.upn == SHARED_OWNER
    assert _refused_with(store, _profile(shared), _copy(source, watermark)) == watermark
    stranger = _key(instance=source.instance_id, upn="bo@contoso.com")
    for copy in (_copy(source, watermark + TICK), _copy(stranger, T0)):
        store.append(_profile(copy.key), copy)
        assert store.get_entry(shared.instance_id, SHARED_OWNER, copy.id) is not None
