"""Cosmos DB round trips and request units per operation, and latency beside the embedded store.

Run from the project root:

    python bench/bench_cosmos.py [--iterations 200] [--entries 10,1000] [--account test-server|env]

``--account test-server`` (the default) starts the Cosmos DB protocol server
the tests use (npm @vercel/cosmosdb-server on loopback, TLS verified) and
provisions the Memories container as infra does. ``--account env`` uses the
app's own settings from the environment (MEMORY_STORE=cosmos, COSMOS_ENDPOINT,
COSMOS_KEY or DefaultAzureCredential, ...) to measure a real account; the
container must exist, and the run writes to instances named ``bench-*``.

For each memory size (entries per scope, user and agent) it times the
service's operations on CosmosMemoryStore and on SqliteMemoryStore, both in
process, and counts every Cosmos HTTP request (retries included) and its
x-ms-request-charge with ``CosmosMemoryStore.measure()``. Appends write to a
scope of their own. Imports and clears run on a freshly preloaded scope each
iteration (at most 50 times, and 10 at 1000 entries). It prints a markdown
table.

The test server answers every request with a flat charge of 1 RU, so on it
the RU column repeats the round trips; only ``--account env`` gives real RU.
Its latency is loopback to an in-memory server, far below a real account's.
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
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.service import DeletionMode, ImportMode, MemoryService
from memory_core.domain.store import MemoryStore

UPN = "bench@contoso.com"
AGENT_ID = "/instances/bench/agents/assistant"
LINE = "- The user prefers concise answers with Markdown tables for comparisons of plans."
CALLER = Caller(UPN, "Bench", "bench")
AGENT = AgentContext(AGENT_ID, "Assistant")


@dataclass
class Row:
    operation: str
    entries: int
    round_trips: list[int]
    charges: list[float]
    cosmos_ms: list[float]
    sqlite_ms: list[float]


def preload(
    store: MemoryStore, instance: str, count: int, scopes: tuple[Scope, ...] = (Scope.USER, Scope.AGENT)
) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for scope in scopes:
        key = ProfileKey(instance, UPN, scope, AGENT_ID if scope is Scope.AGENT else None)
        profile = MemoryProfile(key, "Bench", "bench", "Assistant" if scope is Scope.AGENT else None, start, start)
        for i in range(count):
            store.append(profile, MemoryEntry(uuid.uuid4().hex, key, f"{LINE} ({i})", EntryKind.APPEND,
                                              start + timedelta(seconds=i), UPN, reason="bench"))


def erase(store: MemoryStore, instance: str) -> None:
    """Remove a scratch instance's entries and profiles (not timed).

    The test server answers a query by scanning every item of the container, so
    leftovers would slow every later query of the run.
    """
    for state in store.load_partition(instance, UPN):
        store.delete_entries(state.key, [e.id for e in state.entries])
        store.delete_profile(state.key)


@contextmanager
def cosmos_account(kind: str) -> Iterator[CosmosMemoryStore]:
    if kind == "env":
        from memory_core.settings import load_settings

        settings = load_settings()
        if settings.memory_store != "cosmos":
            raise SystemExit("--account env needs MEMORY_STORE=cosmos and the COSMOS_* settings in the environment")
        store = CosmosMemoryStore.from_settings(settings)
        try:
            yield store
        finally:
            store.close()
        return
    from tests.adapters.cosmos_support import cosmos_store, provisioned_cosmos_server

    with provisioned_cosmos_server() as server:
        store = cosmos_store(server)
        try:
            yield store
        finally:
            store.close()


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--entries", default="10,1000")
    parser.add_argument("--account", choices=("test-server", "env"), default="test-server")
    args = parser.parse_args()
    sizes = [int(s) for s in args.entries.split(",")]
    run = uuid.uuid4().hex[:6]
    rows: list[Row] = []
    with ExitStack() as stack:
        cosmos = stack.enter_context(cosmos_account(args.account))
        sqlite = SqliteMemoryStore(Path(tempfile.mkdtemp(prefix="bench-cosmos-")) / "memory.sqlite3")
        stack.callback(sqlite.close)
        stores: dict[str, MemoryStore] = {"cosmos": cosmos, "sqlite": sqlite}
        services = {name: MemoryService(s, deletion_mode=DeletionMode.IMMEDIATE) for name, s in stores.items()}
        approval = {name: MemoryService(s) for name, s in stores.items()}
        for size in sizes:
            inst = f"bench-{run}-{size}"
            print(f"preloading {size} entries per scope...", file=sys.stderr, flush=True)
            for store in stores.values():
                preload(store, inst, size)

            def steady(name: str, op: Callable[[str], object]) -> None:
                row = Row(name, size, [], [], [], [])
                for store_name in ("cosmos", "sqlite"):
                    for _ in range(min(10, args.iterations)):
                        op(store_name)  # warm up: client, container check, profile cache
                    for _ in range(args.iterations):
                        if store_name == "cosmos":
                            with cosmos.measure() as m:
                                row.cosmos_ms.append(timed(lambda: op(store_name)))
                            row.round_trips.append(m.round_trips)
                            row.charges.append(m.request_charge)
                        else:
                            row.sqlite_ms.append(timed(lambda: op(store_name)))
                rows.append(row)

            def fresh(name: str, op: Callable[[str, str], object], scopes: tuple[Scope, ...] = (Scope.USER,)) -> None:
                """Each iteration on a newly preloaded scope (not timed), for operations that erase."""
                row = Row(name, size, [], [], [], [])
                for _ in range(max(3, min(args.iterations, 10000 // max(size, 1), 50))):
                    target = f"bench-{run}-{size}-{uuid.uuid4().hex[:6]}"
                    for store_name, store in stores.items():
                        preload(store, target, size, scopes)
                        services[store_name].get(CALLER, target, Scope.USER, None)  # a process that has read it
                        if store_name == "cosmos":
                            with cosmos.measure() as m:
                                row.cosmos_ms.append(timed(lambda: op(store_name, target)))
                            row.round_trips.append(m.round_trips)
                            row.charges.append(m.request_charge)
                        else:
                            row.sqlite_ms.append(timed(lambda: op(store_name, target)))
                        erase(store, target)
                rows.append(row)

            print(f"timing at {size}...", file=sys.stderr, flush=True)
            steady("get user", lambda s: services[s].get(CALLER, inst, Scope.USER, None))
            steady("get agent", lambda s: services[s].get(CALLER, inst, Scope.AGENT, AGENT))
            steady("get combined", lambda s: services[s].get(CALLER, inst, Scope.COMBINED, AGENT))
            # Appends go to a scope of their own (it grows by the row's iterations; an
            # append's cost does not depend on the scope's size), so the reads above
            # and below see exactly ``size`` entries.
            writes = f"{inst}-w"
            for store in stores.values():
                preload(store, writes, size, (Scope.USER,))
            user_key = ProfileKey(writes, UPN, Scope.USER)
            seed = MemoryProfile(user_key, "Bench", "bench", None, datetime.now(UTC), datetime.now(UTC))
            steady("append (store only, before audit)", lambda s: stores[s].append(
                seed, MemoryEntry(uuid.uuid4().hex, user_key, LINE, EntryKind.APPEND, datetime.now(UTC), UPN)))
            steady("append (service: entry + audit event)",
                   lambda s: services[s].append(CALLER, writes, Scope.USER, None, LINE))
            fresh("import append (answers the document)", lambda s, t: services[s].import_markdown(
                CALLER, t, Scope.USER, None, LINE, ImportMode.APPEND))
            fresh("import replace", lambda s, t: services[s].import_markdown(
                CALLER, t, Scope.USER, None, "# User memory\n\n" + LINE, ImportMode.REPLACE))
            fresh("clear (immediate)", lambda s, t: services[s].clear(CALLER, t, Scope.USER, None, confirm=True))
            fresh("clear (operator approval: request + hold)",
                  lambda s, t: approval[s].clear(CALLER, t, Scope.USER, None, confirm=True))

    where = "a real account (--account env)" if args.account == "env" else "the Cosmos protocol test server on loopback"
    print(f"\nMachine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.system()}, {os.cpu_count()} CPUs; Cosmos: {where}; iterations per steady row: "
          f"{args.iterations}\n")
    print("| operation | entries per scope | Cosmos round trips | Cosmos RU | Cosmos p50 ms | SQLite p50 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        trips = sorted(set(row.round_trips))
        trips_text = str(trips[0]) if len(trips) == 1 else f"{trips[0]}-{trips[-1]}"
        print(f"| {row.operation} | {row.entries} | {trips_text} | {statistics.median(row.charges):.2f} "
              f"| {statistics.median(row.cosmos_ms):.2f} | {statistics.median(row.sqlite_ms):.3f} |")


if __name__ == "__main__":
    main()
