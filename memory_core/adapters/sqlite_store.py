"""SqliteMemoryStore: the embedded store used when no cloud store is configured.

One database file (``sqlite_database``: a connection per thread, WAL, one
``BEGIN IMMEDIATE`` transaction per write, so a crash leaves either the whole
write or none of it), whose tables are in ``sqlite_schema``. The store is that
file and the parts it mixes in, each over the same ``SqliteDatabase``:

- ``sqlite_reads``: loads, the partition stamps' reads (``sqlite_stamps``), entries
  pages and counts, and the full-text search (``sqlite_fulltext``);
- ``sqlite_writes``: appends, profiles saved and erased, entries erased;
- ``sqlite_records``: the records half of the ``MemoryStore`` Protocol;
- ``sqlite_checkpoints``: read checkpoints.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

from memory_core.adapters.sqlite_checkpoints import SqliteCheckpoints
from memory_core.adapters.sqlite_database import SqliteDatabase, SqliteMetrics
from memory_core.adapters.sqlite_reads import SqliteReads
from memory_core.adapters.sqlite_records import SqliteRecords
from memory_core.adapters.sqlite_writes import SqliteWrites


class SqliteMemoryStore(SqliteReads, SqliteWrites, SqliteRecords, SqliteCheckpoints):
    """The ``MemoryStore`` Protocol on a local SQLite file."""

    def __init__(self, path: str | Path, *, busy_timeout_seconds: float = 10.0) -> None:
        """Opens (creating or upgrading) the file at ``path``; raises ``Unavailable`` when it cannot."""
        self._db = SqliteDatabase(path, busy_timeout_seconds=busy_timeout_seconds)

    def measure(self) -> AbstractContextManager[SqliteMetrics]:
        """Count the round trips, rows and VM steps of every call this thread makes inside the block."""
        return self._db.measure()

    def close(self) -> None:
        self._db.close()


__all__ = ["SqliteMemoryStore"]
