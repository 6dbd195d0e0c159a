"""A fresh process's first read on the Cosmos DB store: from a read checkpoint vs in full.

Run from the project root:

    python bench/bench_cosmos_checkpoints.py [--iterations 10] [--sizes 1000,10000]

It starts the Cosmos DB protocol server the tests use (loopback, TLS verified), provisions
the Memories container as infra does, and stores N entries in one user scope (words drawn
from a fixed vocabulary, so the text compresses about as prose does, not as one line
repeated). Then, in process, each row's read is a new ``MemoryService`` (no snapshot: what
a Functions instance just started has) over one warmed ``CosmosMemoryStore``:

- a cold read in full (checkpoints off: the path before them);
- a cold read with checkpoints on, none stored yet (it builds in full and keeps one);
- a cold read restored from the checkpoint, three entries appended since;
- the checkpoint's write alone (``keep_checkpoint``, compression included);
- a forget in a partition with and without a checkpoint (operations in its batch).

For each it counts the Cosmos round trips, RU and items read (``CosmosMemoryStore.measure()``)
and the bytes of JSON the reads return (the query's items, or the checkpoint item), from which
docs/cosmos.md estimates a real account's RU. The test server charges a flat 1 RU per request
and scans its whole container per query; its latency is not a real account's.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.adapters.cosmos_calls import Calls
from memory_core.adapters.cosmos_stamp_item import checkpoint_item_id
from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.domain.checkpoints import StoredCheckpoint, read_key
from memory_core.domain.identity import Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import MemoryService
from memory_core.domain.snapshots import SnapshotCache
from memory_core.domain.views import DeletionMode
from tests.adapters.cosmos_support import CONTAINER, DATABASE, cosmos_store, provisioned_cosmos_server
from tests.support.cosmos_server import CosmosServer
from tests.support.seeding import make_entries, seed

UPN = "bench@contoso.com"
CALLER = Caller(UPN, "Bench", "bench")
_VOCABULARY = ("user prefers concise answers tables plans meeting project deadline budget team review notes draft "
          "customer contract invoice travel Oslo Bergen March April schedule weekly report metrics service "
          "latency cost storage memory agent reminder call email follow priority launch design feedback "
          "release version migrate database backup policy access approval holiday flight hotel lunch "
          "Monday Friday morning evening quarterly goal risk issue fix test deploy staging production")
_WORDS = _VOCABULARY.split()


def sentence(n: int) -> str:
    rng = random.Random(n)
    return f"- {' '.join(rng.choice(_WORDS) for _ in range(rng.randint(8, 20)))} ({n})"


def measured(store: CosmosMemoryStore, fn: Callable[[], object]) -> tuple[float, int, float, int]:
    """ms, round trips, RU, items read of one call of ``fn``."""
    started = time.perf_counter()
    with store.measure() as metrics:
        fn()
    return (time.perf_counter() - started) * 1000, metrics.round_trips, metrics.request_charge, metrics.rows


def median_row(samples: list[tuple[float, int, float, int]]) -> tuple[float, int, float, int]:
    return (statistics.median(s[0] for s in samples), samples[-1][1], samples[-1][2], samples[-1][3])


def raw_bytes(account: CosmosServer, instance: str, *, checkpoint: bool) -> int:
    """Bytes of JSON a read returns: the checkpoint item, or every item a full load's query answers."""
    client = account.client()
    try:
        container = client.get_database_client(DATABASE).get_container_client(CONTAINER)
        if checkpoint:
            item = container.read_item(checkpoint_item_id(UPN), partition_key=[instance, UPN])
            return len(json.dumps(item))
        items = container.query_items(
            "SELECT * FROM c WHERE c.instance_id = @i AND c.upn = @u AND c.type != 'checkpoint'"
            " AND (NOT IS_DEFINED(c.record_kind) OR c.record_kind = 'hold')",
            parameters=[{"name": "@i", "value": instance}, {"name": "@u", "value": UPN}],
            partition_key=[instance, UPN])
        return sum(len(json.dumps(i)) for i in items)
    finally:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--sizes", default="1000,10000")
    args = parser.parse_args()
    rows: list[tuple[str, int, float, int, float, int, str]] = []
    with provisioned_cosmos_server() as account:
        store = cosmos_store(account)
        for size in [int(s) for s in args.sizes.split(",")]:
            instance = f"ckpt-bench-{size}"
            key = ProfileKey(instance, UPN, Scope.USER)
            print(f"storing {size} entries...", file=sys.stderr, flush=True)
            seed(store, make_entries(key, size, text=sentence), account)

            def full() -> None:
                service = MemoryService(store)
                service._snapshots = SnapshotCache(store, service.kept)  # checkpoints off: the path before
                service.get(CALLER, instance, Scope.USER, None)

            print(f"timing cold reads at {size}...", file=sys.stderr, flush=True)
            cold = median_row([measured(store, full) for _ in range(args.iterations)])
            rows.append(("cold read in full (no checkpoints)", size, *cold,
                         f"{raw_bytes(account, instance, checkpoint=False) / 1000:.0f} KB of items"))
            first = measured(store, lambda: MemoryService(store).get(CALLER, instance, Scope.USER, None))
            rows.append(("cold read, checkpoints on, none yet (builds in full, keeps one)", size, *first, ""))
            writer = MemoryService(store)
            for n in range(3):
                writer.append(CALLER, instance, Scope.USER, None, f"- appended after the checkpoint {n}")
            restored = median_row([measured(store, lambda: MemoryService(store).get(CALLER, instance, Scope.USER, None))
                                   for _ in range(args.iterations)])
            rows.append(("cold read restored from the checkpoint (3 appended since)", size, *restored,
                         f"{raw_bytes(account, instance, checkpoint=True) / 1000:.0f} KB checkpoint item"))
            stored = store.read_checkpoint(instance, UPN, read_key([key], UPN))
            assert stored is not None
            now = store.partition_stamp(instance, UPN)
            keep = median_row([measured(store, lambda: store.keep_checkpoint(
                instance, UPN, read_key([key], UPN), StoredCheckpoint(now, stored.payload)))
                for _ in range(args.iterations)])
            rows.append(("checkpoint write alone (keep_checkpoint; compression included)", size, *keep,
                         f"{len(stored.payload) / 1000:.0f} KB of text"))
            sizes = _forget_batches(store, instance)
            rows.append(("forget, partition with a checkpoint", size, *sizes[0][1], f"batch of {sizes[0][0]} ops"))
            rows.append(("forget, partition without one", size, *sizes[1][1], f"batch of {sizes[1][0]} ops"))
        store.close()
    print(f"\nMachine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.system()}; Cosmos: the test server on loopback; iterations per read row: {args.iterations}\n")
    print("| operation | entries | p50 ms | round trips | RU (test server) | items read | size |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, size, ms, trips, charge, items, note in rows:
        print(f"| {name} | {size} | {ms:.1f} | {trips} | {charge:.0f} | {items} | {note} |")


def _forget_batches(store: CosmosMemoryStore, instance: str) -> list[tuple[int, tuple[float, int, float, int]]]:
    """A forget's batch size and cost, first with the partition's checkpoint, then without one."""
    service = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE)
    service.get(CALLER, instance, Scope.USER, None)  # a checkpoint at the current stamp
    entries = store.load([ProfileKey(instance, UPN, Scope.USER)])[0].entries
    results = []
    original = Calls.execute_batch
    for entry in entries[:2]:
        sizes: list[int] = []

        def counted(self: Calls, operations: Any, pk: list[str], sizes: list[int] = sizes) -> list[dict[str, Any]]:
            sizes.append(len(operations))
            return original(self, operations, pk)

        Calls.execute_batch = counted  # type: ignore[method-assign]
        try:
            cost = measured(store, lambda e=entry: service.forget(CALLER, instance, e.id))
        finally:
            Calls.execute_batch = original  # type: ignore[method-assign]
        results.append((sizes[0], cost))
    return results


if __name__ == "__main__":
    main()
