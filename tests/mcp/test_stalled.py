"""The count of worker-thread calls abandoned at a time bound, at the MCP front (``memory_core.mcp.stalled``).

While the count is full (a stalled store), a request that needs the store answers 503 before it starts one more
thread; the ones that need none are still answered. The backends' side: tests/mcp/test_backend_inprocess.py.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import anyio
import httpx
import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.errors import Unavailable
from memory_core.domain.identity import Caller
from memory_core.domain.service import MemoryService
from memory_core.identity.model import Authentication
from memory_core.identity.modes import AuthMode
from memory_core.mcp.backend import InProcessBackend
from memory_core.mcp.context import CURRENT_GUIDANCE
from memory_core.mcp.front import McpHttpApp
from memory_core.mcp.guidance import AgentGuidance, guidance_reader
from memory_core.mcp.stalled import MAX_ABANDONED_CALLS, AbandonedCalls, share_of
from memory_core.settings import Settings
from tests.mcp.client import ACCEPT, AGENT_A, INITIALIZE

pytestmark = pytest.mark.anyio

PING = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
TOOL_CALL = {"jsonrpc": "2.0", "id": 6, "method": "tools/call",
             "params": {"name": "get_memory", "arguments": {"scope": "user"}}}


async def _answers_json(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The SDK's app, as far as the front can tell: an empty JSON-RPC result."""
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"jsonrpc": "2.0", "id": 5, "result": {}}'})


async def test_while_too_many_abandoned_calls_still_run_a_request_answers_503_before_it_starts_another() -> None:
    """Calls abandoned at the time bound (here: token checks that never return) are counted; once the count's
    ``limit`` of them still run, a request that needs the store answers HTTP 503 with JSON-RPC -32603 and Retry-After
    before it authenticates, and a signed token's check is refused in place of its thread (no thread is started),
    until they return."""
    abandoned = AbandonedCalls(limit=3)
    release = threading.Event()
    checks: list[str] = []

    def authenticate(headers: Any) -> Any:
        checks.append(headers.get("authorization", ""))
        if headers.get("authorization"):
            release.wait(30)
        return None

    # The bound must outlast a worker thread's start on a loaded machine: a check abandoned before its thread began
    # is dropped, not counted (0.2 s failed 2 runs in 10 at load 11).
    app = McpHttpApp(_answers_json, authenticate=authenticate, time_limit=1.0, abandoned=abandoned)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        try:
            stalled = [await http.post("/api/mcp", json=PING, headers={**ACCEPT, "Authorization": "Bearer t"})
                       for _ in range(5)]
            refused = await http.post("/api/mcp", json={**TOOL_CALL, "id": 45}, headers=ACCEPT)
        finally:
            release.set()
        with anyio.fail_after(5):
            while abandoned.running:
                await anyio.sleep(0.05)
        answered = await http.post("/api/mcp", json=PING, headers=ACCEPT)
    assert [r.status_code for r in stalled] == [503] * 5 and len(checks) == 3 + 1
    assert all("have not returned yet" in r.json()["error"]["message"] for r in stalled[3:])
    assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
    assert refused.json()["id"] == 45 and refused.json()["error"]["code"] == -32603
    assert "have not returned yet" in refused.json()["error"]["message"]
    assert answered.status_code == 200


