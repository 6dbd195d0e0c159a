"""Benchmark: what an ``Idempotency-Key`` adds to an append, on SQLite (in process) and on Cosmos DB.

Run from the repository root (``--cosmos`` starts the Cosmos DB test server the tests use, tests/cosmos_server,
on ``--port``, 0 for a free one):

    python bench/bench_keyed_appends.py [--calls 200] [--cosmos] [--port 0]

One user's user scope, warm (the profile and the partition's stamp known to the process). Alternately an append
without a key and an append with a new key (a first write), ``--calls`` of each; then the retry of each keyed
append (answered from the stored entry, nothing written). Per kind: the median wall time of one call, and the round
trips and RU of a call (``MemoryStore.measure``; on SQLite a round trip is one read or one write transaction). The
test server charges a flat 1 RU a request, so its RU only count requests (on an account a point read of a small item
is about 1 RU), and its queries scan the whole container, which is what makes a retry's answer slow there.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope
from memory_core.domain.service import MemoryService
from memory_core.domain.store import MemoryStore

CALLER = Caller(upn="bench@contoso.com", name="Bench")
KINDS = ("append, no key", "append, new key", "retry of a keyed append")


def _rows(store: MemoryStore, calls: int) -> list[tuple[str, float, float, float]]:
    service = MemoryService(store)
    service.append(CALLER, "bench-keyed", Scope.USER, None, "- warm")
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    trips = dict.fromkeys(KINDS, 0)
    charge = dict.fromkeys(KINDS, 0.0)

    def timed(kind: str, call: Callable[[], object]) -> None:
        with store.measure() as metrics:
            start = time.perf_counter()
            call()
            times[kind].append(time.perf_counter() - start)
        trips[kind] += metrics.round_trips
        charge[kind] += getattr(metrics, "request_charge", 0.0)

    keys = [uuid.uuid4().hex for _ in range(calls)]
    for n, key in enumerate(keys):
        timed(KINDS[0], lambda: service.append(CALLER, "bench-keyed", Scope.USER, None, f"- plain {n}"))
        timed(KINDS[1], lambda: service.append(CALLER, "bench-keyed", Scope.USER, None, f"- keyed {n}",
                                               idempotency_key=key))
    for n, key in enumerate(keys):  # after the writes: a retry refused in a batch leaves no write behind it
        timed(KINDS[2], lambda: service.append(CALLER, "bench-keyed", Scope.USER, None, f"- keyed {n}",
                                               idempotency_key=key))
    return [(kind, statistics.median(times[kind]), trips[kind] / calls, charge[kind] / calls) for kind in KINDS]


@contextmanager
def _cosmos(port: int) -> Iterator[MemoryStore]:
    from tests.adapters.cosmos_support import cosmos_store, provisioned_cosmos_server

    with provisioned_cosmos_server(port=port) as account:
        store = cosmos_store(account)
        try:
            yield store
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--cosmos", action="store_true", help="also on the Cosmos DB test server")
    parser.add_argument("--port", type=int, default=0, help="the test server's port (0: a free one)")
    args = parser.parse_args()
    sqlite = SqliteMemoryStore(Path(tempfile.mkdtemp()) / "keyed.sqlite3")
    print(f"\nSQLite, in process, {args.calls} calls of each\n")
    print("| call | p50 µs | round trips a call |")
    print("|---|---:|---:|")
    for kind, p50, trips, _ in _rows(sqlite, args.calls):
        print(f"| {kind} | {p50 * 1e6:.0f} | {trips:g} |")
    sqlite.close()
    if args.cosmos:
        with _cosmos(args.port) as cosmos:
            rows = _rows(cosmos, args.calls)
        print(f"\nCosmos DB test server, {args.calls} calls of each\n")
        print("| call | p50 ms | round trips a call | RU a call |")
        print("|---|---:|---:|---:|")
        for kind, p50, trips, charge in rows:
            print(f"| {kind} | {p50 * 1e3:.2f} | {trips:g} | {charge:g} |")


if __name__ == "__main__":
    main()
