"""Budgeted reads (maxChars) beside full reads, at 10 and 10,000 entries, on both stores.

Run from the project root:

    python bench/bench_budget.py [--iterations 50] [--budget 16000] [--stores sqlite,cosmos]

For each store and memory size it seeds one user's user memory with that many
entries (and 10 agent entries), then times ``MemoryService.get_within`` (a
combined read with the budget) and ``MemoryService.get`` (the full combined
document: from a new service, which has no rendered snapshot yet, and warm from
the snapshot of one long-lived service) in process; budgeted reads likewise from a
new service (nothing kept: a process's first read, or the first after a write) and
from one long-lived service. It counts the store's rows and round trips of one
budgeted read from a new service (Cosmos: HTTP requests; SQLite: SQL statements). The Cosmos store
runs against the protocol server the tests use (npm @vercel/cosmosdb-server on
loopback), which scans its whole container per query: its latencies say how the
work scales, not what a real account answers. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import MemoryService
from memory_core.domain.store import MemoryStore
from tests.contract.test_budget_cost import CountingStore, round_trips
from tests.support.seeding import make_entries, seed

CALLER = Caller("bench@contoso.com", "Bench", "bench")
AGENT = AgentContext("/instances/bench/agents/assistant", "Assistant")
SIZES = (10, 10_000)


def p50_ms(action: Callable[[], object], iterations: int) -> float:
    action()  # warm
    times = []
    for _ in range(iterations):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure(name: str, store: MemoryStore, cosmos: object, iterations: int, budget: int) -> list[str]:
    service = MemoryService(store)
    rows = []
    for size in SIZES:
        instance = f"bench-{size}-{uuid.uuid4().hex[:8]}"
        seed(store, make_entries(ProfileKey(instance, CALLER.upn, Scope.USER), size), cosmos)  # type: ignore[arg-type]
        seed(store, make_entries(ProfileKey(instance, CALLER.upn, Scope.AGENT, AGENT.object_id), 10,
                                 agent_name=AGENT.name), cosmos)  # type: ignore[arg-type]
        budgeted = p50_ms(lambda i=instance: service.get_within(CALLER, i, Scope.COMBINED, AGENT, budget), iterations)
        # A new service keeps nothing: the first budgeted read in a process, or the first after a write.
        first = p50_ms(lambda i=instance: MemoryService(store).get_within(CALLER, i, Scope.COMBINED, AGENT, budget),
                       max(5, iterations // 5))
        full = p50_ms(lambda i=instance: service.get(CALLER, i, Scope.COMBINED, AGENT), max(5, iterations // 5))
        # A new service has no snapshot: its first read loads and renders the whole memory.
        cold = p50_ms(lambda i=instance: MemoryService(store).get(CALLER, i, Scope.COMBINED, AGENT),
                      max(5, iterations // 5))
        counting = CountingStore(store)
        with round_trips(store, counting.cost):
            MemoryService(counting).get_within(CALLER, instance, Scope.COMBINED, AGENT, budget)  # type: ignore[arg-type]
        rows.append(f"| {name} | {size:,} | {first:.2f} | {budgeted:.2f} | {cold:.2f} | {full:.2f} |"
                    f" {counting.cost.rows} | {counting.cost.round_trips} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--budget", type=int, default=16_000)
    parser.add_argument("--stores", default="sqlite,cosmos")
    args = parser.parse_args()
    stores = args.stores.split(",")
    lines = [
        (f"Budget {args.budget:,} characters, combined read; {args.iterations} iterations (full reads: fewer);"
         f" Python {platform.python_version()}."),
        "",
        ("| store | user entries | budgeted p50 ms, new service | budgeted p50 ms, same service, no write between |"
         " full p50 ms, no snapshot | full p50 ms, warm snapshot | rows read (budgeted, new service) |"
         " round trips (budgeted, new service) |"),
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    with ExitStack() as stack:
        if "sqlite" in stores:
            folder = stack.enter_context(tempfile.TemporaryDirectory())
            sqlite = SqliteMemoryStore(Path(folder) / "bench.sqlite3")
            stack.callback(sqlite.close)
            lines += measure("SQLite", sqlite, None, args.iterations, args.budget)
        if "cosmos" in stores:
            from tests.adapters.cosmos_support import cosmos_store, provisioned_cosmos_server

            account = stack.enter_context(provisioned_cosmos_server())
            cosmos: CosmosMemoryStore = cosmos_store(account)
            stack.callback(cosmos.close)
            lines += measure("Cosmos (test server)", cosmos, account, args.iterations, args.budget)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
