"""What a search and a budgeted read cost on the Cosmos test server, counted by the store's meter.

A search ranks the visible entries in process (the store has no full-text index): it reads them once and
then answers from the process's kept read while the partition's stamp is unchanged, one point read a search
(``domain.reads.MemoryReads._searched``). A budgeted read's sequence rides on the stamp its check just read
(``CosmosReads.entry_sequence``), and one built with nothing kept reads no stamp of its own: its heads query
returns it (``CosmosReads.load_stamped_heads``). That these never show stale memory is checked on both stores by
tests/contract/test_search_reuse.py; these pin the round trips.
"""

from __future__ import annotations

import uuid

from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import MemoryService
from memory_core.domain.sharing import SharingPolicy
from tests.support.cosmos_server import CosmosServer
from tests.support.seeding import make_entries, seed

ALEX = Caller(upn="alex@contoso.com", name="Alex")
SIZE = 300


def _seeded(account: CosmosServer, store: CosmosMemoryStore) -> ProfileKey:
    key = ProfileKey(f"search-{uuid.uuid4().hex[:8]}", ALEX.upn, Scope.USER)
    seed(store, make_entries(key, SIZE), account)
    return key


def test_a_repeated_search_is_one_point_read_and_one_after_an_append_reads_only_the_appended_entry(
    cosmos_account: CosmosServer, stores: list[CosmosMemoryStore]
) -> None:
    reading, writing = stores[0], stores[1]
    key = _seeded(cosmos_account, stores[2])
    reader, writer = MemoryService(reading), MemoryService(writing, allow_sharing_override=True)
    reader.search(ALEX, key.instance_id, Scope.USER, None, "item")  # the client's first call checks its container

    fresh = MemoryService(reading, allow_sharing_override=True)
    with reading.measure() as first:
        found = fresh.search(ALEX, key.instance_id, Scope.USER, None, "mentioned")
    with reading.measure() as again:
        assert fresh.search(ALEX, key.instance_id, Scope.USER, None, "mentioned") == found
    assert first.round_trips == 2 and first.rows >= SIZE  # the stamp, then the scope's one query
    assert (again.round_trips, again.rows) == (1, 1)  # the stamp alone
    assert again.bytes_read * 50 < first.bytes_read

    writer.append(ALEX, key.instance_id, Scope.USER, None, "- a new entry about zeppelins")
    with reading.measure() as grown:
        hits = fresh.search(ALEX, key.instance_id, Scope.USER, None, "zeppelins")
    assert [h.entry.content_markdown for h in hits] == ["- a new entry about zeppelins"]
    assert grown.round_trips == 2 and grown.rows < 10  # the stamp, then what was appended (and the heads)

    # The instance's shared partition has no stamp until a read makes it: the first team search labels
    # what it keeps with "unknown", so the second reads again, and from then on it is kept.
    for _ in range(2):
        fresh.search(ALEX, key.instance_id, Scope.USER, None, "zeppelins", sharing=SharingPolicy.TEAM)
    with reading.measure() as team_again:
        hits = fresh.search(ALEX, key.instance_id, Scope.USER, None, "zeppelins", sharing=SharingPolicy.TEAM)
    assert [h.entry.content_markdown for h in hits] == ["- a new entry about zeppelins"]
    assert (team_again.round_trips, team_again.rows) == (2, 2)  # both partitions' stamps, nothing more


def test_entry_sequence_takes_the_stamp_its_read_checked_and_still_finds_what_was_stored_after_it(
    cosmos_account: CosmosServer, stores: list[CosmosMemoryStore]
) -> None:
    reading, writing = stores[0], stores[1]
    key = _seeded(cosmos_account, stores[2])
    writer = MemoryService(writing)
    with reading.one_read():
        checked = reading.partition_stamp(key.instance_id, key.upn)
        writer.append(ALEX, key.instance_id, Scope.USER, None, "- stored after the check")
        with reading.measure() as metrics:
            sequence = reading.entry_sequence(key.instance_id, key.upn)
        assert metrics.round_trips == 0
    loaded = reading.load_since([key], sequence)  # the next read, grown from that sequence
    assert loaded.stamp.only_added_since(checked) and loaded.stamp != checked
    assert [e.content_markdown for e in loaded.states[0].entries] == ["- stored after the check"]
    with reading.measure() as outside:
        assert reading.entry_sequence(key.instance_id, key.upn) == loaded.sequence
    assert outside.round_trips == 1  # no read's check to take: the point read


