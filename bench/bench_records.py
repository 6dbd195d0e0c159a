"""Benchmark: an audit page at 100, 10,000 and 100,000 events (SQLite), beside reading the whole trail.

Run from the repository root:

    python bench/bench_records.py

For each trail length: the median time of one page of 100 (oldest first and
newest first) through ``MemoryService.audit_page``, the SQLite statements, rows
and VM instructions it costs (``SqliteMemoryStore.measure()``), and the same for
reading the whole trail (what every audit read cost before the page query).
"""

from __future__ import annotations

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
from memory_core.domain.audit import AuditAction, AuditEvent
from memory_core.domain.records import Partition, RecordKind
from memory_core.domain.service import MemoryService

UPN = "alex@contoso.com"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def seed(path: Path, instance: str, count: int) -> None:
    rows = []
    for n in range(count):
        event = AuditEvent(T0 + timedelta(microseconds=n), UPN, AuditAction.APPEND, instance, UPN, entry_id=f"e{n}")
        rows.append((instance, UPN, RecordKind.AUDIT, f"{event.time.isoformat()}~{n:012x}",
                     json.dumps(event.to_data()), "etag"))
    with sqlite3.connect(path) as db:
        db.executemany("INSERT INTO records (instance_id, owner, kind, id, data, etag) VALUES (?,?,?,?,?,?)", rows)


def timed(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.sqlite3"
        store = SqliteMemoryStore(path)
        service = MemoryService(store)
        sizes = (100, 10_000, 100_000)
        for size in sizes:
            seed(path, f"i{size}", size)
        print("| events | read | median ms | statements | rows | VM instructions |")
        print("|---:|---|---:|---:|---:|---:|")
        for size in sizes:
            instance = f"i{size}"
            cases = {
                "page of 100, oldest first": lambda i=instance: service.audit_page(i, UPN, limit=100),
                "page of 100, newest first": lambda i=instance: service.audit_page(i, UPN, limit=100,
                                                                                   newest_first=True),
                "whole trail (before: every read)": lambda i=instance: store.query_records(Partition(i, UPN),
                                                                                         RecordKind.AUDIT),
            }
            for name, fn in cases.items():
                with store.measure() as cost:
                    fn()
                ms = timed(fn, 50 if "page" in name else 5)
                print(f"| {size:,} | {name} | {ms:.2f} | {cost.round_trips} | {cost.rows:,} | {cost.vm_steps:,} |")
        store.close()


if __name__ == "__main__":
    main()
