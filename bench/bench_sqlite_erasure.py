"""What making erased text leave the SQLite file costs (``memory_core/adapters/sqlite_erasure.py``).

Run from the project root:

    python bench/bench_sqlite_erasure.py [--iterations 50] [--sizes 10,1000,10000]

In process, on the real store and service (immediate deletion mode), one run, for each size
(entries stored in the file, one user, ~25 words each):

- append p50/p99 with ``secure_delete`` on (the store's setting) and off (set back on this
  thread's connection): what zeroing freed space adds to the write path;
- forget p50/p99 (an immediate erasure of one entry), as answered, and until the checkpoint
  thread has purged it (the FTS5 merge and the log's truncation: the file no longer owes it);
- append p50/p99 started 5 ms after a forget, while the purge runs: what a write waits for it.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.adapters.sqlite_erasure import purge_owed
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope
from memory_core.domain.service import MemoryService
from memory_core.domain.views import DeletionMode

CALLER = Caller(upn="bench@contoso.com", name="Bench")
INSTANCE = "bench"
BEHIND_SECONDS = 0.005
"""How long after a forget the next append starts: the checkpoint thread's purge is under way by then."""
WORDS = [f"w{n:05d}" for n in range(20_000)]


def _text(rng: random.Random) -> str:
    return "- " + " ".join(rng.choice(WORDS) for _ in range(25))


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    return f"{statistics.median(ordered) * 1000:.2f} / {ordered[int(len(ordered) * 0.99) - 1] * 1000:.2f}"


def run(size: int, iterations: int) -> dict[str, str]:
    rng = random.Random(size)
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteMemoryStore(Path(folder) / "bench.sqlite3")
        service = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE,
                                clock=lambda: datetime.now(UTC))
        db = store._db.connection()
        for _ in range(size):
            service.append(CALLER, INSTANCE, Scope.USER, None, _text(rng))
        appends: dict[str, list[float]] = {"on": [], "off": []}
        for n in range(iterations * 2):
            setting = "on" if n % 2 == 0 else "off"
            db.execute(f"PRAGMA secure_delete={setting.upper()}")
            started = time.perf_counter()
            service.append(CALLER, INSTANCE, Scope.USER, None, _text(rng))
            appends[setting].append(time.perf_counter() - started)
        db.execute("PRAGMA secure_delete=ON")
        forgets, purged, behind = [], [], []
        for _ in range(iterations):
            entry_id = str(service.append(CALLER, INSTANCE, Scope.USER, None, _text(rng)).entry_id)
            service.forget(CALLER, INSTANCE, entry_id)
            time.sleep(BEHIND_SECONDS)
            started = time.perf_counter()
            service.append(CALLER, INSTANCE, Scope.USER, None, _text(rng))
            behind.append(time.perf_counter() - started)
            while purge_owed(db):
                time.sleep(0.0005)
        for _ in range(iterations):
            entry_id = str(service.append(CALLER, INSTANCE, Scope.USER, None, _text(rng)).entry_id)
            started = time.perf_counter()
            service.forget(CALLER, INSTANCE, entry_id)
            forgets.append(time.perf_counter() - started)
            while purge_owed(db):
                time.sleep(0.0005)
            purged.append(time.perf_counter() - started)
        store.close()
    return {"append, secure_delete on": _ms(appends["on"]), "append, secure_delete off": _ms(appends["off"]),
            "forget (answered)": _ms(forgets), "forget until purged": _ms(purged),
            "append 5 ms after a forget": _ms(behind)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--sizes", default="10,1000,10000")
    args = parser.parse_args()
    rows = {}
    for size in (int(s) for s in args.sizes.split(",")):
        print(f"filling {size} entries ...", file=sys.stderr, flush=True)
        rows[size] = run(size, args.iterations)
    names = list(next(iter(rows.values())))
    print("| entries | " + " | ".join(f"{n} p50 / p99 ms" for n in names) + " |")
    print("|---:|" + "---:|" * len(names))
    for size, row in rows.items():
        print(f"| {size:,} | " + " | ".join(row[n] for n in names) + " |")


if __name__ == "__main__":
    main()
