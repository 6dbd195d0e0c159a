"""MCP tools/call answered in process by the local Functions host, with and without the worker-thread hop.

Run from the project root:

    python bench/bench_mcp_in_process.py [--iterations 1000] [--agent]

Each call is an ASGI request on ``FunctionHost`` (what ``serve`` runs, without the socket and
the client): ``append_memory`` and ``get_memory`` (10 entries, user scope). It times them as
shipped, where every store call runs on a worker thread (``anyio.to_thread.run_sync``), and then
with that hop replaced by a direct call on the event loop: an experiment, to size the hop, which
memory-core does not ship (docs/performance.md, "Where the time went"). It also times a bare hop
(a no-op on a worker thread). Prints a markdown table of p50 in ms. With ``--agent`` every call
carries an agent's headers (``X-Agent-Object-Id``), as an agent platform sends them; the calls
still read and write user memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import anyio.to_thread
from bench_http import FunctionInProcess

from tests.support.local_server import identity

FACT = "The user prefers concise answers with Markdown tables for comparisons of plans"


def call(name: str, arguments: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}).encode()


async def _direct(fn: Callable[..., Any], *args: Any, **_: Any) -> Any:
    return fn(*args)


def bare_hop(iterations: int) -> float:
    async def run() -> float:
        for _ in range(100):
            await anyio.to_thread.run_sync(lambda: None)
        samples = []
        for _ in range(iterations):
            started = time.perf_counter()
            await anyio.to_thread.run_sync(lambda: None)
            samples.append((time.perf_counter() - started) * 1000)
        return statistics.median(samples)
    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--agent", action="store_true", help="send an agent's headers with every call")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="memory-bench-mcp-")
    env = {"MEMORY_SQLITE_PATH": f"{tmp}/memory.sqlite3", "MEMORY_API_KEYS": "bench-key",
           "MEMORY_OPERATOR_KEYS": "bench-operator-key", "MEMORY_DELETION_MODE": "immediate"}
    headers = {"X-API-KEY": "bench-key", "X-INSTANCE-ID": "bench", "X-USER-IDENTITY": identity("bench@contoso.com"),
               "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    if args.agent:
        headers["X-Agent-Object-Id"] = "/agents/bench"
    host = FunctionInProcess(env, headers)
    for i in range(10):
        host.timed("POST", "/mcp", None, call("append_memory", {"scope": "user", "memory": f"- {FACT} ({i})"}), 1)
    calls = {
        "append_memory": call("append_memory", {"scope": "user", "memory": f"- {FACT} (new)"}),
        "get_memory (10 entries)": call("get_memory", {"scope": "user"}),
    }
    shipped = {name: statistics.median(host.timed("POST", "/mcp", None, body, args.iterations))
               for name, body in calls.items()}
    run_sync = anyio.to_thread.run_sync
    anyio.to_thread.run_sync = _direct  # type: ignore[assignment]
    try:
        direct = {name: statistics.median(host.timed("POST", "/mcp", None, body, args.iterations))
                  for name, body in calls.items()}
    finally:
        anyio.to_thread.run_sync = run_sync
    print(f"{args.iterations} calls each{' with an agent' if args.agent else ''}, load {os.getloadavg()[0]:.2f}; a bare hop: {bare_hop(args.iterations):.3f} ms\n")
    print("| tools/call | as shipped p50 ms | store calls on the event loop p50 ms | the hop |")
    print("|---|---:|---:|---:|")
    for name in calls:
        print(f"| {name} | {shipped[name]:.3f} | {direct[name]:.3f} | {shipped[name] - direct[name]:.3f} |")


if __name__ == "__main__":
    main()
