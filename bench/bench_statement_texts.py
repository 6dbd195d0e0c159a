"""How many distinct statement texts each SQLite connection of ``python -m memory_core serve`` runs under a mixed
load, and how often ``sqlite3``'s per-connection statement cache (``cached_statements``) prepares one again.

Run from the project root:

    python bench/bench_statement_texts.py [--users 32] [--rounds 40] [--workers 8] [--dump texts.txt]

The server runs with every connection counting (``tests/support/statement_texts.py``: the texts it runs, and the
preparations an LRU of its cache size makes, as CPython 3.11's cache is). The load, ``--users`` users from
``--workers`` threads at once: each user's session of REST appends (user scope, and up to 6 agents), reads, entry
pages, searches, forgets, the memory tool's commands, MCP ``tools/call`` and a clear now and then
(``mixed_load``). ``--dump`` writes the busiest connection's texts, one a line.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.statement_texts import counted_server, counts, mixed_load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--dump", type=Path, help="write the busiest connection's texts here, one a line")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, counted_server(Path(tmp)) as (server, out):
        with ThreadPoolExecutor(args.workers) as pool:
            for done in [pool.submit(mixed_load, server.api, i, args.rounds) for i in range(args.users)]:
                done.result()
        rows = counts(out)
    busiest = max(rows, key=lambda r: r["texts"])
    if args.dump:
        args.dump.write_text("\n".join(" ".join(text.split()) for text in busiest["sample"]) + "\n")
    print(f"{len(rows)} connections; per connection: texts, IN-list texts, statements, re-prepares (cache size)")
    for row in sorted(rows, key=lambda r: -r["statements"]):
        print(f"  {row['texts']:4d} {row['in_lists']:4d} {row['statements']:7d} {row['reprepares']:6d}"
              f"  ({row['capacity']})")
    print(f"busiest: {busiest['texts']} texts; re-prepares in all: {sum(r['reprepares'] for r in rows)}"
          f" of {sum(r['statements'] for r in rows)} statements")


if __name__ == "__main__":
    main()
