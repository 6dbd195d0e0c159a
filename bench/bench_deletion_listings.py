"""Benchmark: listings of deletion requests (SQLite) as an instance's finished requests pile up.

Run from the repository root:

    python bench/bench_deletion_listings.py [--finished 100,10000,100000] [--repeat 30] [--without-indexes]

An instance keeps all its deletion requests in one partition, finished ones too (until
``MEMORY_DELETION_RETENTION_DAYS``, unset by default). For each count of finished (executed)
requests, spread over 500 users, the median time of one page through ``CustodyService.page``:
the operator's pending list, one user's pending and approved lists (what the console's notice
reads) and one user's whole list, with the SQLite statements, rows and VM steps it costs
(``SqliteMemoryStore.measure()``). ``--without-indexes`` drops the schema's deletion-request indexes
(version 8) after opening, as the store was before them.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.deletion import DeletionKind, DeletionRequest, DeletionStatus
from memory_core.domain.service import MemoryService

USER = "alex@contoso.com"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
LISTINGS: list[tuple[str, DeletionStatus | None, str | None]] = [
    ("the operator's pending list", DeletionStatus.PENDING, None),
    ("one user's pending list", DeletionStatus.PENDING, USER),
    ("one user's approved list", DeletionStatus.APPROVED, USER),
    ("one user's whole list", None, USER),
]


def _seed(path: Path, finished: int) -> None:
    requests = [DeletionRequest(f"r{n}", "i", f"user{n % 500}@contoso.com", DeletionKind.FORGET,
                                DeletionStatus.EXECUTED, "someone", T0 + timedelta(seconds=n), scope="user")
                for n in range(finished)]
    requests += [DeletionRequest(f"alex-{s}", "i", USER, DeletionKind.FORGET, s, USER, T0 + timedelta(days=9, seconds=n),
                                 scope="user") for n, s in enumerate((DeletionStatus.PENDING, DeletionStatus.APPROVED))]
    # Straight into the store's table in one transaction: put_record one at a time would dominate the run.
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO records (instance_id, owner, kind, id, data, etag) VALUES (?,?,?,?,?,?)",
            [(r.partition.instance_id, r.partition.owner, r.kind, r.id, json.dumps(r.data), "etag")
             for r in (q.to_record() for q in requests)],
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finished", default="100,10000,100000", help="counts of finished requests, comma-separated")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--without-indexes", action="store_true", help="drop the deletion-request indexes")
    args = parser.parse_args()
    print("| finished requests | listing | median | statements | rows | VM steps |")
    print("|---:|---|---:|---:|---:|---:|")
    for finished in (int(n) for n in args.finished.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "requests.sqlite3"
            store = SqliteMemoryStore(path)
            try:
                _seed(path, finished)
                if args.without_indexes:
                    with sqlite3.connect(path) as db:
                        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE name LIKE 'deletion_requests_by_%'"
                                                  ).fetchall():
                            db.execute(f"DROP INDEX {name}")
                custody = MemoryService(store).custody
                for label, status, upn in LISTINGS:
                    times = []
                    for _ in range(args.repeat):
                        started = time.perf_counter()
                        custody.page("i", status, limit=1000, upn=upn)
                        times.append(time.perf_counter() - started)
                    with store.measure() as cost:
                        custody.page("i", status, limit=1000, upn=upn)
                    print(f"| {finished:,} | {label} | {statistics.median(times) * 1000:.2f} ms | {cost.round_trips} "
                          f"| {cost.rows} | {cost.vm_steps:,} |", flush=True)
            finally:
                store.close()


if __name__ == "__main__":
    main()
