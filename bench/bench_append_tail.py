"""The tail of an append on SQLite: WAL checkpoints on a thread of their own, or in the writer's commit.

Run from the project root:

    python bench/bench_append_tail.py [--appends 3000] [--pause-ms 0] [--rounds 3]

Each round times ``MemoryService.append`` in process on a fresh file, one append after another
(``--pause-ms`` between them), twice: as shipped (``memory_core.adapters.sqlite_wal``: the
checkpoints on their own thread) and with SQLite's own automatic checkpoint in the commit that
passes 1,000 pages of log (what the store did before; the thread is stopped and the writers'
``wal_autocheckpoint`` set back to 1,000). Prints one markdown row per round and variant: mean,
p50, p90, p99 and max in ms, how many appends took over 2 ms, and (thread only) how many ran while
the thread was checkpointing and the median checkpoint.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope
from memory_core.domain.service import MemoryService

CALLER = Caller(upn="bench@contoso.com")


def timed(inline: bool, appends: int, pause: float) -> tuple[list[float], str]:
    """The appends' times in ms, and (thread only) how many overlapped a checkpoint and its median."""
    store = SqliteMemoryStore(Path(tempfile.mkdtemp(prefix="memory-bench-tail-")) / "memory.sqlite3")
    checkpointer = store._db._checkpointer
    spans: list[tuple[float, float]] = []
    if inline:
        checkpointer.wrote = lambda db: None  # type: ignore[method-assign]
    else:
        checkpoint = checkpointer._checkpoint

        def spanned(db: Any) -> Any:
            started = time.perf_counter()
            try:
                return checkpoint(db)
            finally:
                spans.append((started, time.perf_counter()))
        checkpointer._checkpoint = spanned  # type: ignore[method-assign]
    service = MemoryService(store)
    try:
        db = store._db.connection()
        if inline:
            db.execute("PRAGMA wal_autocheckpoint=1000")
        for n in range(300):
            service.append(CALLER, "bench", Scope.USER, None, f"- warm-up fact {n}")
        spans.clear()
        samples, intervals = [], []
        for n in range(appends):
            started = time.perf_counter()
            service.append(CALLER, "bench", Scope.USER, None, f"- The user prefers concise answers, fact {n}")
            ended = time.perf_counter()
            samples.append((ended - started) * 1000)
            intervals.append((started, ended))
            if pause:
                time.sleep(pause)
        if inline or not spans:
            return samples, "-"
        beside = sum(any(s < end and start < e for s, e in spans) for start, end in intervals)
        median = statistics.median(e - s for s, e in spans) * 1000
        return samples, f"{beside} ({100 * beside / appends:.0f}%; {len(spans)} checkpoints, median {median:.2f} ms)"
    finally:
        store.close()


def row(label: str, samples: list[float], beside: str) -> str:
    ordered = sorted(samples)
    at = lambda q: ordered[min(len(ordered) - 1, int(len(ordered) * q))]  # noqa: E731
    over = sum(s > 2 for s in samples)
    return (f"| {label} | {statistics.mean(samples):.3f} | {at(0.5):.3f} | {at(0.9):.3f} | {at(0.99):.3f} | "
            f"{ordered[-1]:.1f} | {over} | {beside} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--appends", type=int, default=3000)
    parser.add_argument("--pause-ms", type=float, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.appends} appends a round, {args.pause_ms:g} ms apart, load {os.getloadavg()[0]:.2f}\n")
    print("| round: checkpoints | mean ms | p50 ms | p90 ms | p99 ms | max ms | appends over 2 ms |"
          " appends beside the thread's checkpoint |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in range(1, args.rounds + 1):
        for inline in (True, False):
            label = f"{n}: {'in the commit (before)' if inline else 'their own thread'}"
            print(row(label, *timed(inline, args.appends, args.pause_ms / 1000)), flush=True)


if __name__ == "__main__":
    main()
