"""The Cosmos store's partition stamps (adapters/cosmos_stamps.py): what lets a read be one point read.

A snapshot is answered only while the partition's stamp is the one it was built at,
so a write that does not move the stamp would let a read show stale memory. These
cases check that every write of the store moves it, that concurrent writers from two
processes never lose a move, that data from before stamps is read in full, and that a
write racing a read is neither lost nor shown twice. The real SDK against the Cosmos
test server; "another process" is a second store with its own client and caches.
"""

from __future__ import annotations

import inspect
import threading
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.adapters import cosmos_documents as docs
from memory_core.adapters.cosmos_stamp_item import UNKNOWN, stamp_item_id
from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.domain.erased_entries import ErasedEntries
from memory_core.domain.identity import Caller
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope, Share
from memory_core.domain.present_entries import PresentEntries
from memory_core.domain.records import Partition, Record, RecordKind
from memory_core.domain.service import MemoryService, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.snapshots import ChangeStamps, ReadSpans
from memory_core.domain.store import MemoryStore
from tests.adapters.cosmos_support import raw_container
from tests.support.cosmos_server import CosmosServer
from tests.support.seeding import erase_cosmos_entries, make_entries, write_cosmos_entries
from tests.support.unstamped import Unstamped

ALEX = Caller(upn="alex@contoso.com", name="Alex")
T0 = datetime(2026, 1, 2, tzinfo=UTC)


def _key(instance: str | None = None) -> ProfileKey:
    return ProfileKey(instance or f"stamps-{uuid.uuid4().hex[:8]}", ALEX.upn, Scope.USER)


def _profile(key: ProfileKey) -> MemoryProfile:
    return MemoryProfile(key, "Alex", "alex", None, T0, T0)


def _entry(key: ProfileKey, text: str = "- fact", at: datetime = T0) -> MemoryEntry:
    return MemoryEntry(uuid.uuid4().hex, key, text, EntryKind.APPEND, at, key.upn)


def _hold(key: ProfileKey, hold_id: str = "h1") -> Record:
    data = {"request_id": hold_id, "scope": "user", "agent_object_id": None, "entry_ids": None, "watermark": None}
    return Record(Partition(key.instance_id, key.upn), RecordKind.HOLD, hold_id, data)


# -- every write moves the stamp; reads do not -----------------------------------------------

WRITES: dict[str, Callable[[CosmosMemoryStore, ProfileKey, MemoryEntry], object]] = {
    "append": lambda s, k, e: s.append(_profile(k), _entry(k)),
    "append_with_records": lambda s, k, e: s.append_with_records(
        _profile(k), _entry(k), [Record(Partition(k.instance_id, k.upn), RecordKind.AUDIT, uuid.uuid4().hex, {})]),
    "save_profile": lambda s, k, e: s.save_profile(replace(s.load([k])[0].profile, cleared_on=T0)),  # type: ignore[arg-type]
    "delete_profile": lambda s, k, e: s.delete_profile(k),
    "delete_entries": lambda s, k, e: s.delete_entries(k, [e.id]),
    "put_record": lambda s, k, e: s.put_record(_hold(k, "h2")),
    "create_record": lambda s, k, e: s.create_record(_hold(k, "h2")),
    "delete_record": lambda s, k, e: s.delete_record(Partition(k.instance_id, k.upn), RecordKind.HOLD, "h1"),
    "seal_partition": lambda s, k, e: s.seal_partition(k.instance_id, k.upn, T0),  # a purge's: the stamp carries it
}
READS = {"load", "load_partition", "load_partition_within", "partition_keys", "get_entry", "load_heads",
         "newest_entries", "oldest_entries", "count_entries", "entry_facts", "partition_facts",
         "get_record", "query_records", "page_records", "query_records_of_owner", "partition_owners", "partition_stamp",
         "entry_sequence", "load_stamped_heads", "load_since", "load_present", "load_erased"}
