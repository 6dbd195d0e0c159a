"""What every MemoryStore must do, whatever it stores in."""

from __future__ import annotations

import threading
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.domain.errors import Conflict
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope, Share
from memory_core.domain.store import MemoryStore

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def _key(scope: Scope = Scope.USER, upn: str | None = None, agent: str | None = None) -> ProfileKey:
    instance = f"contract-{uuid.uuid4().hex[:8]}"
    return ProfileKey(instance, upn or "alex@contoso.com", scope, agent if scope is Scope.AGENT else None)


def _profile(key: ProfileKey, at: datetime = T0) -> MemoryProfile:
    return MemoryProfile(key, "Alex", "alex", "Agent" if key.agent_object_id else None, at, at)


def _entry(key: ProfileKey, text: str = "- fact", at: datetime = T0, **kw: object) -> MemoryEntry:
    return MemoryEntry(
        id=uuid.uuid4().hex, key=key, content_markdown=text, kind=EntryKind.APPEND, created_on=at,
        author_upn=key.upn, **kw,  # type: ignore[arg-type]
    )


def test_load_of_nothing_stored_is_empty(store: MemoryStore) -> None:
    """A key with nothing stored loads as no profile and no entries."""
    key = _key()
    (state,) = store.load([key])
    assert state.key == key and state.profile is None and state.entries == []


def test_append_creates_the_profile_once(store: MemoryStore) -> None:
    """The first append creates the profile; later appends keep its created_on."""
    key = _key()
    first = store.append(_profile(key), _entry(key))
    second = store.append(_profile(key, T0 + timedelta(days=1)), _entry(key, at=T0 + timedelta(days=1)))
    assert first.created_on == T0
    assert second.created_on == T0


def test_entries_round_trip_every_field(store: MemoryStore) -> None:
    """An entry loads back with the same content, provenance, tags, share and timestamp."""
    key = _key(Scope.AGENT, agent="/agents/a")
    entry = _entry(key, "- **bold** ünïcode 🎉", author_user_id="u1", agent_name="A", reason="r", session_id="s",
                   operation_id="o", tags=("mem_type:procedural", "x"), share=Share.TEAM, content_sha256="abc")
    store.append(_profile(key), entry)
    (state,) = store.load([key])
    assert state.entries == [entry]


def test_load_returns_states_in_key_order_from_one_partition(store: MemoryStore) -> None:
    """Loading user and agent keys together returns each one's own entries, in key order."""
    user = _key()
    agent = ProfileKey(user.instance_id, user.upn, Scope.AGENT, "/agents/a")
    store.append(_profile(user), _entry(user, "- user"))
    store.append(_profile(agent), _entry(agent, "- agent"))
    states = store.load([user, agent])
    assert [s.key for s in states] == [user, agent]
    assert [e.content_markdown for e in states[0].entries] == ["- user"]
    assert [e.content_markdown for e in states[1].entries] == ["- agent"]


def test_partitions_are_kept_apart(store: MemoryStore) -> None:
    """Another user's or another agent's entries never load under a key."""
    alex = _key()
    blake = ProfileKey(alex.instance_id, "blake@contoso.com", Scope.USER)
    agent_a = ProfileKey(alex.instance_id, alex.upn, Scope.AGENT, "/agents/a")
    agent_b = ProfileKey(alex.instance_id, alex.upn, Scope.AGENT, "/agents/b")
    store.append(_profile(blake), _entry(blake, "- blake"))
    store.append(_profile(agent_b), _entry(agent_b, "- agent b"))
    assert store.load([alex])[0].entries == []
    assert store.load([agent_a])[0].entries == []


def test_entries_load_oldest_first(store: MemoryStore) -> None:
    """Entries come back ordered by creation time."""
    key = _key()
    later = _entry(key, "- later", at=T0 + timedelta(seconds=5))
    earlier = _entry(key, "- earlier", at=T0)
    store.append(_profile(key), later)
    store.append(_profile(key), earlier)
    assert [e.content_markdown for e in store.load([key])[0].entries] == ["- earlier", "- later"]


