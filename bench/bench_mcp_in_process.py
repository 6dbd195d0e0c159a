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

With ``--layers`` it also times each layer an ``append_memory`` call passes through, from the local
host's ASGI entry down to ``MemoryService.append``: each layer's method is wrapped with a clock for
that run, and the table gives each one's inclusive p50 and what is left of it without the next
layer in (its own share). The wrappers add about a microsecond each; the layers' own shares are
medians, so they need not add up to the whole exactly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
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


LAYERS = (
    ("memory_core.local.host", "FunctionHost._http", "the local host: ASGI in, func.HttpRequest, ASGI out"),
    ("memory_core.local.host", "FunctionHost._invoke", "the function: the edge, then the handler"),
    ("memory_core.mcp.functions_bridge", "answer_with", "the Functions bridge: func.HttpRequest to ASGI and back"),
    ("memory_core.mcp.front", "McpHttpApp.__call__", "the front: body, JSON-RPC envelope, credential, time bound"),
    ("memory_core.mcp.exchange", "SingleExchange.answer", "the single exchange: context, reply serialized"),
    ("memory_core.mcp.exchange", "serve_one", "the SDK's kernel: OpenTelemetry span, request state, params, result"),
    ("memory_core.mcp.server", "MemoryMCPServer.call_tool", "the tool call: the one error path, the SDK's lookup"),
    ("mcp.server.mcpserver.tools.base", "Tool.run", "the SDK's tool: arguments validated, output checked"),
    ("mcp.server.mcpserver.utilities.func_metadata", "FuncMetadata.call_fn", "the tool function: target, result"),
    ("memory_core.mcp.backend", "InProcessBackend.append", "the backend: the worker-thread hop, the answer model"),
    ("memory_core.domain.service", "MemoryService.append", "the service: scan, store write, audit"),
)
"""(module, attribute, what the layer adds) from the outermost in: each layer's call encloses the next one's."""


@contextlib.contextmanager
def layer_clocks(samples: dict[str, list[float]]) -> Iterator[None]:
    """Wrap every layer of ``LAYERS`` with a clock appending its calls' ms to ``samples[attribute]``."""
    import importlib

    restore = []
    for module_name, attribute, _ in LAYERS:
        module = importlib.import_module(module_name)
        owner_name, _, name = attribute.rpartition(".")
        owner = getattr(module, owner_name) if owner_name else module
        original = getattr(owner, name)
        timings = samples.setdefault(attribute, [])

        def clocked(original: Callable[..., Any], timings: list[float]) -> Callable[..., Any]:
            if asyncio.iscoroutinefunction(original):
                @functools.wraps(original)
                async def timed_async(*args: Any, **kwargs: Any) -> Any:
                    started = time.perf_counter()
                    try:
                        return await original(*args, **kwargs)
                    finally:
                        timings.append((time.perf_counter() - started) * 1000)
                return timed_async

            @functools.wraps(original)
            def timed(*args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                try:
                    return original(*args, **kwargs)
                finally:
                    timings.append((time.perf_counter() - started) * 1000)
            return timed

        setattr(owner, name, clocked(original, timings))
        restore.append((owner, name, original))
    try:
        yield
    finally:
        for owner, name, original in reversed(restore):
            setattr(owner, name, original)


def layers(host: FunctionInProcess, body: bytes, iterations: int) -> None:
    """Print each layer's inclusive p50 for ``iterations`` calls of ``body``, and its own share."""
    host.timed("POST", "/mcp", None, body, 50)  # warm, without clocks
    samples: dict[str, list[float]] = {}
    with layer_clocks(samples):
        whole = statistics.median(host.timed("POST", "/mcp", None, body, iterations))
    medians = [statistics.median(samples[attribute][-iterations:]) for _, attribute, _ in LAYERS]
    print(f"\nappend_memory, layer by layer ({iterations} calls, the caller's clock {whole:.3f} ms p50):\n")
    print("| layer | what it adds | inclusive p50 ms | own p50 ms |")
    print("|---|---|---:|---:|")
    for i, (_, attribute, what) in enumerate(LAYERS):
        inner = medians[i + 1] if i + 1 < len(medians) else 0.0
        print(f"| `{attribute}` | {what} | {medians[i]:.3f} | {medians[i] - inner:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--agent", action="store_true", help="send an agent's headers with every call")
    parser.add_argument("--layers", action="store_true", help="also time append_memory layer by layer")
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
    if args.layers:
        layers(host, calls["append_memory"], args.iterations)


if __name__ == "__main__":
    main()
