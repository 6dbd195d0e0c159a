"""What every MemoryStore must do for budgeted reads: newest-first pages, window counts, heads without entries."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from memory_core.domain.models import EntryKind, Hold, ProfileKey, Scope
from memory_core.domain.records import Partition, Record, RecordKind
from memory_core.domain.store import EntryCount, EntryWindow, MemoryStore, PageCursor
from tests.support.seeding import entries_at

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def _key(scope: Scope = Scope.USER, agent: str | None = None) -> ProfileKey:
    return ProfileKey(f"contract-{uuid.uuid4().hex[:8]}", "alex@contoso.com", scope, agent)


def test_newest_entries_come_newest_first_and_bounded(store: MemoryStore) -> None:
    """A page holds at most ``limit`` entries, newest first, of the key's profile only."""
    key, other = _key(), _key(Scope.AGENT, "/agents/a")
    seeded = entries_at(store, key, [T0 + timedelta(seconds=i) for i in range(7)])
    entries_at(store, ProfileKey(key.instance_id, key.upn, Scope.AGENT, "/agents/a"), [T0 + timedelta(hours=1)])
    entries_at(store, other, [T0 + timedelta(hours=2)])
    page = store.newest_entries(EntryWindow(key), 3)
    assert [e.id for e in page] == [e.id for e in reversed(seeded)][:3]
    assert page[0] == seeded[-1]
    assert store.newest_entries(EntryWindow(key), 0) == []


def test_a_cursor_pages_through_equal_timestamps_without_loss_or_repeat(store: MemoryStore) -> None:
    """Entries sharing one timestamp are split across pages, yet every entry comes exactly once."""
    key = _key()
    seeded = entries_at(store, key, [T0] * 5 + [T0 + timedelta(seconds=1)] * 2)
    seen: list[str] = []
    cursor = None
    while True:
        page = store.newest_entries(EntryWindow(key), 2, cursor=cursor)
        seen += [e.id for e in page]
        if len(page) < 2:
            break
        last = page[-1].created_on
        carried = cursor.seen_ids if cursor and cursor.created_on == last else frozenset()
        cursor = PageCursor(last, carried | {e.id for e in page if e.created_on == last})
    assert sorted(seen) == sorted(e.id for e in seeded) and len(seen) == len(set(seen))
    assert set(seen[:2]) == {e.id for e in seeded[5:]}


def test_the_window_honours_watermark_start_exclusions_and_kind(store: MemoryStore) -> None:
    """after (exclusive), start (inclusive sort key), excluded ids and kind all narrow a page and a count."""
    key = _key()
    times = [T0 + timedelta(seconds=i) for i in range(10)]
    seeded = entries_at(store, key, times)
    window = EntryWindow(key, after=times[2], start=seeded[4].sort_key, excluded_ids=frozenset({seeded[6].id}))
    expected = [e for e in seeded[4:] if e is not seeded[6]]
    assert [e.id for e in store.newest_entries(window, 100)] == [e.id for e in reversed(expected)]
    counted = store.count_entries(window)
    assert counted.count == len(expected) and counted.oldest == times[4]
    assert store.newest_entries(window, 100, kind=EntryKind.REPLACE) == []
    (replacement,) = entries_at(store, key, [times[5] + timedelta(milliseconds=1)], kind=EntryKind.REPLACE)
    assert store.newest_entries(EntryWindow(key), 5, kind=EntryKind.REPLACE) == [replacement]


def test_up_to_bounds_a_window_inclusively_in_one_count(store: MemoryStore) -> None:
    """``up_to`` keeps the entries created at or before it (a hold's watermark covers those): one count answers what
    a pending clear hides, where a count of all less a count after the watermark could be torn by a write between."""
    key = _key()
    times = [T0 + timedelta(seconds=i) for i in range(6)]
    seeded = entries_at(store, key, times)
    assert store.count_entries(EntryWindow(key, up_to=times[3])) == EntryCount(4, times[0])
    assert store.count_entries(EntryWindow(key, up_to=T0 - timedelta(microseconds=1))) == EntryCount(0, None)
    window = EntryWindow(key, after=times[0], up_to=times[3])
    assert [e.id for e in store.newest_entries(window, 10)] == [e.id for e in reversed(seeded[1:4])]


def test_count_of_an_empty_window_is_zero(store: MemoryStore) -> None:
    counted = store.count_entries(EntryWindow(_key()))
    assert counted.count == 0 and counted.oldest is None


def test_load_heads_has_profiles_and_holds_but_no_entries(store: MemoryStore) -> None:
    """load_heads answers each key's profile and the partition's holds, never its entries."""
    key = _key()
    missing = ProfileKey(key.instance_id, key.upn, Scope.AGENT, "/agents/none")
    entries_at(store, key, [T0])
    hold = Hold("req-1", (key.profile_id,), T0)
    store.put_record(Record(Partition(key.instance_id, key.upn), RecordKind.HOLD, "req-1", hold.to_data()))
    state, empty = store.load_heads([key, missing])
    assert state.profile is not None and state.profile.name == "Alex" and state.entries == []
    assert state.holds == (hold,) and empty.profile is None and empty.holds == (hold,)
