"""Latency of the CoreAPI over HTTP beside the same operations in process.

Run from the project root:

    python bench/bench_http.py [--iterations 300] [--sizes 10,10000]

It preloads one user's memory with N entries (user and agent scope) through
SqliteMemoryStore, starts ``python -m memory_core serve`` on that database,
then times get (user, agent, combined) and append four ways:

- over HTTP, one keep-alive httpx client against ``serve``;
- against bench/zero_work.py, which replays the very bytes ``serve``
  answered and does nothing else (same uvicorn, same client): what the socket,
  the HTTP server and the client cost by themselves;
- the function in process: the same request as an ASGI call on ``FunctionHost``
  (the local Functions host: the ASGI ↔ ``func.HttpRequest`` bridge, the edge,
  authentication, the worker-thread hop, the service, the JSON answer), no socket;
- ``MemoryService`` in process.

It prints a markdown table of p50/p99 (ms), throughput and the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import zero_work
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


class FunctionInProcess:
    """Requests as ASGI calls on the local Functions host (``FunctionHost``) in this process: no socket."""

    def __init__(self, env: dict[str, str], headers: dict[str, str]) -> None:
        os.environ.update({k: v for k, v in env.items() if k.startswith(("MEMORY_", "COSMOS_"))})
        from memory_core.local.host import FunctionHost
        from memory_core.local.serve import load_function_app

        self._host = FunctionHost(load_function_app(Path(__file__).resolve().parents[1]))
        self._headers = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        self._loop = asyncio.new_event_loop()

    def timed(self, method: str, path: str, params: dict[str, str] | None, body: bytes, iterations: int) -> list[float]:
        """Milliseconds per request, timed inside one running event loop (as the server runs them)."""
        headers = [*self._headers, (b"host", b"127.0.0.1"), (b"content-type", b"application/json")]
        scope = {"type": "http", "method": method, "path": f"/api{path}", "headers": headers, "scheme": "http",
                 "query_string": urlencode(params or {}).encode(), "server": ("127.0.0.1", 80)}

        async def once() -> None:
            sent = False
            status: list[int] = []

            async def receive() -> dict[str, Any]:
                nonlocal sent
                if sent:
                    await asyncio.sleep(3600)
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}

            async def send(message: dict[str, Any]) -> None:
                if message["type"] == "http.response.start":
                    status.append(message["status"])

            await self._host(scope, receive, send)
            if status != [200]:
                raise RuntimeError(f"{method} {path} answered {status}")

        async def run() -> list[float]:
            for _ in range(min(20, iterations)):
                await once()
            samples = []
            for _ in range(iterations):
                started = time.perf_counter()
                await once()
                samples.append((time.perf_counter() - started) * 1000)
            return samples

        return self._loop.run_until_complete(run())


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
            function = FunctionInProcess(server.env, dict(http.headers))
            requests: dict[tuple[str, int], tuple[str, str, dict[str, str] | None, dict[str, Any] | None]] = {}
            calls: dict[tuple[str, int], Callable[[], object]] = {}
            for size in sizes:
                inst = f"bench-{size}"
                append_body = {"scope": "user", "content_markdown": LINE}
                for name, method, path, params, body, in_process in (
                    ("get user", "GET", f"/instances/{inst}/memory", {"scope": "user"}, None,
                     lambda inst=inst: service.get(caller, inst, Scope.USER, None)),
                    ("get agent", "GET", f"/instances/{inst}/memory", {"scope": "agent", "agentObjectId": AGENT}, None,
                     lambda inst=inst: service.get(caller, inst, Scope.AGENT, agent)),
                    ("get combined", "GET", f"/instances/{inst}/memory",
                     {"scope": "combined", "agentObjectId": AGENT}, None,
                     lambda inst=inst: service.get(caller, inst, Scope.COMBINED, agent)),
                    ("append", "POST", f"/instances/{inst}/memory/append", None, append_body,
                     lambda inst=inst: service.append(caller, inst, Scope.USER, None, LINE)),
                ):
                    requests[(name, size)] = (method, path, params, body)
                    calls[(name, size)] = in_process
            answers = {}
            for method, path, params, body in requests.values():
                response = http.request(method, path, params=params, json=body)
                response.raise_for_status()
                query = urlencode(params or {})
                answers[f"{method} /api{path}" + (f"?{query}" if query else "")] = {
                    "status": 200, "content_type": response.headers["content-type"], "body": response.text}
            with zero_work.running("http", answers, tmp) as zero_base, httpx.Client(base_url=f"{zero_base}/api") as zero:
                for (name, size), (method, path, params, body) in requests.items():
                    print(f"timing {name} at {size}...", file=sys.stderr, flush=True)
                    h = timed(lambda: http.request(method, path, params=params, json=body).raise_for_status(),
                              args.iterations)
                    z = timed(lambda: zero.request(method, path, params=params, json=body).raise_for_status(),
                              args.iterations)
                    raw = json.dumps(body).encode() if body is not None else b""
                    f = function.timed(method, path, params, raw, args.iterations)
                    s = timed(calls[(name, size)], args.iterations)
                    rows.append((name, size, statistics.median(h), p(h, 0.99), 1000 / statistics.mean(h),
                                 statistics.median(z), statistics.median(f), statistics.median(s)))
    store.close()
    print(f"\nMachine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.system()}; iterations per row: {args.iterations}\n")
    print("| operation | entries | HTTP p50 ms | HTTP p99 ms | HTTP ops/s | zero-work HTTP server p50 ms "
          "| function in process p50 ms | service in process p50 ms | HTTP / zero-work | HTTP / function in process |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, size, hp50, hp99, tput, zp50, fp50, sp50 in rows:
        print(f"| {name} | {size} | {hp50:.2f} | {hp99:.2f} | {tput:.0f} | {zp50:.2f} | {fp50:.3f} | {sp50:.3f} "
              f"| {hp50 / zp50:.2f}x | {hp50 / fp50:.2f}x |")
    gets = {(name, size): hp50 for name, size, hp50, *_ in rows}
    for name in ("get user", "get agent", "get combined"):
        measured = sorted(size for n, size in gets if n == name)
        if len(measured) >= 2:
            print(f"\n{name} p50 at {measured[-1]} / at {measured[0]}: "
                  f"{gets[(name, measured[-1])] / gets[(name, measured[0])]:.2f}x", end="")
    print()
    appends = {size: hp50 for name, size, hp50, *_ in rows if name == "append"}
    if len(appends) >= 2:
        small, large = min(appends), max(appends)
        print(f"\nappend p50 at {large} / at {small}: {appends[large] / appends[small]:.2f}x")


if __name__ == "__main__":
    main()
