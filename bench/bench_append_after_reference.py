"""memory-core's MCP append right after the reference server's own calls, at 10 and at 2,000 facts.

Run from the project root:

    python bench/bench_append_after_reference.py [--iterations 300] [--sizes 10,2000]

bench/bench_vs_reference.py times memory-core's ``append_memory`` in a round robin, right after the
reference server's ``add_observations`` and ``delete_observations`` (and the zero-work server's call).
There memory-core's append costs more at 2,000 facts than at 10 (docs/performance.md), while
its own work does not grow. This benchmark tells the two apart:

- over HTTP: one ``python -m memory_core serve`` holding a user of N facts (N in ``--sizes``), and two
  reference servers, one holding 10 facts and one the largest size. One loop alternates them: a
  timed memory-core append (undone by an untimed REST DELETE, as in bench_vs_reference.py), then
  the untimed add and delete on one reference, then on the other. Each append is filed under the
  reference that ran just before it, so both columns come from the same loop, server and minute.
- in process: ``MemoryService.append`` on SQLite at each size, timed warm and right after this
  process copied 16 MB (memory traffic that leaves the CPU caches to someone else, as a neighbour's
  work does), alternating in one loop.

It prints two markdown tables of p50 (ms).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from contextlib import AsyncExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import httpx
import httpx2
from bench_vs_reference import FACT, INSTANCE, checked, reference_server
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.support.local_server import USER_KEY, identity, running_server

TRAFFIC_BYTES = 16 << 20


async def over_http(size: int, reference_sizes: list[int], iterations: int, core_url: str, entry: Path,
                    tmp: Path) -> dict[int, float]:
    """p50 of memory-core's append at ``size`` facts, by the reference size whose calls ran just before."""
    async with AsyncExitStack() as stack:
        headers = {"X-API-KEY": USER_KEY, "X-INSTANCE-ID": INSTANCE,
                   "X-USER-IDENTITY": identity(f"bench-{size}-{uuid.uuid4().hex[:8]}@contoso.com")}
        rest = await stack.enter_async_context(
            httpx.AsyncClient(base_url=f"{core_url}/api", headers=headers, timeout=60))
        for i in range(size):
            (await rest.post(f"/instances/{INSTANCE}/memory/append",
                             json={"scope": "user", "content_markdown": f"- {FACT} ({i})"})).raise_for_status()
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120)))
        read, write = await stack.enter_async_context(streamable_http_client(f"{core_url}/api/mcp", http_client=http))
        core = await stack.enter_async_context(ClientSession(read, write))
        await core.initialize()
        references = []
        for facts in reference_sizes:
            params = StdioServerParameters(command="node", args=[str(entry)],
                                           env={"MEMORY_FILE_PATH": str(tmp / f"reference-{size}-{facts}.jsonl")})
            ref_read, ref_write = await stack.enter_async_context(stdio_client(params))
            reference = await stack.enter_async_context(ClientSession(ref_read, ref_write))
            await reference.initialize()
            observations = [f"{FACT} ({i})" for i in range(facts)]
            checked(await reference.call_tool("create_entities", {"entities": [
                {"name": "user", "entityType": "person", "observations": observations}]}), "create_entities")
            references.append((facts, reference))

        samples: dict[int, list[float]] = {facts: [] for facts in reference_sizes}
        before: int | None = None
        for round_ in range(iterations + 20):
            for facts, reference in references:
                started = time.perf_counter()
                result = checked(await core.call_tool("append_memory", {"scope": "user", "memory": f"- {FACT} (new)"}),
                                 "append_memory")
                elapsed = (time.perf_counter() - started) * 1000
                entry_id = (result.structured_content or {})["entry_id"]
                (await rest.delete(f"/instances/{INSTANCE}/memory/entries/{entry_id}")).raise_for_status()
                if round_ >= 20 and before is not None:
                    samples[before].append(elapsed)
                observation = {"entityName": "user", "contents": [f"{FACT} (new)"]}
                checked(await reference.call_tool("add_observations", {"observations": [observation]}),
                        "add_observations")
                deletion = {"entityName": "user", "observations": [f"{FACT} (new)"]}
                checked(await reference.call_tool("delete_observations", {"deletions": [deletion]}),
                        "delete_observations")
                before = facts
        return {facts: statistics.median(timings) for facts, timings in samples.items()}