NEITHER = {"measure", "close", "erase_expired_records",  # Cosmos DB expires records itself: erases nothing here
           "one_read",  # a service read's span: no request
           "put_records",  # refuses holds, so what it writes changes no read (a settings change and its event)
           "delete_record_and_put"}  # likewise (a dismissal's erased request and its journal, marked)
# A checkpoint's write rewrites the stamp unchanged (its etag moves, its counters do not):
# tests/adapters/test_cosmos_checkpoints.py.
CHECKPOINTS = {"read_checkpoint", "keep_checkpoint"}
# A seal of team copies likewise rewrites the shared partition's stamp with its counters unchanged: below.
SEALS = {"seal_copies"}


def test_every_store_method_is_known_as_a_read_or_a_stamped_write() -> None:
    """A method added to the store later must be sorted here (and a write given a case below)."""
    protocol = {n for n, _ in inspect.getmembers(MemoryStore) if not n.startswith("_")}
    protocol |= {n for n, _ in inspect.getmembers(ChangeStamps) if not n.startswith("_")}
    protocol |= {n for n, _ in inspect.getmembers(ReadSpans) if not n.startswith("_")}
    protocol |= {n for n, _ in inspect.getmembers(PresentEntries) if not n.startswith("_")}
    protocol |= {n for n, _ in inspect.getmembers(ErasedEntries) if not n.startswith("_")}
    public = {n for n, v in vars(CosmosMemoryStore).items() if not n.startswith("_") and callable(v)} - {"from_settings"}
    assert protocol <= public
    assert public == set(WRITES) | READS | NEITHER | CHECKPOINTS | SEALS


def test_a_seal_of_team_copies_moves_the_shared_stamps_etag_and_watermark_not_its_counters(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer
) -> None:
    """No read changes, so no snapshot is dropped; the later of two seals holds (a replay never moves it back)."""
    key = _key()
    shared = key.shared()
    stores[0].append(MemoryProfile(shared, None, None, None, T0, T0),
                     replace(_entry(shared), id=uuid.uuid4().hex + "-shared", share=Share.TEAM))
    stamp_id, pk = stamp_item_id(shared.upn), [shared.instance_id, shared.upn]
    later = T0 + timedelta(seconds=2)
    with raw_container(cosmos_account) as container:
        before = container.read_item(stamp_id, pk)
        stores[1].seal_copies(key, later)
        stores[1].seal_copies(key, T0 + timedelta(seconds=1))
        after = container.read_item(stamp_id, pk)
    assert after["_etag"] != before["_etag"]
    assert (after["changes"], after["inserts"], after["sequence"]) == (
        before["changes"], before["inserts"], before["sequence"])
    assert after["seals"][key.profile_id] == later.isoformat()


@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_write_moves_the_stamp(stores: list[CosmosMemoryStore], write: str) -> None:
    """Appends count as inserts; every other write as a change that rebuilds snapshots."""
    store = stores[0]
    key = _key()
    entry = _entry(key, "- there")
    store.append(_profile(key), entry)
    store.put_record(_hold(key))
    if write == "delete_profile":  # a store erases only the profile of a scope without entries
        store.delete_entries(key, [entry.id])
    before = stores[1].partition_stamp(key.instance_id, key.upn)
    WRITES[write](store, key, entry)
    after = stores[1].partition_stamp(key.instance_id, key.upn)
    assert after.changes == before.changes + 1
    assert after.inserts == before.inserts + (1 if write.startswith("append") else 0)


def test_reads_and_other_records_leave_the_stamp_alone(stores: list[CosmosMemoryStore]) -> None:
    store = stores[0]
    key = _key()
    store.append(_profile(key), _entry(key))
    before = store.partition_stamp(key.instance_id, key.upn)
    store.load([key])
    store.load_since([key], None)
    store.put_record(Record(Partition(key.instance_id, key.upn), RecordKind.AUDIT, "a1", {}))
    assert store.partition_stamp(key.instance_id, key.upn) == before


