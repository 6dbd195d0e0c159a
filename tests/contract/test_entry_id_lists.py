"""A list of entry ids names each entry by its whole id, NUL included, on every MemoryStore: what
``delete_entries`` erases, what an ``EntryWindow``'s ``excluded_ids`` and a ``PageCursor``'s ``seen_ids`` leave out.

SQLite before 3.45 (this machine's Python links 3.40.1) reads a JSON string up to its first NUL, so a list passed
through ``json_each`` named ``x`` for ``x\\0y``: ``delete_entries(key, ["x\\0y"])`` erased the entry ``x`` and kept
``x\\0y``. The ids beside the NUL ones are ASCII, beyond ASCII, and JSON escapes, each standing for itself.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.store import EntryWindow, MemoryStore, PageCursor
from tests.support.seeding import entries_at

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)

#: Ids sharing what precedes a NUL, a NUL first or last, and their look-alikes without one.
IDS = ["x", "x\0y", "x\0z", "x\0", "\0y", "y", "\u00e9\0\U0001f600", "\u00e9", "q\"\n\0\tr"]


def _key() -> ProfileKey:
    return ProfileKey(f"idlist-{uuid.uuid4().hex[:8]}", "alex@contoso.com", Scope.USER, None)


def _seeded(store: MemoryStore, *, same_time: bool = False) -> ProfileKey:
    key = _key()
    times = [T0] * len(IDS) if same_time else [T0 + timedelta(seconds=n) for n in range(len(IDS))]
    entries_at(store, key, times, ids=IDS)
    return key


def _stored(store: MemoryStore, key: ProfileKey) -> list[str]:
    return sorted(e.id for e in store.load([key])[0].entries)


def test_delete_entries_erases_each_named_id_whole_and_nothing_named_up_to_or_after_a_nul(
    store: MemoryStore,
) -> None:
    """Each id alone erases that entry only (count 1); ids that only share a part before or after a NUL with
    stored ones erase nothing (count 0); several at once erase exactly those."""
    key = _seeded(store)
    for erased in ("x\0y", "\u00e9\0\U0001f600", "x\0"):
        before = _stored(store, key)
        assert store.delete_entries(key, [erased]) == 1, repr(erased)
        assert _stored(store, key) == sorted(set(before) - {erased}), repr(erased)
    kept = _stored(store, key)
    assert store.delete_entries(key, ["x\0q", "x\0y\0", "\0", "y\0", "\u00e9\0"]) == 0
    assert _stored(store, key) == kept
    assert store.delete_entries(key, ["\0y", "x\0z", "q\"\n\0\tr", "missing"]) == 3
    assert _stored(store, key) == sorted(["x", "y", "\u00e9"])


def test_a_surrogate_pair_names_the_character_it_spells_with_or_without_a_nul(store: MemoryStore) -> None:
    """An id spelling an emoji as a high and a low surrogate (as a JSON escape decoded by hand would) names the
    entry stored with the emoji, NUL or not, as the JSON both stores read ids through joins the pair; a lone
    surrogate names nothing."""
    key = _key()
    entries_at(store, key, [T0, T0 + timedelta(seconds=1)], ids=["\U0001f600", "\U0001f600\0"])
    assert store.delete_entries(key, ["\ud83d", "\ud83d\0", "\ude00\0"]) == 0
    assert store.delete_entries(key, ["\ud83d\ude00\0"]) == 1
    assert _stored(store, key) == ["\U0001f600"]
    assert store.delete_entries(key, ["\ud83d\ude00"]) == 1
    assert _stored(store, key) == []


def test_excluded_ids_leave_out_only_the_whole_ids_they_name(store: MemoryStore) -> None:
    """A window excluding NUL-holding ids leaves out exactly those in newest- and oldest-first pages and counts,
    and keeps the entries named by their part before or after the NUL."""
    key = _seeded(store)
    for excluded in ({"x\0y"}, {"x\0", "\0y"}, {"\u00e9\0\U0001f600", "x\0q", "q\"\n\0\tr"}):
        window = EntryWindow(key, excluded_ids=frozenset(excluded))
        shown = [i for i in IDS if i not in excluded]
        assert [e.id for e in store.newest_entries(window, 100)] == shown[::-1], excluded
        assert [e.id for e in store.oldest_entries(window, 100)] == shown, excluded
        assert store.count_entries(window).count == len(shown), excluded


def test_a_cursors_seen_ids_leave_out_only_the_whole_ids_they_name(store: MemoryStore) -> None:
    """Entries at one timestamp: a cursor at it whose seen ids hold a NUL pages on with every other entry of that
    time, those named by the part before or after the NUL included."""
    key = _seeded(store, same_time=True)
    for seen in ({"x\0y"}, {"x\0", "\0y", "\u00e9\0\U0001f600"}, {"x\0q"}):
        page = store.newest_entries(EntryWindow(key), 100, cursor=PageCursor(T0, frozenset(seen)))
        assert sorted(e.id for e in page) == sorted(set(IDS) - seen), seen
