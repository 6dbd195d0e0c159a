"""The SQLite store's FTS5 index: pages in the domain's order, whatever the ties, and only the asked profiles.

The index ranks inside FTS5 by score and a time-ordered key, then re-sorts runs of
equal scores within one key bucket. These tests build memories full of such runs
(identical texts at one instant, in one bucket, across buckets) and check every page
against the order the domain defines, computed here from the scores alone.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope, ScopeState, Share
from memory_core.domain.service import DeletionMode, MemoryService, PendingDeletion, WriteOptions
from memory_core.domain.sharing import SharingPolicy

ALEX = Caller(upn="alex@contoso.com")
BEA = Caller(upn="bea@contoso.com")
T0 = datetime(2026, 3, 1, tzinfo=UTC)
KEY = ProfileKey("i", ALEX.upn, Scope.USER)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    s = SqliteMemoryStore(tmp_path / "fts.sqlite3")
    yield s
    s.close()


def _append(store: SqliteMemoryStore, key: ProfileKey, entry_id: str, text: str, at: datetime) -> None:
    profile = MemoryProfile(key, None, None, None, T0, T0)
    store.append(profile, MemoryEntry(entry_id, key, text, EntryKind.APPEND, at, key.upn))


def _domain_order(store: SqliteMemoryStore, keys: list[ProfileKey], terms: list[str]) -> list[str]:
    """Every match's id in the domain's order (score, newest, id), sorted here from the index's scores."""
    found = store.search_index(keys, terms)  # take=None: every match
    entries = {e.id: e for state, _ in found for e in state.entries}
    scores = {i: s for _, page in found for i, s in page.items()}
    return sorted(scores, key=lambda i: (-scores[i], -entries[i].created_on.timestamp(), i))


def _page(store: SqliteMemoryStore, keys: list[ProfileKey], terms: list[str], skip: int, take: int) -> list[str]:
    found = store.search_index(keys, terms, skip=skip, take=take)
    entries = {e.id: e for state, _ in found for e in state.entries}
    scores = {i: s for _, page in found for i, s in page.items()}
    return sorted(scores, key=lambda i: (-scores[i], -entries[i].created_on.timestamp(), i))


def _ties_everywhere(store: SqliteMemoryStore, rng: random.Random, key: ProfileKey, n: int) -> None:
    """``n`` entries from few texts (so scores tie), at few instants (so times tie), in a shuffled
    insertion order (so insertion order is not time order), with ids not in insertion order."""
    texts = ["olive oil", "olive olive oil", "olive tree in the garden", "olive", "oil and olive and bread"]
    instants = [T0 + timedelta(seconds=rng.choice([0, 1, 2, 3, 5, 9, 60, 3600])) for _ in range(8)]
    rows = [(f"{rng.randrange(16**6):06x}-{i}", rng.choice(texts), rng.choice(instants)) for i in range(n)]
    rng.shuffle(rows)
    for entry_id, text, at in rows:
        _append(store, key, entry_id, text, at)


def test_pages_follow_the_domain_order_through_runs_of_ties(store: SqliteMemoryStore) -> None:
    rng = random.Random(15)
    _ties_everywhere(store, rng, KEY, 260)
    expected = _domain_order(store, [KEY], ["olive"])
    assert len(expected) == 260
    for take in (1, 3, 10, 37, 50, 200):
        pages: list[str] = []
        for skip in range(0, 260, take):
            pages += _page(store, [KEY], ["olive"], skip, take)
        assert pages == expected, f"take={take}"  # no duplicate, no gap, no reordering across pages
    for skip, take in ((0, 10), (5, 40), (33, 1), (120, 77), (250, 50), (300, 10)):
        assert _page(store, [KEY], ["olive"], skip, take) == expected[skip:skip + take]


def test_a_run_of_ties_longer_than_the_rows_read_past_a_page_is_read_whole(store: SqliteMemoryStore) -> None:
    """100 identical entries at one instant, inserted out of id order: each page is the next ids."""
    ids = [f"{n:03d}" for n in range(100)]
    random.Random(3).shuffle(ids)
    for entry_id in ids:
        _append(store, KEY, entry_id, "same words", T0)
    _append(store, KEY, "newer", "same words", T0 + timedelta(minutes=1))
    expected = ["newer", *sorted(ids)]
    for skip in range(0, 101, 10):
        assert _page(store, [KEY], ["same"], skip, 10) == expected[skip:skip + 10]