# -- concurrency: several processes, several threads -----------------------------------------


def test_concurrent_appends_from_two_processes_lose_no_bump(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer
) -> None:
    """Two stores append from two threads each while a third reads: every append moves the stamp
    once, takes its own sequence, and the reader ends on exactly the stored memory."""
    key = _key()
    stores[0].append(_profile(key), _entry(key, "- first"))
    before = stores[0].partition_stamp(key.instance_id, key.upn)
    reader = MemoryService(stores[2])
    per_thread = 12
    errors: list[BaseException] = []
    done = threading.Event()

    def write(store: CosmosMemoryStore, name: str) -> None:
        try:
            for n in range(per_thread):
                store.append(_profile(key), _entry(key, f"- {name} {n}", T0 + timedelta(seconds=n)))
        except BaseException as e:  # reported below
            errors.append(e)

    def read() -> None:
        while not done.is_set():
            reader.get(ALEX, key.instance_id, Scope.USER, None)

    writers = [threading.Thread(target=write, args=(s, f"{i}-{j}")) for i, s in enumerate(stores[:2]) for j in range(2)]
    watcher = threading.Thread(target=read)
    watcher.start()
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    watcher.join()
    assert errors == []
    after = stores[1].partition_stamp(key.instance_id, key.upn)
    assert (after.changes - before.changes, after.inserts - before.inserts) == (4 * per_thread, 4 * per_thread)
    with raw_container(cosmos_account) as container:
        sequences = [i["seq"] for i in container.query_items(
            "SELECT c.seq FROM c WHERE c.instance_id = @i AND c.upn = @u AND c.type = 'entry'",
            parameters=[{"name": "@i", "value": key.instance_id}, {"name": "@u", "value": key.upn}],
            partition_key=[key.instance_id, key.upn])]
    assert sorted(sequences) == list(range(1, 4 * per_thread + 2))
    document = reader.get(ALEX, key.instance_id, Scope.USER, None).content_markdown
    truth = MemoryService(Unstamped(stores[1])).get(ALEX, key.instance_id, Scope.USER, None).content_markdown
    assert document == truth
    assert all(document.count(f"- {i}-{j} {n}\n") == 1 for i in range(2) for j in range(2) for n in range(per_thread))


def test_a_writer_with_an_old_etag_retries_and_lands(stores: list[CosmosMemoryStore]) -> None:
    """A process whose remembered stamp another process has moved gets 412, re-reads it and writes:
    three round trips (the refused batch, the read, the batch), and nothing is lost."""
    one, two = stores[0], stores[1]
    key = _key()
    one.append(_profile(key), _entry(key, "- one"))
    two.append(_profile(key), _entry(key, "- two"))  # moves the stamp one remembers
    with one.measure() as metrics:
        one.append(_profile(key), _entry(key, "- one again"))
    assert metrics.round_trips == 3
    assert len(two.load([key])[0].entries) == 3


# -- reads ------------------------------------------------------------------------------------


def test_an_unchanged_get_is_one_point_read_whatever_the_memory_size(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer
) -> None:
    """The snapshot is answered after reading the stamp: one round trip at 10 and at 2,000 entries."""
    service = MemoryService(stores[0])
    small, large = _key(), _key()
    seeded = make_entries(large, 2_000)
    try:
        stores[1].append(_profile(small), _entry(small))
        stores[1].append(_profile(large), seeded[0])
        write_cosmos_entries(stores[1], seeded[1:])
        costs = []
        for key in (small, large):
            service.get(ALEX, key.instance_id, Scope.USER, None)
            with stores[0].measure() as metrics:
                view = service.get(ALEX, key.instance_id, Scope.USER, None)
            costs.append((metrics.round_trips, metrics.request_charge))
            assert view.content_markdown
        assert costs[0] == costs[1] == (1, 1.0)
        assert view.content_markdown.count("\n- fact ") == 2_000
    finally:
        erase_cosmos_entries(stores[1], seeded)


