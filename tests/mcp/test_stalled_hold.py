"""A request's place in its user's share, taken at the MCP front before the protocol runs (``AbandonedCalls.hold``).

Past a user's share, a request waits in the share's line (first come, first served, no thread) for a bounded time
behind a bounded number of others; past either it is refused with ``TooManyCalls`` (429), while a stalled share stays
``Unavailable`` (503). The request's store call runs in the place it holds. Over real sockets against ``serve``:
tests/mcp/test_stalled_queue_http.py.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import httpx
import pytest

from memory_core.domain.errors import ConfigurationError, TooManyCalls, Unavailable
from memory_core.domain.identity import Caller
from memory_core.identity.model import Authentication
from memory_core.identity.modes import AuthMode
from memory_core.mcp.context import CURRENT_PLACE
from memory_core.mcp.front import McpHttpApp
from memory_core.mcp.stalled import RETRY_AFTER_SECONDS, AbandonedCalls, HeldPlace
from memory_core.settings import settings_from
from tests.mcp.client import ACCEPT

pytestmark = pytest.mark.anyio

TOOL_CALL = {"jsonrpc": "2.0", "id": 6, "method": "tools/call",
             "params": {"name": "get_memory", "arguments": {"scope": "user"}}}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _fill(abandoned: AbandonedCalls, share: str, gate: threading.Event, group: Any) -> None:
    """Every place of ``share`` taken by a call running in a worker thread until ``gate`` is set."""
    for _ in range(abandoned.share_limit):
        group.start_soon(lambda: abandoned.run(gate.wait, 10, share=share))
    with anyio.fail_after(5):
        while abandoned.running_for(share) < abandoned.share_limit:
            await anyio.sleep(0.005)


async def test_requests_past_the_share_wait_in_turn_and_each_store_call_runs_in_the_place_its_request_holds() -> None:
    """Three requests past a full share of one wait (first come, first served) and take the places given back in the
    order they came; each one's store call runs in the place it holds, so the share never counts more than its limit
    and nothing is counted once all have returned."""
    abandoned = AbandonedCalls(share_limit=1)
    gate = threading.Event()
    order: list[int] = []
    peak = 0

    async def request(number: int) -> None:
        nonlocal peak
        held = await abandoned.hold("alex", line=3, wait=10)
        token = CURRENT_PLACE.set(held)
        try:
            peak = max(peak, abandoned.running_for("alex"))
            order.append(number)
            await abandoned.run(lambda: None, share="alex")
            assert not held.in_use and abandoned.running_for("alex") == 1  # kept for the request's next call
        finally:
            CURRENT_PLACE.reset(token)
            abandoned.give_back(held)

    async with anyio.create_task_group() as group:
        await _fill(abandoned, "alex", gate, group)
        for number in range(3):
            group.start_soon(request, number)
            await anyio.sleep(0.02)  # each reaches the line before the next
        assert abandoned.waiting_for("alex") == 3 and order == []
        gate.set()
    assert order == [0, 1, 2] and peak == 1
    assert abandoned.shares() == 0 and abandoned.running == 0


async def test_a_request_past_a_full_line_is_refused_at_once_and_one_that_waits_too_long_leaves_the_line() -> None:
    """Behind a full line, a request is refused at once with ``TooManyCalls`` (Retry-After, the counts); a request
    whose wait ends first is refused with it too, after its wait, and leaves the line. Another user is not held."""
    abandoned = AbandonedCalls(share_limit=2)
    gate = threading.Event()
    async with anyio.create_task_group() as group:
        await _fill(abandoned, "alex", gate, group)
        waited: list[BaseException] = []

        async def waits() -> None:
            try:
                await abandoned.hold("alex", line=1, wait=0.3)
            except TooManyCalls as refused:
                waited.append(refused)

        group.start_soon(waits)
        await anyio.sleep(0.05)
        with pytest.raises(TooManyCalls, match=r"^2 of your earlier calls to the store have not returned yet and 1 "
                                               r"more wait for them; retry later$") as full:
            await abandoned.hold("alex", line=1, wait=10)
        assert full.value.retry_after_seconds == RETRY_AFTER_SECONDS and full.value.code == "too_many_calls"
        blake = await abandoned.hold("blake", line=0, wait=0.1)  # another user's share has room
        abandoned.give_back(blake)
        with anyio.fail_after(5):
            while not waited:
                await anyio.sleep(0.01)
        assert abandoned.waiting_for("alex") == 0
        gate.set()
    assert str(waited[0]) == ("2 of your earlier calls to the store had not returned after this one waited 0.3 s for "
                              "a place; retry later")
    assert abandoned.shares() == 0


async def test_a_request_cancelled_while_waiting_leaves_the_line_and_the_next_one_takes_the_place() -> None:
    """A waiting request cancelled (its client gone, its time bound) leaves the line at once; the place given back
    next goes to the request after it."""
    abandoned = AbandonedCalls(share_limit=1)
    gate = threading.Event()
    held: list[HeldPlace] = []
    async with anyio.create_task_group() as group:
        await _fill(abandoned, "alex", gate, group)
        gone = anyio.CancelScope()
        group.start_soon(lambda: _hold_in(gone, abandoned))
        await anyio.sleep(0.05)
        assert abandoned.waiting_for("alex") == 1
        gone.cancel()
        await anyio.sleep(0.05)
        assert abandoned.waiting_for("alex") == 0

        async def next_one() -> None:
            held.append(await abandoned.hold("alex", line=1, wait=10))

        group.start_soon(next_one)
        await anyio.sleep(0.05)
        assert abandoned.waiting_for("alex") == 1
        gate.set()
    assert len(held) == 1 and abandoned.running_for("alex") == 1
    abandoned.give_back(held[0])
    abandoned.give_back(held[0])  # once only
    assert abandoned.shares() == 0


async def _hold_in(scope: anyio.CancelScope, abandoned: AbandonedCalls) -> None:
    with scope:
        await abandoned.hold("alex", line=1, wait=10)


async def test_a_held_place_is_given_back_once_as_its_request_ends_and_its_calls_run_in_it_in_turn() -> None:
    """``give_back`` frees a place (twice: once); a call run in it hands it back to the request as its thread returns,
    so the request's next call runs in it too, and ``give_back`` frees it at the end. A call of another count or share
    takes a place of its own."""
    abandoned = AbandonedCalls(share_limit=2)
    unused = await abandoned.hold("alex", line=0, wait=1)
    assert abandoned.running_for("alex") == 1
    abandoned.give_back(unused)
    abandoned.give_back(unused)
    assert abandoned.running_for("alex") == 0

    used = await abandoned.hold("alex", line=0, wait=1)
    other = AbandonedCalls(share_limit=2)
    seen: list[int] = []
    token = CURRENT_PLACE.set(used)
    try:
        await other.run(lambda: seen.append(other.running_for("alex")), share="alex")  # not this place's count
        await abandoned.run(lambda: seen.append(abandoned.running_for("blake")), share="blake")
        assert not used.in_use
        await abandoned.run(lambda: seen.append(abandoned.running_for("alex")), share="alex")
        await abandoned.run(lambda: seen.append(abandoned.running_for("alex")), share="alex")  # the same place
    finally:
        CURRENT_PLACE.reset(token)
    assert seen == [1, 1, 1, 1] and abandoned.running_for("alex") == 1
    abandoned.give_back(used)
    assert abandoned.running_for("alex") == 0
    abandoned.give_back(used)
    assert abandoned.shares() == 0 and other.shares() == 0


async def test_a_request_that_waited_runs_its_second_call_in_its_place_and_the_next_in_line_waits_for_its_end() -> None:
    """A request that waited in the line (a clear: a read, then the clear) runs both its calls in the place it was
    handed, though the share has no line for calls (0, as over HTTP) and a later request waits; that one gets the place
    only as the first request ends, first come first served."""
    abandoned = AbandonedCalls(share_limit=1)
    gate = threading.Event()
    order: list[str] = []

    async def request(name: str, calls: int) -> None:
        held = await abandoned.hold("alex", line=5, wait=10)
        token = CURRENT_PLACE.set(held)
        try:
            for number in range(calls):
                await abandoned.run(order.append, f"{name}{number}", share="alex")
                await anyio.sleep(0.02)  # the later request had every chance to take the place
        finally:
            CURRENT_PLACE.reset(token)
            abandoned.give_back(held)

    async with anyio.create_task_group() as group:
        await _fill(abandoned, "alex", gate, group)
        group.start_soon(request, "clear", 2)
        await anyio.sleep(0.02)
        group.start_soon(request, "later", 1)
        await anyio.sleep(0.02)
        assert abandoned.waiting_for("alex") == 2
        gate.set()
    assert order == ["clear0", "clear1", "later0"]
    assert abandoned.shares() == 0


async def test_a_call_abandoned_in_a_held_place_keeps_it_past_its_request_until_its_thread_returns() -> None:
    """A request's call abandoned at its time bound keeps the request's place after the request ends: the next in line
    gets it only when that call's thread returns, and it is given back once."""
    abandoned = AbandonedCalls(share_limit=1)
    release = threading.Event()
    held = await abandoned.hold("alex", line=1, wait=1)
    token = CURRENT_PLACE.set(held)
    try:
        with anyio.move_on_after(0.05):
            await abandoned.run(release.wait, 10, share="alex")
    finally:
        CURRENT_PLACE.reset(token)
        abandoned.give_back(held)
    assert abandoned.running_for("alex") == 1 and abandoned.running == 1
    with pytest.raises(Unavailable):  # its only place is held by an abandoned call: a stalled share
        await abandoned.hold("alex", line=1, wait=0.1)
    release.set()
    with anyio.fail_after(5):
        while abandoned.running:
            await anyio.sleep(0.01)
    assert abandoned.shares() == 0
    again = await abandoned.hold("alex", line=0, wait=0.1)
    abandoned.give_back(again)
    abandoned.give_back(held)
    assert abandoned.shares() == 0


