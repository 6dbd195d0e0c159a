"""Benchmark: the SQLite append in process, and the statements its write transaction sends (issue #15).

Run from the repository root:

    python bench/bench_append_reads.py [--appends 2000] [--warmup 200] [--facts 10] [--profile FILE] [--statements]

One user's user scope on a new file, ``--facts`` entries first, then ``--appends`` appends through
``MemoryService.append`` one after another (each stays: the memory grows by that many entries, one index seek
more or less). Prints the p50 and p90 of the service's append and of the store's ``append_with_records`` inside
it, in µs, and the statements one append's transaction sends (``BEGIN`` to ``COMMIT``), read from the connection's
trace (a statement's triggers show in it as the statement again, counted on its line). ``--profile FILE`` writes a cProfile of the timed appends to ``FILE``
(``python -m pstats FILE``); ``--statements`` times each statement of the transaction (``execute`` to its
answer, ``BEGIN`` and ``COMMIT`` too) and prints their p50. With either, the timings of the whole appends carry the
measuring's own cost.
"""

from __future__ import annotations

import argparse
import cProfile
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.timed_transactions import TransactionParts, timed_write_transaction
from memory_core.adapters import sqlite_database
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope
from memory_core.domain.service import MemoryService

CALLER = Caller(upn="bench@contoso.com", name="Bench")
INSTANCE = "bench-append"


def _quantiles(samples: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples, n=10)
    return statistics.median(samples) * 1e6, cuts[8] * 1e6


class _TimedConnection:
    """A connection whose ``execute`` and ``executemany`` add their time to ``times``, by statement."""

    def __init__(self, db: Any, times: dict[str, list[float]]) -> None:
        self._db, self._times = db, times

    def _timed(self, method: str, sql: str, params: Any) -> Any:
        start = time.perf_counter()
        answer = getattr(self._db, method)(sql, params)  # its first step too: a point read's seek is in here
        self._times.setdefault(sql.split(" WHERE ")[0][:70], []).append(time.perf_counter() - start)
        return answer

    def execute(self, sql: str, params: Any = ()) -> Any:
        return self._timed("execute", sql, params)

    def executemany(self, sql: str, params: Any) -> Any:
        return self._timed("executemany", sql, params)


def _time_statements(times: dict[str, list[float]]) -> None:
    """Every write transaction from now on hands out a ``_TimedConnection``, and times its ``BEGIN`` and ``COMMIT``."""
    write = sqlite_database.SqliteDatabase.write

    def begin_commit(parts: TransactionParts) -> None:  # the block's statements are timed one by one
        times["BEGIN IMMEDIATE"].append(parts.begin)
        times.setdefault("COMMIT", []).append(parts.commit)

    times.setdefault("BEGIN IMMEDIATE", [])  # listed first, as the transaction begins

    @contextmanager
    def timed_write(self: Any, **kwargs: Any) -> Iterator[Any]:
        with write(self, **kwargs) as db:
            yield _TimedConnection(db, times)

    sqlite_database.write_transaction = timed_write_transaction(begin_commit)  # type: ignore[assignment]
    sqlite_database.SqliteDatabase.write = timed_write  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--facts", type=int, default=10)
    parser.add_argument("--profile", help="write a cProfile of the timed appends to this file")
    parser.add_argument("--statements", action="store_true", help="time each statement of the transaction")
    args = parser.parse_args()
    store = SqliteMemoryStore(Path(tempfile.mkdtemp()) / "append.sqlite3")
    service = MemoryService(store)
    for n in range(args.facts + args.warmup):
        service.append(CALLER, INSTANCE, Scope.USER, None, f"- fact {n}")

    statements: list[str] = []
    store._db.connection().set_trace_callback(statements.append)
    service.append(CALLER, INSTANCE, Scope.USER, None, "- traced")
    store._db.connection().set_trace_callback(None)
    begin = max(i for i, s in enumerate(statements) if s.startswith("BEGIN IMMEDIATE"))
    end = next(i for i, s in enumerate(statements) if i > begin and s.startswith("COMMIT"))
    inside: list[list[Any]] = []  # a trigger's statements show as its statement again: one line, counted
    for sql in statements[begin + 1:end]:
        if sql.startswith("--"):  # FTS5's own statements, inside the entry's insert
            continue
        if inside and inside[-1][0] == sql:
            inside[-1][1] += 1
        else:
            inside.append([sql, 1])

    stored: list[float] = []
    append_with_records = store.append_with_records

    def timed_store(*call: Any) -> Any:
        start = time.perf_counter()
        try:
            return append_with_records(*call)
        finally:
            stored.append(time.perf_counter() - start)

    setattr(store, "append_with_records", timed_store)  # noqa: B010 (a method replaced on the instance)
    whole: list[float] = []
    by_statement: dict[str, list[float]] = {}
    if args.statements:
        _time_statements(by_statement)
    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    for n in range(args.appends):
        start = time.perf_counter()
        service.append(CALLER, INSTANCE, Scope.USER, None, f"- appended {n}")
        whole.append(time.perf_counter() - start)
    if profiler:
        profiler.disable()
        profiler.dump_stats(args.profile)
    store.close()

    print(f"\n{args.appends} appends after {args.facts + args.warmup} entries (SQLite, in process)\n")
    print("| part | p50 µs | p90 µs |")
    print("|---|---:|---:|")
    for name, samples in (("MemoryService.append", whole), ("store.append_with_records", stored)):
        p50, p90 = _quantiles(samples)
        print(f"| {name} | {p50:.1f} | {p90:.1f} |")
    if by_statement:
        print("\n| statement (to its WHERE) | p50 µs |")
        print("|---|---:|")
        for sql, samples in by_statement.items():
            print(f"| `{sql}` | {statistics.median(samples) * 1e6:.1f} |")
    print(f"\nStatements inside one append's transaction ({len(inside)}):")
    for sql, times in inside:
        print(f"  {sql[:100]}" + (f" (x{times}: its triggers)" if times > 1 else ""))


if __name__ == "__main__":
    main()
