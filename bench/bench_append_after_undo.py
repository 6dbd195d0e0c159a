"""The stdio append as bench_vs_reference.py's round robin makes it: each one undone, the next 15 ms later.

Run from the project root:

    python bench/bench_append_after_undo.py [--iterations 300] [--gap 0.015]

``python -m memory_core mcp``'s front, server and store in process (``bench_stdio_in_process``'s), on SQLite at 10
facts. Each timed ``append_memory`` is undone by the memory tool's ``delete`` of its file, as the benchmark against
the reference does, which hands the checkpoint thread a purge; the next append comes ``--gap`` seconds later, while
that purge may still run. Times each append's ``BEGIN IMMEDIATE`` (where a write waits for the purge's steps), its
statements and its ``COMMIT``, and the whole call; prints p50 and p90 in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_stdio_in_process import InProcessClient
from bench.timed_transactions import TransactionParts, timed_write_transaction
from memory_core.adapters import sqlite_database

FACT = "The user prefers concise answers with Markdown tables for comparisons of plans"
PARTS: dict[str, list[float]] = {"begin": [], "statements": [], "commit": []}
TIMING = [False]


def _record(parts: TransactionParts) -> None:
    if TIMING[0]:  # the store's writes while an append is timed only
        for name, seconds in parts._asdict().items():
            PARTS[name].append(seconds)


async def run(iterations: int, warmup: int, gap: float) -> list[float]:
    sqlite_database.write_transaction = timed_write_transaction(_record)  # type: ignore[assignment]
    client = await InProcessClient().opened()
    for n in range(10):
        await client.call("append_memory", {"scope": "user", "memory": f"- {FACT} ({n})"})
    calls = []
    for n in range(warmup + iterations):
        TIMING[0] = n >= warmup
        elapsed, answer = await client.call("append_memory", {"scope": "user", "memory": f"- {FACT} (new)"})
        TIMING[0] = False
        if n >= warmup:
            calls.append(elapsed)
        entry_id = json.loads(answer)["result"]["structuredContent"]["entry_id"]
        await client.call("memory", {"command": "delete", "path": f"/memories/appended/{entry_id}.md"})
        await asyncio.sleep(gap)
    await client.close()
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300, help="timed appends")
    parser.add_argument("--warmup", type=int, default=50, help="untimed appends first")
    parser.add_argument("--gap", type=float, default=0.015, help="seconds between an undo and the next append")
    args = parser.parse_args()
    calls = asyncio.run(run(args.iterations, args.warmup, args.gap))

    def p(samples: list[float], q: float) -> str:
        ordered = sorted(samples)
        return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3:.3f}"

    print(f"CPython {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; "
          f"{args.iterations} appends after {args.warmup}, each undone, {args.gap * 1e3:.0f} ms apart\n")
    print("| part | p50 ms | p90 ms |\n|---|---:|---:|")
    for name, samples in (("append_memory call", calls), *[(f"`{k}`", v) for k, v in PARTS.items()]):
        print(f"| {name} | {p(samples, 0.5)} | {p(samples, 0.9)} |")


if __name__ == "__main__":
    main()
