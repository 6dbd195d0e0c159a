"""memory-core beside the reference MCP memory server, both through the official mcp client, in one run.

Run from the project root:

    python bench/bench_vs_reference.py [--iterations 200] [--warmup 20] [--sizes 10,500,2000]

The reference is npm ``@modelcontextprotocol/server-memory`` (stdio, one JSONL
file), pinned in bench/reference_server/package.json and its lock; the
benchmark runs ``npm ci`` there when it is not installed. memory-core runs
twice: ``python -m memory_core serve``, reached at /api/mcp over streamable
HTTP, and ``python -m memory_core mcp``, over stdio like the reference
(identity from MEMORY_MCP_API_KEY and MEMORY_MCP_USER_IDENTITY). All are
driven by the official mcp Python client (``ClientSession``), one session
each, calls interleaved round-robin.

Each memory-core front has its own embedded SQLite file, as each deployment
would (a stdio user runs one process; the reference has its own JSONL file).
serve's is preloaded over REST; for each size the stdio server's file is a
copy of it taken then (SQLite's backup API), so both hold the same facts, the
same users and the same index. On one shared file, as until 2026-12-07, each
process's timed writes waited in ``BEGIN IMMEDIATE`` for the other's write
lock: the undo after every timed append hands that process's checkpoint
thread a purge (merge steps, then a ``TRUNCATE`` checkpoint), so each front
paid for the other's purges, a cost no single deployment has
(docs/performance.md, "Against the reference MCP memory server").

For each memory size N (facts already stored):
- read: memory-core ``get_memory`` (scope user) beside the reference's
  ``read_graph``; each answers the whole memory.
- append: memory-core ``append_memory`` beside the reference's
  ``add_observations`` (one new fact). Each timed append is undone untimed
  by the process that made it (HTTP: ``forget`` over REST under
  MEMORY_DELETION_MODE=immediate; stdio: the memory tool's ``delete`` of the
  entry's file; the reference: ``delete_observations``), so every memory stays
  at N facts throughout.

A third server runs beside them: bench/zero_work.py, which answers every
call with the bytes memory-core gave for it and does nothing else, on the same
uvicorn. Driven by the same client, it is the floor of memory-core's column: what
the official client's streamable-HTTP transport costs by itself.

It prints a markdown table of p50 and p99 (ms), the p50 ratios
(memory-core / reference, over HTTP and over stdio; at or below 1.0 memory-core
is at least as fast) and the zero-work server's p50, and writes a PNG plot of
p50 against memory size (docs/images/bench_vs_reference.png).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx
import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from bench import zero_work
from tests.support.local_server import USER_KEY, RunningServer, identity, running_server
from tests.support.stdio_server import parameters as stdio_parameters
from tests.support.stdio_server import stdio_env

REFERENCE_DIR = ROOT / "bench" / "reference_server"
REFERENCE_ENTRY = REFERENCE_DIR / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
PLOT = ROOT / "docs" / "images" / "bench_vs_reference.png"
INSTANCE = "bench-reference"
FACT = "The user prefers concise answers with Markdown tables for comparisons of plans"


@dataclass
class Row:
    operation: str
    size: int
    memory_core: list[float]
    stdio: list[float]
    reference: list[float]
    floor: list[float]


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def reference_server() -> Path:
    """The reference server's entry point, installed from the pinned lock file when missing."""
    if not REFERENCE_ENTRY.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm is needed to install @modelcontextprotocol/server-memory")
        print("installing the reference server (npm ci)...", file=sys.stderr, flush=True)
        subprocess.run([npm, "ci", "--prefix", str(REFERENCE_DIR), "--no-audit", "--no-fund", "--loglevel=error"],
                       check=True)
    return REFERENCE_ENTRY


def checked(result: Any, tool: str) -> Any:
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content}")
    return result


async def timed_round_robin(
    iterations: int, warmup: int, calls: list[Callable[[], Awaitable[float]]]
) -> list[list[float]]:
    """Each call returns its own duration in ms (so untimed clean-up can follow it)."""
    for _ in range(warmup):
        for call in calls:
            await call()
    samples: list[list[float]] = [[] for _ in calls]
    for _ in range(iterations):
        for call, timings in zip(calls, samples, strict=True):
            timings.append(await call())
    return samples


