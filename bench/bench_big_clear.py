"""Benchmark: a clear of one user's large memory on SQLite, in process, against a file.

Run from the repository root:

    python bench/bench_big_clear.py [--entries 60000] [--pending 3000] [--repeat 3] [--profile clear|sweep|listing]
    python bench/bench_big_clear.py --reads [--entries 60000] [--repeat 5]

For each of ``--repeat`` fresh files (one user with ``--entries`` entries of about 100 bytes, three users with 200
each, seeded straight into the tables through the store's triggers), it times:

- ``clear, immediate``: ``MemoryService.clear`` of the user scope under ``MEMORY_DELETION_MODE=immediate`` (the
  watermark, the erasure of every entry with its words in the full-text index, the audit event, one transaction per
  store call as in production);
- ``operator listing``: under ``operator_approval``, with ``--pending`` forgets pending and a clear requested, the
  first page of 1,000 of the operator's pending list as ``GET /operator/deletions`` reads it (``CustodyService.page``
  and each request's entry count, ``overview.request_entry_counts``), then the same with 100 a page (the clear is
  on it when its random id sorts among the first 100);
- ``sweep``: that clear approved, the sweep that executes it.

It prints the median and every run (seconds), and checks the clear left no entry and no indexed word of the user.
``--profile`` prints a cProfile of one run of that step instead (the 25 costliest functions by cumulative time).
``--reads`` times only what a clear reads to find what its watermark covers, on one seeded file, ``--repeat`` times
each in turn: the scope loaded whole (``load``, what the immediate clear read before ``entry_facts``), the person's
and the shared partitions loaded whole (``load_partition``, what the sweep's plan of a clear read), and
``entry_facts`` of the scope under the watermark.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_rows import entry_values
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.deletion import DeletionStatus
from memory_core.domain.identity import Caller
from memory_core.domain.models import SHARED_OWNER, ProfileKey, Scope
from memory_core.domain.overview import request_entry_counts
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import EntryWindow
from memory_core.domain.views import PendingDeletion

INSTANCE = "local"
BIG = Caller("big@contoso.com", "Big")
WORDS = ["river", "mountain", "coffee", "budget", "travel", "project", "meeting", "garden", "piano", "quantum"]


def _seed(path: Path, entries: int) -> None:
    """One entry per user through the service (its profile, its audit event), the rest copied into ``entries``."""
    start = datetime.now(UTC) - timedelta(days=2)
    store = SqliteMemoryStore(path)
    try:
        service = MemoryService(store, clock=lambda: start, deletion_mode=DeletionMode.IMMEDIATE)
        users = [(BIG, entries)] + [(Caller(f"other{u}@contoso.com"), 200) for u in range(3)]
        rows = []
        for caller, count in users:
            service.append(caller, INSTANCE, Scope.USER, None, "- Fact 0: common alpha note.")
            (state,) = store.load([ProfileKey(INSTANCE, caller.upn, Scope.USER, None)])
            entry = state.entries[0]
            for i in range(1, count):
                text = f"- Fact {i}: common alpha note about {WORDS[i % 10]} and {WORDS[(i * 7) % 10]} number {i}."
                rows.append(entry_values(replace(entry, id=f"{caller.upn}-{i}", content_markdown=text,
                                                 created_on=start + timedelta(seconds=i / 10))))
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        db.executemany("INSERT INTO entries VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)


def _check_erased(path: Path) -> None:
    with sqlite3.connect(path) as db:
        left = db.execute("SELECT count(*) FROM entries WHERE upn = ?", (BIG.upn,)).fetchone()[0]
        others = db.execute("SELECT count(*) FROM entries WHERE upn != ?", (BIG.upn,)).fetchone()[0]
        db.execute("INSERT INTO entries_fts(entries_fts) VALUES ('integrity-check')")
        matches = db.execute("SELECT count(*) FROM entries_fts WHERE entries_fts MATCH 'number'").fetchone()[0]
    assert left == 0, f"{left} entries of the cleared user left"
    assert matches == others - 3, f"{matches} indexed matches of 'number', {others - 3} expected"


def _timed(step: Callable[[], object], profile: bool) -> float:
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
    started = time.perf_counter()
    step()
    took = time.perf_counter() - started
    if profile:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    return took


def _one_run(folder: Path, entries: int, pending: int, profile: str | None) -> dict[str, float]:
    times: dict[str, float] = {}
    path = folder / "immediate.sqlite3"
    _seed(path, entries)
    store = SqliteMemoryStore(path)
    try:
        service = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE)
        times["clear, immediate"] = _timed(
            lambda: service.clear(BIG, INSTANCE, Scope.USER, None, confirm=True), profile == "clear")
    finally:
        store.close()
    _check_erased(path)

    path = folder / "approval.sqlite3"
    _seed(path, entries)
    store = SqliteMemoryStore(path)
    try:
        service = MemoryService(store, deletion_mode=DeletionMode.OPERATOR_APPROVAL)
        for i in range(1, pending + 1):
            service.forget(BIG, INSTANCE, f"{BIG.upn}-{i}")
        request = service.clear(BIG, INSTANCE, Scope.USER, None, confirm=True)
        custody = service.custody
        def listing(limit: int) -> None:  # what GET /operator/deletions does before it answers
            request_entry_counts(store, custody.page(INSTANCE, DeletionStatus.PENDING, limit=limit).items)

        times["operator listing, 1,000 a page (first page)"] = _timed(lambda: listing(1000), profile == "listing")
        times["operator listing, 100 a page (first page)"] = _timed(lambda: listing(100), False)
        assert isinstance(request, PendingDeletion)
        custody.approve("operator", INSTANCE, request.request_id)
        times["sweep of the approved clear"] = _timed(lambda: custody.sweep("operator", INSTANCE), profile == "sweep")
    finally:
        store.close()
    _check_erased(path)
    return times


def _reads(entries: int, repeat: int) -> None:
    """Time the reads that find what a clear covers, each ``repeat`` times in turn on one file (see the docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "reads.sqlite3"
        _seed(path, entries)
        store = SqliteMemoryStore(path)
        key = ProfileKey(INSTANCE, BIG.upn, Scope.USER, None)
        watermark = datetime.now(UTC)
        reads: dict[str, Callable[[], object]] = {
            "load of the scope (entries whole)": lambda: store.load([key]),
            "load_partition of the person and of ~shared": lambda: (store.load_partition(INSTANCE, BIG.upn),
                                                                     store.load_partition(INSTANCE, SHARED_OWNER)),
            "entry_facts under the watermark": lambda: store.entry_facts(EntryWindow(key, up_to=watermark)),
        }
        runs: dict[str, list[float]] = {label: [] for label in reads}
        try:
            for _ in range(repeat):
                for label, read in reads.items():
                    runs[label].append(_timed(read, False))
        finally:
            store.close()
    print(f"| read ({entries:,} entries in the scope) | median | runs |")
    print("|---|---:|---|")
    for label, times in runs.items():
        print(f"| {label} | {statistics.median(times):.3f} s | {', '.join(f'{t:.3f}' for t in times)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=60000)
    parser.add_argument("--pending", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", choices=("clear", "sweep", "listing"))
    parser.add_argument("--reads", action="store_true", help="time only the reads that find what a clear covers")
    args = parser.parse_args()
    if args.reads:
        _reads(args.entries, args.repeat)
        return
    runs: dict[str, list[float]] = {}
    for _ in range(1 if args.profile else args.repeat):
        with tempfile.TemporaryDirectory() as folder:
            for label, took in _one_run(Path(folder), args.entries, args.pending, args.profile).items():
                runs.setdefault(label, []).append(took)
    print(f"| step ({args.entries:,} entries, {args.pending:,} pending forgets) | median | runs |")
    print("|---|---:|---|")
    for label, times in runs.items():
        print(f"| {label} | {statistics.median(times):.3f} s | {', '.join(f'{t:.3f}' for t in times)} |")


if __name__ == "__main__":
    main()