def test_a_team_read_after_appends_is_two_stamps_and_two_queries(stores: list[CosmosMemoryStore]) -> None:
    """A sharing read checks both partitions' stamps, and the loads that grow it take those stamps
    instead of reading them again: after appends to either partition, four round trips."""
    key = _key()
    service = MemoryService(stores[0], allow_sharing_override=True)
    elsewhere = MemoryService(stores[1], allow_sharing_override=True)
    bea = Caller(upn="bea@contoso.com")
    elsewhere.append(ALEX, key.instance_id, Scope.USER, None, "- alex's own")
    elsewhere.append(bea, key.instance_id, Scope.USER, None, "- bea's tip", WriteOptions(share=Share.TEAM))
    service.get(ALEX, key.instance_id, Scope.USER, None, SharingPolicy.TEAM)
    elsewhere.append(ALEX, key.instance_id, Scope.USER, None, "- alex again")
    elsewhere.append(bea, key.instance_id, Scope.USER, None, "- bea's second tip", WriteOptions(share=Share.TEAM))
    with stores[0].measure() as grown:
        view = service.get(ALEX, key.instance_id, Scope.USER, None, SharingPolicy.TEAM)
    assert "alex again" in view.content_markdown and "second tip" in view.content_markdown
    assert grown.round_trips == 4
    assert service._shared is not None and (service._shared.builds, service._shared.grown) == (1, 1)


def test_a_get_after_another_process_appended_is_the_stamp_and_one_query(stores: list[CosmosMemoryStore]) -> None:
    """The snapshot is extended: the stamp read that found the change labels the load, whose one
    query brings only what is new; a change other than an append rebuilds with the same two."""
    key = _key()
    service = MemoryService(stores[0])
    stores[1].append(_profile(key), _entry(key, "- first"))
    service.get(ALEX, key.instance_id, Scope.USER, None)
    stores[1].append(_profile(key), _entry(key, "- second", T0 + timedelta(seconds=1)))
    with stores[0].measure() as extended:
        view = service.get(ALEX, key.instance_id, Scope.USER, None)
    assert "- second" in view.content_markdown
    # the stamp; then the query: the profile, the new entry and the stamp item again
    assert (extended.round_trips, extended.rows) == (2, 1 + 1 + 1 + 1)
    stores[1].put_record(_hold(key))
    with stores[0].measure() as rebuilt:
        service.get(ALEX, key.instance_id, Scope.USER, None)
    assert rebuilt.round_trips == 2
    assert service._snapshots is not None and service._snapshots.extensions == 1


def test_memory_from_before_stamps_is_read_in_full_and_then_stamped(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer
) -> None:
    """A partition without a stamp item (written by an earlier version): the first read loads it all
    and creates the stamp; later appends extend the snapshot, and old entries count as sequence 0."""
    key = _key()
    old = make_entries(key, 3, start=T0)
    with raw_container(cosmos_account) as container:
        container.create_item(docs.profile_item(_profile(key)))
        for entry in old:
            container.create_item(docs.entry_item(entry))  # no seq, no stamp: the layout before stamps
    store = stores[0]
    assert store.partition_stamp(key.instance_id, key.upn) == UNKNOWN
    service = MemoryService(store)
    first = service.get(ALEX, key.instance_id, Scope.USER, None).content_markdown
    assert all(e.content_markdown in first for e in old)
    assert store.partition_stamp(key.instance_id, key.upn) != UNKNOWN
    service.append(ALEX, key.instance_id, Scope.USER, None, "- new")
    second = service.get(ALEX, key.instance_id, Scope.USER, None).content_markdown
    assert second == MemoryService(Unstamped(stores[1])).get(ALEX, key.instance_id, Scope.USER, None).content_markdown
    assert second.count(old[0].content_markdown) == 1 and "- new" in second
    assert service._snapshots is not None and service._snapshots.extensions == 1