async def test_while_too_many_abandoned_calls_still_run_requests_that_need_no_store_are_still_answered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A ping, the handshake (initialize, server/discover), the tool list and a notification pass the full count: they
    start no thread. The agent's settings read for their guidance (the real reader over the real backend, which shares
    the front's count as the composition root's do) is refused in place of its thread, said in one warning line
    without a traceback, and the answer carries the base text, as when the settings cannot be read. A tools/call
    still answers 503 before it authenticates. Once the count has room, the same reader reads the guidance."""
    abandoned = AbandonedCalls(limit=0)  # full with no call abandoned
    store = SqliteMemoryStore(":memory:")
    backend = InProcessBackend(MemoryService(store), abandoned=abandoned)
    checks: list[str] = []
    seen: list[AgentGuidance | None] = []

    def authenticate(headers: Any) -> Any:
        checks.append(headers.get("x-api-key", ""))
        return None

    async def inner(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(CURRENT_GUIDANCE.get())
        await _answers_json(scope, receive, send)

    reader = guidance_reader(Settings(memory_default_instance_id=None), backend)
    app = McpHttpApp(inner, authenticate=authenticate, guidance=reader, abandoned=abandoned)
    headers = {**ACCEPT, "X-Api-Key": "k", "X-Agent-Object-Id": AGENT_A, "X-Instance-Id": "inst"}
    passing = [PING, INITIALIZE, {"jsonrpc": "2.0", "id": 7, "method": "server/discover"},
               {"jsonrpc": "2.0", "id": 8, "method": "tools/list"},
               {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            with caplog.at_level(logging.WARNING, logger="memory_core.mcp"):
                answered = [await http.post("/api/mcp", json=body, headers=headers) for body in passing]
                refused = await http.post("/api/mcp", json=TOOL_CALL, headers=headers)
            authenticated = len(checks)
            abandoned.limit = MAX_ABANDONED_CALLS
            room = await http.post("/api/mcp", json=INITIALIZE, headers=headers)
    finally:
        store.close()
    assert [r.status_code for r in answered] == [200] * 5 and authenticated == 5
    assert seen[:5] == [None] * 5  # initialize, server/discover and tools/list read it, refused: base text
    warnings = [r for r in caplog.records if r.name == "memory_core.mcp" and "agent settings" in r.getMessage()]
    assert len(warnings) == 3 and all(r.exc_info is None for r in warnings)
    assert all("have not returned yet" in r.getMessage() for r in warnings)
    assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
    assert refused.json()["id"] == 6 and "have not returned yet" in refused.json()["error"]["message"]
    assert room.status_code == 200 and isinstance(seen[5], AgentGuidance)


async def test_a_user_whose_calls_fill_their_share_answers_503_in_every_instance_and_other_users_are_served() -> None:
    """Once one user's calls in worker threads (here: abandoned ones that never return) fill that user's share, the
    user's tools/call answers the full count's HTTP 503 (JSON-RPC -32603, Retry-After: 5, "... of your earlier calls
    ...") once authenticated, while the process's count has room, whatever instance the request names (the share is
    the authenticated user's: X-INSTANCE-ID is the caller's pick); another user, and the user's own ping, handshake and
    tool list, are answered."""
    abandoned = AbandonedCalls(limit=100, share_limit=2)
    release = threading.Event()

    def authenticate(headers: Any) -> Authentication:
        return Authentication(Caller(headers["x-user"]), AuthMode.KEY)

    async def stall_for(caller: Caller) -> None:
        with anyio.move_on_after(0.5):
            await abandoned.run(release.wait, 30, share=share_of(caller))

    app = McpHttpApp(_answers_json, authenticate=authenticate, abandoned=abandoned)
    alex, blake = {**ACCEPT, "X-User": "alex@contoso.com"}, {**ACCEPT, "X-User": "blake@contoso.com"}
    try:
        for _ in range(2):
            await stall_for(Caller("alex@contoso.com"))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            refused = [await http.post("/api/mcp", json=TOOL_CALL, headers=headers)
                       for headers in (alex, {**alex, "X-Instance-Id": "inst"}, {**alex, "X-Instance-Id": "other"})]
            served = await http.post("/api/mcp", json=TOOL_CALL, headers=blake)
            passing = [await http.post("/api/mcp", json=body, headers=alex)
                       for body in (PING, INITIALIZE, {"jsonrpc": "2.0", "id": 8, "method": "tools/list"})]
    finally:
        release.set()
    assert abandoned.running == 2 and not abandoned.full
    assert [r.status_code for r in refused] == [503] * 3 and refused[0].headers["retry-after"] == "5"
    assert refused[0].json()["id"] == 6 and refused[0].json()["error"]["code"] == -32603
    assert {r.json()["error"]["message"] for r in refused} == {
        "2 of your earlier calls to the store have not returned yet; retry later"}
    assert [r.status_code for r in [served, *passing]] == [200] * 4


# -- a share's line (the stdio process's count) -------------------------------------------------------------------


async def test_with_a_line_calls_past_the_share_wait_and_run_in_turn_never_more_than_the_share_at_once() -> None:
    """With a ``share_line``, a user's calls past their share wait (no thread) instead of being refused, and take the
    places calls give back in the order they came; the share's count never passes ``share_limit``."""
    abandoned = AbandonedCalls(share_limit=1, share_line=8)
    gate = threading.Semaphore(0)
    started: list[int] = []
    peak = 0

    def work(number: int) -> int:
        nonlocal peak
        peak = max(peak, abandoned.running_for("alex"))
        started.append(number)
        gate.acquire(timeout=10)
        return number

    answers: list[int] = []

    async def one(number: int) -> None:
        answers.append(await abandoned.run(work, number, share="alex"))

    async with anyio.create_task_group() as group:
        for number in range(9):
            group.start_soon(one, number)
            await anyio.sleep(0.01)  # each call reaches the line before the next, so the order is known
        assert abandoned.running_for("alex") == 1 and abandoned.waiting_for("alex") == 8 and started == [0]
        with anyio.fail_after(10):
            for number in range(1, 9):  # one place given back at a time: the next in line starts
                gate.release()
                while len(started) <= number:
                    await anyio.sleep(0.005)
        gate.release()
    assert started == list(range(9)) and sorted(answers) == list(range(9)) and peak == 1
    assert abandoned.shares() == 0 and abandoned.running == 0


