"""Reads right after a write, and reads under a sharing policy, at 10 and 10,000 entries (SQLite, in process).

Run from the project root:

    python bench/bench_reads_after_writes.py [--iterations 30] [--sizes 10,10000]

An agent appends and reads on every turn, so the read that matters most is the one
right after a write. For each size N it seeds one user's user memory with N entries
and a teammate's N/10 team-shared entries, keeps one long-lived ``MemoryService``
(as a server process does), and times, p50 in ms:

- after an append: a full get, a budgeted get (16,000 characters, the MCP default)
  and the first entries page (100), each right after its own append;
- the same three under the team policy: right after an append to the reader's memory,
  right after a teammate's team-shared append (the shared partition grows), and read
  again with nothing written between (kept).

Each timed read after an append is preceded by an untimed append through the same
service. Prints a markdown table with the ratio of N=10,000 to N=10.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope, Share
from memory_core.domain.service import MemoryService, WriteOptions
from memory_core.domain.sharing import SharingPolicy

READER = Caller(upn="reader@contoso.com", name="Reader")
TEAMMATE = Caller(upn="teammate@contoso.com", name="Teammate")
BUDGET = 16_000
PAGE = 100


def p50(action: Callable[[], object], iterations: int, before: Callable[[], object] | None = None) -> float:
    times = []
    for i in range(iterations + 3):
        if before is not None:
            before()
        started = time.perf_counter()
        action()
        if i >= 3:  # three warm-up rounds
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure(size: int, iterations: int, tmp: Path) -> dict[str, float]:
    store = SqliteMemoryStore(tmp / f"bench-{size}.sqlite3")
    service = MemoryService(store, allow_sharing_override=True)
    print(f"{size} entries: seeding...", file=sys.stderr, flush=True)
    for i in range(size):
        service.append(READER, "bench", Scope.USER, None, f"- The reader prefers plan {i} in tables")
    for i in range(max(1, size // 10)):
        service.append(TEAMMATE, "bench", Scope.USER, None, f"- Team tip {i}", WriteOptions(share=Share.TEAM))
    counter = iter(range(10**9))

    def append() -> None:
        service.append(READER, "bench", Scope.USER, None, f"- appended {next(counter)}")

    def team_append() -> None:
        service.append(TEAMMATE, "bench", Scope.USER, None, f"- tip {next(counter)}", WriteOptions(share=Share.TEAM))

    team = SharingPolicy.TEAM
    reads: dict[str, Callable[[], object]] = {
        "get": lambda: service.get(READER, "bench", Scope.USER, None),
        "budgeted get": lambda: service.get_within(READER, "bench", Scope.USER, None, BUDGET),
        "first entries page": lambda: service.entries_page(READER, "bench", Scope.USER, None, limit=PAGE),
        "team get": lambda: service.get(READER, "bench", Scope.USER, None, team),
        "team budgeted get": lambda: service.get_within(READER, "bench", Scope.USER, None, BUDGET, team),
        "team entries page": lambda: service.entries_page(READER, "bench", Scope.USER, None, team, limit=PAGE),
    }
    print(f"{size} entries: timing...", file=sys.stderr, flush=True)
    results = {}
    for name, read in reads.items():
        results[f"{name}, right after an append"] = p50(read, iterations, before=append)
        if name.startswith("team"):
            results[f"{name}, right after a teammate's team append"] = p50(read, iterations, before=team_append)
            results[f"{name}, read again (kept)"] = p50(read, iterations)
    store.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--sizes", default="10,10000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="memory-bench-reads-") as tmp:
        measured = {size: measure(size, args.iterations, Path(tmp)) for size in sizes}
    print(f"Python {platform.python_version()}, {platform.machine()}, iterations {args.iterations}\n")
    print("| read | " + " | ".join(f"{s:,} entries p50 ms" for s in sizes) + f" | {sizes[-1]:,} / {sizes[0]:,} |")
    print("|---|" + "---:|" * (len(sizes) + 1))
    for name in measured[sizes[0]]:
        values = [measured[s][name] for s in sizes]
        print(f"| {name} | " + " | ".join(f"{v:.3f}" for v in values) + f" | {values[-1] / values[0]:.1f}x |")


if __name__ == "__main__":
    main()