async def recorded_answers(core_url: str, headers: dict[str, str]) -> dict[str, Any]:
    """memory-core's own results for the calls the benchmark makes, for the zero-work server to replay."""
    sent = {**headers, "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    calls = {
        "initialize": {"method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                                          "clientInfo": {"name": "bench", "version": "0"}}},
        "tools/list": {"method": "tools/list"},
        "get_memory": {"method": "tools/call", "params": {"name": "get_memory", "arguments": {"scope": "user"}}},
        "append_memory": {"method": "tools/call", "params": {"name": "append_memory",
                                                             "arguments": {"scope": "user", "memory": f"- {FACT} (new)"}}},
    }
    answers = {}
    async with httpx.AsyncClient(headers=sent, timeout=60) as http:
        for key, call in calls.items():
            response = await http.post(f"{core_url}/api/mcp", json={"jsonrpc": "2.0", "id": 1, **call})
            response.raise_for_status()
            answers[key] = response.json()["result"]
        entry_id = answers["append_memory"]["structuredContent"]["entry_id"]
        (await http.delete(f"{core_url}/api/instances/{INSTANCE}/memory/entries/{entry_id}")).raise_for_status()
    return answers


def copied(source: Path, target: Path) -> None:
    """``target``, a new file holding what ``source`` holds now: SQLite's backup API, one consistent state even
    while ``serve`` has ``source`` open (its log included)."""
    with contextlib.closing(sqlite3.connect(source)) as src, contextlib.closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


async def bench_size(size: int, args: argparse.Namespace, core: RunningServer, entry: Path, tmp: Path) -> list[Row]:
    upn = f"bench-{size}-{uuid.uuid4().hex[:8]}@contoso.com"
    headers = {"X-API-KEY": USER_KEY, "X-INSTANCE-ID": INSTANCE, "X-USER-IDENTITY": identity(upn)}
    core_url = core.base_url
    params = StdioServerParameters(
        command="node", args=[str(entry)], env={"MEMORY_FILE_PATH": str(tmp / f"reference-{size}.jsonl")}
    )
    # The same user and instance as serve's, on a copy of serve's file made once it holds the facts: its own
    # file, as a stdio user's would be, so neither process waits for the other's write lock (module docstring).
    stdio_file = tmp / f"stdio-{size}.sqlite3"
    stdio = stdio_parameters(stdio_env(stdio_file, upn, MEMORY_MCP_INSTANCE_ID=INSTANCE,
                                       MEMORY_DEFAULT_INSTANCE_ID=INSTANCE, MEMORY_DELETION_MODE="immediate"))
    print(f"{size} facts: preloading both servers...", file=sys.stderr, flush=True)
    facts = [f"{FACT} ({i})" for i in range(size)]
    async with httpx.AsyncClient(base_url=f"{core_url}/api", headers=headers, timeout=60) as rest:
        for fact in facts:
            response = await rest.post(f"/instances/{INSTANCE}/memory/append",
                                       json={"scope": "user", "content_markdown": f"- {fact}"})
            response.raise_for_status()
    copied(Path(core.env["MEMORY_SQLITE_PATH"]), stdio_file)
    answers = await recorded_answers(core_url, headers)
    with zero_work.running("mcp", answers, tmp) as floor_base:
        return await timed_size(size, args, core_url, f"{floor_base}/mcp", headers, params, stdio, facts)


async def timed_size(size: int, args: argparse.Namespace, core_url: str, floor_url: str, headers: dict[str, str],
                     params: StdioServerParameters, stdio: StdioServerParameters, facts: list[str]) -> list[Row]:
    async with (
        httpx.AsyncClient(base_url=f"{core_url}/api", headers=headers, timeout=60) as rest,
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120)) as http,
        streamable_http_client(f"{core_url}/api/mcp", http_client=http) as (core_read, core_write),
        ClientSession(core_read, core_write) as core,
        stdio_client(params) as (ref_read, ref_write),
        ClientSession(ref_read, ref_write) as reference,
        httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=120)) as floor_http,
        streamable_http_client(floor_url, http_client=floor_http) as (floor_read, floor_write),
        ClientSession(floor_read, floor_write) as floor,
        stdio_client(stdio) as (stdio_read, stdio_write),
        ClientSession(stdio_read, stdio_write) as over_stdio,
    ):
        await core.initialize()
        await over_stdio.initialize()
        await reference.initialize()
        await floor.initialize()
        served = checked(await core.call_tool("get_memory", {"scope": "user"}), "get_memory")
        own = checked(await over_stdio.call_tool("get_memory", {"scope": "user"}), "get_memory (stdio)")
        if served.structured_content != own.structured_content:
            raise RuntimeError("the stdio server's copy does not answer what serve's file does")
        checked(await reference.call_tool(
            "create_entities",
            {"entities": [{"name": "user", "entityType": "person", "observations": facts}]},
        ), "create_entities")

        async def core_read_call() -> float:
            start = time.perf_counter()
            checked(await core.call_tool("get_memory", {"scope": "user"}), "get_memory")
            return (time.perf_counter() - start) * 1000

        async def reference_read_call() -> float:
            start = time.perf_counter()
            checked(await reference.call_tool("read_graph", {}), "read_graph")
            return (time.perf_counter() - start) * 1000

        async def stdio_read_call() -> float:
            start = time.perf_counter()
            checked(await over_stdio.call_tool("get_memory", {"scope": "user"}), "get_memory (stdio)")
            return (time.perf_counter() - start) * 1000

        async def appended(session: ClientSession) -> tuple[float, str]:
            start = time.perf_counter()
            result = checked(await session.call_tool("append_memory", {"scope": "user", "memory": f"- {FACT} (new)"}),
                             "append_memory")
            elapsed = (time.perf_counter() - start) * 1000
            entry_id = (result.structured_content or {}).get("entry_id")
            if not entry_id:
                raise RuntimeError(f"append_memory answered no entry_id: {result.structured_content}")
            return elapsed, entry_id

        async def core_append_call() -> float:
            elapsed, entry_id = await appended(core)
            (await rest.delete(f"/instances/{INSTANCE}/memory/entries/{entry_id}")).raise_for_status()
            return elapsed

        async def stdio_append_call() -> float:
            # Undone by the process that appended, as serve undoes its own: neither pays for the other's writes.
            elapsed, entry_id = await appended(over_stdio)
            checked(await over_stdio.call_tool("memory", {"command": "delete",
                                                          "path": f"/memories/appended/{entry_id}.md"}),
                    "memory delete (stdio)")
            return elapsed

        async def reference_append_call() -> float:
            observation = {"entityName": "user", "contents": [f"{FACT} (new)"]}
            start = time.perf_counter()
            checked(await reference.call_tool("add_observations", {"observations": [observation]}), "add_observations")
            elapsed = (time.perf_counter() - start) * 1000
            deletion = {"entityName": "user", "observations": [f"{FACT} (new)"]}
            checked(await reference.call_tool("delete_observations", {"deletions": [deletion]}), "delete_observations")
            return elapsed

        async def floor_read_call() -> float:
            start = time.perf_counter()
            checked(await floor.call_tool("get_memory", {"scope": "user"}), "get_memory (zero-work)")
            return (time.perf_counter() - start) * 1000

        async def floor_append_call() -> float:
            start = time.perf_counter()
            checked(await floor.call_tool("append_memory", {"scope": "user", "memory": f"- {FACT} (new)"}),
                    "append_memory (zero-work)")
            return (time.perf_counter() - start) * 1000

        rows = []
        for operation, calls in (
            ("read", [core_read_call, stdio_read_call, reference_read_call, floor_read_call]),
            ("append", [core_append_call, stdio_append_call, reference_append_call, floor_append_call]),
        ):
            print(f"{size} facts: timing {operation}...", file=sys.stderr, flush=True)
            core_ms, stdio_ms, reference_ms, floor_ms = await timed_round_robin(args.iterations, args.warmup, calls)
            rows.append(Row(operation, size, core_ms, stdio_ms, reference_ms, floor_ms))
        return rows