async def test_a_call_cancelled_while_waiting_leaves_the_line_and_the_place_passes_on() -> None:
    """A waiting call whose caller's bound ends first leaves the line without ever running; the place given back next
    goes to the call after it, and nothing stays counted."""
    abandoned = AbandonedCalls(share_limit=1, share_line=4)
    release = threading.Event()
    ran: list[str] = []

    def work(name: str) -> str:
        release.wait(10)
        ran.append(name)
        return name

    async with anyio.create_task_group() as group:
        results: dict[str, str] = {}

        async def one(name: str, bound: float) -> None:
            with anyio.move_on_after(bound):
                results[name] = await abandoned.run(work, name, share="alex")

        group.start_soon(one, "first", 10)
        await anyio.sleep(0.01)
        group.start_soon(one, "given up", 0.1)
        await anyio.sleep(0.01)
        group.start_soon(one, "last", 10)
        await anyio.sleep(0.3)  # "given up" is gone from the line by now
        assert abandoned.waiting_for("alex") == 1
        release.set()
    assert results == {"first": "first", "last": "last"} and ran == ["first", "last"]
    assert abandoned.shares() == 0


async def test_with_a_line_a_share_held_by_abandoned_calls_or_a_full_line_is_refused_at_once() -> None:
    """A line does not wait on a stalled store: while every place of the share is held by an abandoned call, the next
    call is refused at once ("... have not returned yet"), as without a line; and a call past a full line is refused
    with the count of those waiting. Another user is still served."""
    abandoned = AbandonedCalls(share_limit=2, share_line=1)
    release = threading.Event()
    try:
        for _ in range(2):
            with anyio.move_on_after(0.05):
                await abandoned.run(release.wait, 10, share="alex")
        assert abandoned.running == 2 and abandoned.full_for("alex")
        with anyio.fail_after(1), pytest.raises(Unavailable, match=r"^2 of your earlier calls to the store have not "
                                                                   r"returned yet; retry later$"):
            await abandoned.run(release.wait, 10, share="alex")
        assert await abandoned.run(lambda: "served", share="blake") == "served"

        blocked = threading.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: abandoned.run(blocked.wait, 10, share="blake"))
            group.start_soon(lambda: abandoned.run(blocked.wait, 10, share="blake"))
            await anyio.sleep(0.05)
            group.start_soon(lambda: abandoned.run(lambda: None, share="blake"))  # waits: the line holds one
            await anyio.sleep(0.05)
            assert abandoned.waiting_for("blake") == 1 and abandoned.full_for("blake")
            with pytest.raises(Unavailable, match=r"^2 of your earlier calls to the store have not returned yet and 1 "
                                                  r"more wait for them; retry later$"):
                await abandoned.run(lambda: None, share="blake")
            blocked.set()
    finally:
        release.set()
