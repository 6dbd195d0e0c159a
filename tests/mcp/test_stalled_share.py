"""Each caller's share of the count of abandoned calls, against ``python -m memory_core serve`` with the official client.

One user whose calls stall (here: appends waiting on a write lock a test connection holds on the SQLite file) fills only
their own share (``stalled.MAX_ABANDONED_CALLS_PER_CALLER``) of the process's count; another user is still served. The
front's time bound is 1 s (MEMORY_MCP_REQUEST_TIMEOUT) and the store's busy timeout 10 s, so every stalled call ends
on its own within seconds. The count itself: tests/mcp/test_stalled.py.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from memory_core.mcp.stalled import MAX_ABANDONED_CALLS
from tests.mcp.client import call, mcp_headers, mcp_session, text
from tests.support.local_server import USER_KEY, RunningServer, running_server

pytestmark = pytest.mark.anyio

TIMED_OUT = "the request did not finish within 1 s; retry later"
SHARE_FULL = "of your earlier calls to the store have not returned yet; retry later"
ALEX, BLAKE = "alex@contoso.com", "blake@contoso.com"
INSTANCE = "share-test"
WAVE = 50
"""Tool calls sent at once: more than the threads the server runs together (anyio's 40), so each wave abandons
about 40; three waves pass the process's count of 100 when nothing else stops them."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    env = {"MEMORY_DEFAULT_INSTANCE_ID": INSTANCE, "MEMORY_MCP_ALLOWED_HOSTS": "", "WEBSITE_HOSTNAME": "",
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
    """``WAVE`` appends of one user at once; each one's refusal (none succeeds while the file is locked)."""
    refusals: list[str] = []

    async def append(n: int) -> None:
        refusals.append(await _refusal(url, headers, "append_memory", {"scope": "user", "memory": f"stalled {n}"}))

    async with anyio.create_task_group() as group:
        for n in range(WAVE):
            group.start_soon(append, n)
    return refusals


async def test_one_user_whose_calls_stall_fills_only_their_share_and_another_user_is_still_served(
    server: RunningServer,
) -> None:
    """Alex's appends wait on the SQLite file's write lock past the 1 s bound: answered 503, abandoned, counted toward
    Alex's share. Three waves of 50 fill the process's count of 100 (before the shares, Blake's read was refused
    then as well: "... earlier calls to the store have not returned yet"); now, once Alex's share is full, a whole
    wave of Alex's calls is refused at the front (HTTP 503) with the same retry hint, naming Alex's own calls, so the
    count stays below 100 and Blake's read is answered. Alex's handshake and tool list still pass. Once the lock is released
    and Alex's calls return, Alex is served again."""
    url = f"{server.api}/mcp"
    alex = mcp_headers(USER_KEY, ALEX, instance=INSTANCE)
    blake = mcp_headers(USER_KEY, BLAKE, instance=INSTANCE)
    await call(url, blake, "append_memory", {"scope": "user", "memory": "Blake prefers aisle seats."})
    await call(url, alex, "append_memory", {"scope": "user", "memory": "Alex prefers window seats."})
    lock = sqlite3.connect(server.env["MEMORY_SQLITE_PATH"], isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # the file's write lock: every append waits on it (reads do not, under WAL)
    try:
        waves: list[list[str]] = []
        while len(waves) < 4 and not (waves and all(SHARE_FULL in m for m in waves[-1])):
            waves.append(await _stalled_wave(url, alex))
        async with mcp_session(url, alex) as session:  # the handshake passes; the tool list too
            listed = [tool.name for tool in (await session.list_tools()).tools]
        served = await _refusal(url, blake, "get_memory", {"scope": "user"})
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert all(m.startswith((TIMED_OUT, "answered: ")) or SHARE_FULL in m for m in waves[0])
    assert served.startswith("answered: ") and "Blake prefers aisle seats." in served, served
    # JSON-RPC errors, not tool results: the front refused them before the protocol ran, so no thread was started
    assert all(SHARE_FULL in m and not m.startswith("answered: ") for m in waves[-1])
    assert max(int(m.split()[0]) for m in waves[-1]) < MAX_ABANDONED_CALLS
    assert "append_memory" in listed
    with anyio.fail_after(20):  # Alex's abandoned appends return (written) once the lock is gone; then Alex is served
        while "Alex prefers window seats." not in (again := await _refusal(url, alex, "get_memory", {"scope": "user"})):
            await anyio.sleep(0.2)
    assert again.startswith("answered: ")