def test_other_profiles_users_and_instances_never_enter_a_page(store: SqliteMemoryStore) -> None:
    """Their entries are identical and at the same instants, so they would tie with every match."""
    rng = random.Random(7)
    others = [
        ProfileKey("i", BEA.upn, Scope.USER),
        ProfileKey("other", ALEX.upn, Scope.USER),
        ProfileKey("i", ALEX.upn, Scope.AGENT, "/agents/helper"),
    ]
    for key in [KEY, *others]:
        _ties_everywhere(store, random.Random(rng.random()), key, 60)
    agent = others[2]
    for keys in ([KEY], [agent], [KEY, agent]):
        expected = _domain_order(store, keys, ["olive"])
        assert len(expected) == 60 * len(keys)
        pages: list[str] = []
        for skip in range(0, len(expected), 25):
            found = store.search_index(keys, ["olive"], skip=skip, take=25)
            for state, scores in found:
                assert all(e.key == state.key for e in state.entries)
                assert set(scores) <= {e.id for e in state.entries}
            pages += _page(store, keys, ["olive"], skip, 25)
        assert pages == expected


def test_dates_far_from_now_keep_their_order(store: SqliteMemoryStore) -> None:
    """Buckets clamp past 2272 and before 1728; entries there still come newest first, then by id."""
    dates = {"a": datetime(1650, 1, 1, tzinfo=UTC), "b": datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC),
             "c": datetime(2000, 1, 1, 0, 0, 1, tzinfo=UTC), "d": datetime(2400, 1, 1, tzinfo=UTC),
             "e": datetime(9999, 12, 31, tzinfo=UTC), "f": datetime(9999, 12, 31, tzinfo=UTC),
             "g": datetime(2026, 3, 1, tzinfo=UTC)}
    for entry_id, at in dates.items():
        _append(store, KEY, entry_id, "same words", at)
    assert _page(store, [KEY], ["same"], 0, 10) == ["e", "f", "d", "g", "c", "b", "a"]
    assert [x for skip in range(7) for x in _page(store, [KEY], ["same"], skip, 1)] == ["e", "f", "d", "g", "c", "b", "a"]


def test_writes_keep_the_index_in_step(store: SqliteMemoryStore) -> None:
    """Deleting and rewriting entries (the triggers recompute each key) leaves no stale match."""
    for n in range(30):
        _append(store, KEY, f"e{n:02d}", "kiwi fruit", T0 + timedelta(seconds=n))
    store.delete_entries(KEY, [f"e{n:02d}" for n in range(0, 30, 3)])
    db = sqlite3.connect(store._db.path)  # another connection, as a second process would write
    db.execute("UPDATE entries SET created_on=? WHERE id='e01'", ((T0 + timedelta(days=1)).isoformat(),))
    db.execute("UPDATE entries SET content_markdown='no match' WHERE id='e02'")
    db.commit()
    db.close()
    found = _page(store, [KEY], ["kiwi"], 0, 100)
    assert found[0] == "e01" and "e02" not in found and len(found) == 19
    assert not {f"e{n:02d}" for n in range(0, 30, 3)} & set(found)
    assert sqlite3.connect(store._db.path).execute(
        "INSERT INTO entries_fts(entries_fts, rank) VALUES ('integrity-check', 1)").fetchall() == []


