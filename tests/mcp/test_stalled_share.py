"""Each user's share of the worker threads, against ``python -m memory_core serve`` with the official client.

One user whose calls stall (here: appends waiting on a write lock a test connection holds on the SQLite file) holds at
most their share (``stalled.MAX_CALLS_PER_USER``) of the server's worker threads, however many calls they send at once
and however many instances (X-INSTANCE-ID, which the caller picks) they name; another user is still served. The front's
time bound is 1 s (MEMORY_MCP_REQUEST_TIMEOUT) and the store's busy timeout 10 s, so every stalled call ends on its
own within seconds. The count itself: tests/mcp/test_stalled.py and tests/mcp/test_backend_inprocess.py.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from memory_core.mcp.stalled import MAX_CALLS_PER_USER
from tests.mcp.client import call, mcp_headers, mcp_session, text
from tests.support.local_server import USER_KEY, RunningServer, running_server
from tests.support.server_threads import ThreadPeak, write_locked

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts the server's threads in /proc")]

TIMED_OUT = "the request did not finish within 1 s; retry later"
SHARE_FULL = re.compile(r"^(\d+) of your earlier calls to the store (?:have not returned yet|had not returned after "
                        r"this one waited 0\.5 s for a place); retry later$")
"""A refusal naming the user's share: at once while it is held by abandoned calls (503), or after waiting in the user's
line for half the 1 s bound (429)."""
ALEX, BLAKE = "alex@contoso.com", "blake@contoso.com"
INSTANCES = ("share-a", "share-b", "share-c")
WAVE = 40
"""Tool calls sent at once: as many as the threads the server runs together (anyio's 40). Before, each wave left
about 40 of one user's calls abandoned, so the same user naming three instances (a share each) held 120, past the
process's count of 100, and another user's read was refused."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    env = {"MEMORY_DEFAULT_INSTANCE_ID": INSTANCES[0], "MEMORY_MCP_ALLOWED_HOSTS": "", "WEBSITE_HOSTNAME": "",
           "MEMORY_STORE": "sqlite", "MEMORY_COREAPI_BASE_URL": "", "MEMORY_MCP_REQUEST_TIMEOUT": "1"}
    with running_server(tmp_path, env) as running:
        yield running


async def _refusal(url: str, headers: dict[str, str], tool: str, arguments: dict[str, Any]) -> str:
    """The JSON-RPC error's message that one tools/call in a fresh session is refused with ("answered: ..." if not)."""
    async with mcp_session(url, headers) as session:
        try:
            result = await session.call_tool(tool, arguments)
        except MCPError as error:
            return error.error.message
    return f"answered: {text(result)}"


async def _stalled_wave(url: str, headers: dict[str, str]) -> list[str]:
    """``WAVE`` appends of one user at once; each one's refusal (none is answered while the file is locked)."""
    refusals: list[str] = []

    async def append(n: int) -> None:
        refusals.append(await _refusal(url, headers, "append_memory", {"scope": "user", "memory": f"stalled {n}"}))

    async with anyio.create_task_group() as group:
        for n in range(WAVE):
            group.start_soon(append, n)
    return refusals


async def test_one_user_bursting_across_instances_never_holds_more_than_their_share_and_another_user_is_served(
    server: RunningServer,
) -> None:
    """Alex sends a wave of 40 appends at once in each of three instances; they wait on the SQLite file's write lock
    past the 1 s bound (503, abandoned). Alex's share is Alex's, whatever instance is named: at no time does the
    server run more than ``MAX_CALLS_PER_USER`` more threads than before the burst (sampled every 10 ms from /proc;
    before, the same burst held about 40 a wave, 120 in all, past the process's 100), each refusal of Alex's names
    at most that many of Alex's calls (a call past the share waits in Alex's line, for half the bound), and Blake's
    read is answered meanwhile. Once the lock is released, Alex's calls return and Alex is served again."""
    url = f"{server.api}/mcp"
    blake = mcp_headers(USER_KEY, BLAKE, instance=INSTANCES[0])
    await call(url, blake, "append_memory", {"scope": "user", "memory": "Blake prefers aisle seats."})
    await call(url, mcp_headers(USER_KEY, ALEX, instance=INSTANCES[0]), "append_memory",
               {"scope": "user", "memory": "Alex prefers window seats."})
    peak = ThreadPeak(server.process.pid)
    with write_locked(server.env["MEMORY_SQLITE_PATH"]), anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            group.start_soon(peak.sample)
            waves = [await _stalled_wave(url, mcp_headers(USER_KEY, ALEX, instance=instance))
                     for instance in INSTANCES]
            served = await _refusal(url, blake, "get_memory", {"scope": "user"})
            peak.stop()
    messages = [m for wave in waves for m in wave]
    shares = [int(match.group(1)) for m in messages if (match := SHARE_FULL.match(m))]
    assert all(m == TIMED_OUT or SHARE_FULL.match(m) for m in messages), set(messages)
    assert peak.added <= MAX_CALLS_PER_USER, (peak.before, peak.most)
    assert len(shares) >= len(messages) - 3 * MAX_CALLS_PER_USER and max(shares) <= MAX_CALLS_PER_USER
    assert served.startswith("answered: ") and "Blake prefers aisle seats." in served, served
    alex = mcp_headers(USER_KEY, ALEX, instance=INSTANCES[0])
    with anyio.fail_after(20):  # Alex's abandoned appends return (written) once the lock is gone; then Alex is served
        while "Alex prefers window seats." not in (again := await _refusal(url, alex, "get_memory", {"scope": "user"})):
            await anyio.sleep(0.2)
    assert again.startswith("answered: ")
