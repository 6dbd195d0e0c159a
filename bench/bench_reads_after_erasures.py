"""Reads right after an erasure, and reads of memory hidden by a pending clear (SQLite, in process).

Run from the project root:

    python bench/bench_reads_after_erasures.py [--iterations 15] [--sizes 10,1000,10000]

For each size N it seeds one user's user memory with N entries and times, p50 in ms, a full get,
a budgeted get (16,000 characters, the MCP default) and the first entries page (100), each read:

- **warm**: by a long-lived ``MemoryService`` (a server process) that made the same read just
  before the erasure, so it keeps what that read kept;
- **fresh**: by a new store object and a new ``MemoryService`` (a Functions instance just started,
  a restarted ``serve``): nothing kept in memory, only what the store keeps (checkpoints).

right after:

- **forget (immediate)**: another process forgets one entry under the immediate deletion mode;
- **forget (approved + swept)**: another process asks to forget one entry, an operator approves
  and the sweep erases it;
- **clear pending**: another process clears the scope under operator approval (everything hidden
  until an operator decides; rejected after the timed read, untimed, so the next round starts
  from the same memory).

Each round first appends one entry (untimed), so the memory keeps its size while entries are
forgotten. The table also gives the ratio of the largest size to the smallest.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.views import PendingDeletion
from tests.support.seeding import make_entries, seed

CALLER = Caller(upn="bench@contoso.com", name="Bench")
OPERATOR = "operator@contoso.com"
BUDGET = 16_000
PAGE = 100
LINE = "The user prefers concise answers with Markdown tables for comparisons of plans"

Read = Callable[[MemoryService, str], object]
READS: dict[str, Read] = {
    "get": lambda service, instance: service.get(CALLER, instance, Scope.USER, None),
    "budgeted get": lambda service, instance: service.get_within(CALLER, instance, Scope.USER, None, BUDGET),
    "first entries page": lambda service, instance: service.entries_page(CALLER, instance, Scope.USER, None,
                                                                         limit=PAGE),
}


class Memory:
    """One seeded memory and the processes that write to it."""

    def __init__(self, path: Path, instance: str, size: int) -> None:
        self.path, self.instance = path, instance
        self.store = SqliteMemoryStore(path)
        seed(self.store, make_entries(ProfileKey(instance, CALLER.upn, Scope.USER), size,
                                      text=lambda n: f"- {LINE} ({n})"))
        self.immediate = MemoryService(self.store, deletion_mode=DeletionMode.IMMEDIATE)
        self.approval = MemoryService(self.store, deletion_mode=DeletionMode.OPERATOR_APPROVAL)
        self.ids = [e.id for e in self.immediate.entries(CALLER, instance, Scope.USER, None)]
        self.random = random.Random(size)
        self.pending: str | None = None
        self.counter = 0

    def append(self) -> None:
        self.counter += 1
        written = self.immediate.append(CALLER, self.instance, Scope.USER, None, f"- {LINE} (added {self.counter})")
        self.ids.append(str(written.entry_id))

    def _victim(self) -> str:
        return self.ids.pop(self.random.randrange(len(self.ids)))

    def forget_immediately(self) -> None:
        self.immediate.forget(CALLER, self.instance, self._victim())

    def forget_approved_and_swept(self) -> None:
        pending = self.approval.forget(CALLER, self.instance, self._victim())
        assert isinstance(pending, PendingDeletion)
        self.approval.custody.approve(OPERATOR, self.instance, pending.request_id)
        self.approval.custody.sweep(instance_id=self.instance)

    def clear_pending(self) -> None:
        pending = self.approval.clear(CALLER, self.instance, Scope.USER, None, confirm=True)
        assert isinstance(pending, PendingDeletion)
        self.pending = pending.request_id

    def settle(self) -> None:
        """Reject a pending clear, so the memory shows again."""
        if self.pending is not None:
            self.approval.custody.reject(OPERATOR, self.instance, self.pending, "bench")
            self.pending = None


def timed(
    memory: Memory, erase: Callable[[], None], read: Read, iterations: int, warm: MemoryService | None
) -> float:
    samples = []
    for i in range(iterations + 2):
        memory.append()
        if warm is not None:
            read(warm, memory.instance)  # what the warm process read before the erasure
        erase()
        store = None
        if warm is None:
            store = SqliteMemoryStore(memory.path)
            service = MemoryService(store)
        else:
            service = warm
        started = time.perf_counter()
        read(service, memory.instance)
        elapsed = (time.perf_counter() - started) * 1000
        if store is not None:
            store.close()
        memory.settle()
        if i >= 2:  # two warm-up rounds
            samples.append(elapsed)
    return statistics.median(samples)


def measure(size: int, iterations: int, tmp: Path) -> dict[str, float]:
    print(f"{size} entries: seeding...", file=sys.stderr, flush=True)
    memory = Memory(tmp / f"erasures-{size}.sqlite3", f"bench-{size}", size)
    erasures = {
        "forget (immediate)": memory.forget_immediately,
        "forget (approved + swept)": memory.forget_approved_and_swept,
        "clear pending": memory.clear_pending,
    }
    results = {}
    for erasure, erase in erasures.items():
        for process in ("warm", "fresh"):
            for name, read in READS.items():
                print(f"{size} entries: {name} after {erasure}, {process}...", file=sys.stderr, flush=True)
                warm = MemoryService(SqliteMemoryStore(memory.path)) if process == "warm" else None
                results[f"{name} | {erasure} | {process}"] = timed(memory, erase, read, iterations, warm)
    memory.store.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=15)
    parser.add_argument("--sizes", default="10,1000,10000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="memory-bench-erasures-") as tmp:
        measured = {size: measure(size, args.iterations, Path(tmp)) for size in sizes}
    print(f"\n{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.iterations} reads per row, p50 ms\n")
    print("| read | right after | process | " + " | ".join(f"{s:,} entries" for s in sizes)
          + f" | {sizes[-1]:,} / {sizes[0]:,} |")
    print("|---|---|---|" + "---:|" * (len(sizes) + 1))
    for name in measured[sizes[0]]:
        values = [measured[s][name] for s in sizes]
        print(f"| {name} | " + " | ".join(f"{v:.2f}" for v in values) + f" | {values[-1] / values[0]:.1f}x |")


if __name__ == "__main__":
    main()
