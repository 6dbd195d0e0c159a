"""``StdioFront``'s time bound, driven in process: the front and the SDK are real, the wire is in memory.

A tool that never finishes cannot be built into the real command, so these tests
serve a small MCPServer of their own through the same front, with bytes in and
out of memory instead of pipes (``tests/mcp/test_stdio.py`` runs the real process).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import time
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION

from memory_core.identity.local import LocalPath
from memory_core.identity.model import Authentication
from memory_core.mcp.context import CURRENT_AUTHENTICATION
from memory_core.mcp.stdio_front import StdioFront
from tests.support.stdio_server import Collected, initialize, reading, serve_in_memory, serve_through_pipes, tool_call

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _serve(server: MCPServer, stdin: bytes, *, time_limit: float, limit: int = 1024) -> list[dict[str, Any]]:
    chunks = [stdin[i:i + 7] for i in range(0, len(stdin), 7)]  # lines split across reads
    front = StdioFront(server, {}, LocalPath().authenticate, max_message_bytes=limit, time_limit=time_limit)
    return await serve_in_memory(front, *chunks)


def _hang_and_quick(name: str) -> MCPServer:
    """A server of two tools: ``hang`` answers after 60 s (past any time limit here), ``quick`` at once."""
    server = MCPServer(name)

    @server.tool()
    async def hang() -> str:
        await asyncio.sleep(60)
        return "never"

    @server.tool()
    def quick() -> str:
        return "done"

    return server


async def test_a_request_past_the_time_limit_answers_an_internal_error_and_the_next_is_served() -> None:
    """A tool that hangs is cancelled at the limit with -32603; the request after it is answered."""
    server = _hang_and_quick("slow")

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


async def test_each_message_is_served_as_the_identity_authenticated_for_its_own_line() -> None:
    """Requests in flight together each see the authentication made when their line was read, not a later one's."""
    server = MCPServer("who")
    seen = 0

    def authenticate(headers: Any) -> Authentication:
        nonlocal seen
        seen += 1
        local = LocalPath().authenticate(headers)
        return dataclasses.replace(local, caller=dataclasses.replace(local.caller, name=f"line {seen}"))

    @server.tool()
    async def whoami(delay: float) -> str:
        await asyncio.sleep(delay)  # the lines after this one are read and authenticated meanwhile
        authentication = CURRENT_AUTHENTICATION.get()
        assert authentication is not None
        return authentication.caller.name or ""

    calls = b"".join(tool_call(i, "whoami", {"delay": (20 - i) / 200}) for i in range(1, 21))
    front = StdioFront(server, {}, authenticate, max_message_bytes=1024, time_limit=5)
    lines = await serve_in_memory(front, initialize() + calls)
    names = {line["id"]: line["result"]["content"][0]["text"] for line in lines if line.get("id", 0) >= 1}
    # initialize and notifications/initialized were lines 1 and 2
    assert names == {i: f"line {i + 2}" for i in range(1, 21)}


