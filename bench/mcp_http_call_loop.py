"""``serve`` kept busy with MCP calls over HTTP, for a profiler to sample (py-spy); not a benchmark of its own.

Run from the project root:

    python bench/mcp_http_call_loop.py [--seconds 15] [--facts 10] [--pid-file /tmp/serve.pid] &
    py-spy record -p "$(cat /tmp/serve.pid)" -r 500 -d 14 --threads -f raw -o read.txt   # once the file exists

Starts ``python -m memory_core serve`` on its own SQLite file (``tests.support.local_server.running_server``),
preloads ``--facts`` facts over REST, then drives it with the official mcp client as bench/bench_vs_reference.py
does: ``get_memory`` (scope user) for ``--seconds``, then ``append_memory`` for ``--seconds``, each append undone
over REST (MEMORY_DELETION_MODE=immediate) so the memory stays at ``--facts``. serve's pid is written to
``--pid-file`` once the warm-up calls are done, and the file is removed when the loops end; each phase prints a line
as it starts and its call count and p50 as it ends (docs/performance.md, "The MCP HTTP path on `serve`, profiled
again").
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx
import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.bench_vs_reference import FACT, INSTANCE
from tests.support.local_server import USER_KEY, identity, running_server

ENV = {"MEMORY_DEFAULT_INSTANCE_ID": INSTANCE, "MEMORY_DELETION_MODE": "immediate", "WEBSITE_HOSTNAME": "",
       "MEMORY_MCP_ALLOWED_HOSTS": "", "MEMORY_COREAPI_BASE_URL": ""}


async def loop_calls(session: ClientSession, rest: httpx.AsyncClient, operation: str, seconds: float) -> list[float]:
    """Milliseconds of each ``operation`` call ("read" or "append") made one after another for ``seconds``."""
    samples = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.perf_counter()
        if operation == "read":
            result = await session.call_tool("get_memory", {"scope": "user"})
            samples.append((time.perf_counter() - started) * 1000)
        else:
            result = await session.call_tool("append_memory", {"scope": "user", "memory": f"- {FACT} (new)"})
            samples.append((time.perf_counter() - started) * 1000)
            entry_id = (result.structured_content or {}).get("entry_id")
            (await rest.delete(f"/instances/{INSTANCE}/memory/entries/{entry_id}")).raise_for_status()
        if result.is_error:
            raise RuntimeError(f"{operation} failed: {result.content}")
    return samples


async def run(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="memory-bench-loop-"))
    headers = {"X-API-KEY": USER_KEY, "X-INSTANCE-ID": INSTANCE,
               "X-USER-IDENTITY": identity(f"bench-{uuid.uuid4().hex[:8]}@contoso.com")}
    with running_server(tmp, ENV) as core:
        async with (
            httpx.AsyncClient(base_url=core.api, headers=headers, timeout=60) as rest,
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=120)) as http,
            streamable_http_client(f"{core.api}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            for i in range(args.facts):
                (await rest.post(f"/instances/{INSTANCE}/memory/append",
                                 json={"scope": "user", "content_markdown": f"- {FACT} ({i})"})).raise_for_status()
            await session.initialize()
            await loop_calls(session, rest, "read", 1.0)  # warm
            args.pid_file.write_text(str(core.process.pid))
            try:
                for operation in ("read", "append"):
                    print(f"{operation}: started", flush=True)
                    samples = await loop_calls(session, rest, operation, args.seconds)
                    print(f"{operation}: {len(samples)} calls, p50 {statistics.median(samples):.2f} ms", flush=True)
            finally:
                args.pid_file.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="how long each operation is looped")
    parser.add_argument("--facts", type=int, default=10, help="facts stored before the loops")
    parser.add_argument("--pid-file", type=Path, default=Path(tempfile.gettempdir()) / "serve.pid",
                        help="where serve's pid is written while the loops run")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