def test_one_erasure_of_many_entries_takes_every_one_out_of_the_index(store: SqliteMemoryStore) -> None:
    """``delete_entries`` erases a large list in one statement: every named entry of the profile, and its words
    from the index, whatever the order of the ids; ids of other profiles, or of none, are left alone."""
    other = ProfileKey("i", BEA.upn, Scope.USER)
    for n in range(400):
        _append(store, KEY, f"e{n:03d}", f"kiwi fruit number{n}", T0 + timedelta(seconds=n // 3))
    _append(store, other, "e000-bea", "kiwi of bea", T0)
    erased = [f"e{n:03d}" for n in random.Random(7).sample(range(400), 300)]
    assert store.delete_entries(KEY, [*erased, "e000-bea", "missing"]) == 300
    found = _page(store, [KEY], ["kiwi"], 0, 500)
    assert len(found) == 100 and not set(erased) & set(found)
    assert _page(store, [other], ["kiwi"], 0, 10) == ["e000-bea"]
    assert _page(store, [KEY], [f"number{erased[0][1:].lstrip('0') or '0'}"], 0, 10) == []
    assert sqlite3.connect(store._db.path).execute(
        "INSERT INTO entries_fts(entries_fts, rank) VALUES ('integrity-check', 1)").fetchall() == []


def test_erasing_one_entry_of_a_large_profile_reads_no_other(store: SqliteMemoryStore) -> None:
    """The ids drive the erasure (one primary-key seek each): a forget in a profile of thousands costs what a
    forget in a profile of ten does, not a scan of the profile."""
    for n in range(3000):
        _append(store, KEY, f"e{n:04d}", "kiwi", T0 + timedelta(seconds=n))
    with store.measure() as cost:
        assert store.delete_entries(KEY, ["e1500"]) == 1
    assert 0 < cost.vm_steps < 3000


def test_a_store_of_the_previous_layout_is_reindexed_on_open(tmp_path: Path) -> None:
    """Version 5 keyed the index by the entries' rowid; opening it rebuilds the index by time."""
    path = tmp_path / "v5.sqlite3"
    store = SqliteMemoryStore(path)
    for n in range(5):
        _append(store, KEY, f"e{n}", "lychee", T0 + timedelta(seconds=10 * n))
    store.close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO entries_fts(entries_fts) VALUES ('delete-all')")  # an index the new code cannot read
    db.execute("PRAGMA user_version=5")
    db.commit()
    db.close()
    reopened = SqliteMemoryStore(path)
    try:
        assert _page(reopened, [KEY], ["lychee"], 0, 10) == ["e4", "e3", "e2", "e1", "e0"]
    finally:
        reopened.close()


# -- through the service: ties, holds and sharing on the index's pages ------------------------------------


def _frozen_service(store: Any, policy: SharingPolicy = SharingPolicy.PRIVATE,
                    ids: Callable[[], str] | None = None) -> MemoryService:
    numbers = count()
    return MemoryService(store, clock=lambda: T0, new_id=ids or (lambda: f"id-{next(numbers):04d}"),
                         deletion_mode=DeletionMode.OPERATOR_APPROVAL, default_sharing=policy)


def test_search_ties_break_newest_first_then_by_id(store: SqliteMemoryStore) -> None:
    issued = iter(["m", "c", "x", "a", "k"])
    service = _frozen_service(store, ids=lambda: next(issued))
    for _ in range(5):
        service.append(ALEX, "i", Scope.USER, None, "tea at nine")
    hits = service.search(ALEX, "i", Scope.USER, None, "tea", limit=3)
    assert [h.entry.id for h in hits] == ["a", "c", "k"]
    later = MemoryService(store, clock=lambda: T0 + timedelta(microseconds=1), new_id=lambda: "z")
    later.append(ALEX, "i", Scope.USER, None, "tea at nine")
    assert [h.entry.id for h in service.search(ALEX, "i", Scope.USER, None, "tea", limit=3)] == ["z", "a", "c"]


def test_held_and_foreign_ties_never_appear_however_many(store: SqliteMemoryStore) -> None:
    """Alex's and Bea's identical entries at one instant; some of Alex's pending deletion."""
    alex = _frozen_service(store)
    bea = MemoryService(store, clock=lambda: T0, new_id=iter(f"bea-{n:04d}" for n in range(500)).__next__)
    mine = [alex.append(ALEX, "i", Scope.USER, None, "walnut bread").entry_id or "" for _ in range(150)]
    for _ in range(150):
        bea.append(BEA, "i", Scope.USER, None, "walnut bread")
    held = set(mine[::7])
    for entry_id in held:
        assert isinstance(alex.forget(ALEX, "i", entry_id), PendingDeletion)
    shown = sorted(set(mine) - held)
    assert [h.entry.id for h in alex.search(ALEX, "i", Scope.USER, None, "walnut", limit=200)] == shown
    assert [h.entry.id for h in alex.search(ALEX, "i", Scope.USER, None, "walnut", limit=5)] == shown[:5]


def test_team_shared_ties_follow_the_sharing_policy(store: SqliteMemoryStore) -> None:
    private = _frozen_service(store)
    numbers = count()
    team = MemoryService(store, clock=lambda: T0, new_id=lambda: f"t-{next(numbers):04d}",
                         deletion_mode=DeletionMode.IMMEDIATE, default_sharing=SharingPolicy.TEAM)
    for n in range(60):
        private.append(ALEX, "i", Scope.USER, None, "avocado toast",
                       WriteOptions(share=Share.TEAM) if n % 2 else WriteOptions())
    for _ in range(60):
        team.append(BEA, "i", Scope.USER, None, "avocado toast")
    shared_by_alex = 30
    assert all(h.entry.author_upn == BEA.upn for h in private.search(BEA, "i", Scope.USER, None, "avocado", limit=500))
    seen = team.search(BEA, "i", Scope.USER, None, "avocado", limit=500)
    assert len(seen) == 60 + shared_by_alex
    assert len({h.entry.id for h in seen}) == len(seen)
    assert sum(h.entry.author_upn == ALEX.upn for h in seen) == shared_by_alex


def test_a_search_reads_back_one_window_of_matches_not_every_match(store: SqliteMemoryStore) -> None:
    """Every match is scored inside FTS5, but only a page and its margins come back to Python."""
    service = _frozen_service(store)
    for n in range(400):
        _append(store, KEY, f"e{n:03d}", "kiwi fruit", T0 + timedelta(seconds=n))
    with store.measure() as cost:
        hits = service.search(ALEX, "i", Scope.USER, None, "kiwi", limit=10)
    assert [h.entry.id for h in hits] == [f"e{n:03d}" for n in range(399, 389, -1)]
    assert cost.round_trips == 4  # matches, replace entries, profiles, holds
    assert cost.rows <= 20 + 32 + 1  # the first page (twice the limit), the margin past it, the profile


class WritesBetweenPages:
    """The store, but another process deletes the best match right after the first page is read."""

    def __init__(self, inner: SqliteMemoryStore) -> None:
        self.inner = inner
        self.pages = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def search_index(self, *args: Any, **kwargs: Any) -> list[tuple[ScopeState, dict[str, float]]]:
        found = self.inner.search_index(*args, **kwargs)
        self.pages += 1
        if self.pages == 1:
            best = next(iter(found[0][1]))
            db = sqlite3.connect(self.inner._db.path)
            db.execute("DELETE FROM entries WHERE id=?", (best,))
            db.commit()
            db.close()
        return found


def test_the_pages_of_one_search_read_one_state_of_the_store(store: SqliteMemoryStore) -> None:
    """A write between two pages must not shift the second: the match that would slide from the
    second page onto the first (already read) would be lost."""
    service = _frozen_service(store)
    for n in range(20):  # exactly the first page (twice the limit), all hidden below
        _append(store, KEY, f"hidden-{n:02d}", "olive olive olive", T0 - timedelta(seconds=n))
    assert isinstance(service.clear(ALEX, "i", Scope.USER, None, confirm=True), PendingDeletion)
    for n in range(30):
        _append(store, KEY, f"shown-{n:02d}", "olive and many other words", T0 + timedelta(minutes=1, seconds=n))
    expected = [f"shown-{n:02d}" for n in range(29, 19, -1)]
    assert [h.entry.id for h in service.search(ALEX, "i", Scope.USER, None, "olive")] == expected
    racing = WritesBetweenPages(store)
    assert [h.entry.id for h in _frozen_service(racing).search(ALEX, "i", Scope.USER, None, "olive")] == expected
    assert racing.pages == 2


def test_times_with_other_offsets_order_by_the_instant(store: SqliteMemoryStore) -> None:
    """10:00 at +05:00 is 05:00 UTC: older than 06:00 UTC, though its text sorts later."""
    east = timezone(timedelta(hours=5))
    _append(store, KEY, "east", "same words", datetime(2026, 3, 1, 10, 0, tzinfo=east))
    _append(store, KEY, "utc", "same words", datetime(2026, 3, 1, 6, 0, tzinfo=UTC))
    _append(store, KEY, "west", "same words", datetime(2026, 3, 1, 2, 0, tzinfo=timezone(timedelta(hours=-5))))
    assert _page(store, [KEY], ["same"], 0, 10) == ["west", "utc", "east"]
    assert [_page(store, [KEY], ["same"], skip, 1)[0] for skip in range(3)] == ["west", "utc", "east"]


def test_every_match_after_a_skip_is_the_tail_of_the_order(store: SqliteMemoryStore) -> None:
    _ties_everywhere(store, random.Random(5), KEY, 80)
    expected = _domain_order(store, [KEY], ["olive"])
    for skip in (1, 7, 40, 79, 80):
        found = store.search_index([KEY], ["olive"], skip=skip)
        entries = {e.id: e for state, _ in found for e in state.entries}
        scores = found[0][1]
        assert sorted(scores, key=lambda i: (-scores[i], -entries[i].created_on.timestamp(), i)) == expected[skip:]
