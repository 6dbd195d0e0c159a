"""A fresh process's first full read of a memory, with and without the store's checkpoints.

Run from the project root:

    python bench/bench_cold_reads.py [--iterations 20] [--sizes 10,1000,10000] [--stores sqlite,cosmos]

N entries are stored in each of user and agent scope. Every timed read is made by a new store
object and a new ``MemoryService`` (what a Functions instance that just started, or a restarted
``serve``, has: no snapshot in memory), reading user scope and then combined:

- **built**: checkpoints off (the service's snapshot cache without them): the read loads and
  renders every entry, as every first read did before checkpoints;
- **from the checkpoint**: the store's checkpoint of the read, extended with the entries added
  since it was kept (``--added``, 100 by default: what a busy memory gains between two refreshes
  of its checkpoint is at most ``CHECKPOINT_REFRESH_SECTIONS``).

Each row also counts the store's work for one such read (``measure()``: SQLite statements and rows;
Cosmos DB round trips, RU and items read). ``cosmos`` starts the Cosmos DB test server the tests
use (npm @vercel/cosmosdb-server, see tests/cosmos_server) and needs its node_modules installed.
Prints a markdown table of p50 and p99 in ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import MemoryService
from memory_core.domain.snapshots import SnapshotCache
from tests.support.seeding import make_entries, seed

UPN = "bench@contoso.com"
AGENT_ID = "bench-agent"
LINE = "The user prefers concise answers with Markdown tables for comparisons of plans"


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


@contextmanager
def sqlite_stores() -> Iterator[tuple[Callable[[], Any], Any]]:
    with tempfile.TemporaryDirectory(prefix="memory-bench-cold-") as tmp:
        path = Path(tmp) / "memory.sqlite3"
        yield (lambda: SqliteMemoryStore(path)), None


@contextmanager
def cosmos_stores() -> Iterator[tuple[Callable[[], Any], Any]]:
    from tests.adapters.cosmos_support import cosmos_store, provisioned_cosmos_server

    with provisioned_cosmos_server() as account:
        yield (lambda: cosmos_store(account)), account


def fresh_read(open_store: Callable[[], Any], instance: str, scope: Scope, agent: AgentContext | None,
               checkpoints: bool) -> tuple[float, Any, str]:
    """One first read by a new process's store and service: ms, the store's metrics, the document."""
    store = open_store()
    try:
        service = MemoryService(store)
        if not checkpoints:
            service._snapshots = SnapshotCache(store, service.kept)
        caller = Caller(UPN, "Bench", "bench")
        with store.measure() as metrics:
            started = time.perf_counter()
            view = service.get(caller, instance, scope, agent)
            elapsed = (time.perf_counter() - started) * 1000
        cache = service._snapshots
        assert cache is not None and (cache.restores == 1) == checkpoints, "the read did not take the intended path"
        return elapsed, metrics, view.content_markdown
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--stores", default="sqlite", help="sqlite, cosmos or both, comma-separated")
    parser.add_argument("--added", type=int, default=100, help="entries added after the checkpoint was kept")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    agent = AgentContext(AGENT_ID, "Assistant")
    rows = []
    for kind in args.stores.split(","):
        opener = {"sqlite": sqlite_stores, "cosmos": cosmos_stores}[kind]
        with opener() as (open_store, account):
            writer = open_store()
            for size in sizes:
                instance = f"bench-{size}"
                print(f"{kind}: storing {size} entries per scope...", file=sys.stderr, flush=True)
                for scope, agent_id in ((Scope.USER, None), (Scope.AGENT, AGENT_ID)):
                    key = ProfileKey(instance, UPN, scope, agent_id)
                    seed(writer, make_entries(key, size, text=lambda n: f"- {LINE} ({n})", agent_name="Assistant"),
                         account)
                for scope, ctx in ((Scope.USER, None), (Scope.COMBINED, agent)):
                    MemoryService(writer).get(Caller(UPN, "Bench", "bench"), instance, scope, ctx)  # keeps one
                    key = ProfileKey(instance, UPN, Scope.USER)
                    if args.added and size >= 256:  # below CHECKPOINT_MIN_SECTIONS there is no checkpoint to extend
                        seed(writer, make_entries(key, args.added, text=lambda n: f"- {LINE} (added {n})",
                                                  start=datetime.now(UTC), step=timedelta(microseconds=1)), account)
                    for checkpoints in (False, True):
                        if checkpoints and size < 256:
                            continue  # no checkpoint below CHECKPOINT_MIN_SECTIONS: it is built, as above
                        label = "from the checkpoint" if checkpoints else "built"
                        print(f"{kind}: {scope.value} at {size}, {label}...", file=sys.stderr, flush=True)
                        samples, metrics, document = [], None, ""
                        for _ in range(args.iterations):
                            elapsed, metrics, document = fresh_read(open_store, instance, scope, ctx, checkpoints)
                            samples.append(elapsed)
                        rows.append((kind, scope.value, size, label, statistics.median(samples), p99(samples),
                                     metrics, len(document)))
            writer.close()
    print(f"\n{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.iterations} fresh reads per row; "
          f"{args.added} entries added to user scope after each checkpoint was kept\n")
    print("| store | read | entries per scope | first read | p50 ms | p99 ms | round trips | Cosmos items read"
          " | Cosmos RU | document chars |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for kind, scope, size, label, p50, worst, metrics, chars in rows:
        # SQLite's meter counts rows only for single statements, not a read transaction's (load_since).
        cosmos = hasattr(metrics, "request_charge")
        charge, items = (f"{metrics.request_charge:.2f}", f"{metrics.rows:,}") if cosmos else ("-", "-")
        print(f"| {kind} | {scope} | {size:,} | {label} | {p50:.2f} | {worst:.2f} | {metrics.round_trips} | "
              f"{items} | {charge} | {chars:,} |")


if __name__ == "__main__":
    main()
