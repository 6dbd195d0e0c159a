"""What the official mcp client spends checking one append's answer: memory-core's beside the reference server's.

Run from the project root: ``python bench/bench_client_checks.py [--iterations 300] [--rounds 60]``.

``ClientSession.call_tool`` checks every ``structuredContent`` against the tool's output schema
(``validate_tool_result``, jsonschema with a cached validator) before it returns, so that check is inside
every time ``bench_vs_reference.py`` measures. Both servers are started over stdio as there
(``python -m memory_core mcp`` on a new SQLite file, the pinned ``@modelcontextprotocol/server-memory``),
asked once for their tools and for one append's answer (``append_memory`` and ``add_observations``),
then, in this process, each answer is checked ``--iterations`` times in each of ``--rounds`` rounds, the
answers in turn within each round: the client's own check (``validate_tool_result``) and the parse of the answer's result into
``CallToolResult`` that comes before it. Prints the best round's µs per answer (the least disturbed by
other work on the machine), and the number of members each answer's structured content holds.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from bench.bench_vs_reference import FACT, INSTANCE, checked, reference_server
from tests.support.stdio_server import parameters as stdio_parameters
from tests.support.stdio_server import stdio_env


def members(value: Any) -> int:
    """Object members and array items in ``value``, nested: what a schema check walks into."""
    if isinstance(value, dict):
        return len(value) + sum(members(v) for v in value.values())
    if isinstance(value, list):
        return len(value) + sum(members(v) for v in value)
    return 0


def at_once(coroutine: Coroutine[Any, Any, Any]) -> None:
    """Runs ``coroutine`` to its end without an event loop: the check awaits nothing once the schemas are cached."""
    try:
        coroutine.send(None)
    except StopIteration:
        return
    coroutine.close()
    raise RuntimeError("the check waited for something: its tool's schema was not cached")


def best_us(calls: list[Callable[[], Any]], iterations: int, rounds: int) -> list[float]:
    """Each call's best round in µs a call; the calls take turns round by round, so load on the machine falls on
    all of them alike."""
    best = [float("inf")] * len(calls)
    for _ in range(rounds):
        for n, call in enumerate(calls):
            started = time.perf_counter()
            for _ in range(iterations):
                call()
            best[n] = min(best[n], (time.perf_counter() - started) / iterations * 1e6)
    return best


async def answers(tmp: Path) -> list[tuple[str, ClientSession, str, CallToolResult]]:
    """Each server's session, tool and one append's answer, the sessions' schemas cached; servers stopped after."""
    upn = f"bench-checks-{uuid.uuid4().hex[:8]}@contoso.com"
    core = stdio_parameters(stdio_env(tmp / "stdio.sqlite3", upn, MEMORY_MCP_INSTANCE_ID=INSTANCE,
                                      MEMORY_DEFAULT_INSTANCE_ID=INSTANCE))
    ref = StdioServerParameters(command="node", args=[str(reference_server())],
                                env={"MEMORY_FILE_PATH": str(tmp / "reference.jsonl")})
    async with (
        stdio_client(core) as (core_read, core_write),
        ClientSession(core_read, core_write) as over_stdio,
        stdio_client(ref) as (ref_read, ref_write),
        ClientSession(ref_read, ref_write) as reference,
    ):
        await over_stdio.initialize()
        await reference.initialize()
        await over_stdio.list_tools()  # caches the output schemas the check uses
        await reference.list_tools()
        checked(await reference.call_tool(
            "create_entities", {"entities": [{"name": "user", "entityType": "person", "observations": [FACT]}]}
        ), "create_entities")
        core_answer = checked(await over_stdio.call_tool("append_memory", {"scope": "user", "memory": f"- {FACT}"}),
                              "append_memory")
        observation = {"entityName": "user", "contents": [f"{FACT} (new)"]}
        ref_answer = checked(await reference.call_tool("add_observations", {"observations": [observation]}),
                             "add_observations")
    return [("memory-core append_memory", over_stdio, "append_memory", core_answer),
            ("reference add_observations", reference, "add_observations", ref_answer)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300, help="checks per round")
    parser.add_argument("--rounds", type=int, default=60, help="rounds; the best is printed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memory-bench-checks-") as tmp:
        found = asyncio.run(answers(Path(tmp)))
    checks: list[Callable[[], Any]] = [
        lambda s=session, t=tool, a=answer: at_once(s.validate_tool_result(t, a)) for _, session, tool, answer in found
    ]
    wires = [answer.model_dump(mode="json", by_alias=True, exclude_none=True) for _, _, _, answer in found]
    parses: list[Callable[[], Any]] = [lambda w=wire: CallToolResult.model_validate(w) for wire in wires]
    times = best_us(checks + parses, args.iterations, args.rounds)
    print("| answer | structured members | output-schema check µs | result parse µs |\n|---|---:|---:|---:|")
    for n, (label, _, _, answer) in enumerate(found):
        print(f"| {label} | {members(answer.structured_content)} | {times[n]:.1f} | {times[len(found) + n]:.1f} |")

if __name__ == "__main__":
    main()
