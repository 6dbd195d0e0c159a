"""What every MemoryStore must do for entries pages read without a listing: oldest-first pages of a window."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.store import EntryWindow, MemoryStore
from tests.support.seeding import entries_at

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def _key(scope: Scope = Scope.USER, agent: str | None = None) -> ProfileKey:
    return ProfileKey(f"oldest-{uuid.uuid4().hex[:8]}", "alex@contoso.com", scope, agent)


def _walk(store: MemoryStore, window: EntryWindow, limit: int) -> list[list[str]]:
    pages, after = [], None
    while True:
        page = store.oldest_entries(window, limit, after=after)
        assert len(page) <= limit
        pages.append([e.id for e in page])
        if len(page) < limit:
            return pages
        after = page[-1].sort_key


def test_oldest_entries_come_oldest_first_bounded_and_of_the_profile_only(store: MemoryStore) -> None:
    key = _key()
    seeded = entries_at(store, key, [T0 + timedelta(seconds=i) for i in range(7)])
    entries_at(store, ProfileKey(key.instance_id, key.upn, Scope.AGENT, "/agents/a"), [T0 - timedelta(hours=1)])
    entries_at(store, _key(), [T0 - timedelta(hours=2)])
    page = store.oldest_entries(EntryWindow(key), 3)
    assert page == seeded[:3]
    assert [e.id for e in store.oldest_entries(EntryWindow(key), 3, after=seeded[2].sort_key)] == \
        [e.id for e in seeded[3:6]]
    assert store.oldest_entries(EntryWindow(key), 10, after=seeded[-1].sort_key) == []
    assert store.oldest_entries(EntryWindow(key), 0) == []


def test_equal_timestamps_come_in_id_order_and_a_page_boundary_among_them_loses_and_repeats_none(
    store: MemoryStore,
) -> None:
    """Ties at every page boundary, for every page size: the walk is the (created_on, id) order exactly."""
    key = _key()
    rng = random.Random(7)
    times = [T0 + timedelta(microseconds=rng.choice([0, 0, 0, 1, 1, 2])) for _ in range(17)]
    ids = [f"e{rng.randrange(10**6):06d}-{n}" for n in range(17)]
    seeded = entries_at(store, key, times, ids=ids)
    expected = [e.id for e in sorted(seeded, key=lambda e: e.sort_key)]
    for limit in (1, 2, 3, 5, 16, 17, 40):
        pages = _walk(store, EntryWindow(key), limit)
        assert [i for page in pages for i in page] == expected, limit


def test_the_window_and_the_position_narrow_a_page_together(store: MemoryStore) -> None:
    """after (clear and hold watermark, exclusive), start (a replace, inclusive), held ids and the position."""
    key = _key()
    times = [T0 + timedelta(seconds=i) for i in range(10)]
    seeded = entries_at(store, key, times)
    window = EntryWindow(key, after=times[1], start=seeded[3].sort_key, excluded_ids=frozenset({seeded[5].id}))
    assert [e.id for e in store.oldest_entries(window, 3)] == [seeded[3].id, seeded[4].id, seeded[6].id]
    assert [e.id for e in store.oldest_entries(window, 3, after=seeded[4].sort_key)] == \
        [seeded[6].id, seeded[7].id, seeded[8].id]
    assert [e.id for e in store.oldest_entries(window, 3, after=(times[0], ""))] == \
        [seeded[3].id, seeded[4].id, seeded[6].id]
