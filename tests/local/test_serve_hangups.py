"""REST functions whose clients hang up, over real sockets against ``python -m memory_core serve``.

serve watches for a client gone only while an async function runs (the MCP endpoint, whose wait in a user's line ends
with its client). A sync function runs in a worker thread that asyncio's cancellation would not stop, only give
anyio's thread token back for one more: so it runs to its end, as under the Functions host, and threads stay within
anyio's 40 however many clients hang up. The appends are held in their threads by a write lock a test connection takes
on the SQLite file.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from tests.support.local_server import USER_KEY, identity, running_server
from tests.support.server_threads import ThreadPeak, write_locked

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts the server's threads in /proc")]

CALLS = 100
ANYIO_THREADS = 40


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_rest_appends_whose_clients_hang_up_stay_within_anyios_threads_and_are_all_kept(tmp_path: Path) -> None:
    """100 appends whose clients hang up after 0.5 s while the file is locked: the server never runs more than anyio's
    40 worker threads for them (it ran 87-109 more when a hang-up cancelled the function), and once the lock is
    released the appends run on though their clients are gone (on a loaded machine some may still wait past SQLite's
    10 s busy timeout behind the others: not all are asserted kept)."""
    with running_server(tmp_path, {"MEMORY_STORE": "sqlite", "MEMORY_DEFAULT_INSTANCE_ID": "t"}) as server:
        headers = {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity("alex@contoso.com")}
        url = f"{server.api}/instances/t/memory/append"
        httpx.post(url, json={"scope": "user", "content_markdown": "first"}, headers=headers).raise_for_status()
        peak = ThreadPeak(server.process.pid)
        hung_up = 0

        async def hang_up(number: int) -> None:
            nonlocal hung_up
            try:
                async with httpx.AsyncClient(timeout=0.5) as http:
                    await http.post(url, json={"scope": "user", "content_markdown": f"gone {number}"},
                                    headers=headers)
            except httpx.TimeoutException:
                hung_up += 1

        async with anyio.create_task_group() as group:
            group.start_soon(peak.sample)
            with write_locked(server.env["MEMORY_SQLITE_PATH"]):
                for number in range(CALLS):
                    group.start_soon(hang_up, number)
                    await anyio.sleep(0.01)
                await anyio.sleep(1.5)  # every client has hung up, its append still waiting on the lock
            kept = await _settled_count(server.env["MEMORY_SQLITE_PATH"])
            peak.stop()
    assert hung_up == CALLS and kept > 0, (hung_up, kept)
    assert peak.added <= ANYIO_THREADS + 5, (peak.before, peak.most)


async def _settled_count(sqlite_path: str) -> int:
    """The appends of hung-up clients stored, once every one is or none more was added for 3 s."""
    kept, same_since = -1, anyio.current_time()
    while anyio.current_time() - same_since < 3:
        db = sqlite3.connect(sqlite_path)
        now = db.execute("SELECT count(*) FROM entries WHERE content_markdown LIKE 'gone %'").fetchone()[0]
        db.close()
        if now == CALLS:  # every one of them
            return now
        if now != kept:
            kept, same_since = now, anyio.current_time()
        await anyio.sleep(0.1)
    return kept
