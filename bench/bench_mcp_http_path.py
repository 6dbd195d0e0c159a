"""The MCP endpoint's HTTP-only path in process, main's way and this way, switched between blocks of calls.

Run from the project root:

    python bench/bench_mcp_http_path.py [--rounds 40] [--block 60]

Each call is an ASGI request on ``FunctionHost`` (what ``serve`` runs, without the socket and the client):
``ping`` (the host, the edge, the Functions bridge, the front with its credential check, the SDK's dispatch; no
worker thread, no store) and ``get_memory`` (10 entries). Four variants run in one process, swapped between
blocks of ``--block`` calls in a shuffled order each round, so a loaded machine slows them alike:

- ``main``: each request through ``azure.functions.AsgiMiddleware.handle_async`` and every route's pattern tried;
- ``bridge``: through ``memory_core.mcp.functions_bridge.answer_with``, every pattern tried;
- ``index``: through the middleware, the host's ``RouteIndex``;
- ``both``: as shipped.

Prints, per call, the median over rounds of each block's p50 in µs (docs/performance.md, "The MCP HTTP path on
``serve``").

    python bench/bench_mcp_http_path.py --parts [--rounds 40] [--block 2000]

measures the two cuts alone instead, each pair switched between blocks in a shuffled order each round: one request
of a small ASGI app (one status, one body) through ``AsgiMiddleware.handle_async`` and through ``answer_with``;
and the host's route lookup for ``/api/mcp`` and a REST path under ``/instances``, every pattern tried and
``RouteIndex``. Prints the median over rounds of each block's mean in µs, and how many routes there are.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import azure.functions as func
from bench_http import FunctionInProcess

import function_app
import memory_core.mcp.functions_bridge as functions_bridge
from memory_core import composition
from memory_core.edge.names import Address
from memory_core.local.host import RouteIndex, http_routes
from tests.support.local_server import identity

VARIANTS = ("main", "bridge", "index", "both")


class EveryPattern:
    """Main's route lookup: every route's pattern tried."""

    def __init__(self, routes: list[Any]) -> None:
        self._routes = routes

    def matches(self, path: str) -> list[tuple[Any, re.Match[str]]]:
        return [(r, m) for r in self._routes if (m := r.pattern.match(path))]


async def through_the_middleware(app: Any, request: func.HttpRequest, state: dict[str, Any],
                                 address: Address | None = None) -> func.HttpResponse:
    """Main's bridge: the endpoint's own ``AsgiMiddleware``, per request. The edge's ``address`` is not handed
    on (the middleware cannot), so the front checks Host and Origin again, as it did on main."""
    middleware = composition.mcp_endpoint()._middleware
    assert middleware is not None
    return await middleware.handle_async(request, None)


def call(name: str, arguments: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}).encode()


async def small_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"jsonrpc":"2.0","id":1,"result":{}}'})


def block_mean_us(run: Any, block: int) -> float:
    start = time.perf_counter()
    for _ in range(block):
        run()
    return (time.perf_counter() - start) / block * 1e6


def parts(rounds: int, block: int) -> None:
    """The bridge alone and the route lookup alone, each against main's way."""
    request = func.HttpRequest(method="POST", url="http://localhost:7071/api/mcp", body=b'{"jsonrpc":"2.0"}',
                               headers={"host": "localhost:7071", "content-type": "application/json",
                                        "x-api-key": "k", "x-user-identity": identity("bench@contoso.com")})
    middleware = func.AsgiMiddleware(small_app)
    loop = asyncio.new_event_loop()
    routes = http_routes(function_app.app, "api")
    index, every = RouteIndex(routes, "api"), EveryPattern(routes)
    rest_path = "/api/instances/bench/memory/entries"
    runs: dict[str, Any] = {
        "bridge: AsgiMiddleware": lambda: loop.run_until_complete(middleware.handle_async(request, None)),
        "bridge: answer_with": lambda: loop.run_until_complete(functions_bridge.answer_with(small_app, request, {})),
        "/api/mcp: every pattern": lambda: every.matches("/api/mcp"),
        "/api/mcp: RouteIndex": lambda: index.matches("/api/mcp"),
        f"{rest_path}: every pattern": lambda: every.matches(rest_path),
        f"{rest_path}: RouteIndex": lambda: index.matches(rest_path),
    }
    assert [r.name for r, _ in index.matches(rest_path)] == [r.name for r, _ in every.matches(rest_path)]
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():  # warm each
        block_mean_us(run, block)
    for _ in range(rounds):
        for name in random.sample(list(runs), len(runs)):
            samples[name].append(block_mean_us(runs[name], block))
    under_instances = sum(1 for r in routes if r.template.startswith("/api/instances/"))
    print(f"load {os.getloadavg()[0]:.2f}; {rounds} rounds of {block} calls each; {len(routes)} routes, "
          f"{under_instances} under /api/instances\n")
    print("| what | µs |\n|---|---:|")
    for name in runs:
        print(f"| {name} | {statistics.median(samples[name]):.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--block", type=int, default=None, help="calls per block (default 60; 2000 with --parts)")
    parser.add_argument("--parts", action="store_true", help="the bridge and the route lookup alone")
    args = parser.parse_args()
    if args.parts:
        parts(args.rounds, args.block or 2000)
        return
    args.block = args.block or 60
    tmp = tempfile.mkdtemp(prefix="memory-bench-mcp-path-")
    env = {"MEMORY_SQLITE_PATH": f"{tmp}/memory.sqlite3", "MEMORY_API_KEYS": "bench-key",
           "MEMORY_OPERATOR_KEYS": "bench-operator-key", "MEMORY_DELETION_MODE": "immediate"}
    headers = {"X-API-KEY": "bench-key", "X-INSTANCE-ID": "bench", "X-USER-IDENTITY": identity("bench@contoso.com"),
               "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    host = FunctionInProcess(env, headers)
    local_host: Any = host._host
    shipped_index, every_pattern = local_host._index, EveryPattern(local_host.routes)
    shipped_bridge = functions_bridge.answer_with

    def use(variant: str) -> None:
        functions_bridge.answer_with = shipped_bridge if variant in ("bridge", "both") else through_the_middleware
        local_host._index = shipped_index if variant in ("index", "both") else every_pattern

    for i in range(10):
        host.timed("POST", "/mcp", None, call("append_memory", {"scope": "user", "memory": f"- fact {i}"}), 1)
    bodies = {"ping": json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode(),
              "get_memory": call("get_memory", {"scope": "user"})}
    samples: dict[tuple[str, str], list[float]] = {(v, k): [] for v in VARIANTS for k in bodies}
    for variant in VARIANTS:  # warm each
        use(variant)
        for body in bodies.values():
            host.timed("POST", "/mcp", None, body, 100)
    for _ in range(args.rounds):
        for variant in random.sample(VARIANTS, len(VARIANTS)):
            use(variant)
            for kind, body in bodies.items():
                samples[(variant, kind)].append(statistics.median(host.timed("POST", "/mcp", None, body, args.block)))
    use("both")
    print(f"load {os.getloadavg()[0]:.2f}; {args.rounds} rounds of {args.block} calls per variant and call\n")
    print("| call | " + " | ".join(VARIANTS) + " |")
    print("|---|" + "---:|" * len(VARIANTS))
    for kind in bodies:
        row = [f"{statistics.median(samples[(v, kind)]) * 1000:.0f}" for v in VARIANTS]
        print(f"| {kind} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
