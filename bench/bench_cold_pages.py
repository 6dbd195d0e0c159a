"""The first entries page of a process that keeps no listing, at 10 and 10,000 entries, before and after.

Run from the project root:

    python bench/bench_cold_pages.py [--iterations 30] [--sizes 10,10000] [--no-cosmos]

A Functions instance just started, or any process after a write that was not an append,
keeps no listing of the scope. Its first entries page (``GET .../memory/entries``, the
console's list; 50 entries, private policy) was cut from a listing built from a full load
of the scope ("before": ``Listings.listing`` on a fresh ``Listings``, exactly the call
``MemoryReads.entries_page`` made until this change); it is now read from the store a page
at a time ("after": ``entries_page`` of a fresh ``MemoryService``, ``domain.stored_pages``).
Also timed: a page deep in the walk (after the 90% mark) read the new way.

Each sample uses a new ``MemoryService`` (nothing kept) on one open store (the connection,
or the Cosmos client, already made: a process's first request pays that either way). Rows
are: SQLite, in process (round trips, rows, VM steps from ``store.measure()``), and the
Cosmos DB test server (npm @vercel/cosmosdb-server on loopback, the tests' server: round
trips and items read; it charges a flat 1 RU per request and scans its container per query,
so its milliseconds are not a real account's). Prints a markdown table of p50 ms and costs.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.kept import KeptAnswers
from memory_core.domain.listings import Listings, entry_position
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.paging import encode_token
from memory_core.domain.service import MemoryService

READER = Caller(upn="reader@contoso.com", name="Reader")
PAGE = 50
START = datetime(2025, 1, 1, tzinfo=UTC)


def entries(key: ProfileKey, count: int) -> list[MemoryEntry]:
    return [MemoryEntry(uuid.uuid4().hex, key, f"- The reader prefers plan {n} in tables", EntryKind.APPEND,
                        START + n * timedelta(minutes=1), key.upn) for n in range(count)]


def p50(action: Callable[[], object], iterations: int) -> float:
    action()  # warm-up
    times = []
    for _ in range(iterations):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def cost(store: Any, action: Callable[[], object]) -> str:
    with store.measure() as metrics:
        action()
    parts = [f"{metrics.round_trips} round trips", f"{metrics.rows} rows"]
    if hasattr(metrics, "vm_steps"):
        parts.append(f"{metrics.vm_steps:,} VM steps")
    return ", ".join(parts)


def measure(store: Any, seeded: list[MemoryEntry], iterations: int) -> list[tuple[str, float, str]]:
    """The timed reads of one seeded memory (``seeded``: its entries, oldest first)."""
    key, size = seeded[0].key, len(seeded)
    instance = key.instance_id

    def before() -> object:
        listing = Listings(store, KeptAnswers()).listing(("entries", (key,)), [key])
        return listing.entries[:PAGE]

    def after() -> object:
        return MemoryService(store).entries_page(READER, instance, Scope.USER, None, limit=PAGE)

    deep_token = encode_token("entries:user", list(entry_position(seeded[size * 9 // 10])))

    def deep() -> object:
        return MemoryService(store).entries_page(READER, instance, Scope.USER, None, limit=PAGE, continuation=deep_token)

    return [
        (f"first page, before (a listing built), {size:,} entries", p50(before, iterations), cost(store, before)),
        (f"first page, after (a page read), {size:,} entries", p50(after, iterations), cost(store, after)),
        (f"a page at 90% of the walk, after, {size:,} entries", p50(deep, iterations), cost(store, deep)),
    ]


def seed_sqlite(store: SqliteMemoryStore, seeded: list[MemoryEntry]) -> None:
    key = seeded[0].key
    for entry in seeded:
        store.append(MemoryProfile(key, "Reader", None, None, START, START), entry)


def run(store: Any, label: str, sizes: list[int], iterations: int, seed: Callable[[list[MemoryEntry]], None]) -> None:
    print(f"| {label}: read | p50 ms | store work (one read) |\n|---|---:|---|", flush=True)
    for size in sizes:
        seeded = entries(ProfileKey(f"bench-{size}-{uuid.uuid4().hex[:6]}", READER.upn, Scope.USER), size)
        seed(seeded)
        for name, ms, work in measure(store, seeded, iterations):
            print(f"| {name} | {ms:.2f} | {work} |", flush=True)
    print()


@contextmanager
def cosmos_store() -> Iterator[tuple[Any, Callable[[list[MemoryEntry]], None]]]:
    from tests.adapters.cosmos_support import cosmos_store as make_store
    from tests.adapters.cosmos_support import provisioned_cosmos_server
    from tests.support.seeding import seed

    with provisioned_cosmos_server() as account:
        store = make_store(account)
        try:
            yield store, lambda seeded: seed(store, seeded, account)
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--sizes", default="10,10000")
    parser.add_argument("--no-cosmos", action="store_true", help="SQLite only")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"Python {platform.python_version()} on {platform.machine()}, load {os.getloadavg()[0]:.2f}\n")
    with tempfile.TemporaryDirectory(prefix="memory-bench-") as tmp:
        store = SqliteMemoryStore(Path(tmp) / "bench.sqlite3")
        run(store, "SQLite", sizes, args.iterations, lambda seeded: seed_sqlite(store, seeded))
        store.close()
    if not args.no_cosmos:
        with cosmos_store() as (cosmos, seed):
            run(cosmos, "Cosmos DB test server", sizes, max(5, args.iterations // 3), seed)


if __name__ == "__main__":
    main()