async def test_a_share_held_by_abandoned_calls_is_refused_503_not_429() -> None:
    """While every place of a share is held by an abandoned call (a stalled store), a request is refused at once with
    ``Unavailable``, not ``TooManyCalls``: waiting would not help, and the store, not the caller, is what is slow."""
    abandoned = AbandonedCalls(share_limit=1)
    release = threading.Event()
    try:
        with anyio.move_on_after(0.05):
            await abandoned.run(release.wait, 10, share="alex")
        with anyio.fail_after(1), pytest.raises(Unavailable) as refused:
            await abandoned.hold("alex", line=5, wait=10)
        assert not isinstance(refused.value, TooManyCalls)
    finally:
        release.set()


@pytest.mark.alone
async def test_the_front_answers_a_request_past_the_line_429_too_many_calls_with_retry_after() -> None:
    """At the front, a request past the share's line answers HTTP 429 with Retry-After, JSON-RPC -32603 (as the 503
    it replaces) and the error's code as ``data.code``, after waiting at most ``queue_wait`` (and half the time
    limit)."""
    abandoned = AbandonedCalls(share_limit=1)
    gate = threading.Event()

    def authenticate(headers: Any) -> Authentication:
        return Authentication(Caller("alex@contoso.com"), AuthMode.KEY)

    async def answers_json(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"jsonrpc": "2.0", "id": 6, "result": {}}'})

    app = McpHttpApp(answers_json, authenticate=authenticate, abandoned=abandoned, queue_length=0, queue_wait=30,
                     time_limit=1)
    waiting = McpHttpApp(answers_json, authenticate=authenticate, abandoned=abandoned, queue_length=5, queue_wait=30,
                         time_limit=1)
    async with anyio.create_task_group() as group:
        await _fill(abandoned, "alex@contoso.com", gate, group)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
            refused = await http.post("/api/mcp", json=TOOL_CALL, headers=ACCEPT)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=waiting), base_url="http://localhost") as http:
            started = time.monotonic()
            waited = await http.post("/api/mcp", json=TOOL_CALL, headers=ACCEPT)
            elapsed = time.monotonic() - started
        gate.set()
    assert refused.status_code == 429 and refused.headers["retry-after"] == str(RETRY_AFTER_SECONDS)
    assert refused.json()["id"] == 6 and refused.json()["error"]["code"] == -32603
    assert refused.json()["error"]["data"] == {"code": "too_many_calls"}
    assert waited.status_code == 429 and waited.json()["error"]["data"] == {"code": "too_many_calls"}
    assert "waited 0.5 s for a place" in waited.json()["error"]["message"] and 0.4 < elapsed < 1, elapsed
    assert abandoned.shares() == 0


def test_the_line_settings_default_to_40_calls_and_10_s_and_refuse_values_out_of_range() -> None:
    """MEMORY_MCP_QUEUE_LENGTH defaults to 40 (0 to 1000; 0: refused at once) and MEMORY_MCP_QUEUE_WAIT to 10 s (more
    than 0, at most 600); anything else is a configuration error naming the variable, never a line that cannot end."""
    defaults = settings_from({})
    assert (defaults.memory_mcp_queue_length, defaults.memory_mcp_queue_wait) == (40, 10.0)
    assert settings_from({"MEMORY_MCP_QUEUE_LENGTH": "0", "MEMORY_MCP_QUEUE_WAIT": "0.5"}).memory_mcp_queue_length == 0
    for name, value in (("MEMORY_MCP_QUEUE_LENGTH", "-1"), ("MEMORY_MCP_QUEUE_LENGTH", "1001"),
                        ("MEMORY_MCP_QUEUE_WAIT", "0"), ("MEMORY_MCP_QUEUE_WAIT", "601"),
                        ("MEMORY_MCP_QUEUE_WAIT", "inf"), ("MEMORY_MCP_QUEUE_LENGTH", "many")):
        with pytest.raises(ConfigurationError, match=name):
            settings_from({name: value})
