"""What the SQLite purge's rebuild of a deep full-text index costs (``sqlite_erasure.REBUILD_PAST_LEVELS``).

Run from the project root:

    python bench/bench_fts_rebuild.py [--sizes 1000,10000] [--repeats 5]

For each size, a store of that many entries (one user, ~25 words each) is filled through the real service, and
FTS5's ``'rebuild'`` of its index is timed ``--repeats`` times on a connection of its own: the time it holds the
writers' lock. Prints the median in ms.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.adapters.sqlite_fulltext import REBUILD_SQL
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope
from memory_core.domain.service import MemoryService
from memory_core.domain.views import DeletionMode

CALLER = Caller(upn="bench@contoso.com", name="Bench")
WORDS = [f"w{n:05d}" for n in range(20_000)]


def rebuild_ms(size: int, repeats: int) -> float:
    rng = random.Random(size)
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteMemoryStore(Path(folder) / "bench.sqlite3")
        service = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE, clock=lambda: datetime.now(UTC))
        for _ in range(size):
            service.append(CALLER, "bench", Scope.USER, None, "- " + " ".join(rng.choice(WORDS) for _ in range(25)))
        store.close()
        db = sqlite3.connect(Path(folder) / "bench.sqlite3", isolation_level=None)
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            db.execute(REBUILD_SQL)
            times.append(time.perf_counter() - started)
        db.close()
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print("| entries | rebuild p50 ms |\n|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        print(f"| {size:,} | {rebuild_ms(size, args.repeats):.1f} |")


if __name__ == "__main__":
    main()