def test_save_profile_with_current_etag_succeeds(store: MemoryStore) -> None:
    """A profile saved with the etag it was read with is stored and gets a new etag."""
    key = _key()
    store.append(_profile(key), _entry(key))
    (state,) = store.load([key])
    assert state.profile is not None
    saved = store.save_profile(replace(state.profile, cleared_on=T0 + timedelta(hours=1)))
    (after,) = store.load([key])
    assert after.profile is not None and after.profile.cleared_on == T0 + timedelta(hours=1)
    assert saved.etag and saved.etag != state.profile.etag


def test_save_profile_with_stale_etag_conflicts(store: MemoryStore) -> None:
    """A profile saved with an outdated etag raises Conflict and changes nothing."""
    key = _key()
    store.append(_profile(key), _entry(key))
    (state,) = store.load([key])
    assert state.profile is not None
    store.save_profile(replace(state.profile, updated_on=T0 + timedelta(minutes=1)))
    with pytest.raises(Conflict):
        store.save_profile(replace(state.profile, cleared_on=T0 + timedelta(hours=1)))
    (after,) = store.load([key])
    assert after.profile is not None and after.profile.cleared_on is None


def test_save_profile_without_etag_creates(store: MemoryStore) -> None:
    """A profile with no etag is created when absent."""
    key = _key()
    store.save_profile(replace(_profile(key), cleared_on=T0))
    (state,) = store.load([key])
    assert state.profile is not None and state.profile.cleared_on == T0 and state.profile.created_on == T0


def test_delete_entries_erases_only_the_named_ones(store: MemoryStore) -> None:
    """delete_entries removes the listed entries, ignores unknown ids, and counts what it erased."""
    key = _key()
    keep, drop = _entry(key, "- keep"), _entry(key, "- drop")
    store.append(_profile(key), keep)
    store.append(_profile(key), drop)
    assert store.delete_entries(key, [drop.id, "no-such-id"]) == 1
    assert [e.id for e in store.load([key])[0].entries] == [keep.id]


def test_concurrent_appends_are_all_kept(store: MemoryStore) -> None:
    """Appends from many threads at once to one scope all survive."""
    key = _key()
    entries = [_entry(key, f"- {i}", at=T0 + timedelta(microseconds=i)) for i in range(16)]
    threads = [threading.Thread(target=store.append, args=(_profile(key), e)) for e in entries]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {e.id for e in store.load([key])[0].entries} == {e.id for e in entries}


# -- create_record: create only when absent (the memory tool's file index) -------------------------


def test_create_record_creates_once_then_conflicts(store: MemoryStore) -> None:
    from memory_core.domain.records import Partition, Record

    partition = Partition(f"inst-{uuid.uuid4().hex[:8]}", "alex@contoso.com")
    created = store.create_record(Record(partition, "memory_file_index", "files", {"n": 1}))
    assert created.etag
    with pytest.raises(Conflict):
        store.create_record(Record(partition, "memory_file_index", "files", {"n": 2}))
    stored = store.get_record(partition, "memory_file_index", "files")
    assert stored is not None and stored.data == {"n": 1} and stored.etag == created.etag


def test_concurrent_create_record_has_exactly_one_winner(store: MemoryStore) -> None:
    from memory_core.domain.records import Partition, Record

    partition = Partition(f"inst-{uuid.uuid4().hex[:8]}", "alex@contoso.com")
    barrier = threading.Barrier(6)
    outcomes: list[str] = []

    def create(n: int) -> None:
        barrier.wait()
        try:
            store.create_record(Record(partition, "memory_file_index", "files", {"n": n}))
            outcomes.append("created")
        except Conflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=create, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["conflict"] * 5 + ["created"]
