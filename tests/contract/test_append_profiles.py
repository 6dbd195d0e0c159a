"""The profile an append answers and leaves stored, on every store (``MemoryStore.append``).

A scope's first append creates its profile from the profile it is handed (the seed); every later append leaves the
stored profile as it is, whatever seed it is handed (other names, other times), and answers the profile as stored.
SQLite reads the profile in the append's transaction and writes it only when there is none (``sqlite_writes``,
since 2026-12-08: before, every append wrote it with ``INSERT OR IGNORE``); these pin what that must keep.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.store import MemoryStore

T0 = datetime(2026, 12, 8, 9, 0, tzinfo=UTC)


def _key(scope: Scope = Scope.USER) -> ProfileKey:
    return ProfileKey(f"profiles-{uuid.uuid4().hex[:8]}", "alex@contoso.com", scope,
                      "/agents/planner" if scope is Scope.AGENT else None)


def _entry(key: ProfileKey, at: datetime) -> MemoryEntry:
    return MemoryEntry(id=uuid.uuid4().hex, key=key, content_markdown="- fact", kind=EntryKind.APPEND, created_on=at,
                       author_upn=key.upn)


def _stored(store: MemoryStore, key: ProfileKey) -> MemoryProfile | None:
    return store.load([key])[0].profile


def test_the_first_append_creates_the_profile_it_is_handed_and_answers_it_as_stored(store: MemoryStore) -> None:
    key = _key(Scope.AGENT)
    seed = MemoryProfile(key, "Alex", "alex", "Planner", T0, T0)
    assert _stored(store, key) is None
    answered = store.append(seed, _entry(key, T0))
    stored = _stored(store, key)
    assert stored is not None and answered == stored
    assert (stored.name, stored.user_name, stored.agent_name, stored.created_on, stored.updated_on,
            stored.cleared_on) == ("Alex", "alex", "Planner", T0, T0, None)
    assert stored.etag


def test_a_later_append_leaves_the_stored_profile_as_it_is_and_answers_it(store: MemoryStore) -> None:
    """A later seed's other names and times are not written: the profile stays the first append's, etag and all."""
    key = _key()
    first = store.append(MemoryProfile(key, "Alex", "alex", None, T0, T0), _entry(key, T0))
    later = T0 + timedelta(hours=1)
    answered = store.append(MemoryProfile(key, "Someone Else", "else", None, later, later),
                            _entry(key, later))
    assert answered == first == _stored(store, key)


def test_a_profile_saved_between_appends_is_the_one_the_next_append_answers(store: MemoryStore) -> None:
    """A rename (``save_profile``) between two appends: the next append answers the renamed profile, not its seed."""
    key = _key()
    first = store.append(MemoryProfile(key, "Alex", "alex", None, T0, T0), _entry(key, T0))
    store.save_profile(MemoryProfile(key, "Alex B.", "alexb", None, first.created_on, T0 + timedelta(minutes=1),
                                     None, first.etag))
    renamed = _stored(store, key)
    assert renamed is not None and renamed.name == "Alex B."
    answered = store.append(MemoryProfile(key, "Alex", "alex", None, T0, T0), _entry(key, T0 + timedelta(hours=1)))
    assert answered == renamed == _stored(store, key)
