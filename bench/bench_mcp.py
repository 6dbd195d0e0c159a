"""Latency of MCP tools/call beside the REST call for the same operation.

Run from the project root:

    python bench/bench_mcp.py [--iterations 300] [--entries 20] [--backends in_process,coreapi]

It starts ``python -m memory_core serve`` (as the tests do) and, for the
``coreapi`` backend, a second server whose MCP tools call the first one's
CoreAPI over HTTP (MEMORY_COREAPI_BASE_URL). It then times, alternating call
by call on one event loop:

- MCP ``tools/call get_memory(scope=user)`` vs REST ``GET /memory?scope=user``
  (the same user, preloaded with --entries appends);
- MCP ``tools/call append_memory(scope=user)`` vs REST ``POST /memory/append``.

The MCP side is one persistent official-client session (the server is
stateless, but the connection is kept), plus the same tools/call as a bare
JSON-RPC POST on a persistent httpx.AsyncClient, which separates the server's
cost from the client library's; the REST side is one persistent
httpx.AsyncClient. Calls are interleaved round-robin. It prints a markdown
table of p50/p99 (ms) and the MCP/REST p50 ratio (target: within 2x).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.support.local_server import USER_KEY, RunningServer, identity, running_server

INSTANCE = "bench-mcp"
LINE = "- The user prefers concise answers with Markdown tables for comparisons of plans."
FRONT_KEY = "bench-mcp-front-key"


@dataclass
class Row:
    backend: str
    operation: str
    transport: str
    samples: list[float]


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@contextmanager
def servers(backends: list[str]) -> Iterator[tuple[RunningServer, dict[str, tuple[RunningServer, str]]]]:
    """(the storing server, which serves REST; {backend: (server serving /api/mcp, its caller key)})."""
    tmp = Path(tempfile.mkdtemp(prefix="memory-bench-mcp-"))
    common = {"MEMORY_DEFAULT_INSTANCE_ID": INSTANCE, "WEBSITE_HOSTNAME": "", "MEMORY_MCP_ALLOWED_HOSTS": ""}
    (tmp / "core").mkdir()
    (tmp / "front").mkdir()
    with ExitStack() as stack:
        core = stack.enter_context(running_server(tmp / "core", {**common, "MEMORY_COREAPI_BASE_URL": ""}))
        found = {"in_process": (core, USER_KEY)}
        if "coreapi" in backends:
            env = {**common, "MEMORY_API_KEYS": FRONT_KEY, "MEMORY_COREAPI_BASE_URL": core.api,
                   "MEMORY_COREAPI_KEY": USER_KEY}
            found["coreapi"] = (stack.enter_context(running_server(tmp / "front", env)), FRONT_KEY)
        yield core, {name: found[name] for name in backends}


async def interleave(
    iterations: int, warmup: int, calls: list[Callable[[], Awaitable[object]]]
) -> list[list[float]]:
    """Time the calls round-robin, after ``warmup`` untimed rounds; milliseconds per call."""
    for _ in range(warmup):
        for call in calls:
            await call()
    samples: list[list[float]] = [[] for _ in calls]
    for _ in range(iterations):
        for call, timings in zip(calls, samples, strict=True):
            start = time.perf_counter()
            await call()
            timings.append((time.perf_counter() - start) * 1000)
    return samples


async def bench_backend(
    name: str, mcp_server: RunningServer, key: str, rest_server: RunningServer, args: argparse.Namespace
) -> list[Row]:
    """Rows for get and append: official MCP client, raw JSON-RPC over httpx, REST over httpx."""
    upn = {role: f"bench-{role}-{uuid.uuid4().hex[:8]}@contoso.com" for role in ("get", "mcp", "raw", "rest")}
    memory_url = f"/instances/{INSTANCE}/memory"
    mcp_url = f"{mcp_server.api}/mcp"
    raw_headers = {
        "X-API-KEY": key,
        "X-INSTANCE-ID": INSTANCE,
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    rows: list[Row] = []
    async with (
        httpx.AsyncClient(base_url=rest_server.api, headers={"X-API-KEY": USER_KEY}, timeout=30) as rest,
        httpx.AsyncClient(headers=raw_headers, timeout=30) as raw,
        # initialize needs a credential too (the endpoint authenticates every request); each call then names its user
        httpx2.AsyncClient(headers={"X-API-KEY": key, "X-INSTANCE-ID": INSTANCE, "X-USER-IDENTITY": identity(upn["mcp"])},
                           timeout=httpx2.Timeout(30, read=60))
        as http,
        streamable_http_client(mcp_url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for i in range(args.entries):
            response = await rest.post(f"{memory_url}/append", headers={"X-USER-IDENTITY": identity(upn["get"])},
                                       json={"scope": "user", "content_markdown": f"{LINE} ({i})"})
            response.raise_for_status()

        async def official(tool: str, arguments: dict[str, Any], who: str) -> None:
            http.headers["X-USER-IDENTITY"] = identity(upn[who])
            result = await session.call_tool(tool, arguments)
            if result.is_error:
                raise RuntimeError(f"{tool}: {result.content}")

        async def json_rpc(tool: str, arguments: dict[str, Any], who: str) -> None:
            params = {"name": tool, "arguments": arguments}
            message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
            response = await raw.post(mcp_url, json=message, headers={"X-USER-IDENTITY": identity(upn[who])})
            if response.status_code != 200 or response.json()["result"]["isError"]:
                raise RuntimeError(f"{tool}: {response.text}")

        async def rest_get() -> None:
            response = await rest.get(memory_url, params={"scope": "user"},
                                      headers={"X-USER-IDENTITY": identity(upn["get"])})
            response.raise_for_status()

        async def rest_append() -> None:
            response = await rest.post(f"{memory_url}/append", headers={"X-USER-IDENTITY": identity(upn["rest"])},
                                       json={"scope": "user", "content_markdown": LINE})
            response.raise_for_status()

        get_args = {"scope": "user"}
        append_args = {"scope": "user", "memory": LINE}
        operations = [
            (f"get_memory (user, {args.entries} entries)", "REST GET", [
                lambda: official("get_memory", get_args, "get"),
                lambda: json_rpc("get_memory", get_args, "get"),
                rest_get,
            ]),
            ("append_memory (user)", "REST POST", [
                lambda: official("append_memory", append_args, "mcp"),
                lambda: json_rpc("append_memory", append_args, "raw"),
                rest_append,
            ]),
        ]
        for label, rest_name, calls in operations:
            official_ms, raw_ms, rest_ms = await interleave(args.iterations, args.warmup, calls)
            rows += [
                Row(name, label, "MCP tools/call (official client session)", official_ms),
                Row(name, label, "MCP tools/call (JSON-RPC POST, httpx)", raw_ms),
                Row(name, label, rest_name, rest_ms),
            ]
    return rows


def table(rows: list[Row]) -> str:
    lines = [
        "| MCP backend | Operation | Transport | p50 (ms) | p99 (ms) | MCP/REST p50 |",
        "|---|---|---|---:|---:|---:|",
    ]
    rest_p50 = {(r.backend, r.operation): percentile(r.samples, 0.5) for r in rows if r.transport.startswith("REST")}
    for row in rows:
        p50 = percentile(row.samples, 0.5)
        ratio = f"{p50 / rest_p50[row.backend, row.operation]:.2f}x" if row.transport.startswith("MCP") else ""
        lines.append(
            f"| {row.backend} | {row.operation} | {row.transport} | {p50:.2f} | "
            f"{percentile(row.samples, 0.99):.2f} | {ratio} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300, help="timed calls per transport and operation")
    parser.add_argument("--warmup", type=int, default=30, help="untimed calls first")
    parser.add_argument("--entries", type=int, default=20, help="entries preloaded in the read user's memory")
    parser.add_argument("--backends", default="in_process,coreapi", help="MCP backends to time: in_process,coreapi")
    args = parser.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = set(backends) - {"in_process", "coreapi"}
    if unknown:
        parser.error(f"unknown backends: {', '.join(sorted(unknown))}")
    print("starting servers...", file=sys.stderr, flush=True)
    rows: list[Row] = []
    with servers(backends) as (core, running):
        for name, (server, key) in running.items():
            print(f"timing MCP [{name}] vs REST...", file=sys.stderr, flush=True)
            rows += asyncio.run(bench_backend(name, server, key, core, args))
    print(
        f"memory-core MCP vs REST, local server (SQLite), {args.iterations} iterations after {args.warmup} warm-up, "
        f"Python {platform.python_version()}, {platform.system()} {platform.machine()}, {os.cpu_count()} CPUs\n"
    )
    print(table(rows))


if __name__ == "__main__":
    main()
