"""An entry id is its owner's once: every MemoryStore refuses a second entry of the same id, never overwriting.

The entry an ``Idempotency-Key`` makes has an id derived from the key (``domain.idempotency``); a retry stores
nothing twice only because the store refuses that id the second time, in one error of the family.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.domain.errors import Conflict, EntryExists
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.records import ABSENT, Partition, Record, RecordKind
from memory_core.domain.store import MemoryStore

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def _key(scope: Scope = Scope.USER, agent: str | None = None) -> ProfileKey:
    return ProfileKey(f"ids-{uuid.uuid4().hex[:8]}", "alex@contoso.com", scope, agent)


def _profile(key: ProfileKey) -> MemoryProfile:
    return MemoryProfile(key, "Alex", "alex", None, T0, T0)


def _entry(key: ProfileKey, entry_id: str, text: str = "- first") -> MemoryEntry:
    return MemoryEntry(id=entry_id, key=key, content_markdown=text, kind=EntryKind.APPEND, created_on=T0,
                       author_upn=key.upn)


def _event(key: ProfileKey) -> Record:
    return Record(Partition(key.instance_id, key.upn), RecordKind.AUDIT, uuid.uuid4().hex, {"action": "append"})


def test_a_second_entry_of_the_same_id_is_refused_and_overwrites_nothing(store: MemoryStore) -> None:
    """append_with_records of an id the partition holds raises EntryExists (a Conflict); the stored entry is
    unchanged and the records beside the refused entry are not written."""
    key = _key()
    first = _entry(key, "k" * 32)
    store.append_with_records(_profile(key), first, [_event(key)])
    second_event = _event(key)
    with pytest.raises(EntryExists) as refused:
        store.append_with_records(_profile(key), replace(first, content_markdown="- second",
                                                         created_on=T0 + timedelta(seconds=1)), [second_event])
    assert isinstance(refused.value, Conflict) and refused.value.code == "entry_exists"
    assert store.load([key])[0].entries == [first]
    assert store.get_record(second_event.partition, RecordKind.AUDIT, second_event.id) is None


def test_append_refuses_the_id_too(store: MemoryStore) -> None:
    """append (no records) refuses an id already stored the same way (a team-shared copy relies on it)."""
    key = _key()
    store.append(_profile(key), _entry(key, "same-id"))
    with pytest.raises(EntryExists):
        store.append(_profile(key), _entry(key, "same-id", "- again"))
    assert [e.content_markdown for e in store.load([key])[0].entries] == ["- first"]


def test_the_id_is_refused_in_another_profile_of_the_partition(store: MemoryStore) -> None:
    """An id is unique in its owner's partition, not only in a profile: the same id in the agent scope of the
    same person is refused, and nothing is created for that scope (its profile included)."""
    user = _key()
    agent = ProfileKey(user.instance_id, user.upn, Scope.AGENT, "/agents/a")
    store.append(_profile(user), _entry(user, "shared-id"))
    with pytest.raises(EntryExists):
        store.append(_profile(agent), _entry(agent, "shared-id"))
    (state,) = store.load([agent])
    assert state.entries == []
    stored = store.get_entry(user.instance_id, user.upn, "shared-id")
    assert stored is not None and stored.key == user


def test_concurrent_appends_of_one_id_store_one_entry(store: MemoryStore) -> None:
    """Six appends of one id at once into a scope with no profile yet: one is stored, five are refused with
    EntryExists, none fails otherwise."""
    key = _key()
    barrier = threading.Barrier(6)
    outcomes: list[str] = []

    def append(n: int) -> None:
        barrier.wait()
        try:
            store.append_with_records(_profile(key), _entry(key, "raced-id", f"- {n}"), [_event(key)])
            outcomes.append("stored")
        except EntryExists:
            outcomes.append("exists")

    threads = [threading.Thread(target=append, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["exists"] * 5 + ["stored"]
    assert len(store.load([key])[0].entries) == 1


def test_a_record_to_create_whose_id_is_taken_refuses_the_whole_append(store: MemoryStore) -> None:
    """A record carrying ``records.ABSENT`` (an Idempotency-Key's mark) is created only: when a record of its id
    is stored, the append fails with EntryExists like a taken entry id, and nothing of it is written (the entry,
    the other records, the record's stored version all as before). The mark is put before the entry in Cosmos DB's
    batch, so the test server, which does not roll a batch back, stops before the entry too."""
    key = _key()
    partition = Partition(key.instance_id, key.upn)
    mark = Record(partition, RecordKind.KEYED_ENTRY, "m" * 32, {"stored_on": T0.isoformat()}, etag=ABSENT)
    store.append_with_records(_profile(key), _entry(key, "m" * 32), [_event(key), mark])
    stored = store.get_record(partition, RecordKind.KEYED_ENTRY, "m" * 32)
    assert stored is not None and stored.data == {"stored_on": T0.isoformat()}
    store.delete_entries(key, ["m" * 32])  # the entry erased, its mark kept
    event = _event(key)
    again = replace(mark, data={"stored_on": (T0 + timedelta(seconds=1)).isoformat()})
    with pytest.raises(EntryExists):
        store.append_with_records(_profile(key), _entry(key, "m" * 32, "- again"), [event, again])
    assert store.load([key])[0].entries == []
    assert store.get_entry(key.instance_id, key.upn, "m" * 32) is None
    assert store.get_record(partition, RecordKind.AUDIT, event.id) is None
    kept = store.get_record(partition, RecordKind.KEYED_ENTRY, "m" * 32)
    assert kept is not None and kept.data == stored.data


def test_a_record_without_an_etag_is_put_over_one_of_its_id(store: MemoryStore) -> None:
    """A record with no etag is put, as ever: one stored under its id is replaced, and the append goes through."""
    key = _key()
    event = _event(key)
    store.append_with_records(_profile(key), _entry(key, "first-id"), [event])
    store.append_with_records(_profile(key), _entry(key, "second-id"), [replace(event, data={"action": "again"})])
    stored = store.get_record(event.partition, RecordKind.AUDIT, event.id)
    assert stored is not None and stored.data == {"action": "again"}
    assert [e.id for e in store.load([key])[0].entries] == ["first-id", "second-id"]
