"""Latency of the CoreAPI over HTTP beside the same operations in process.

Run from the project root:

    python bench/bench_http.py [--iterations 300] [--sizes 10,10000]

It preloads one user's memory with N entries (user and agent scope) through
SqliteMemoryStore, starts ``python -m memory_core serve`` on that database,
then times get (user, agent, combined) and append over HTTP with one
keep-alive client, and the same calls on MemoryService in process. It prints a
markdown table of p50/p99 (ms), throughput and the HTTP/in-process ratio.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.service import MemoryService
from tests.support.local_server import running_server

UPN = "bench@contoso.com"
AGENT = "/instances/bench/agents/assistant"
LINE = "- The user prefers concise answers with Markdown tables for comparisons of plans."


def preload(store: SqliteMemoryStore, instance: str, count: int) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for scope, agent in ((Scope.USER, None), (Scope.AGENT, AGENT)):
        key = ProfileKey(instance, UPN, scope, agent)
        profile = MemoryProfile(key, "Bench", "bench", "Assistant" if agent else None, start, start)
        for i in range(count):
            entry = MemoryEntry(uuid.uuid4().hex, key, f"{LINE} ({i})", EntryKind.APPEND,
                                start + timedelta(seconds=i), UPN, reason="bench")
            store.append(profile, entry)


def timed(fn: Callable[[], object], iterations: int) -> list[float]:
    for _ in range(min(20, iterations)):
        fn()
    samples = []
    for _ in range(iterations):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return samples


def p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--sizes", default="10,10000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="memory-bench-"))
    db = tmp / "memory.sqlite3"
    store = SqliteMemoryStore(db)
    for size in sizes:
        print(f"preloading {size} entries per scope...", file=sys.stderr, flush=True)
        preload(store, f"bench-{size}", size)
    service = MemoryService(store)
    caller = Caller(UPN, "Bench", "bench")
    agent = AgentContext(AGENT, "Assistant")
    rows = []
    with running_server(tmp, {"MEMORY_SQLITE_PATH": str(db)}) as server:
        with server.client(UPN) as http:
            for size in sizes:
                inst = f"bench-{size}"
                ops: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
                    "get user": (
                        lambda: http.get(f"/instances/{inst}/memory", params={"scope": "user"}).raise_for_status(),
                        lambda: service.get(caller, inst, Scope.USER, None),
                    ),
                    "get agent": (
                        lambda: http.get(f"/instances/{inst}/memory",
                                         params={"scope": "agent", "agentObjectId": AGENT}).raise_for_status(),
                        lambda: service.get(caller, inst, Scope.AGENT, agent),
                    ),
                    "get combined": (
                        lambda: http.get(f"/instances/{inst}/memory",
                                         params={"scope": "combined", "agentObjectId": AGENT}).raise_for_status(),
                        lambda: service.get(caller, inst, Scope.COMBINED, agent),
                    ),
                    "append": (
                        lambda: http.post(f"/instances/{inst}/memory/append",
                                          json={"scope": "user", "content_markdown": LINE}).raise_for_status(),
                        lambda: service.append(caller, inst, Scope.USER, None, LINE),
                    ),
                }
                for name, (over_http, in_process) in ops.items():
                    print(f"timing {name} at {size}...", file=sys.stderr, flush=True)
                    h = timed(over_http, args.iterations)
                    s = timed(in_process, args.iterations)
                    rows.append((name, size, statistics.median(h), p(h, 0.99), 1000 / statistics.mean(h),
                                 statistics.median(s), p(s, 0.99), statistics.median(h) / statistics.median(s)))
    store.close()
    print(f"\nMachine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.system()}; iterations per row: {args.iterations}\n")
    print("| operation | entries | HTTP p50 ms | HTTP p99 ms | HTTP ops/s | in-process p50 ms | in-process p99 ms | HTTP/in-process p50 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, size, hp50, hp99, tput, sp50, sp99, ratio in rows:
        print(f"| {name} | {size} | {hp50:.2f} | {hp99:.2f} | {tput:.0f} | {sp50:.3f} | {sp99:.3f} | {ratio:.1f}x |")
    appends = {size: hp50 for name, size, hp50, *_ in rows if name == "append"}
    if len(appends) >= 2:
        small, large = min(appends), max(appends)
        print(f"\nappend p50 at {large} / at {small}: {appends[large] / appends[small]:.2f}x")


if __name__ == "__main__":
    main()
