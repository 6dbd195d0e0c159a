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
from collections import Counter
from pathlib import Path

import anyio
import httpx
import pytest

from memory_core.domain.idempotency import keyed_entry_id
from tests.support.local_server import USER_KEY, identity, running_server
from tests.support.server_threads import ThreadPeak, write_locked

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts the server's threads in /proc")]

CALLS = 100
WAITING = 20
ANYIO_THREADS = 40
INSTANCE, UPN = "t", "alex@contoso.com"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_rest_appends_whose_clients_hang_up_stay_within_anyios_threads_and_each_is_stored_once(
    tmp_path: Path,
) -> None:
    """100 appends whose clients hang up after 0.5 s while the file is locked, then 20 whose clients wait for their
    answers: the server never runs more than anyio's 40 worker threads for them (it ran 87-109 more when a hang-up
    cancelled the function), and nothing is lost or stored twice, whatever the load. The clients that waited: each
    answered 200 is stored once, under the id answered, and each answered 503 (SQLite's 10 s busy timeout, behind
    the others, on a loaded machine) is not stored. The clients that hung up never hear their answers; as a client
    that timed out should (docs/architecture.md, "Retrying a write"), each sends its append again with its
    Idempotency-Key once the lock is released, waiting out a 503's Retry-After: each is answered its key's entry
    and stored exactly once, whether its first call was stored before, stored by the retry, or still waiting."""
    with running_server(tmp_path, {"MEMORY_STORE": "sqlite", "MEMORY_DEFAULT_INSTANCE_ID": INSTANCE}) as server:
        headers = {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity(UPN)}
        url = f"{server.api}/instances/{INSTANCE}/memory/append"
        httpx.post(url, json={"scope": "user", "content_markdown": "first"}, headers=headers).raise_for_status()
        peak = ThreadPeak(server.process.pid)
        all_gone, released = anyio.Event(), anyio.Event()
        hung_up = 0
        answered_early: list[str] = []  # none can be: the lock is held until every client has hung up
        retried: dict[str, str] = {}  # each hung-up append's content: the entry id its retry was answered
        waited: dict[str, httpx.Response] = {}  # each waiting client's content: the answer it waited for

        async def hang_up_then_retry(number: int) -> None:
            nonlocal hung_up
            content, keyed = f"gone {number}", {**headers, "Idempotency-Key": f"gone-{number}"}
            body = {"scope": "user", "content_markdown": content}
            try:
                async with httpx.AsyncClient(timeout=0.5) as http:
                    answered_early.append((await http.post(url, json=body, headers=keyed)).text)
            except httpx.TimeoutException:
                hung_up += 1
            if hung_up + len(answered_early) == CALLS:
                all_gone.set()
            await released.wait()
            async with httpx.AsyncClient(timeout=60) as http:
                while (answer := await http.post(url, json=body, headers=keyed)).status_code == 503:
                    await anyio.sleep(int(answer.headers["retry-after"]))
            assert answer.status_code == 200, answer.text
            retried[content] = answer.json()["entry_id"]

        async def wait_for_the_answer(number: int) -> None:
            content = f"waited {number}"
            async with httpx.AsyncClient(timeout=60) as http:
                waited[content] = await http.post(url, json={"scope": "user", "content_markdown": content},
                                                  headers=headers)

        with anyio.fail_after(240):
            async with anyio.create_task_group() as group:
                group.start_soon(peak.sample)
                async with anyio.create_task_group() as clients:
                    with write_locked(server.env["MEMORY_SQLITE_PATH"]):
                        for number in range(CALLS):
                            clients.start_soon(hang_up_then_retry, number)
                            await anyio.sleep(0.01)
                        for number in range(WAITING):
                            clients.start_soon(wait_for_the_answer, number)
                        # Released once every client has hung up (on a loaded machine a client's request may reach
                        # the server well after it was started: a fixed wait once let one be answered), and the
                        # waiting clients' appends have had time to reach the server.
                        await all_gone.wait()
                        await anyio.sleep(1)
                    released.set()
                peak.stop()
        stored = _stored(server.env["MEMORY_SQLITE_PATH"])
    assert hung_up == CALLS, (hung_up, answered_early)
    assert peak.added <= ANYIO_THREADS + 5, (peak.before, peak.most)
    copies = Counter(content for content, _ in stored)
    assert {content: n for content, n in copies.items() if n > 1} == {}
    ids = dict(stored)
    assert {c: a.status_code for c, a in waited.items() if a.status_code not in (200, 503)} == {}
    assert {c: ids.get(c) for c, a in waited.items() if a.status_code == 200} == {
        c: a.json()["entry_id"] for c, a in waited.items() if a.status_code == 200}
    assert [c for c, a in waited.items() if a.status_code == 503 and c in ids] == []
    expected = {f"gone {n}": keyed_entry_id(INSTANCE, UPN, f"gone-{n}") for n in range(CALLS)}
    assert retried == expected
    assert {c: i for c, i in ids.items() if c.startswith("gone ")} == expected


def _stored(sqlite_path: str) -> list[tuple[str, str]]:
    """(content, entry id) of every stored entry but the first."""
    db = sqlite3.connect(sqlite_path)
    try:
        return db.execute("SELECT content_markdown, id FROM entries WHERE content_markdown != 'first'").fetchall()
    finally:
        db.close()