def test_a_budgeted_read_of_a_memory_larger_than_its_budget_reads_no_stamp_of_its_own(
    cosmos_account: CosmosServer, stores: list[CosmosMemoryStore]
) -> None:
    """The heads (with the stamp item, which labels the read: ``load_stamped_heads``), a page, the newest
    replace and the count: 4 round trips (5 when the stamp was a point read first, 6 when the sequence was
    one more). The next read of it is the stamp alone; after another process's append, the stamp and the
    entries appended."""
    reading = stores[0]
    key = _seeded(cosmos_account, stores[2])
    MemoryService(reading).get(ALEX, key.instance_id, Scope.USER, None)  # the container's check
    service = MemoryService(reading)
    with reading.measure() as metrics:
        view = service.get_within(ALEX, key.instance_id, Scope.USER, None, 2000)
    assert view.budget is not None and view.budget.omitted_entries > 0
    assert metrics.round_trips == 4
    with reading.measure() as again:
        assert service.get_within(ALEX, key.instance_id, Scope.USER, None, 2000) == view
    assert (again.round_trips, again.rows) == (1, 1)
    MemoryService(stores[1]).append(ALEX, key.instance_id, Scope.USER, None, "- appended by another process")
    with reading.measure() as grown:
        after = service.get_within(ALEX, key.instance_id, Scope.USER, None, 2000)
    assert "- appended by another process" in after.content_markdown
    assert grown.round_trips == 2  # the stamp, then what was appended


def test_a_get_after_a_search_and_a_search_after_a_get_of_an_unchanged_memory_read_one_item(
    cosmos_account: CosmosServer, stores: list[CosmosMemoryStore]
) -> None:
    """Whichever loads the memory in full keeps the other's answer from that load (``shared_loads.SharedLoads``). A
    get that restores a checkpoint (300 entries have one) loads no entry, so a search after it still reads the scope:
    that is pinned too, and so is the checkpoint the get after a search writes (the search wrote none; without it
    every other process's first get would load the memory in full)."""
    reading = stores[0]
    key = _seeded(cosmos_account, stores[2])
    MemoryService(reading).search(ALEX, key.instance_id, Scope.USER, None, "item")  # the container check

    searched = MemoryService(reading)
    searched.search(ALEX, key.instance_id, Scope.USER, None, "mentioned")
    with reading.measure() as get_after_search:
        view = searched.get(ALEX, key.instance_id, Scope.USER, None)
    assert view.content_markdown == MemoryService(stores[1]).get(ALEX, key.instance_id, Scope.USER, None).content_markdown
    # The stamp, and the batch that writes the checkpoint the search left to it: no entry read.
    assert (get_after_search.round_trips, get_after_search.rows) == (2, 1)

    small = _seeded_few(cosmos_account, stores[2])  # below the checkpoint's 256 entries: a get loads in full
    got = MemoryService(reading)
    got.get(ALEX, small.instance_id, Scope.USER, None)
    with reading.measure() as search_after_get:
        assert got.search(ALEX, small.instance_id, Scope.USER, None, "mentioned")
    assert (search_after_get.round_trips, search_after_get.rows) == (1, 1)

    restored = MemoryService(reading)
    restored.get(ALEX, key.instance_id, Scope.USER, None)  # from the checkpoint the get after the search left
    with reading.measure() as search_after_restore:
        restored.search(ALEX, key.instance_id, Scope.USER, None, "mentioned")
    assert search_after_restore.round_trips == 2 and search_after_restore.rows >= SIZE


def _seeded_few(account: CosmosServer, store: CosmosMemoryStore) -> ProfileKey:
    key = ProfileKey(f"search-{uuid.uuid4().hex[:8]}", ALEX.upn, Scope.USER)
    seed(store, make_entries(key, 20), account)
    return key