def in_process(sizes: list[int], iterations: int, tmp: Path) -> dict[tuple[int, bool], float]:
    """p50 of ``MemoryService.append`` by (size, right after 16 MB of memory traffic)."""
    from bench_http import LINE, UPN, preload

    from memory_core.adapters.sqlite_store import SqliteMemoryStore
    from memory_core.domain.identity import Caller
    from memory_core.domain.models import Scope
    from memory_core.domain.service import MemoryService
    from memory_core.domain.views import DeletionMode

    store = SqliteMemoryStore(tmp / "in-process.sqlite3")
    for size in sizes:
        preload(store, f"bench-{size}", size)
    service = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE)
    caller = Caller(UPN, "Bench", "bench")
    traffic = bytearray(TRAFFIC_BYTES)
    samples: dict[tuple[int, bool], list[float]] = {}
    for round_ in range(iterations + 200):
        for size in sizes:
            for after_traffic in (False, True):
                if after_traffic:
                    copied = bytes(traffic)
                    del copied
                started = time.perf_counter()
                view = service.append(caller, f"bench-{size}", Scope.USER, None, f"{LINE} (new)")
                elapsed = (time.perf_counter() - started) * 1000
                service.forget(caller, f"bench-{size}", view.entry_id)
                if round_ >= 200:
                    samples.setdefault((size, after_traffic), []).append(elapsed)
    store.close()
    return {key: statistics.median(timings) for key, timings in samples.items()}


async def run(args: argparse.Namespace) -> dict[int, dict[int, float]]:
    entry = reference_server()
    tmp = Path(tempfile.mkdtemp(prefix="memory-bench-after-reference-"))
    env = {"MEMORY_DEFAULT_INSTANCE_ID": INSTANCE, "MEMORY_DELETION_MODE": "immediate", "WEBSITE_HOSTNAME": "",
           "MEMORY_MCP_ALLOWED_HOSTS": "", "MEMORY_COREAPI_BASE_URL": ""}
    reference_sizes = [min(args.sizes), max(args.sizes)]
    with running_server(tmp, env) as core:
        return {size: await over_http(size, reference_sizes, args.iterations, core.base_url, entry, tmp)
                for size in args.sizes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300, help="timed appends per column")
    parser.add_argument("--sizes", default="10,2000", help="facts stored, comma-separated")
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    http = asyncio.run(run(args))
    local = in_process(args.sizes, args.iterations * 3, Path(tempfile.mkdtemp(prefix="memory-bench-after-")))
    low, high = min(args.sizes), max(args.sizes)
    print(f"\n{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.iterations} appends per column\n")
    print(f"| memory-core holds | append p50 ms after the reference at {low:,} facts "
          f"| after the reference at {high:,} facts | difference |")
    print("|---:|---:|---:|---:|")
    for size, by_reference in http.items():
        print(f"| {size:,} | {by_reference[low]:.3f} | {by_reference[high]:.3f} | "
              f"{by_reference[high] - by_reference[low]:+.3f} |")
    print(f"\n| in process, facts stored | MemoryService.append p50 ms, warm | right after {TRAFFIC_BYTES >> 20} MB "
          "copied | difference |")
    print("|---:|---:|---:|---:|")
    for size in args.sizes:
        warm, cold = local[(size, False)], local[(size, True)]
        print(f"| {size:,} | {warm:.3f} | {cold:.3f} | {cold - warm:+.3f} |")


if __name__ == "__main__":
    main()
