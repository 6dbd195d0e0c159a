"""``StdioFront``'s time bound, driven in process: the front and the SDK are real, the wire is in memory.

A tool that never finishes cannot be built into the real command, so these tests
serve a small MCPServer of their own through the same front, with bytes in and
out of memory instead of pipes (``tests/mcp/test_stdio.py`` runs the real process).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from memory_core.identity.local import LocalPath
from memory_core.mcp.stdio import StdioFront
from memory_core.mcp.stdio_wire import WireOut
from tests.support.stdio_server import initialize, tool_call

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Collected(WireOut):
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    async def write(self, data: bytes) -> None:
        self.lines.append(json.loads(data))


async def _serve(server: MCPServer, stdin: bytes, *, time_limit: float, limit: int = 1024) -> list[dict[str, Any]]:
    chunks = [stdin[i:i + 7] for i in range(0, len(stdin), 7)]  # lines split across reads

    async def read_chunk() -> bytes:
        return chunks.pop(0) if chunks else b""

    out = Collected()
    front = StdioFront(server, {}, LocalPath().authenticate, max_message_bytes=limit, time_limit=time_limit)
    async with asyncio.timeout(20):
        await front.serve(read_chunk, out)
    return out.lines


async def test_a_request_past_the_time_limit_answers_an_internal_error_and_the_next_is_served() -> None:
    """A tool that hangs is cancelled at the limit with -32603; the request after it is answered."""
    server = MCPServer("slow")

    @server.tool()
    async def hang() -> str:
        await asyncio.sleep(60)
        return "never"

    @server.tool()
    def quick() -> str:
        return "done"

    lines = await _serve(server, initialize() + tool_call(1, "hang", {}) + tool_call(2, "quick", {}), time_limit=0.5)
    answers = {line["id"]: line for line in lines}
    assert answers[1]["error"]["code"] == -32603 and "0.5 s" in answers[1]["error"]["message"]
    assert answers[2]["result"]["content"][0]["text"] == "done"


async def test_lines_split_across_reads_and_over_the_limit_are_framed_exactly() -> None:
    """A line over the limit is refused once and skipped to its end, however the reads cut it; the rest is served."""
    server = MCPServer("echo")

    @server.tool()
    def echo(text: str) -> str:
        return text

    long_call = tool_call(1, "echo", {"text": "y" * 5000})
    lines = await _serve(server, initialize() + long_call + tool_call(2, "echo", {"text": "ok"}), time_limit=5)
    assert [line.get("id") for line in lines if "error" in line] == [None]
    assert {line.get("id") for line in lines} == {0, None, 2}
