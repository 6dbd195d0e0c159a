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
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import azure.functions as func
from bench_http import FunctionInProcess

import memory_core.mcp.functions_bridge as functions_bridge
from memory_core import composition
from tests.support.local_server import identity

VARIANTS = ("main", "bridge", "index", "both")


class EveryPattern:
    """Main's route lookup: every route's pattern tried."""

    def __init__(self, routes: list[Any]) -> None:
        self._routes = routes

    def matches(self, path: str) -> list[tuple[Any, re.Match[str]]]:
        return [(r, m) for r in self._routes if (m := r.pattern.match(path))]


async def through_the_middleware(app: Any, request: func.HttpRequest, state: dict[str, Any]) -> func.HttpResponse:
    """Main's bridge: the endpoint's own ``AsgiMiddleware``, per request."""
    middleware = composition.mcp_endpoint()._middleware
    assert middleware is not None
    return await middleware.handle_async(request, None)


def call(name: str, arguments: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}).encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--block", type=int, default=60)
    args = parser.parse_args()
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
