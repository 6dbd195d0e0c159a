"""Benchmark: the SQLite store's reads of records by kind, with the kind bound or written in (issue #15).

Run from the repository root:

    python bench/bench_record_kinds.py [--runs 2000] [--rounds 5] [--statements]

On a new file holding one user's partition (10 entries, a hold, 20 audit events, 20 deletion requests in the
instance's partition), prints the p50 in µs of each store call that picks records by kind (``get_record``,
``query_records`` by status, ``page_records``, ``query_records_of_owner``, ``delete_record`` of a missing
record, the etag'd replace, ``load`` and ``load_heads``, which read the partition's holds) and of
``MemoryService.get`` at 10 entries, each the median of ``--rounds`` rounds of ``--runs`` calls. Run it from an
older tree (a copy of this file in its ``bench/``) to compare the two. ``--statements`` instead times each
statement alone on one connection, inside one read transaction, with the kind bound (``kind=?``) and written in
(``kind='...'``), the way ``sqlite_records.with_kind`` writes it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import Hold, ProfileKey, Scope
from memory_core.domain.records import Partition, Record, RecordKind
from memory_core.domain.service import MemoryService

CALLER = Caller(upn="bench@contoso.com", name="Bench")
INSTANCE = "bench-kinds"
USER = Partition(INSTANCE, CALLER.upn)
REQUESTS = Partition(INSTANCE, "deletion-requests")

_BY_KEY = "instance_id=? AND owner=? AND kind={} AND id=?"
STATEMENTS: dict[str, tuple[str, str, list[object]]] = {  # name: (SQL with {} for the kind, kind, other params)
    "get_record": ("SELECT data, etag FROM records WHERE " + _BY_KEY, RecordKind.AUDIT, [INSTANCE, CALLER.upn, "a07"]),
    "query_records by status": (
        "SELECT id, data, etag FROM records WHERE instance_id=? AND owner=? AND kind={} AND "
        "json_extract(data, '$.status')=? ORDER BY id", RecordKind.DELETION_REQUEST,
        [INSTANCE, REQUESTS.owner, "pending"]),
    "page_records (20)": ("SELECT id, data, etag FROM records WHERE instance_id=? AND owner=? AND kind={} "
                          "ORDER BY id DESC LIMIT ?", RecordKind.AUDIT, [INSTANCE, CALLER.upn, 20]),
    "the partition's holds": ("SELECT data FROM records WHERE instance_id=? AND owner=? AND kind={} ORDER BY id",
                              RecordKind.HOLD, [INSTANCE, CALLER.upn]),
    "delete_record's check": ("SELECT 1 FROM records WHERE " + _BY_KEY, RecordKind.AUDIT,
                              [INSTANCE, CALLER.upn, "missing"]),
}


def _p50(call: Callable[[], Any], runs: int, rounds: int) -> float:
    medians = []
    for _ in range(rounds):
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        medians.append(statistics.median(times))
    return statistics.median(medians) * 1e6


def _filled() -> tuple[SqliteMemoryStore, MemoryService]:
    store = SqliteMemoryStore(Path(tempfile.mkdtemp()) / "kinds.sqlite3")
    service = MemoryService(store)
    for n in range(10):
        service.append(CALLER, INSTANCE, Scope.USER, None, f"- fact {n}")
    store.put_record(Record(USER, RecordKind.HOLD, "h1", Hold("h1", ("nothing",)).to_data()))
    for n in range(20):
        store.put_record(Record(USER, RecordKind.AUDIT, f"a{n:02}", {"action": "append", "n": n}))
        store.put_record(Record(REQUESTS, RecordKind.DELETION_REQUEST, f"r{n:02}",
                                {"status": "pending" if n % 2 else "approved", "upn": CALLER.upn}))
    return store, service


def _store_calls(store: SqliteMemoryStore, service: MemoryService) -> dict[str, Callable[[], Any]]:
    key = ProfileKey(INSTANCE, CALLER.upn, Scope.USER)
    audit = store.get_record(USER, RecordKind.AUDIT, "a07")
    assert audit is not None
    replaced = [audit]

    def replace() -> None:
        replaced[0] = store.put_record(Record(USER, RecordKind.AUDIT, "a07", audit.data, replaced[0].etag))

    return {
        "get_record": lambda: store.get_record(USER, RecordKind.AUDIT, "a07"),
        "query_records by status": lambda: store.query_records(REQUESTS, RecordKind.DELETION_REQUEST,
                                                               {"status": "pending"}),
        "page_records (20)": lambda: store.page_records(USER, RecordKind.AUDIT, limit=20, descending=True),
        "query_records_of_owner": lambda: store.query_records_of_owner(REQUESTS.owner, RecordKind.DELETION_REQUEST),
        "delete_record of a missing record": lambda: store.delete_record(USER, RecordKind.AUDIT, "missing"),
        "the etag'd replace (put_record)": replace,
        "load (1 scope)": lambda: store.load([key]),
        "load_heads (1 scope)": lambda: store.load_heads([key]),
        "MemoryService.get (10 entries)": lambda: service.get(CALLER, INSTANCE, Scope.USER, None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--statements", action="store_true", help="each statement alone, bound and written in")
    args = parser.parse_args()
    store, service = _filled()
    if args.statements:
        db = store._db.connection()
        print("| statement | kind bound (µs) | kind written in (µs) |\n|---|---:|---:|")
        db.execute("BEGIN")
        for name, (sql, kind, params) in STATEMENTS.items():
            bound = sql.format("?")
            at = bound[:bound.index("kind=?")].count("?")
            bound_params = [*params[:at], kind, *params[at:]]
            written = sql.format(f"'{kind}'")
            b = _p50(lambda: db.execute(bound, bound_params).fetchall(), args.runs, args.rounds)
            w = _p50(lambda: db.execute(written, params).fetchall(), args.runs, args.rounds)
            print(f"| {name} | {b:.1f} | {w:.1f} |")
        db.execute("COMMIT")
        return
    print(f"| call ({ROOT.name}) | p50 µs |\n|---|---:|")
    for name, call in _store_calls(store, service).items():
        call()
        print(f"| {name} | {_p50(call, args.runs, args.rounds):.1f} |")
    store.close()


if __name__ == "__main__":
    main()
