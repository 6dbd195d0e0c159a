"""Full reads on the Cosmos DB store at 10 and at 10,000 entries, over HTTP and in process.

Run from the project root:

    python bench/bench_cosmos_reads.py [--iterations 200] [--sizes 10,10000]

It starts the Cosmos DB protocol server the tests use (npm @vercel/cosmosdb-server
on loopback, TLS verified), provisions the Memories container as infra does,
stores N entries per scope (user and agent) with the store's own stamped batches,
starts ``python -m memory_core serve`` with MEMORY_STORE=cosmos on it, and times
get (user, agent, combined) over HTTP with one keep-alive client, and the same
calls on an in-process ``MemoryService`` over its own ``CosmosMemoryStore``
(another process's view). For each in-process get it also counts the Cosmos
round trips, RU and items read (``CosmosMemoryStore.measure()``). Two more rows per size, in
process: a get through the same store without stamps (every read loading and
rendering everything, as before issue #15), and a get right after another
process appended (the snapshot is extended by the new entry); both query the
container, which the test server answers by scanning all of it.
It prints a markdown table of p50/p99 (ms) and the 10,000/10 ratios.

The test server charges a flat 1 RU per request; its latency is loopback to an
in-memory server that scans its whole container per query, not a real account's.
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_cold_reads import p99
from bench.bench_http import timed
from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.service import MemoryService
from tests.adapters.cosmos_support import cosmos_env, cosmos_store, provisioned_cosmos_server
from tests.support.local_server import running_server
from tests.support.seeding import make_entries, seed
from tests.support.unstamped import Unstamped

UPN = "bench@contoso.com"
AGENT_ID = "/instances/bench/agents/assistant"
LINE = "- The user prefers concise answers with Markdown tables for comparisons of plans."


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--sizes", default="10,10000")
    parser.add_argument("--before-iterations", type=int, default=10,
                        help="iterations of the rows that query the container (slow on the test server)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    caller = Caller(UPN, "Bench", "bench")
    agent = AgentContext(AGENT_ID, "Assistant")
    rows: list[tuple[str, int, float, float, float, float, int, float, int]] = []
    with provisioned_cosmos_server() as account:
        writer = cosmos_store(account)
        for size in sizes:
            print(f"storing {size} entries per scope...", file=sys.stderr, flush=True)
            for scope, agent_id in ((Scope.USER, None), (Scope.AGENT, AGENT_ID)):
                key = ProfileKey(f"bench-{size}", UPN, scope, agent_id)
                seed(writer, make_entries(key, size, text=lambda n: f"{LINE} ({n})", agent_name="Assistant"), account)
        store: CosmosMemoryStore = cosmos_store(account)
        service = MemoryService(store)
        unstamped = MemoryService(Unstamped(store))
        with tempfile.TemporaryDirectory(prefix="memory-bench-") as tmp, \
                running_server(Path(tmp), cosmos_env(account)) as server, server.client(UPN) as http:
            for size in sizes:
                inst = f"bench-{size}"
                reads: dict[str, tuple[dict[str, str], Scope, AgentContext | None]] = {
                    "get user": ({"scope": "user"}, Scope.USER, None),
                    "get agent": ({"scope": "agent", "agentObjectId": AGENT_ID}, Scope.AGENT, agent),
                    "get combined": ({"scope": "combined", "agentObjectId": AGENT_ID}, Scope.COMBINED, agent),
                }
                for name, (params, scope, ctx) in reads.items():
                    print(f"timing {name} at {size}...", file=sys.stderr, flush=True)
                    over_http = timed(lambda p=params: http.get(f"/instances/{inst}/memory", params=p)
                                      .raise_for_status(), args.iterations)
                    in_process = timed(lambda s=scope, c=ctx: service.get(caller, inst, s, c), args.iterations)
                    with store.measure() as metrics:
                        service.get(caller, inst, scope, ctx)
                    rows.append((name, size, statistics.median(over_http), p99(over_http),
                                 statistics.median(in_process), p99(in_process), metrics.round_trips,
                                 metrics.request_charge, metrics.rows))
                # Before: every read loads and renders everything (the same store without stamps).
                print(f"timing get user without snapshots at {size}...", file=sys.stderr, flush=True)
                before = timed(lambda: unstamped.get(caller, inst, Scope.USER, None), args.before_iterations)
                with store.measure() as metrics:
                    unstamped.get(caller, inst, Scope.USER, None)
                rows.append(("get user, every read loading and rendering (before; in process only)", size,
                             float("nan"), float("nan"), statistics.median(before), p99(before),
                             metrics.round_trips, metrics.request_charge, metrics.rows))
                # A get after another process appended: the snapshot is extended, not rebuilt.
                after_append: list[float] = []
                trips, charge, items = 0, 0.0, 0
                for n in range(args.before_iterations):
                    writer.append(*_append(inst, n))
                    t = time.perf_counter()
                    with store.measure() as metrics:
                        service.get(caller, inst, Scope.USER, None)
                    after_append.append((time.perf_counter() - t) * 1000)
                    trips, charge, items = metrics.round_trips, metrics.request_charge, metrics.rows
                rows.append(("get user after an append (in process only)", size, float("nan"), float("nan"),
                             statistics.median(after_append), p99(after_append), trips, charge, items))
        store.close()
        writer.close()
    print(f"\nMachine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.system()}; Cosmos: the test server on loopback; iterations per row: {args.iterations}\n")
    print("| operation | entries per scope | HTTP p50 ms | HTTP p99 ms | in-process p50 ms | in-process p99 ms"
          " | Cosmos round trips | Cosmos RU | items read |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, size, hp50, hp99, sp50, sp99, trips, charge, items in rows:
        http_cells = "- | -" if math.isnan(hp50) else f"{hp50:.2f} | {hp99:.2f}"
        print(f"| {name} | {size} | {http_cells} | {sp50:.2f} | {sp99:.2f} | {trips} | {charge:.2f} | {items} |")
    if len(sizes) >= 2:
        small, large = min(sizes), max(sizes)
        print()
        for name in ("get user", "get agent", "get combined"):
            at = {size: (hp50, sp50) for n, size, hp50, _, sp50, *_ in rows if n == name}
            print(f"{name}: p50 at {large} / at {small}: HTTP {at[large][0] / at[small][0]:.2f}x, "
                  f"in process {at[large][1] / at[small][1]:.2f}x")


def _append(inst: str, n: int) -> tuple[MemoryProfile, MemoryEntry]:
    key = ProfileKey(inst, UPN, Scope.USER)
    (entry,) = make_entries(key, 1, text=lambda _: f"{LINE} (appended {n})", start=datetime.now(UTC))
    return MemoryProfile(key, "Bench", "bench", None, entry.created_on, entry.created_on), entry


if __name__ == "__main__":
    main()