def table(rows: list[Row]) -> str:
    lines = [
        ("| operation | facts stored | memory-core HTTP p50 ms | p99 ms | memory-core stdio p50 ms | p99 ms "
         "| reference (stdio) p50 ms | p99 ms | ratio HTTP (p50) | ratio stdio (p50) "
         "| zero-work HTTP server p50 ms | its ratio to the reference |"),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        core50, ref50 = percentile(row.memory_core, 0.5), percentile(row.reference, 0.5)
        stdio50, floor50 = percentile(row.stdio, 0.5), percentile(row.floor, 0.5)
        lines.append(
            f"| {row.operation} | {row.size:,} | {core50:.2f} | {percentile(row.memory_core, 0.99):.2f} | "
            f"{stdio50:.2f} | {percentile(row.stdio, 0.99):.2f} | "
            f"{ref50:.2f} | {percentile(row.reference, 0.99):.2f} | {core50 / ref50:.2f} | {stdio50 / ref50:.2f} | "
            f"{floor50:.2f} | {floor50 / ref50:.2f} |"
        )
    return "\n".join(lines)


def plot(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7.5, 4.8), dpi=110)
    for operation, marker, linestyle in (("read", "o", "-"), ("append", "s", "--")):
        mine = [r for r in rows if r.operation == operation]
        sizes = [r.size for r in mine]
        axes.plot(sizes, [percentile(r.memory_core, 0.5) for r in mine], marker=marker, linestyle=linestyle,
                  color="tab:blue", label=f"memory-core HTTP {operation}")
        axes.plot(sizes, [percentile(r.stdio, 0.5) for r in mine], marker=marker, linestyle=linestyle,
                  color="tab:green", label=f"memory-core stdio {operation}")
        axes.plot(sizes, [percentile(r.reference, 0.5) for r in mine], marker=marker, linestyle=linestyle,
                  color="tab:orange", label=f"reference server {operation}")
        axes.plot(sizes, [percentile(r.floor, 0.5) for r in mine], marker=marker, linestyle=linestyle,
                  color="tab:gray", label=f"zero-work HTTP server {operation}")
    axes.set_xscale("log")
    axes.set_yscale("log")  # the stdio lines sit near 1 ms, the reference's read reaches 10
    axes.set_xlabel("facts stored")
    axes.set_ylabel("p50 latency through MCP (ms)")
    axes.set_title("memory-core vs @modelcontextprotocol/server-memory")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small", loc="upper left")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)


