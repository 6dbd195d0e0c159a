"""A served process's threads, read from /proc (Linux only), and a SQLite file's write lock held by a test.

The MCP tests that count a user's share of the worker threads (tests/mcp/test_stalled_share.py,
tests/mcp/test_stalled_queue_http.py) hold their calls in worker threads with ``write_locked`` and watch how many
threads the server runs with ``ThreadPeak``; tests/contract/test_sweep_reports.py holds the lock past a store's
busy timeout with ``write_locked``.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio


def threads_of(pid: int) -> int:
    """The process's threads now (its worker threads among them)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^Threads:\s+(\d+)$", status, re.MULTILINE).group(1))  # type: ignore[union-attr]


class ThreadPeak:
    """The most threads a process ran while ``sample`` ran (every 10 ms, until ``stop``), and how many it ran
    before."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.before = self.most = threads_of(pid)
        self._sampling = True

    @property
    def added(self) -> int:
        """Threads at the peak beyond those running before."""
        return self.most - self.before

    async def sample(self) -> None:
        while self._sampling:
            self.most = max(self.most, threads_of(self.pid))
            await anyio.sleep(0.01)

    def stop(self) -> None:
        self._sampling = False


@contextmanager
def write_locked(sqlite_path: str) -> Iterator[None]:
    """The SQLite file's write lock held by a test connection: every append waits on it, in its worker thread (reads
    do not, under WAL). The file must exist, in WAL mode, before (a call served first makes it)."""
    lock = sqlite3.connect(sqlite_path, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        lock.execute("ROLLBACK")
        lock.close()
