"""What reads keep is bounded in bytes, and the bytes counted are the bytes held.

The LRU rules on their own, then the estimates and the bound against what ``tracemalloc``
measures of a real service on the embedded store (SQLite's own page cache is C memory that
tracemalloc does not see, and that the bound does not cover).
"""

from __future__ import annotations

import gc
import random
import threading
import tracemalloc
from collections.abc import Callable

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.kept import KeptAnswers
from memory_core.domain.models import ProfileKey, Scope, Share
from memory_core.domain.service import MemoryService, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from tests.support.threads import run_switching_often

READER = Caller(upn="reader@contoso.com", name="Reader")
TEAMMATE = Caller(upn="teammate@contoso.com")
KEY = ProfileKey("i", READER.upn, Scope.USER)


def test_the_least_recently_used_answer_goes_first() -> None:
    kept = KeptAnswers(300)
    kept.put("a", "A", 100)
    kept.put("b", "B", 100)
    kept.put("c", "C", 100)
    assert kept.get("a") == "A"  # now the most recently used
    kept.put("d", "D", 100)
    assert (kept.get("b"), kept.get("a"), kept.get("c"), kept.get("d")) == (None, "A", "C", "D")
    assert kept.held == 300 and len(kept) == 3


def test_replacing_an_answer_counts_its_new_size_only() -> None:
    kept = KeptAnswers(1_000)
    kept.put("a", "small", 100)
    kept.put("a", "large", 900)
    kept.put("b", "B", 50)
    assert kept.held == 950 and kept.get("a") == "large"


def test_a_discarded_answer_is_gone_and_no_longer_counted() -> None:
    kept = KeptAnswers(1_000)
    kept.put("a", "A", 100)
    kept.put("b", "B", 50)
    kept.discard("a")
    kept.discard("never kept")
    assert (kept.get("a"), kept.get("b"), kept.held, len(kept)) == (None, "B", 50, 1)


def test_an_answer_larger_than_the_bound_is_kept_alone() -> None:
    kept = KeptAnswers(100)
    kept.put("a", "A", 50)
    kept.put("huge", "H", 500)
    assert (kept.get("a"), kept.get("huge"), len(kept)) == (None, "H", 1)


def test_a_bound_must_be_positive() -> None:
    with pytest.raises(ValueError):
        KeptAnswers(0)


def _seed(service: MemoryService, users: list[Caller], entries: int) -> None:
    for user in users:
        for i in range(entries):
            service.append(user, "i", Scope.USER, None, f"- {user.upn} prefers plan {i} in tables, not lists")
    for i in range(entries // 10):
        service.append(TEAMMATE, "i", Scope.USER, None, f"- team tip {i}", WriteOptions(share=Share.TEAM))


def _traced(action: Callable[[], object]) -> int:
    """The bytes of Python memory still held after ``action`` (its garbage collected)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        action()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("read", ["get", "entries page", "team get", "team entries page", "budgeted get",
                                  "team budgeted get"])
def test_what_an_answer_is_counted_is_what_it_holds(store: SqliteMemoryStore, read: str) -> None:
    """Each kind of kept answer, at 2,000 entries: the bytes counted are within 0.7x to 1.5x of those measured."""
    service = MemoryService(store, allow_sharing_override=True)
    _seed(service, [READER], 2_000)
    team = SharingPolicy.TEAM
    reads: dict[str, Callable[[], object]] = {
        "get": lambda: service.get(READER, "i", Scope.USER, None),
        # A private page of a memory larger than a page keeps nothing (stored_pages); the listing one keeps
        # when it holds the whole scope, and grows after appends, is this one.
        "entries page": lambda: service._listings.listing(  # type: ignore[union-attr]
            ("entries", (KEY,)), [KEY]),
        "team get": lambda: service.get(READER, "i", Scope.USER, None, team),
        # A first team page of a memory larger than a page keeps nothing either (shared_checkpoints): the
        # listing a walk past it keeps is this one.
        "team entries page": lambda: service._listings.across(  # type: ignore[union-attr]
            ("entries", (KEY,), team), [KEY], READER.upn, team),
        "budgeted get": lambda: service.get_within(READER, "i", Scope.USER, None, 16_000),
        "team budgeted get": lambda: service.get_within(READER, "i", Scope.USER, None, 16_000, team),
    }
    before = service.kept.held
    measured = _traced(reads[read])
    counted = service.kept.held - before
    assert 0.7 <= counted / measured <= 1.5, (counted, measured)


def test_a_process_holds_no_more_than_its_bound_whatever_it_reads(store: SqliteMemoryStore) -> None:
    """Ten memories read every way under a 4 MiB bound: the Python memory kept stays within it, give or
    take the estimates' error, while reading them all would keep about 9 MiB."""
    bound = 4 * 1024 * 1024
    service = MemoryService(store, allow_sharing_override=True, read_cache_bytes=bound)
    users = [Caller(upn=f"user{i}@contoso.com") for i in range(10)]
    _seed(service, users, 1_000)

    def two_pages(reader: MemoryService, user: Caller, policy: SharingPolicy | None) -> None:
        """A first page, and the next (a team walk past its first page keeps its listing)."""
        first = reader.entries_page(user, "i", Scope.USER, None, policy, limit=100)
        reader.entries_page(user, "i", Scope.USER, None, policy, limit=100, continuation=first.continuation)

    def read_everything() -> None:
        for user in users:
            for policy in (None, SharingPolicy.TEAM):
                service.get(user, "i", Scope.USER, None, policy)
                service.get_within(user, "i", Scope.USER, None, 16_000, policy)
                two_pages(service, user, policy)

    measured = _traced(read_everything)
    assert service.kept.held <= bound
    assert measured <= 1.3 * bound, measured
    unbounded = MemoryService(store, allow_sharing_override=True, read_cache_bytes=1024 * bound)
    assert _traced(lambda: [unbounded.get(u, "i", Scope.USER, None, p) for u in users
                            for p in (None, SharingPolicy.TEAM)]
                   + [two_pages(unbounded, u, p) for u in users for p in (None, SharingPolicy.TEAM)]) > 2 * bound


def test_answers_put_and_read_from_many_threads_keep_an_exact_count() -> None:
    """Sixteen threads keeping and reading answers at once: the bytes held always equal the sizes of
    the answers kept, and the bound holds whenever more than one answer is kept."""
    kept = KeptAnswers(10_000)
    sizes: dict[tuple[int, int], int] = {}
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(2_000):
                key = (seed % 4, rng.randrange(50))
                if rng.random() < 0.5:
                    size = rng.randrange(1, 3_000)
                    kept.put(key, (key, size), size)
                else:
                    answer = kept.get(key)
                    assert answer is None or answer[0] == key
        except BaseException as e:  # reported below, on the test's thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(16)]
    run_switching_often(threads)
    assert errors == []
    for key in [(group, n) for group in range(4) for n in range(50)]:
        answer = kept.get(key)
        if answer is not None:
            sizes[key] = answer[1]
    assert kept.held == sum(sizes.values()) and len(kept) == len(sizes)
    assert kept.held <= 10_000 or len(kept) == 1