@pytest.mark.parametrize("warm", [False, True], ids=["first read", "extension"])
def test_an_entry_stored_between_the_stamp_read_and_the_query_is_shown_once(
    stores: list[CosmosMemoryStore], monkeypatch: pytest.MonkeyPatch, warm: bool
) -> None:
    """Another process commits an entry after a read has its stamp but before its query: that read
    leaves the entry out (it is past the stamp's sequence), and the next read adds it, once."""
    reading, writing = stores[0], stores[1]
    key = _key()
    service = MemoryService(reading)
    writing.append(_profile(key), _entry(key, "- before"))
    if warm:
        service.get(ALEX, key.instance_id, Scope.USER, None)
        writing.append(_profile(key), _entry(key, "- since", T0 + timedelta(seconds=1)))
    original = reading._stamps.current
    raced: list[bool] = []

    def current_then_a_write(calls: Any, instance_id: str, owner: str) -> Any:
        found = original(calls, instance_id, owner)
        if not raced:
            raced.append(True)
            writing.append(_profile(key), _entry(key, "- racing", T0 + timedelta(seconds=2)))
        return found

    monkeypatch.setattr(reading._stamps, "current", current_then_a_write)
    during = service.get(ALEX, key.instance_id, Scope.USER, None).content_markdown
    after = service.get(ALEX, key.instance_id, Scope.USER, None).content_markdown
    assert raced and "- racing" not in during
    assert after.count("- racing") == 1
    assert after == MemoryService(Unstamped(stores[2])).get(ALEX, key.instance_id, Scope.USER, None).content_markdown


def test_a_stamp_made_again_never_matches_an_old_snapshot(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer
) -> None:
    """Should a stamp item ever be lost with the memory it counted, the one made again starts from the
    clock, not from zero, so a snapshot built at the old one is not answered."""
    key = _key()
    service = MemoryService(stores[0])
    gone = _entry(key, "- gone")
    stores[1].append(_profile(key), gone)
    assert "- gone" in service.get(ALEX, key.instance_id, Scope.USER, None).content_markdown
    with raw_container(cosmos_account) as container:
        container.delete_item(stamp_item_id(key.upn), partition_key=[key.instance_id, key.upn])
        container.delete_item(docs.entry_item_id(gone.id), partition_key=[key.instance_id, key.upn])
    stores[1].append(_profile(key), _entry(key, "- kept"))
    document = service.get(ALEX, key.instance_id, Scope.USER, None).content_markdown
    assert "- gone" not in document and "- kept" in document


def test_a_hold_may_not_expire(stores: list[CosmosMemoryStore]) -> None:
    """Cosmos DB would erase an expiring hold on its own, without moving the stamp: refused."""
    key = _key()
    expiring = replace(_hold(key), expires_on=datetime.now(UTC) + timedelta(days=1))
    with pytest.raises(ValueError, match="never expires"):
        stores[0].put_record(expiring)
    with pytest.raises(ValueError, match="never expires"):
        stores[0].create_record(expiring)


# -- a load never mixes a newer hold with entries left out as too new -------------------------------


