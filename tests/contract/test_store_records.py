"""The custody half of the store contract: records, holds, partition loads, single entries.

``test_store_contract.py`` covers profiles and entries; these cases cover the
rest of the MemoryStore Protocol, on every store (the ``store`` fixture of
``conftest.py``: SQLite, and Cosmos DB through the real SDK against the Cosmos
protocol server).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from memory_core.domain.errors import Conflict
from memory_core.domain.models import (
    EntryKind,
    Hold,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Scope,
)
from memory_core.domain.records import ABSENT, Partition, Record, RecordKind
from memory_core.domain.store import MemoryStore

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
UPN = "alex@contoso.com"


@pytest.fixture
def partition() -> Partition:
    return Partition(f"rec-{uuid.uuid4().hex[:8]}", UPN)


# Statements per call: Cosmos DB answers each in one query (its round-trip target);
# SQLite reads profiles, entries and holds with one statement each, in process.
ROUND_TRIPS = {
    "load": {"CosmosMemoryStore": 1, "SqliteMemoryStore": 3},
    "load_partition": {"CosmosMemoryStore": 1, "SqliteMemoryStore": 4},
}


def _append(store: MemoryStore, key: ProfileKey, text: str = "- fact") -> MemoryEntry:
    entry = MemoryEntry(uuid.uuid4().hex, key, text, EntryKind.APPEND, T0, key.upn)
    store.append(MemoryProfile(key, "Alex", "alex", None, T0, T0), entry)
    return entry


def test_a_record_round_trips_with_an_id_cosmos_could_not_hold(store: MemoryStore, partition: Partition) -> None:
    """A record whose id has '/', '+' and ':' is stored, read back equal, and carries an etag."""
    record = Record(partition, RecordKind.AUDIT, "2026-01-02T03:04:05+00:00~a/b", {"action": "append", "n": 1})
    stored = store.put_record(record)
    assert stored.etag
    assert store.get_record(partition, RecordKind.AUDIT, record.id) == stored


def test_a_record_write_with_a_stale_etag_conflicts(store: MemoryStore, partition: Partition) -> None:
    """put_record with the etag it was read with succeeds once; the old etag then conflicts."""
    first = store.put_record(Record(partition, RecordKind.HOLD, "r1", {"v": 1}))
    second = store.put_record(Record(partition, RecordKind.HOLD, "r1", {"v": 2}, first.etag))
    with pytest.raises(Conflict):
        store.put_record(Record(partition, RecordKind.HOLD, "r1", {"v": 3}, first.etag))
    assert store.get_record(partition, RecordKind.HOLD, "r1") == second


def test_a_record_write_with_an_etag_for_a_gone_record_conflicts(
    store: MemoryStore, partition: Partition
) -> None:
    """Replacing a record that was deleted meanwhile raises Conflict rather than recreating it."""
    stored = store.put_record(Record(partition, RecordKind.HOLD, "r1", {}))
    store.delete_record(partition, RecordKind.HOLD, "r1")
    with pytest.raises(Conflict):
        store.put_record(Record(partition, RecordKind.HOLD, "r1", {}, stored.etag))


def test_put_records_writes_a_change_and_its_event_together(store: MemoryStore, partition: Partition) -> None:
    """put_records replaces one record and creates another in one write; each comes back with the etag
    a read then shows. (Both or neither is the SQLite transaction and the Cosmos DB batch; the Cosmos
    protocol server used here does not roll a failed batch back, so no test here can fail half of one.)"""
    store.put_record(Record(partition, "agent_settings", "a1", {"enabled": True}))
    change = Record(partition, "agent_settings", "a1", {"enabled": False})
    event = Record(partition, RecordKind.AUDIT, "2026-01-02T03:04:05+00:00~e1", {"action": "agent_settings"})
    stored = store.put_records([change, event])
    assert [r.data for r in stored] == [{"enabled": False}, {"action": "agent_settings"}]
    assert [store.get_record(partition, r.kind, r.id) for r in stored] == stored
    assert all(r.etag for r in stored)


def _event(partition: Partition, n: int) -> Record:
    return Record(partition, RecordKind.AUDIT, f"2026-01-02T03:04:05+00:00~e{n}", {"action": "agent_settings"})


def test_put_records_replaces_a_record_still_as_read_and_refuses_one_changed_since(
    store: MemoryStore, partition: Partition
) -> None:
    """With the etag it was read with, a record is replaced together with its event; with an etag
    another write has since replaced, Conflict, and neither the record nor the event is stored."""
    read = store.put_record(Record(partition, "agent_settings", "a1", {"enabled": True}))
    mine, stored_event = store.put_records([Record(partition, "agent_settings", "a1", {"enabled": False}, read.etag),
                                            _event(partition, 1)])
    assert store.get_record(partition, "agent_settings", "a1") == mine
    assert mine.etag not in (None, read.etag)
    with pytest.raises(Conflict):
        store.put_records([Record(partition, "agent_settings", "a1", {"enabled": True}, read.etag),
                           _event(partition, 2)])
    assert store.get_record(partition, "agent_settings", "a1") == mine
    assert store.get_record(partition, RecordKind.AUDIT, _event(partition, 2).id) is None
    assert store.get_record(partition, RecordKind.AUDIT, stored_event.id) == stored_event


def test_put_records_creates_a_record_read_as_absent_only_while_it_still_is(
    store: MemoryStore, partition: Partition
) -> None:
    """``ABSENT``: created when no record has the id; Conflict, storing nothing, once one has; and
    Conflict for a record with an etag that was erased since it was read."""
    created, _ = store.put_records([Record(partition, "agent_settings", "a1", {"v": 1}, ABSENT), _event(partition, 1)])
    assert store.get_record(partition, "agent_settings", "a1") == created
    with pytest.raises(Conflict):
        store.put_records([Record(partition, "agent_settings", "a1", {"v": 2}, ABSENT), _event(partition, 2)])
    assert store.get_record(partition, "agent_settings", "a1") == created
    assert store.get_record(partition, RecordKind.AUDIT, _event(partition, 2).id) is None
    store.delete_record(partition, "agent_settings", "a1")
    with pytest.raises(Conflict):
        store.put_records([Record(partition, "agent_settings", "a1", {"v": 3}, created.etag), _event(partition, 3)])
    assert store.get_record(partition, "agent_settings", "a1") is None
    assert store.get_record(partition, RecordKind.AUDIT, _event(partition, 3).id) is None


@pytest.mark.parametrize("kind", ["agent_settings", RecordKind.HOLD])
def test_put_record_creates_a_record_read_as_absent_only_while_it_still_is(
    store: MemoryStore, partition: Partition, kind: str
) -> None:
    """``ABSENT`` means the same to ``put_record`` as to ``put_records``, for a hold (written with the
    partition's stamp) as for any record: created once, then Conflict with the first one kept."""
    created = store.put_record(Record(partition, kind, "r1", {"v": 1}, ABSENT))
    with pytest.raises(Conflict):
        store.put_record(Record(partition, kind, "r1", {"v": 2}, ABSENT))
    assert store.get_record(partition, kind, "r1") == created


@pytest.mark.parametrize(
    "second",
    [
        Record(Partition("rec-elsewhere", UPN), RecordKind.AUDIT, "e2"),
        Record(Partition("", ""), RecordKind.HOLD, "h1"),
    ],
    ids=["another partition", "a hold"],
)
def test_put_records_refuses_what_it_cannot_write_at_once_and_writes_nothing(
    store: MemoryStore, partition: Partition, second: Record
) -> None:
    """Records of two partitions or a hold: ValueError, and not even the first record is stored."""
    if second.partition == Partition("", ""):
        second = Record(partition, second.kind, second.id)
    with pytest.raises(ValueError):
        store.put_records([Record(partition, RecordKind.AUDIT, "e1", {"n": 1}), second])
    assert store.get_record(partition, RecordKind.AUDIT, "e1") is None


def test_query_records_filters_orders_and_limits(store: MemoryStore, partition: Partition) -> None:
    """query_records answers one kind of one partition, matching where, ordered by id, up to limit."""
    other = Partition(partition.instance_id, "blake@contoso.com")
    for record_id, status in (("c", "approved"), ("a", "approved"), ("b", "pending")):
        store.put_record(Record(partition, RecordKind.DELETION_REQUEST, record_id, {"status": status}))
    store.put_record(Record(partition, RecordKind.AUDIT, "a0", {"status": "approved"}))
    store.put_record(Record(other, RecordKind.DELETION_REQUEST, "a1", {"status": "approved"}))
    approved = store.query_records(partition, RecordKind.DELETION_REQUEST, {"status": "approved"})
    assert [r.id for r in approved] == ["a", "c"]
    assert [r.id for r in store.query_records(partition, RecordKind.DELETION_REQUEST, limit=2)] == ["a", "b"]


def test_delete_record_says_whether_it_was_there(store: MemoryStore, partition: Partition) -> None:
    """delete_record answers True for a stored record and False once it is gone."""
    store.put_record(Record(partition, RecordKind.HOLD, "r1", {}))
    assert store.delete_record(partition, RecordKind.HOLD, "r1") is True
    assert store.delete_record(partition, RecordKind.HOLD, "r1") is False
    assert store.get_record(partition, RecordKind.HOLD, "r1") is None


def test_a_kind_with_digits_is_written_read_listed_and_erased(store: MemoryStore, partition: Partition) -> None:
    """Any kind a ``Record`` takes (``records.RECORD_KIND``) round-trips on every store: the SQLite store writes the
    kind into its statements, and a kind it wrote but could not read back would be stuck for good."""
    stored = store.put_record(Record(partition, "checkpoint_v2", "c1", {"n": 1}))
    assert store.get_record(partition, "checkpoint_v2", "c1") == stored
    assert store.query_records(partition, "checkpoint_v2") == [stored]
    assert store.delete_record(partition, "checkpoint_v2", "c1", stored.etag) is True
    assert store.get_record(partition, "checkpoint_v2", "c1") is None


def test_a_record_of_a_kind_no_store_may_write_cannot_be_made(partition: Partition) -> None:
    with pytest.raises(ValueError, match="not a record kind"):
        Record(partition, "Checkpoint-v2", "c1", {})


def test_holds_load_with_the_scopes_in_the_same_query(store: MemoryStore, partition: Partition) -> None:
    """A hold in the owner's partition comes back in every ScopeState of a load, still one round trip."""
    user = ProfileKey(partition.instance_id, UPN, Scope.USER)
    agent = ProfileKey(partition.instance_id, UPN, Scope.AGENT, "/agents/a")
    entry = _append(store, user)
    hold = Hold("req-1", (user.profile_id,), None, (entry.id,))
    store.put_record(Record(partition, RecordKind.HOLD, hold.request_id, hold.to_data()))
    store.put_record(Record(partition, RecordKind.AUDIT, "not-a-hold", {}))
    with store.measure() as metrics:
        states = store.load([user, agent])
    assert metrics.round_trips == ROUND_TRIPS["load"][type(store).__name__]
    assert [s.holds for s in states] == [(hold,), (hold,)]
    assert states[0].visible_entries() == []


def test_load_partition_lists_every_profile_of_the_owner(store: MemoryStore, partition: Partition) -> None:
    """load_partition answers each scope of the owner with its entries, ordered by profile id, in one query."""
    user = ProfileKey(partition.instance_id, UPN, Scope.USER)
    agent = ProfileKey(partition.instance_id, UPN, Scope.AGENT, "/agents/a")
    _append(store, user, "- user")
    _append(store, agent, "- agent")
    _append(store, ProfileKey(partition.instance_id, "blake@contoso.com", Scope.USER), "- blake")
    store.put_record(Record(partition, RecordKind.AUDIT, "a1", {}))
    with store.measure() as metrics:
        states = store.load_partition(partition.instance_id, UPN)
    assert metrics.round_trips == ROUND_TRIPS["load_partition"][type(store).__name__]
    assert [s.key for s in states] == sorted([user, agent], key=lambda k: k.profile_id)
    assert sorted(e.content_markdown for s in states for e in s.entries) == ["- agent", "- user"]
    assert store.load_partition(partition.instance_id, "nobody@contoso.com") == []


def test_get_entry_finds_an_entry_with_its_scope(store: MemoryStore, partition: Partition) -> None:
    """get_entry answers the entry with its own profile key, or None for an unknown id."""
    agent = ProfileKey(partition.instance_id, UPN, Scope.AGENT, "/agents/a")
    entry = _append(store, agent)
    assert store.get_entry(partition.instance_id, UPN, entry.id) == entry
    assert store.get_entry(partition.instance_id, UPN, "unknown") is None
    assert store.get_entry(partition.instance_id, "blake@contoso.com", entry.id) is None


def test_after_delete_profile_the_next_append_creates_it_again(store: MemoryStore, partition: Partition) -> None:
    """delete_profile erases the profile of an emptied scope (missing is fine) and forgets it, so an append
    recreates it."""
    key = ProfileKey(partition.instance_id, UPN, Scope.USER)
    store.delete_entries(key, [_append(store, key).id])
    store.delete_profile(key)
    store.delete_profile(key)
    assert store.load([key])[0].profile is None
    _append(store, key)
    assert store.load([key])[0].profile is not None


def test_delete_profile_keeps_the_profile_of_a_scope_that_holds_an_entry(
    store: MemoryStore, partition: Partition
) -> None:
    """A scope with entries always has a profile: delete_profile erases nothing there, and the stored profile keeps
    every field (the seal of a purge an append raced relies on it, tests/contract/test_seal_races.py)."""
    key = ProfileKey(partition.instance_id, UPN, Scope.AGENT, "/agents/kept")
    entry = _append(store, key)
    store.delete_profile(key)
    (after,) = store.load([key])
    assert after.profile is not None
    assert (after.profile.name, after.profile.user_name, after.profile.created_on) == ("Alex", "alex", T0)
    assert [e.id for e in after.entries] == [entry.id]
    assert store.partition_keys(partition.instance_id, UPN) == [key]


def test_one_record_id_under_two_owners_of_an_instance_keeps_both(
    store: MemoryStore, partition: Partition
) -> None:
    """A deletion request's holds share an id in the user's and the ~shared partition; both are kept."""
    shared = Partition(partition.instance_id, "~shared")
    store.put_record(Record(partition, RecordKind.HOLD, "req-1", {"owner": "user"}))
    store.put_record(Record(shared, RecordKind.HOLD, "req-1", {"owner": "shared"}))
    assert store.get_record(partition, RecordKind.HOLD, "req-1").data == {"owner": "user"}  # type: ignore[union-attr]
    assert store.get_record(shared, RecordKind.HOLD, "req-1").data == {"owner": "shared"}  # type: ignore[union-attr]


def test_delete_record_with_an_etag_erases_only_the_record_as_read(store: MemoryStore, partition: Partition) -> None:
    """With the etag it was read at, delete_record erases the record; once another write changed it, ``Conflict``
    and the record stays as that write left it; one no longer there answers False (an operator's dismissal of a
    request this release cannot read, ``domain.dismissals``, relies on this)."""
    first = store.put_record(Record(partition, "deletion_request", "r1", {"v": 1}))
    rewritten = store.put_record(Record(partition, "deletion_request", "r1", {"v": 2}))
    with pytest.raises(Conflict):
        store.delete_record(partition, "deletion_request", "r1", etag=first.etag)
    stored = store.get_record(partition, "deletion_request", "r1")
    assert stored is not None and stored.data == {"v": 2}
    assert store.delete_record(partition, "deletion_request", "r1", etag=rewritten.etag) is True
    assert store.get_record(partition, "deletion_request", "r1") is None
    assert store.delete_record(partition, "deletion_request", "r1", etag=rewritten.etag) is False
    with pytest.raises(ValueError):
        store.delete_record(partition, RecordKind.HOLD, "h1", etag="any")


def test_delete_record_and_put_erases_and_writes_together_or_not_at_all(
    store: MemoryStore, partition: Partition
) -> None:
    """The record as read is erased and the other written, in one unit (a dismissal's erasure and its journal's
    mark, ``domain.dismissals``): a record rewritten since is ``Conflict`` with nothing written, one gone answers
    None with nothing written. (That a failing second write undoes the erasure is Cosmos DB's batch guarantee,
    which the test server does not keep: docs/cosmos.md; the dismissal writes its journal with no etag.)"""
    first = store.put_record(Record(partition, RecordKind.DELETION_REQUEST, "r1", {"v": 1}))
    rewritten = store.put_record(Record(partition, RecordKind.DELETION_REQUEST, "r1", {"v": 2}))
    mark = Record(partition, "dismissal", "j1", {"erased": True})
    with pytest.raises(Conflict):
        store.delete_record_and_put(first, mark)
    assert store.get_record(partition, "dismissal", "j1") is None
    stored = store.get_record(partition, RecordKind.DELETION_REQUEST, "r1")
    assert stored is not None and stored.data == {"v": 2}

    written = store.delete_record_and_put(rewritten, mark)
    assert written is not None and written.data == {"erased": True} and written.etag
    assert store.get_record(partition, RecordKind.DELETION_REQUEST, "r1") is None
    assert store.get_record(partition, "dismissal", "j1") == written

    again = Record(partition, "dismissal", "j2", {"erased": True})
    assert store.delete_record_and_put(rewritten, again) is None
    assert store.get_record(partition, "dismissal", "j2") is None


def test_delete_record_and_put_replaces_a_record_that_was_dropped_and_keeps_the_erasure_when_written_whole(
    store: MemoryStore, partition: Partition
) -> None:
    """Written with no etag, the other record stands afterwards whether it was stored, changed or erased since it
    was read (a journal a sweep claimed or dropped meanwhile): the erasure is never left without it."""
    journal = store.put_record(Record(partition, "dismissal", "j1", {"erased": False}))
    store.put_record(Record(partition, "dismissal", "j1", {"erased": False, "claimed_on": "x"}))
    request = store.put_record(Record(partition, RecordKind.DELETION_REQUEST, "r1", {"v": 1}))
    written = store.delete_record_and_put(request, Record(partition, "dismissal", "j1", {"erased": True}))
    assert written is not None and store.get_record(partition, "dismissal", "j1") == written
    assert written.etag != journal.etag
    store.delete_record(partition, "dismissal", "j1")
    request = store.put_record(Record(partition, RecordKind.DELETION_REQUEST, "r2", {"v": 1}))
    assert store.delete_record_and_put(request, Record(partition, "dismissal", "j1", {"erased": True})) is not None
    assert store.get_record(partition, RecordKind.DELETION_REQUEST, "r2") is None
    recreated = store.get_record(partition, "dismissal", "j1")
    assert recreated is not None and recreated.data == {"erased": True}


@pytest.mark.parametrize("refused", ["a hold", "another partition", "no etag"])
def test_delete_record_and_put_refuses_what_it_cannot_do_at_once_and_touches_nothing(
    store: MemoryStore, partition: Partition, refused: str
) -> None:
    """A hold, two partitions, or a record to erase read with no etag: ValueError, nothing erased or written."""
    request = store.put_record(Record(partition, RecordKind.DELETION_REQUEST, "r1", {"v": 1}))
    written = Record(partition, "dismissal", "j1", {"erased": True})
    if refused == "a hold":
        written = Record(partition, RecordKind.HOLD, "h1")
    elif refused == "another partition":
        written = Record(Partition(partition.instance_id, "blake@contoso.com"), "dismissal", "j1")
    else:
        request = Record(partition, RecordKind.DELETION_REQUEST, "r1", {"v": 1})
    with pytest.raises(ValueError):
        store.delete_record_and_put(request, written)
    assert store.get_record(partition, RecordKind.DELETION_REQUEST, "r1") is not None
    assert store.get_record(partition, written.kind, written.id) is None
