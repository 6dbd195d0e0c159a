"""MCP over stdio answered in process: ``python -m memory_core mcp``'s front, server and store, without pipes or client.

Run from the project root:

    python bench/bench_stdio_in_process.py [--iterations 3000] [--warmup 200] [--facts 10]

The server is built as ``memory_core.mcp.stdio.run`` builds it (the composition root on a new
SQLite file, the launch identity from ``MEMORY_MCP_*`` variables, ``StdioFront``), and served by
``StdioFront.serve`` with each line handed in from memory and each answer taken back the moment it
is written: the front, the SDK's serving loop and the tools are real; the pipes, the other process
and the official client are not (``bench_vs_reference.py`` times those too). After ``initialize``,
``--facts`` entries are appended, then each call is timed one at a time, the next sent once the
answer is written: ``get_memory`` (user scope), then ``append_memory`` (each append stays: the
memory grows by ``--iterations`` entries over that row). Prints a markdown table of p50 and p90 in ms, and the
process's CPU time per call (``time.process_time`` over the timed calls, every thread: the WAL checkpoint thread's
work included), which moves less than the wall clock on a machine other processes load: descheduled time is
not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.mcp.stdio_wire import WireOut
from tests.support.stdio_server import initialize, stdio_env, tool_call

INSTANCE = "bench"


class Answers(WireOut):
    """Hands each answer written to whoever waits for it."""

    def __init__(self) -> None:
        self.waiting: asyncio.Future[bytes] | None = None

    async def write(self, data: bytes) -> None:
        if self.waiting is not None and not self.waiting.done():
            self.waiting.set_result(data)


def _front() -> Any:
    """A StdioFront built as ``stdio.run`` builds it (``stdio.build_front``), on a new SQLite file."""
    env = stdio_env(Path(tempfile.mkdtemp()) / "memory.db", MEMORY_DEFAULT_INSTANCE_ID=INSTANCE,
                    MEMORY_MCP_INSTANCE_ID=INSTANCE)
    for name in [n for n in os.environ if n.startswith(("MEMORY_", "COSMOS_"))]:
        del os.environ[name]
    os.environ.update(env)
    from memory_core import composition
    from memory_core.mcp.stdio import build_front, launch_headers
    from memory_core.settings import stdio_launch_from

    composition.declare_stdio()
    front, _ = build_front(composition.runtime(), launch_headers(stdio_launch_from()))
    return front


class InProcessClient:
    """A front served in process (``_front``) after its handshake; ``call`` sends one tool call and answers the time
    to its answer (seconds) and the answer's bytes, the next call sent once it is written. ``close`` ends the
    serving."""

    def __init__(self) -> None:
        self._lines: asyncio.Queue[bytes] = asyncio.Queue()
        self._answers = Answers()
        self._serving = asyncio.create_task(_front().serve(self._lines.get, self._answers))
        self._next_id = 100

    async def opened(self) -> InProcessClient:
        handshake, initialized = initialize().splitlines(keepends=True)
        await self._answer(handshake)
        self._lines.put_nowait(initialized)
        return self

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[float, bytes]:
        self._next_id += 1
        started = time.perf_counter()
        answer = await self._answer(tool_call(self._next_id, name, arguments))
        elapsed = time.perf_counter() - started
        if b'"isError":true' in answer or b'"error"' in answer[:40]:
            raise SystemExit(f"{name} failed: {answer[:300]!r}")
        return elapsed, answer

    async def close(self) -> None:
        self._lines.put_nowait(b"")
        await asyncio.wait_for(self._serving, 30)

    async def _answer(self, line: bytes) -> bytes:
        self._answers.waiting = asyncio.get_running_loop().create_future()
        self._lines.put_nowait(line)
        return await self._answers.waiting


async def run(iterations: int, warmup: int, facts: int) -> list[tuple[str, float, float, float]]:
    client = await InProcessClient().opened()
    for n in range(facts):
        await client.call("append_memory", {"scope": "user", "memory": f"- fact {n}: the user likes green tea"})
    rows = []
    for name, arguments in (("get_memory", {"scope": "user"}),
                            ("append_memory", {"scope": "user", "memory": "- the user cycles to work"})):
        for _ in range(warmup):
            await client.call(name, arguments)
        cpu = time.process_time()
        times = sorted([(await client.call(name, arguments))[0] for _ in range(iterations)])
        cpu = time.process_time() - cpu
        rows.append((name, times[len(times) // 2] * 1e3, times[int(len(times) * 0.9)] * 1e3, cpu / iterations * 1e3))
    await client.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=3000, help="timed calls per tool")
    parser.add_argument("--warmup", type=int, default=200, help="untimed calls first, per tool")
    parser.add_argument("--facts", type=int, default=10, help="entries appended before timing")
    args = parser.parse_args()
    rows = asyncio.run(run(args.iterations, args.warmup, args.facts))
    print(f"CPython {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; "
          f"{args.iterations} calls after {args.warmup} warm-up calls, {args.facts} facts stored\n")
    print("| tools/call | p50 ms | p90 ms | CPU ms a call |\n|---|---:|---:|---:|")
    for name, p50, p90, cpu in rows:
        print(f"| {name} | {p50:.3f} | {p90:.3f} | {cpu:.3f} |")


if __name__ == "__main__":
    main()