async def run(args: argparse.Namespace) -> list[Row]:
    entry = reference_server()
    tmp = Path(tempfile.mkdtemp(prefix="memory-bench-reference-"))
    env = {"MEMORY_DEFAULT_INSTANCE_ID": INSTANCE, "MEMORY_DELETION_MODE": "immediate", "WEBSITE_HOSTNAME": "",
           "MEMORY_MCP_ALLOWED_HOSTS": "", "MEMORY_COREAPI_BASE_URL": ""}
    rows: list[Row] = []
    with running_server(tmp, env) as core:
        for size in args.sizes:
            rows += await bench_size(size, args, core, entry, tmp)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200, help="timed calls per server and operation")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls first")
    parser.add_argument("--sizes", default="10,500,2000", help="facts stored, comma-separated")
    parser.add_argument("--plot", type=Path, default=PLOT, help="where to write the PNG")
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    rows = asyncio.run(run(args))
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"\n{platform.python_implementation()} {platform.python_version()}, node {node}, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.iterations} iterations after "
          f"{args.warmup} warm-up calls\n")
    print(table(rows))
    plot(rows, args.plot)
    print(f"\nplot: {args.plot.relative_to(ROOT) if args.plot.is_relative_to(ROOT) else args.plot}")


if __name__ == "__main__":
    main()
