"""What a read right after an erasure, or under a pending clear, reads on Cosmos DB: round trips,
items and bytes of one read (the test server charges a flat 1 RU a request, so RU are not given).

Run from the project root (starts the Cosmos DB test server the tests use, tests/cosmos_server):

    python bench/bench_erasures_cosmos.py [--size 2000]

One user's user memory of ``--size`` entries. Each row is one read's store work (``measure()``):
a warm process (it made the same read just before) and a fresh one (a new store object and
service), right after another process's immediate forget of one entry (which erases the read's
checkpoint: the fresh process loads the memory), and under a clear left pending.
The warm process's snapshot is built, not restored from a checkpoint (one restored keeps no
entries, and the first erasure after it builds the read again).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.domain.identity import Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.views import PendingDeletion
from tests.adapters.cosmos_support import cosmos_store, provisioned_cosmos_server
from tests.support.seeding import make_entries, seed

CALLER = Caller(upn="bench@contoso.com", name="Bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2000)
    args = parser.parse_args()
    instance = "bench-erasures"
    rows = []
    with provisioned_cosmos_server() as account:
        writer_store = cosmos_store(account)
        seed(writer_store, make_entries(ProfileKey(instance, CALLER.upn, Scope.USER), args.size), account)
        writer = MemoryService(writer_store, deletion_mode=DeletionMode.IMMEDIATE)
        approval = MemoryService(writer_store)
        ids = [e.id for e in writer.entries(CALLER, instance, Scope.USER, None)]

        def get(service: MemoryService) -> None:
            service.get(CALLER, instance, Scope.USER, None)

        def measured(label: str, service: MemoryService, store: object) -> None:
            with store.measure() as metrics:  # type: ignore[attr-defined]
                get(service)
            rows.append((label, metrics.round_trips, metrics.rows, metrics.bytes_read))

        warm_store = cosmos_store(account)
        warm = MemoryService(warm_store)
        get(warm)  # built (no checkpoint yet): the snapshot knows its entries
        writer.forget(CALLER, instance, ids.pop())
        measured("warm process, get right after a forget", warm, warm_store)
        writer.forget(CALLER, instance, ids.pop())  # erases the checkpoint the warm read kept again
        fresh_store = cosmos_store(account)
        measured("fresh process, get right after a forget (nothing hidden)", MemoryService(fresh_store),
                 fresh_store)
        get(warm)
        pending = approval.clear(CALLER, instance, Scope.USER, None, confirm=True)
        assert isinstance(pending, PendingDeletion)
        measured("warm process, get under a pending clear", warm, warm_store)
        fresh_store = cosmos_store(account)
        measured("fresh process, get under a pending clear", MemoryService(fresh_store), fresh_store)
    print(f"\n{args.size:,} entries, Cosmos DB test server\n")
    print("| read | round trips | items read | bytes read |")
    print("|---|---:|---:|---:|")
    for label, trips, items, read in rows:
        print(f"| {label} | {trips} | {items:,} | {read:,} |")


if __name__ == "__main__":
    main()
