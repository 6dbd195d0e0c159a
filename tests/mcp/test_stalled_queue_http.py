"""A user's line for their share of the worker threads, over real sockets against ``python -m memory_core serve``.

Past a user's share (``stalled.MAX_CALLS_PER_USER`` calls in worker threads), an MCP call over HTTP waits in that
user's line instead of answering 503, first come first served, for at most MEMORY_MCP_QUEUE_WAIT seconds behind at most
MEMORY_MCP_QUEUE_LENGTH others; past either it answers 429 ``too_many_calls`` with Retry-After. The calls are held in
their share by a write lock a test connection takes on the SQLite file (appends wait on it; reads do not, under WAL),
so the share stays full for as long as the test chooses. The line itself: tests/mcp/test_stalled_hold.py.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from memory_core.mcp.stalled import MAX_CALLS_PER_USER, RETRY_AFTER_SECONDS
from tests.mcp.client import ACCEPT, call, mcp_headers, text
from tests.support.local_server import USER_KEY, RunningServer, running_server
from tests.support.server_threads import ThreadPeak, write_locked

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts the server's threads in /proc")]

ALEX, BLAKE = "alex@contoso.com", "blake@contoso.com"
BURST = 30
ENV = {"MEMORY_DEFAULT_INSTANCE_ID": "queue", "MEMORY_MCP_ALLOWED_HOSTS": "", "WEBSITE_HOSTNAME": "",
       "MEMORY_STORE": "sqlite", "MEMORY_COREAPI_BASE_URL": ""}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextmanager
def _server(tmp_path: Path, **env: str) -> Iterator[RunningServer]:
    with running_server(tmp_path, {**ENV, **env}) as running:
        yield running


def _append_call(number: int, memory: str | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": number, "method": "tools/call",
            "params": {"name": "append_memory", "arguments": {"scope": "user", "memory": memory or f"fact {number}"}}}


async def _raw_appends(url: str, upn: str, numbers: range,
                       answers: list[httpx.Response] | None = None) -> list[httpx.Response]:
    """One raw JSON-RPC tools/call (append) per number, all at once, each on its own connection; each answer is added
    to ``answers`` as it comes."""
    answers = [] if answers is None else answers
    headers = {**ACCEPT, **mcp_headers(USER_KEY, upn)}

    async def one(number: int) -> None:
        async with httpx.AsyncClient(timeout=60) as http:
            answers.append(await http.post(url, json=_append_call(number), headers=headers))

    async with anyio.create_task_group() as group:
        for number in numbers:
            group.start_soon(one, number)
    return answers


async def _stored(url: str, upn: str) -> str:
    return text(await call(url, mcp_headers(USER_KEY, upn), "get_memory", {"scope": "user"}))


async def test_thirty_calls_of_one_user_at_once_all_succeed_some_after_waiting_and_another_user_is_not_delayed(
    tmp_path: Path,
) -> None:
    """With the defaults, Alex sends 30 appends at once with the official client while the file's write lock is held:
    at most ``MAX_CALLS_PER_USER`` of them hold worker threads (the server's threads sampled from /proc), so the other
    20 waited in Alex's line; once the lock is released every one succeeds (before, 20 answered 503). Meanwhile Blake's
    read is answered while all of Alex's calls still wait, within 5 s."""
    with _server(tmp_path) as server:
        url = f"{server.api}/mcp"
        await call(url, mcp_headers(USER_KEY, BLAKE), "append_memory", {"scope": "user", "memory": "Blake: aisle."})
        peak = ThreadPeak(server.process.pid)
        results: list[Any] = []
        answered_at: list[float] = []

        async def append(number: int) -> None:
            results.append(await call(url, mcp_headers(USER_KEY, ALEX), "append_memory",
                                      {"scope": "user", "memory": f"Alex fact {number}."}))
            answered_at.append(time.monotonic())

        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                group.start_soon(peak.sample)
                with write_locked(server.env["MEMORY_SQLITE_PATH"]):
                    for number in range(BURST):
                        group.start_soon(append, number)
                    await anyio.sleep(3)  # the burst has reached the server: 10 in threads, 20 in the line
                    started = time.monotonic()
                    blake = await _stored(url, BLAKE)
                    blake_done = time.monotonic()
                    await anyio.sleep(0.5)
                    held = peak.added
                while len(results) < BURST:
                    await anyio.sleep(0.05)
                peak.stop()
        stored = await _stored(url, ALEX)
    assert "Blake: aisle." in blake and blake_done - started < 5, blake_done - started
    assert not answered_at or min(answered_at) > blake_done  # every one of Alex's calls was still waiting
    assert held <= MAX_CALLS_PER_USER, (peak.before, peak.most)
    assert [r.is_error for r in results] == [False] * BURST, [text(r) for r in results if r.is_error]
    assert all(f"Alex fact {number}." in stored for number in range(BURST))


async def test_past_the_line_or_its_wait_a_call_answers_429_too_many_calls_with_retry_after(tmp_path: Path) -> None:
    """With a line of 5 and a wait of 1 s, 20 appends of Alex at once while the lock is held: 10 hold Alex's share, 5
    wait and are refused after 1 s, 5 find the line full and are refused at once; every refusal is HTTP 429 with
    Retry-After, JSON-RPC -32603 and ``data.code`` ``too_many_calls``. The 10 in the share succeed once the lock is
    released, and only their facts are stored."""
    with _server(tmp_path, MEMORY_MCP_QUEUE_LENGTH="5", MEMORY_MCP_QUEUE_WAIT="1") as server:
        url = f"{server.api}/mcp"
        await _stored(url, BLAKE)  # the file and its tables made (and in WAL mode) before the test locks it
        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                answers: list[httpx.Response] = []
                with write_locked(server.env["MEMORY_SQLITE_PATH"]):
                    group.start_soon(_raw_appends, url, ALEX, range(1, 21), answers)
                    while len(answers) < 10:  # the 10 past the share and its line are refused while it stays full
                        await anyio.sleep(0.05)
        stored = await _stored(url, ALEX)
    refused = [a for a in answers if a.status_code == 429]
    served = [a for a in answers if a.status_code == 200]
    assert len(served) == MAX_CALLS_PER_USER and len(refused) == 10, [a.text for a in answers]
    assert all(a.headers["retry-after"] == str(RETRY_AFTER_SECONDS) for a in refused)
    assert all(a.json()["error"]["code"] == -32603 and a.json()["error"]["data"] == {"code": "too_many_calls"}
               for a in refused)
    messages = sorted(a.json()["error"]["message"] for a in refused)
    assert sum("waited 1 s for a place" in m for m in messages) == 5, messages
    assert sum("and 5 more wait for them" in m for m in messages) == 5, messages
    assert all(not a.json()["result"]["isError"] for a in served)
    assert {int(n) for n in re.findall(r"\bfact (\d+)\b", stored)} == {a.json()["id"] for a in served}


async def test_a_call_whose_client_disconnects_while_it_waits_leaves_the_line(tmp_path: Path) -> None:
    """With a line of 1, Alex's share full and one call waiting, the next call is refused at once (the line is full);
    once the waiting call's client disconnects, the next call takes its place in the line and succeeds after the
    lock is released, and the call whose client left never ran (its fact is not stored)."""
    with _server(tmp_path, MEMORY_MCP_QUEUE_LENGTH="1") as server:
        url = f"{server.api}/mcp"
        host, port = server.api.removeprefix("http://").split("/")[0].split(":")
        body = json.dumps(_append_call(99, "the fact of a client gone")).encode()
        request = (f"POST /api/mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                   f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n"
                   + "".join(f"{k}: {v}\r\n" for k, v in mcp_headers(USER_KEY, ALEX).items())
                   + "\r\n").encode() + body
        await _stored(url, BLAKE)  # the file and its tables made (and in WAL mode) before the test locks it
        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                first: list[httpx.Response] = []
                after: list[httpx.Response] = []

                async def share() -> None:
                    first.extend(await _raw_appends(url, ALEX, range(1, MAX_CALLS_PER_USER + 1)))

                async def next_call() -> None:
                    after.extend(await _raw_appends(url, ALEX, range(50, 51)))

                with write_locked(server.env["MEMORY_SQLITE_PATH"]):
                    group.start_soon(share)
                    await anyio.sleep(3)  # the share is full
                    gone = socket.create_connection((host, int(port)))
                    gone.sendall(request)
                    await anyio.sleep(2)  # it waits in the line
                    full = await _raw_appends(url, ALEX, range(40, 41))
                    gone.close()
                    await anyio.sleep(1)
                    group.start_soon(next_call)
                    await anyio.sleep(2)  # it waits in the line the gone call left
        stored = await _stored(url, ALEX)
    assert [a.status_code for a in full] == [429] and "1 more wait" in full[0].json()["error"]["message"]
    assert [a.status_code for a in first] == [200] * MAX_CALLS_PER_USER
    assert [a.status_code for a in after] == [200] and not after[0].json()["result"]["isError"]
    assert "fact 50" in stored and "fact 40" not in stored and "the fact of a client gone" not in stored


async def test_a_clear_that_waited_in_the_line_runs_both_its_store_calls_and_the_call_after_it_waits_its_turn(
        tmp_path: Path) -> None:
    """A ``clear_memory`` makes two store calls (a read, then the clear). One that waited in Alex's line is handed a
    place as the first append gives up on the locked file; it keeps that place for its clear (it was refused with
    ``too_many_calls`` on it while a later call took the place its read gave back), and the later call gets a place
    of its own in turn."""
    with _server(tmp_path) as server:
        url = f"{server.api}/mcp"
        headers = {**ACCEPT, **mcp_headers(USER_KEY, ALEX)}
        answers: dict[str, httpx.Response] = {}

        async def post(label: str, message: dict[str, Any]) -> None:
            async with httpx.AsyncClient(timeout=60) as http:
                answers[label] = await http.post(url, json=message, headers=headers)

        async with httpx.AsyncClient(timeout=60) as http:  # the file made, in WAL mode, and a memory to clear
            (await http.post(url, json=_append_call(0), headers=headers)).raise_for_status()
        clear = {"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                 "params": {"name": "clear_memory", "arguments": {"scope": "user", "confirm": True}}}
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                with write_locked(server.env["MEMORY_SQLITE_PATH"]):
                    group.start_soon(post, "first", _append_call(1))
                    await anyio.sleep(2)  # the first gives up on the lock (10 s busy timeout) 2 s before the others
                    for number in range(2, MAX_CALLS_PER_USER + 1):
                        group.start_soon(post, f"a{number}", _append_call(number))
                    await anyio.sleep(1)  # Alex's 10 places are taken
                    group.start_soon(post, "clear", clear)
                    await anyio.sleep(0.5)  # the clear waits first in the line
                    group.start_soon(post, "later", _append_call(60))
                    await anyio.sleep(7.5)  # the first gave up at ~10 s: its place went to the clear
    assert answers["clear"].status_code == 200 and not answers["clear"].json()["result"].get("isError"), \
        answers["clear"].text
    assert answers["later"].status_code == 200 and not answers["later"].json()["result"].get("isError"), \
        answers["later"].text
