"""A fresh process's first team reads (the team sharing policy), with and without both partitions' checkpoints.

Run from the project root:

    python bench/bench_cold_team_reads.py [--iterations 20] [--sizes 10,1000,10000] [--stores sqlite,cosmos]

N entries are stored in the reader's user scope and N team-shared entries of a teammate in the
instance's shared partition (a team read of user scope shows 2N). Every timed read is made by a
new store object and a new ``MemoryService`` (a Functions instance that just started, a restarted
``serve``: nothing kept in memory), under the team policy:

- **get**: the full read;
- **budgeted get**: ``get_within`` with ``--budget`` characters (2,000 by default);
- **entries page**: the first page of ``--page`` entries (50 by default);
- **entries page, read again**: the same process's second read of it, the first untimed. With
  checkpoints the first page decodes about a page and keeps nothing; this read builds the whole
  listing from the parts and keeps it. Before, the first read built and kept it from both partitions.

Each read is timed **before** (no checkpoints of sharing reads: both partitions read in full, as
every first team read did) and **after** (each partition's part, ``domain.shared_checkpoints``,
restored from its checkpoint and extended with the entries added since it was kept: ``--added``,
100 by default, half to each partition; below ``CHECKPOINT_MIN_SECTIONS`` entries no part is kept,
and both partitions are read in full after a look for one). Each row counts the store's work for one such read
(``measure()``: SQLite statements; Cosmos DB round trips, RU and items read). ``cosmos`` starts the
Cosmos DB test server the tests use (npm @vercel/cosmosdb-server, see tests/cosmos_server) and needs
its node_modules installed. Prints a markdown table of p50 and p99 in ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_cold_reads import cosmos_stores, p99, sqlite_stores
from memory_core.domain.checkpoints import CHECKPOINT_MIN_SECTIONS
from memory_core.domain.identity import Caller
from memory_core.domain.models import SHARED_OWNER, ProfileKey, Scope, Share
from memory_core.domain.service import MemoryService, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from tests.support.seeding import make_entries, seed

UPN = "bench@contoso.com"
TEAMMATE = "teammate@contoso.com"
LINE = "The user prefers concise answers with Markdown tables for comparisons of plans"
TEAM = SharingPolicy.TEAM


def team_entries(instance: str, count: int) -> list[Any]:
    """``count`` entries the teammate shared with the team, as the shared partition holds them."""
    key = ProfileKey(instance, SHARED_OWNER, Scope.USER)
    made = make_entries(key, count, text=lambda n: f"- {LINE} (team {n})")
    return [replace(e, id=f"{e.id}-shared", author_upn=TEAMMATE, share=Share.TEAM) for e in made]


READS: dict[str, Callable[[MemoryService, str, argparse.Namespace], int]] = {
    "get": lambda s, i, a: len(s.get(Caller(UPN), i, Scope.USER, None, TEAM).content_markdown),
    "budgeted get": lambda s, i, a: len(s.get_within(Caller(UPN), i, Scope.USER, None, a.budget, TEAM).content_markdown),
    "entries page": lambda s, i, a: len(s.entries_page(Caller(UPN), i, Scope.USER, None, TEAM, limit=a.page).items),
}
READS["entries page, read again"] = READS["entries page"]
READ_FIRST = {"entries page, read again": READS["entries page"]}
"""Reads timed as the same process's second: this untimed read comes first."""


def fresh_read(open_store: Callable[[], Any], instance: str, size: int, read: str, checkpoints: bool,
               args: argparse.Namespace) -> tuple[float, Any, int]:
    """One first team read by a new process's store and service: ms, the store's metrics, what it answered."""
    store = open_store()
    try:
        service = MemoryService(store, allow_sharing_override=True)
        if not checkpoints:
            service._shared_parts = None
        first = READ_FIRST.get(read)
        if first is not None:
            first(service, instance, args)
        parts = service._shared_parts
        counted = (parts.restores, parts.builds) if parts is not None else (0, 0)
        with store.measure() as metrics:
            started = time.perf_counter()
            answered = READS[read](service, instance, args)
            elapsed = (time.perf_counter() - started) * 1000
        if checkpoints:  # below CHECKPOINT_MIN_SECTIONS no part is kept: both are read in full
            restored = (2, 0) if size >= CHECKPOINT_MIN_SECTIONS else (0, 2)
            assert parts is not None
            read_now = (parts.restores - counted[0], parts.builds - counted[1])
            # Read again, a listing the first page held whole was kept: nothing is read from the parts.
            assert read_now == restored or (first is not None and read_now == (0, 0)), "not the intended path"
        return elapsed, metrics, answered
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--stores", default="sqlite", help="sqlite, cosmos or both, comma-separated")
    parser.add_argument("--added", type=int, default=100, help="entries added after the checkpoints were kept")
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--page", type=int, default=50)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for kind in args.stores.split(","):
        opener = {"sqlite": sqlite_stores, "cosmos": cosmos_stores}[kind]
        with opener() as (open_store, account):
            writer = open_store()
            for size in sizes:
                instance = f"bench-team-{size}"
                print(f"{kind}: storing {size} entries and {size} team entries...", file=sys.stderr, flush=True)
                own = ProfileKey(instance, UPN, Scope.USER)
                seed(writer, make_entries(own, size, text=lambda n: f"- {LINE} ({n})"), account)
                seed(writer, team_entries(instance, size), account)
                MemoryService(writer, allow_sharing_override=True).get(Caller(UPN), instance, Scope.USER, None, TEAM)
                # Added through the service, as users add them (seeding writes a profile, which erases the
                # partition's checkpoints on Cosmos DB); the teammate's go to the shared partition too.
                appender = MemoryService(writer)
                added = args.added if size >= CHECKPOINT_MIN_SECTIONS else 0  # below it no part is kept to extend
                for n in range(added // 2):
                    appender.append(Caller(UPN), instance, Scope.USER, None, f"- {LINE} (added {n})")
                for n in range(added - added // 2):
                    appender.append(Caller(TEAMMATE), instance, Scope.USER, None, f"- {LINE} (added team {n})",
                                    WriteOptions(share=Share.TEAM))
                for read in READS:
                    for checkpoints in (False, True):
                        label = "after (checkpoints)" if checkpoints else "before"
                        print(f"{kind}: {read} at {size}, {label}...", file=sys.stderr, flush=True)
                        samples, metrics, answered = [], None, 0
                        for _ in range(args.iterations):
                            elapsed, metrics, answered = fresh_read(open_store, instance, size, read, checkpoints, args)
                            samples.append(elapsed)
                        rows.append((kind, read, size, label, statistics.median(samples), p99(samples), metrics,
                                     answered))
            writer.close()
    print(f"\n{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.iterations} fresh reads per row; "
          f"{args.added} entries added after the checkpoints were kept (half to each partition); budget "
          f"{args.budget} chars; page of {args.page}\n")
    print("| store | team read | entries (own + shared) | first read | p50 ms | p99 ms | round trips "
          "| Cosmos items read | Cosmos RU | answered |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for kind, read, size, label, p50, worst, metrics, answered in rows:
        cosmos = hasattr(metrics, "request_charge")
        charge, items = (f"{metrics.request_charge:.2f}", f"{metrics.rows:,}") if cosmos else ("-", "-")
        print(f"| {kind} | {read} | {size:,} + {size:,} | {label} | {p50:.2f} | {worst:.2f} | {metrics.round_trips} | "
              f"{items} | {charge} | {answered:,} |")


if __name__ == "__main__":
    main()