def test_answers_in_flight_together_all_reach_a_pipe_as_whole_lines_before_serving_ends() -> None:
    """30 answers of 100 KB, finishing in any order, through pipes in and out: each arrives once, unbroken.

    They are far more than a pipe holds, so most wait in the event loop's
    buffer; none may be lost when input ends and the server stops.
    """
    server = MCPServer("bulk")

    @server.tool()
    async def bulk(n: int) -> str:
        await asyncio.sleep(random.random() / 50)
        return str(n) * 100_000

    front = StdioFront(server, {}, LocalPath().authenticate, max_message_bytes=1024, time_limit=20)
    stdin = initialize() + b"".join(tool_call(n, "bulk", {"n": n % 10}) for n in range(1, 31))
    answers = serve_through_pipes(front, stdin, stall=0.5)  # every answer is ready long before it is read
    texts = {a["id"]: a["result"]["content"][0]["text"] for a in answers if a.get("id", 0) >= 1}
    assert sorted(texts) == list(range(1, 31)) and len(answers) == 31
    assert all(text == str(n % 10) * 100_000 for n, text in texts.items())


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _line(request_id: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if request_id is not None:
        message["id"] = request_id
    return json.dumps(message).encode() + b"\n"


def _echo_server() -> MCPServer:
    server = MCPServer("echo")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


async def test_a_first_request_in_the_stateless_era_opens_a_stateless_connection_that_refuses_initialize() -> None:
    """The era is the first request's, whatever notifications came before it; initialize after it is refused."""
    stdin = b"".join([
        _line(None, "notifications/initialized"),  # before any request: kept, then served in the chosen era
        _line(1, "tools/call", {"name": "echo", "arguments": {"text": "modern"}, "_meta": MODERN_META}),
        initialize(2),
    ])
    lines = await _serve(_echo_server(), stdin, time_limit=5)
    answers = {line.get("id"): line for line in lines}
    assert answers[1]["result"]["content"][0]["text"] == "modern"
    assert answers[2]["error"]["code"] == UNSUPPORTED_PROTOCOL_VERSION and "2026-07-28" in answers[2]["error"]["message"]


async def test_a_handshake_connection_refuses_a_request_in_the_stateless_era() -> None:
    stdin = initialize(0) + _line(1, "tools/call", {"name": "echo", "arguments": {"text": "x"}, "_meta": MODERN_META}) \
        + tool_call(2, "echo", {"text": "handshake"})
    lines = await _serve(_echo_server(), stdin, time_limit=5)
    answers = {line.get("id"): line for line in lines}
    assert answers[0]["result"]["protocolVersion"] == "2025-11-25"
    assert answers[1]["error"]["code"] == -32600 and "handshake protocol era" in answers[1]["error"]["message"]
    assert answers[2]["result"]["content"][0]["text"] == "handshake"


async def test_input_with_no_request_ends_cleanly_with_nothing_answered() -> None:
    lines = await _serve(_echo_server(), _line(None, "notifications/initialized") * 20, time_limit=5)
    assert lines == []


@pytest.mark.alone
async def test_a_stalled_guidance_read_falls_back_to_the_base_text_within_the_bound() -> None:
    """The agent's settings are read within the time bound over stdio too: a read that stalls is given up, and
    initialize is answered (with the base instructions) instead of waiting for it."""
    server = MCPServer("guided", instructions="base instructions")

    async def stalled(headers: Any) -> None:
        await asyncio.sleep(5)

    front = StdioFront(server, {"x-agent-object-id": "/agents/a"}, LocalPath().authenticate, stalled,
                       max_message_bytes=1024, time_limit=0.6)
    started = time.monotonic()
    lines = await serve_in_memory(front, initialize())
    assert time.monotonic() - started < 1.5
    assert lines[0]["result"]["instructions"] == "base instructions"


# -- reading no faster than answering ----------------------------------------------------------------------


async def test_no_more_requests_than_the_limit_are_read_before_one_is_answered() -> None:
    """A client that pipelines 40 requests has at most ``max_in_flight`` of them read and running at once; the
    rest wait unread (in the pipe, not in memory), and every one is answered in the end."""
    server = MCPServer("gate")
    running = 0
    most = 0
    release = asyncio.Event()

    @server.tool()
    async def held(n: int) -> str:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await release.wait()
        running -= 1
        return str(n)

    read = reading(initialize() + b"".join(tool_call(n, "held", {"n": n}) for n in range(1, 41)))
    taken = 0

    async def read_chunk() -> bytes:
        nonlocal taken
        taken += 1
        return await read()

    out = Collected()
    front = StdioFront(server, {}, LocalPath().authenticate, max_message_bytes=1024, time_limit=10, max_in_flight=4)

    async def open_the_gate() -> None:
        while running < 4:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # time enough for the reader to run ahead, if it could
        assert most == 4 and taken == 1  # four running, the input's end not even asked for
        release.set()

    async with asyncio.timeout(20), asyncio.TaskGroup() as group:
        group.create_task(open_the_gate())
        group.create_task(front.serve(read_chunk, out))
    assert most == 4
    assert sorted(line["id"] for line in out.lines) == list(range(41))


@pytest.mark.alone
async def test_a_cancellation_sent_while_the_limit_is_reached_is_read_and_makes_room() -> None:
    """Requests at the limit do not keep a cancellation out: a notification is read while a request waits for room,
    its request is settled, and the request behind it is served at once, not after the time bound."""
    server = _hang_and_quick("cancel")

    def cancel(request_id: int) -> bytes:
        return _line(None, "notifications/cancelled", {"requestId": request_id, "reason": "user"})

    stdin = initialize() + tool_call(1, "hang", {}) + tool_call(2, "hang", {}) + cancel(1) + tool_call(3, "quick", {}) \
        + cancel(2)
    front = StdioFront(server, {}, LocalPath().authenticate, max_message_bytes=1024, time_limit=8, max_in_flight=2)
    started = time.monotonic()
    lines = await serve_in_memory(front, stdin)
    assert time.monotonic() - started < 3
    answers = {line["id"]: line for line in lines}
    assert answers[3]["result"]["content"][0]["text"] == "done"
    assert 1 not in answers and 2 not in answers  # cancelled: MCP sends no answer



async def test_requests_reusing_the_id_of_one_in_flight_are_refused_at_once_and_not_served() -> None:
    """40 pipelined requests that all carry id 7 are not 40 in flight under one id (past the bound, unheld): the
    first is served, each other one is refused at once with -32600 and that id, its tool never run. Ids are one as
    the SDK correlates them (the string "7" is 7); once 7 is answered, the id is free again."""
    server = MCPServer("duplicates")
    started = 0
    release = asyncio.Event()

    @server.tool()
    async def held(n: int) -> str:
        nonlocal started
        started += 1
        await release.wait()
        return str(n)

    chunks: asyncio.Queue[bytes] = asyncio.Queue()
    chunks.put_nowait(initialize() + b"".join(tool_call(7, "held", {"n": n}) for n in range(1, 40))
                      + tool_call("7", "held", {"n": 40}))
    out = Collected()
    front = StdioFront(server, {}, LocalPath().authenticate, max_message_bytes=1024, time_limit=10, max_in_flight=4)

    async def reuse_the_id_once_answered() -> None:
        # initialize's answer and the 39 refusals, none of them waiting for room or for the tool
        while len(out.lines) < 40 or not started:
            await asyncio.sleep(0.01)
        release.set()
        while len(out.lines) < 41:
            await asyncio.sleep(0.01)
        chunks.put_nowait(tool_call(7, "held", {"n": 41}))
        chunks.put_nowait(b"")  # end of input

    async with asyncio.timeout(10), asyncio.TaskGroup() as group:
        group.create_task(reuse_the_id_once_answered())
        group.create_task(front.serve(chunks.get, out))
    refusals = [line for line in out.lines if "error" in line]
    assert len(refusals) == 39 and started == 2
    assert {line["id"] for line in refusals} == {7, "7"}
    assert all(line["error"]["code"] == -32600 and "already in use" in line["error"]["message"] for line in refusals)
    assert [line["result"]["content"][0]["text"] for line in out.lines if line["id"] == 7 and "result" in line] \
        == ["1", "41"]


def test_a_client_not_reading_its_output_stops_the_reading_of_its_input() -> None:
    """200 answers of 100 KB to a client that reads nothing for a while: once the pipe and the event loop's buffer
    are full, no further request is read (memory stays bounded, not 20 MB of answers); then all are delivered."""
    server = MCPServer("bulk")
    started = 0

    @server.tool()
    async def bulk(n: int) -> str:
        nonlocal started
        started += 1
        return str(n % 10) * 100_000

    started_while_stalled: list[int] = []
    front = StdioFront(server, {}, LocalPath().authenticate, max_message_bytes=1024, time_limit=20)
    stdin = initialize() + b"".join(tool_call(n, "bulk", {"n": n}) for n in range(1, 201))
    answers = serve_through_pipes(front, stdin, stall=1.0, read_size=65536,
                                  on_reading=lambda: started_while_stalled.append(started))
    assert started_while_stalled[0] <= 40
    assert sorted(a["id"] for a in answers) == list(range(201))
