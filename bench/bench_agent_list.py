"""Benchmark: the person's agent list (``GET /memory/agents``) on SQLite, over HTTP, for one user of many agents.

Run from the repository root:

    python bench/bench_agent_list.py [--agents 3000] [--entries 3] [--repeat 10] [--port 7641] [--walk]

Seeds one user with ``--agents`` agent scopes of ``--entries`` entries each (and a user scope) through
``SqliteMemoryStore``, starts ``python -m memory_core serve`` on that file at ``--port``, then times the first
page as a client asks for it (no query parameters: the default page) and prints the answer's size, the number
of agents it names, whether it continues, and the median and worst time of ``--repeat`` requests; with
``--walk``, first the time and bytes of reading every page at ``limit=500``, as the console does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope

UPN = "alex@contoso.com"
USER_KEY = "bench-user-key"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _seed(path: Path, agents: int, entries: int) -> None:
    store = SqliteMemoryStore(path)
    try:
        for n in range(agents + 1):
            key = (ProfileKey("local", UPN, Scope.USER) if n == agents else
                   ProfileKey("local", UPN, Scope.AGENT, f"/instances/local/providers/FoundationaLLM.Agent/agents/a{n:05}"))
            for i in range(entries):
                at = T0 + timedelta(seconds=n * entries + i)
                store.append(MemoryProfile(key, None, UPN, f"Agent {n}" if key.agent_object_id else None, at, at),
                             MemoryEntry(f"e{n}-{i}", key, f"- fact {i} kept by agent {n}", EntryKind.APPEND, at,
                                         UPN, agent_name=f"Agent {n}" if key.agent_object_id else None))
    finally:
        store.close()


def _walk(http: httpx.Client, url: str) -> tuple[int, int, int, float]:
    """Every page at the largest limit, as the console reads them: pages, bytes, agents and milliseconds."""
    pages = size = agents = 0
    token: str | None = None
    started = time.perf_counter()
    while True:
        answer = http.get(url, params={"limit": 500, **({"continuation": token} if token else {})})
        answer.raise_for_status()
        body = answer.json()
        pages, size, agents = pages + 1, size + len(answer.content), agents + len(body["agents"])
        token = body.get("continuation")
        if not token:
            return pages, size, agents, (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=3000)
    parser.add_argument("--entries", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--port", type=int, default=7641)
    parser.add_argument("--walk", action="store_true", help="also time reading every page at limit=500 (once)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.sqlite3"
        started = time.perf_counter()
        _seed(db, args.agents, args.entries)
        print(f"seeded {args.agents} agents x {args.entries} entries in {time.perf_counter() - started:.1f} s")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "COSMOS_"))}
        env.update({"MEMORY_SQLITE_PATH": str(db), "MEMORY_API_KEYS": USER_KEY, "MEMORY_OPERATOR_KEYS": "bench-op"})
        log = open(Path(tmp) / "serve.log", "wb")  # noqa: SIM115 - closed below, after the process
        server = subprocess.Popen([sys.executable, "-m", "memory_core", "serve", "--port", str(args.port)],
                                  cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{args.port}/api/instances/local/memory/agents"
            headers = {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": json.dumps({"upn": UPN})}
            with httpx.Client(headers=headers, timeout=120) as http:
                for _ in range(300):
                    try:
                        http.get(f"http://127.0.0.1:{args.port}/api/openapi.json")
                        break
                    except httpx.TransportError:
                        time.sleep(0.1)
                walk = _walk(http, url) if args.walk else None
                times, answer = [], None
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    answer = http.get(url)
                    times.append((time.perf_counter() - started) * 1000)
                    answer.raise_for_status()
            assert answer is not None
            body = answer.json()
            print(f"first page: {len(answer.content):,} bytes, {len(body['agents'])} agents, "
                  f"continues: {bool(body.get('continuation'))}; "
                  f"median {statistics.median(times):.1f} ms, worst {max(times):.1f} ms ({args.repeat} requests)")
            if walk is not None:
                print(f"every page at limit=500: {walk[0]} pages, {walk[1]:,} bytes, {walk[2]} agents, {walk[3]:.1f} ms")
        finally:
            server.terminate()
            server.wait(timeout=10)
            log.close()


if __name__ == "__main__":
    main()
