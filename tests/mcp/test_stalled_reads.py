"""A read that SQLite itself holds up stays in its worker thread: the event loop, and every other caller, go on.

Why a read of a kept snapshot still hops to a worker thread (``stalled.AbandonedCalls.run``) though its store work is
one stamp read (docs/performance.md, "The MCP HTTP path on `serve`, profiled again"): under WAL a SQLite read begins
by taking a shared lock on one of the log's read marks, bytes 123-127 of the ``-shm`` file
(https://sqlite.org/walformat.html). While another process holds those bytes (a checkpoint or a log restart of a
process stopped in it), the read retries in SQLite's own loop, sleeping up to about 10 s before SQLITE_PROTOCOL,
whatever the busy timeout (0 included). Run on the event loop, such a read would hold up every request of the process
for that long.

Real parts: ``python -m memory_core serve`` over sockets, the official mcp client, and the test process holding the
read marks with ``fcntl`` as another process of the file would (POSIX locks are per process, so serve's own threads
cannot stand in for it). Linux only: the marks are held with ``fcntl`` on the ``-shm`` file.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from tests.mcp.client import mcp_headers, mcp_session, text
from tests.support.local_server import USER_KEY, running_server

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="holds SQLite's locks with fcntl")]

ALEX, BLAKE = "alex@contoso.com", "blake@contoso.com"
ENV = {"MEMORY_DEFAULT_INSTANCE_ID": "stalled-reads", "MEMORY_MCP_ALLOWED_HOSTS": "", "WEBSITE_HOSTNAME": "",
       "MEMORY_STORE": "sqlite", "MEMORY_COREAPI_BASE_URL": ""}
READ_MARKS = (123, 5)
"""(first byte, count) of the WAL read-mark locks in the ``-shm`` file: WAL_READ_LOCK(0..4) after the 120-byte
header and the write, checkpoint and recovery locks (walformat.html, "The WAL-index shared-memory file")."""
HELD_AT_MOST = 8.0
"""How long the marks are held while waiting for the other caller's answer: under SQLite's retry loop (about 10 s), so
the held read still succeeds once they are let go."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextmanager
def read_marks_held(sqlite_path: str) -> Iterator[None]:
    """Every WAL read mark of ``sqlite_path`` locked exclusively by this process until the block ends."""
    fd = os.open(f"{sqlite_path}-shm", os.O_RDWR)
    try:
        first, count = READ_MARKS
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, count, first, os.SEEK_SET)
        try:
            yield
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN, count, first, os.SEEK_SET)
    finally:
        os.close(fd)


async def test_a_kept_read_that_sqlite_holds_up_waits_in_its_thread_while_another_user_is_answered(
    tmp_path: Path,
) -> None:
    """Alex's memory is read once, so the next read is answered from the kept snapshot after one stamp read. With the
    log's read marks held by another process, that read waits inside SQLite; Blake's ping is answered meanwhile, and
    once the marks are let go Alex's read answers the fact. Run on the event loop, the read would have held Blake's
    ping until the marks were let go."""
    with running_server(tmp_path, ENV) as server:
        url = f"{server.api}/mcp"
        async with mcp_session(url, mcp_headers(USER_KEY, ALEX)) as alex, \
                mcp_session(url, mcp_headers(USER_KEY, BLAKE)) as blake:
            assert not (await alex.call_tool("append_memory", {"scope": "user", "memory": "- Likes trains."})).is_error
            assert "Likes trains." in text(await alex.call_tool("get_memory", {"scope": "user"}))  # now kept

            answered: dict[str, float] = {}

            async def alex_reads() -> None:
                result = await alex.call_tool("get_memory", {"scope": "user"})
                answered["alex"] = time.monotonic()
                assert not result.is_error and "Likes trains." in text(result)

            async with anyio.create_task_group() as group:
                with read_marks_held(server.env["MEMORY_SQLITE_PATH"]):
                    group.start_soon(alex_reads)
                    await anyio.sleep(1.0)  # Alex's read reaches SQLite's retry loop meanwhile, and waits there
                    with anyio.move_on_after(HELD_AT_MOST):
                        await blake.send_ping()
                        answered["blake"] = time.monotonic()
                    assert "alex" not in answered, "the read did not wait on the marks: the test proves nothing"
                    released = time.monotonic()
                # the marks are let go: Alex's read goes on and answers, the group waiting for it

    assert "blake" in answered, f"Blake's ping was not answered while Alex's read waited ({HELD_AT_MOST} s)"
    assert answered["blake"] < released <= answered["alex"]