def test_a_read_right_after_a_kept_answer_never_shows_a_replace_under_approval_half_applied(
    stores: list[CosmosMemoryStore],
) -> None:
    """A kept entries page leaves its stamp check on the thread; the get that follows within a second
    once labelled its load with that older stamp, applied the replace's hold and left the new entry out
    as too new: an empty memory that never was."""
    from memory_core.domain.service import DeletionMode, ImportMode

    caller = Caller(upn=f"half-{uuid.uuid4().hex[:8]}@contoso.com", name="Alex")
    cached = MemoryService(stores[0], deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    other = MemoryService(stores[1], deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    cached.append(caller, "i", Scope.USER, None, "- before")
    cached.entries_page(caller, "i", Scope.USER, None, limit=10)
    cached.entries_page(caller, "i", Scope.USER, None, limit=10)  # the kept page: a stamp check, no load
    other.import_markdown(caller, "i", Scope.USER, None, "- imported anew", ImportMode.REPLACE)
    truth = MemoryService(Unstamped(stores[2])).get(caller, "i", Scope.USER, None).content_markdown
    assert truth == "# User memory\n\n- imported anew\n"
    assert cached.get(caller, "i", Scope.USER, None).content_markdown == truth


def test_a_hold_written_between_a_loads_stamp_and_its_query_makes_it_load_again(
    stores: list[CosmosMemoryStore],
) -> None:
    """The same mixture without any kept answer: another process's replace under approval lands
    between the load's stamp read and its query. The load reads the stamp again and runs again."""
    from memory_core.domain.service import DeletionMode, ImportMode

    caller = Caller(upn=f"between-{uuid.uuid4().hex[:8]}@contoso.com", name="Alex")
    reader = MemoryService(stores[0], deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    other = MemoryService(stores[1], deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    other.append(caller, "i", Scope.USER, None, "- before")
    stamps = stores[0]._stamps
    current = stamps.current
    calls_made: list[int] = []

    def current_then_a_write(*args: Any, **kwargs: Any) -> Any:
        found = current(*args, **kwargs)
        if not calls_made:
            other.import_markdown(caller, "i", Scope.USER, None, "- imported anew", ImportMode.REPLACE)
        calls_made.append(1)
        return found

    stamps.current = current_then_a_write  # type: ignore[method-assign]
    try:
        with stores[0].measure() as metrics:
            view = reader.get(caller, "i", Scope.USER, None)
    finally:
        stamps.current = current  # type: ignore[method-assign]
    assert view.content_markdown == "# User memory\n\n- imported anew\n"
    assert len(calls_made) == 2 and metrics.round_trips >= 4  # the stamp and the query, twice


# -- a stamp check is taken only by the service read that made it ------------------------------------


def test_a_check_left_by_one_read_is_not_taken_by_the_next_read_after_another_process_appended(
    stores: list[CosmosMemoryStore],
) -> None:
    """A kept entries page checks the stamp and loads nothing. The get that follows on the same thread,
    within the second, once took that check as its load's label: entries past its sequence were
    dropped as too new, and an append another process had finished before the get began was missing
    (only appends happened, so the load's own stamp item showed nothing to retry for)."""
    caller = Caller(upn=f"leftover-{uuid.uuid4().hex[:8]}@contoso.com", name="Alex")
    cached, other = MemoryService(stores[0]), MemoryService(stores[1])
    cached.append(caller, "i", Scope.USER, None, "- before")
    cached.entries_page(caller, "i", Scope.USER, None, limit=10)
    cached.entries_page(caller, "i", Scope.USER, None, limit=10)  # the kept page: a stamp check, no load
    other.append(caller, "i", Scope.USER, None, "- appended elsewhere")
    view = cached.get(caller, "i", Scope.USER, None)
    assert "- before" in view.content_markdown and "- appended elsewhere" in view.content_markdown


def test_a_check_is_taken_once_and_only_by_a_load_of_the_read_that_made_it(stores: list[CosmosMemoryStore]) -> None:
    """Round trips say which stamp a load took: its own point read, or the read's check."""
    store, key = stores[0], _key()
    store.append(_profile(key), _entry(key))
    with store.measure() as outside:
        store.partition_stamp(key.instance_id, key.upn)
        store.load_since([key], None)
    assert outside.round_trips == 3  # outside a read's span nothing is kept: the load reads the stamp again
    with store.one_read(), store.measure() as inside:
        store.partition_stamp(key.instance_id, key.upn)
        with store.one_read():  # a span inside another is part of it
            store.load_since([key], None)
        store.load_since([key], None)
    assert inside.round_trips == 1 + 1 + 2  # the check; the first load takes it; the second reads its own
    with store.one_read():
        store.partition_stamp(key.instance_id, key.upn)
    with store.one_read(), store.measure() as later:
        store.load_since([key], None)
    assert later.round_trips == 2  # the earlier read's check ended with it
