"""Search latency at 10, 1,000 and 10,000 entries in one user's memory.

Run from the project root:

    python bench/bench_search.py [--iterations 50]

Times MemoryService.search (BM25 over the visible entries) in process on the
SQLite store, and GET /memory/search over HTTP against the local server. The
query matches every entry (the worst case for an index: every match is scored).
Beside the times it prints what one search costs SQLite (``SqliteMemoryStore.measure``):
statements, rows read back and virtual-machine instructions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_http import UPN, p, preload, timed

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope
from memory_core.domain.service import MemoryService
from tests.support.local_server import running_server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--sizes", default="10,1000,10000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="memory-bench-search-"))
    store = SqliteMemoryStore(tmp / "memory.sqlite3")
    for size in sizes:
        print(f"preloading {size} entries...", file=sys.stderr, flush=True)
        preload(store, f"search-{size}", size)
    service = MemoryService(store)
    caller = Caller(UPN)
    rows = []
    with running_server(tmp, {"MEMORY_SQLITE_PATH": str(tmp / "memory.sqlite3")}) as server, server.client(UPN) as http:
        for size in sizes:
            inst = f"search-{size}"
            print(f"timing search at {size}...", file=sys.stderr, flush=True)
            local = timed(lambda: service.search(caller, inst, Scope.USER, None, "markdown tables plans", (), 10),
                          args.iterations)
            remote = timed(lambda: http.get(f"/instances/{inst}/memory/search",
                                            params={"q": "markdown tables plans", "limit": 10}).raise_for_status(),
                           args.iterations)
            with store.measure() as cost:
                service.search(caller, inst, Scope.USER, None, "markdown tables plans", (), 10)
            rows.append((size, statistics.median(local), p(local, 0.99), statistics.median(remote), p(remote, 0.99),
                         cost))
    store.close()
    print(f"\niterations per row: {args.iterations}\n")
    print("| entries | in-process p50 ms | in-process p99 ms | HTTP p50 ms | HTTP p99 ms"
          " | statements | rows | SQLite VM steps |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, lp50, lp99, hp50, hp99, cost in rows:
        print(f"| {size} | {lp50:.2f} | {lp99:.2f} | {hp50:.2f} | {hp99:.2f}"
              f" | {cost.round_trips} | {cost.rows} | {cost.vm_steps} |")
    base = rows[0]
    for size, lp50, _, hp50, _, _ in rows[1:]:
        print(f"\n{size} vs {base[0]} entries: in process {lp50 / base[1]:.1f}x, over HTTP {hp50 / base[3]:.1f}x", end="")
    print()


if __name__ == "__main__":
    main()
