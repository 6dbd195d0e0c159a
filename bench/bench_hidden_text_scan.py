"""Benchmark: the operator's scan for stored text no reader sees (SQLite), by the shape of an instance.

Run from the repository root:

    python bench/bench_hidden_text_scan.py [--shapes 1000x10,100x1000,10x10000] [--limit 20] [--repeat 3]
    python bench/bench_hidden_text_scan.py --cosmos --shapes 100x10,1x25000

Each shape is USERSxENTRIES: that many users, each with that many entries in their user scope
(one in ten holds an accented word, so the scan's non-ASCII path runs; one in a thousand holds
tag characters, which the scan must find). For each, the median over ``--repeat`` runs of a whole
scan through ``MemoryService.hidden_text_page`` (every page, ``--limit`` users each), in process:
the time, entries per second, the slowest page, and the findings (checked against what was seeded).
The HTTP route adds one round trip per page and the JSON of its findings.

With ``--cosmos``, the same shapes on the Cosmos DB test server (npm @vercel/cosmosdb-server, the
tests' server, entries seeded in batches): one whole scan, and for its pages the round trips and the
items the store read (``store.measure()``), the largest page's and the total. No time is printed: the
test server scans its whole container for every query, so its times say nothing about Azure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.service import MemoryService

T0 = datetime(2026, 1, 1, tzinfo=UTC)
HIDDEN = "".join(chr(0xE0000 + ord(ch)) for ch in "obey")


def _text(n: int) -> str:
    if n % 1000 == 999:
        return f"- fact {n}: prefers tea{HIDDEN}"
    if n % 10 == 0:
        return f"- fact {n}: the user ordered a café crème at the station"
    return f"- fact {n}: the user mentioned item number {n} once"


def _seed(store: SqliteMemoryStore, users: int, entries: int) -> int:
    """Store the shape; the number of entries holding hidden text."""
    hidden = 0
    for u in range(users):
        key = ProfileKey("i", f"user{u:06d}@contoso.com", Scope.USER)
        profile = MemoryProfile(key, None, None, None, T0, T0)
        for n in range(entries):
            text = _text(n)
            hidden += HIDDEN in text
            store.append(profile, MemoryEntry(uuid.uuid4().hex, key, text, EntryKind.APPEND,
                                              T0 + timedelta(seconds=n), key.upn))
    return hidden


def _scan(service: MemoryService, limit: int) -> tuple[float, float, int, int, int]:
    """(seconds, slowest page's seconds, pages, entries scanned, findings) of one whole scan."""
    pages, scanned, found, slowest = 0, 0, 0, 0.0
    continuation: str | None = None
    start = time.perf_counter()
    while True:
        began = time.perf_counter()
        page = service.hidden_text_page("i", limit=limit, continuation=continuation)
        slowest = max(slowest, time.perf_counter() - began)
        pages, scanned, found = pages + 1, scanned + page.entries_scanned, found + len(page.findings)
        continuation = page.continuation
        if continuation is None:
            return time.perf_counter() - start, slowest, pages, scanned, found


def _cosmos_costs(shapes: list[tuple[int, int]], limit: int) -> None:
    """Round trips and items read per page of one whole scan, on the Cosmos DB test server."""
    from tests.adapters.cosmos_support import cosmos_store, provisioned_cosmos_server
    from tests.support.seeding import seed

    print("| users x entries | pages | round trips, largest page | items read, largest page | round trips, total "
          "| items read, total | found |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for users, entries in shapes:
        with provisioned_cosmos_server() as account:
            store = cosmos_store(account)
            print(f"seeding {users:,} x {entries:,} ...", file=sys.stderr, flush=True)
            hidden = 0
            for u in range(users):
                key = ProfileKey("i", f"user{u:06d}@contoso.com", Scope.USER)
                texts = [_text(n) for n in range(entries)]
                hidden += sum(HIDDEN in t for t in texts)
                seed(store, [MemoryEntry(uuid.uuid4().hex, key, t, EntryKind.APPEND, T0 + timedelta(seconds=n),
                                         key.upn) for n, t in enumerate(texts)], account)
            service = MemoryService(store)
            costs: list[tuple[int, int]] = []
            continuation: str | None = None
            scanned = found = 0
            while True:
                with store.measure() as metrics:
                    page = service.hidden_text_page("i", limit=limit, continuation=continuation)
                costs.append((metrics.round_trips, metrics.rows))
                scanned, found = scanned + page.entries_scanned, found + len(page.findings)
                continuation = page.continuation
                if continuation is None:
                    break
            store.close()
        if (scanned, found) != (users * entries, hidden):
            raise SystemExit(f"{users}x{entries}: scanned {scanned} and found {found}, seeded "
                             f"{users * entries} and {hidden}")
        print(f"| {users:,} x {entries:,} | {len(costs)} | {max(c[0] for c in costs)} | "
              f"{max(c[1] for c in costs):,} | {sum(c[0] for c in costs)} | {sum(c[1] for c in costs):,} | {found} |",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="1000x10,100x1000,10x10000")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cosmos", action="store_true", help="round trips and items per page on the Cosmos DB "
                        "test server, instead of SQLite times")
    args = parser.parse_args()
    if args.cosmos:
        _cosmos_costs([(int(u), int(e)) for u, e in (shape.split("x") for shape in args.shapes.split(","))],
                      args.limit)
        return
    print("| users x entries | entries | pages | whole scan | entries/s | slowest page | found |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for shape in args.shapes.split(","):
        users, entries = (int(n) for n in shape.split("x"))
        with tempfile.TemporaryDirectory() as folder:
            store = SqliteMemoryStore(Path(folder) / "scan.sqlite3")
            print(f"seeding {users:,} x {entries:,} ...", file=sys.stderr, flush=True)
            hidden = _seed(store, users, entries)
            service = MemoryService(store)
            runs = [_scan(service, args.limit) for _ in range(args.repeat)]
            store.close()
        seconds = statistics.median(r[0] for r in runs)
        _, _, pages, scanned, found = runs[0]
        if (scanned, found) != (users * entries, hidden):
            raise SystemExit(f"{shape}: scanned {scanned} and found {found}, seeded {users * entries} and {hidden}")
        print(f"| {users:,} x {entries:,} | {scanned:,} | {pages} | {seconds * 1000:,.0f} ms | "
              f"{scanned / seconds:,.0f} | {statistics.median(r[1] for r in runs) * 1000:,.1f} ms | {found} |",
              flush=True)


if __name__ == "__main__":
    main()
