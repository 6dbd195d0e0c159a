"""Benchmark: a page of the operator's orphan-hold listing (``orphan_holds.orphan_page``) on SQLite, with and
without the index on a deletion request's id (``deletion_requests_by_id``, schema version 11).

Run from the repository root:

    python bench/bench_orphan_holds.py [--requests 20000] [--holds 500] [--pairs 3]

Seeds one instance with ``--requests`` finished deletion requests of 500 users and one user holding ``--holds``
holds, either each naming a stored request (``stored``: the usual case, none listed) or none (``orphaned``: every
hold listed, each also looked up by its key). Then, ``--pairs`` times, alternately drops the index (the layout
before version 11: "without") and creates it again ("with"), timing one page (``limit`` 20, up to 500 holds) each
way. Prints each run and the medians.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_schema import TABLES_SCHEMA, statements
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.deletion import DeletionKind, DeletionRequest, DeletionStatus
from memory_core.domain.identity import Caller
from memory_core.domain.models import Hold, Scope
from memory_core.domain.orphan_holds import orphan_page
from memory_core.domain.records import Partition, Record, RecordKind
from memory_core.domain.service import MemoryService

INSTANCE = "bench"
UPN = "alex@contoso.com"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
INDEX = "deletion_requests_by_id"


def _seed(path: Path, requests: int, holds: int, *, stored: bool) -> None:
    store = SqliteMemoryStore(path)
    try:
        MemoryService(store).append(Caller(UPN), INSTANCE, Scope.USER, None, "- a fact")
        made = [DeletionRequest(f"r{n:06d}", INSTANCE, f"user{n % 500}@contoso.com", DeletionKind.FORGET,
                                DeletionStatus.EXECUTED, "op", T0 + timedelta(seconds=n), scope="user").to_record()
                for n in range(requests)]
        for at in range(0, len(made), 1000):
            store.put_records(made[at:at + 1000])
        for n in range(holds):
            # stored: the hold names a stored request; orphaned: a request id no record holds
            hold_id = f"r{n * (requests // holds):06d}" if stored else f"gone-{n:06d}"
            store.put_record(Record(Partition(INSTANCE, UPN), RecordKind.HOLD, hold_id,
                                    Hold(hold_id, None, None, ("e1",)).to_data()))
    finally:
        store.close()


def _index_sql() -> str:
    (sql,) = [s for s in statements(TABLES_SCHEMA) if INDEX in s]
    return sql


def _page_seconds(path: Path, expected: int) -> float:
    store = SqliteMemoryStore(path)
    try:
        started = time.perf_counter()
        page = orphan_page(store, INSTANCE, 20, None)
        elapsed = time.perf_counter() - started
    finally:
        store.close()
    assert len(page.holds) == expected, len(page.holds)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--holds", type=int, default=500)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("stored", "orphaned"):
            path = Path(tmp) / f"{mode}.sqlite3"
            _seed(path, args.requests, args.holds, stored=mode == "stored")
            expected = 0 if mode == "stored" else args.holds
            times: dict[str, list[float]] = {"without": [], "with": []}
            for pair in range(args.pairs):
                for way in ("without", "with"):
                    with sqlite3.connect(path) as db:
                        db.execute(f"DROP INDEX IF EXISTS {INDEX}" if way == "without" else _index_sql())
                    times[way].append(_page_seconds(path, expected))
                    print(f"{mode} pair {pair + 1} {way} index: {times[way][-1] * 1000:.1f} ms", flush=True)
            without, with_ = statistics.median(times["without"]), statistics.median(times["with"])
            print(f"{mode}: {args.holds} holds over {args.requests} requests, one page: median without index "
                  f"{without * 1000:.1f} ms, with {with_ * 1000:.1f} ms ({without / with_:.0f}x)", flush=True)


if __name__ == "__main__":
    main()
