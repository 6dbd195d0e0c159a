"""ChangeStamps on every store: an entry sequence read before a write finds exactly what the write stored."""

from __future__ import annotations

import uuid

from memory_core.domain.identity import Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.present_entries import PresentEntries
from memory_core.domain.service import MemoryService
from memory_core.domain.snapshots import ChangeStamps
from memory_core.domain.store import MemoryStore


def _two_users(store: MemoryStore) -> tuple[MemoryService, Caller, Caller, ProfileKey]:
    """A service on ``store``, a caller and another user (each a partition of instance "i"), the caller's user key."""
    assert isinstance(store, ChangeStamps)
    caller = Caller(upn=f"seq-{uuid.uuid4().hex[:8]}@contoso.com", name="Seq")
    other = Caller(upn=f"other-{uuid.uuid4().hex[:8]}@contoso.com", name="Other")
    return MemoryService(store), caller, other, ProfileKey("i", caller.upn, Scope.USER)


def test_entries_stored_after_an_entry_sequence_are_exactly_those_load_since_finds(store: MemoryStore) -> None:
    service, caller, other, key = _two_users(store)
    assert isinstance(store, ChangeStamps)
    assert store.entry_sequence("i", caller.upn) >= 0  # a partition with nothing in it yet
    before = [service.append(caller, "i", Scope.USER, None, f"- before {n}").entry_id for n in range(3)]
    sequence = store.entry_sequence("i", caller.upn)
    assert not store.load_since([key], sequence).states[0].entries  # nothing stored after it yet
    service.append(other, "i", Scope.USER, None, "- someone else's, in another partition")
    after = [service.append(caller, "i", Scope.USER, None, f"- after {n}").entry_id for n in range(2)]
    loaded = store.load_since([key], sequence)
    assert sorted(e.id for e in loaded.states[0].entries) == sorted(after)
    assert set(before).isdisjoint(e.id for e in loaded.states[0].entries)
    assert store.entry_sequence("i", caller.upn) >= sequence


def test_an_entry_stored_after_another_partitions_newest_was_erased_is_still_found(store: MemoryStore) -> None:
    """SQLite hands out a deleted last row's rowid again: a sequence must not lean on another partition's rows."""
    service, caller, other, key = _two_users(store)
    assert isinstance(store, ChangeStamps)
    service.append(caller, "i", Scope.USER, None, "- mine")
    newest_elsewhere = service.append(other, "i", Scope.USER, None, "- the newest entry of the store")
    sequence = store.entry_sequence("i", caller.upn)
    store.delete_entries(ProfileKey("i", other.upn, Scope.USER), [newest_elsewhere.entry_id or ""])
    later = service.append(caller, "i", Scope.USER, None, "- stored after the erase").entry_id
    assert [e.id for e in store.load_since([key], sequence).states[0].entries] == [later]


def test_load_present_lists_what_is_stored_and_reads_whole_only_what_was_not_known(store: MemoryStore) -> None:
    """``PresentEntries``: a kept read's erased entries are those no longer listed, and what it does not
    know is read whole, whichever way the store tells them apart (SQLite: ids; Cosmos: the sequence)."""
    service, caller, other, key = _two_users(store)
    assert isinstance(store, PresentEntries) and isinstance(store, ChangeStamps)
    kept = store.load_since([key], None)
    ids = [e.id for e in kept.states[0].entries]
    assert ids == [] and not store.load_present([key], set(), kept.sequence).present
    stored = [str(service.append(caller, "i", Scope.USER, None, f"- kept {n}").entry_id) for n in range(4)]
    kept = store.load_since([key], None)
    store.delete_entries(key, [stored[1]])
    service.append(other, "i", Scope.USER, None, "- someone else's, in another partition")
    later = str(service.append(caller, "i", Scope.USER, None, "- stored since").entry_id)

    loaded = store.load_present([key], set(stored), kept.sequence)
    assert loaded.present == {stored[0], stored[2], stored[3], later}
    assert [e.id for e in loaded.load.states[0].entries] == [later]
    assert loaded.load.stamp == store.partition_stamp("i", caller.upn)
    # an entry listed that the caller did not know, though stored before its sequence, is read whole
    unknown = store.load_present([key], {stored[0], stored[3], later}, kept.sequence)
    assert [e.id for e in unknown.load.states[0].entries] == [stored[2]]
    # and what it answers labels a later load_since: nothing is found twice, nothing missed
    newest = str(service.append(caller, "i", Scope.USER, None, "- stored after").entry_id)
    assert [e.id for e in store.load_since([key], loaded.load.sequence).states[0].entries] == [newest]


def test_load_present_finds_an_entry_stored_in_a_place_an_erased_one_left(store: MemoryStore) -> None:
    """SQLite hands the rowid of an erased newest row out again: an entry stored there is still new."""
    service, caller, _, key = _two_users(store)
    assert isinstance(store, PresentEntries) and isinstance(store, ChangeStamps)
    first, newest = (str(service.append(caller, "i", Scope.USER, None, f"- {n}").entry_id) for n in range(2))
    kept = store.load_since([key], None)
    store.delete_entries(key, [newest])
    again = str(service.append(caller, "i", Scope.USER, None, "- stored where the newest was").entry_id)
    loaded = store.load_present([key], {first, newest}, kept.sequence)
    assert loaded.present == {first, again}
    assert [e.id for e in loaded.load.states[0].entries] == [again]
