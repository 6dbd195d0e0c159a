"""Where a SQLite search's time goes: the parts of its FTS5 ranking statement, timed alone.

Run from the project root:

    python bench/bench_search_costs.py [--iterations 20]

It preloads the database bench_search.py searches (10, 1,000 and 10,000 entries in one
user's user and agent memory, one partition per size: 22,020 entries in all) and times,
per size, for the bench's query ("markdown tables plans", which matches every entry):

- ranking: the statement the store runs for a search's first page (``bm25()`` over every
  match, the top 52 by score and key);
- finding: counting the same matches, none scored;
- IDF reads: counting each query phrase's rows in the whole table, which ``bm25()``
  does once per statement before it scores the first match (FTS5 weighs a term by the
  whole table, every user and instance, not by the caller's memory).

Then the ranking statement on contentless copies of the index, each built alike (rows in
key order, one merge), that differ in one respect from the one the store uses:

- as built: the store's layout (scope and content columns, the same keys), the baseline;
- detail=column: no positions in the index, only columns (a term then counts 0 or 1 per column);
- no lengths (columnsize=0): bm25 cannot read a match's length, so it scores without the
  per-match length look-up (not a usable ranking: it times what that look-up costs);
- no scope phrase: keys clustered by profile and the profile chosen by a rowid range
  instead of the scope word in the query.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_http import UPN, preload

from memory_core.adapters.sqlite_fulltext import match_expression, scope_token
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.models import ProfileKey, Scope

TERMS = ["markdown", "tables", "plans"]
TOKENIZE = "tokenize='porter unicode61 remove_diacritics 2'"
RANKING = "SELECT rowid, -bm25({t}{w}) AS score FROM {t} WHERE {t} MATCH ?{r} ORDER BY score DESC, rowid LIMIT 52"


def timed(db: sqlite3.Connection, sql: str, params: list[object], iterations: int) -> float:
    """The median milliseconds of ``sql`` run to its last row."""
    for _ in range(3):
        db.execute(sql, params).fetchall()
    samples = []
    for _ in range(iterations):
        start = time.perf_counter()
        db.execute(sql, params).fetchall()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def build_copies(db: sqlite3.Connection) -> dict[tuple[str, str], int]:
    """The contentless copies of the index; returns each profile's number (the high bits of its keys
    in the copy without the scope phrase)."""
    profiles = db.execute("SELECT DISTINCT instance_id, profile_id FROM entries ORDER BY 1, 2").fetchall()
    number = {(row[0], row[1]): n + 1 for n, row in enumerate(profiles)}
    source = db.execute(
        "SELECT f.search_key, f.scope, e.instance_id, e.profile_id, e.content_markdown FROM entries_fts_source f"
        " JOIN entries e ON e.rowid = f.search_key & 4294967295 ORDER BY f.search_key"
    ).fetchall()
    by_profile = sorted(((number[(r[2], r[3])] << 40) | (r[0] & 0xFFFFFFFF), r[4]) for r in source)
    copies = {
        "copy_as_built": ("scope, content_markdown, content=''", [(r[0], r[1], r[4]) for r in source]),
        "copy_detail_column": ("scope, content_markdown, content='', detail=column", [(r[0], r[1], r[4]) for r in source]),
        "copy_no_lengths": ("scope, content_markdown, content='', columnsize=0", [(r[0], r[1], r[4]) for r in source]),
        "copy_no_scope": ("content_markdown, content=''", by_profile),
    }
    for name, (columns, rows) in copies.items():
        db.execute(f"CREATE VIRTUAL TABLE {name} USING fts5({columns}, {TOKENIZE})")
        marks = ",".join("?" * len(rows[0]))
        db.execute("BEGIN")
        indexed = columns.split(", content=")[0]
        db.executemany(f"INSERT INTO {name}(rowid, {indexed}) VALUES ({marks})", rows)
        db.execute("COMMIT")
        db.execute(f"INSERT INTO {name}({name}) VALUES ('optimize')")
    return number


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    sizes = [10, 1000, 10000]
    tmp = Path(tempfile.mkdtemp(prefix="memory-bench-search-costs-"))
    store = SqliteMemoryStore(tmp / "memory.sqlite3")
    for size in sizes:
        print(f"preloading {size} entries...", file=sys.stderr, flush=True)
        preload(store, f"search-{size}", size)
    store.close()
    db = sqlite3.connect(tmp / "memory.sqlite3", isolation_level=None)
    print("building the index copies...", file=sys.stderr, flush=True)
    number = build_copies(db)
    n = args.iterations
    print(f"\niterations per cell: {n}; median ms\n")
    print("| entries | ranking | finding | IDF reads | copy: as built | detail=column | no lengths | no scope phrase |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        key = ProfileKey(f"search-{size}", UPN, Scope.USER)
        token = scope_token(key.instance_id, key.upn, key.profile_id)
        match = match_expression([token], TERMS)
        ranking = timed(db, RANKING.format(t="entries_fts", w=", 0.0, 1.0", r=""), [match], n)
        finding = timed(db, "SELECT count(*) FROM entries_fts WHERE entries_fts MATCH ?", [match], n)
        idf = sum(timed(db, "SELECT count(*) FROM entries_fts WHERE entries_fts MATCH ?", [phrase], n)
                  for phrase in [f'scope : "{token}"', *(f'"{t}"' for t in TERMS)])
        copies = [timed(db, RANKING.format(t=name, w=", 0.0, 1.0", r=""), [match], n)
                  for name in ("copy_as_built", "copy_detail_column", "copy_no_lengths")]
        low = number[(key.instance_id, key.profile_id)] << 40
        words = " OR ".join(f'"{t}"' for t in TERMS)
        copies.append(timed(db, RANKING.format(t="copy_no_scope", w="", r=" AND rowid BETWEEN ? AND ?"),
                            [words, low, low + (1 << 40) - 1], n))
        print(f"| {size} | {ranking:.2f} | {finding:.2f} | {idf:.2f} | " + " | ".join(f"{c:.2f}" for c in copies) + " |")
    db.close()


if __name__ == "__main__":
    main()
