"""The SQLite store's file: one connection per thread, its transactions and what they cost.

WAL journal, so readers never wait for the writer, checkpointed off the writers' path
(``sqlite_wal``). Every write runs in its own
``BEGIN IMMEDIATE`` transaction, so concurrent writes from a threaded server
serialize instead of overwriting each other, and a crash leaves either the whole
write or none of it. Every failure of SQLite leaves here as ``Unavailable`` (``TimedOut`` when the busy timeout
passed while another writer held the file).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from memory_core.adapters.sqlite_busy import WritersTurn, busy_timeout
from memory_core.adapters.sqlite_erasure import purge_erased
from memory_core.adapters.sqlite_schema import bring_up_to_date
from memory_core.adapters.sqlite_transaction import write_transaction
from memory_core.adapters.sqlite_wal import LOG_CAP_WAIT_SECONDS, SAFETY_NET_PAGES, WalCheckpointer
from memory_core.domain.errors import ConfigurationError, TimedOut, Unavailable

#: The oldest SQLite the store runs on: its exact field filters read JSON with ``->`` (``sqlite_records``), new in
#: SQLite 3.38.0.
MIN_SQLITE_VERSION = (3, 38, 0)


@dataclass(eq=False)  # measurements are told apart by identity
class SqliteMetrics:
    """What a block of store calls cost: statements sent to SQLite (each read or write
    transaction is one round trip), rows read back, and SQLite virtual-machine
    instructions executed (the work of scans and index seeks)."""

    round_trips: int = 0
    rows: int = 0
    vm_steps: int = 0


def _make_folders(folder: Path) -> None:
    """Creates ``folder`` and its missing parents, each one readable by its owner only (0700): the file holds
    people's memory, and a folder made for it should not show it to the machine's other users. A folder that
    exists is left as it is."""
    missing = []
    while not folder.exists() and folder.parent != folder:
        missing.append(folder)
        folder = folder.parent
    for each in reversed(missing):
        each.mkdir(mode=0o700, exist_ok=True)


def _refuse_old_sqlite() -> None:
    """``ConfigurationError`` naming the version found and the one needed, when Python's SQLite is too old."""
    if sqlite3.sqlite_version_info < MIN_SQLITE_VERSION:
        needed = ".".join(map(str, MIN_SQLITE_VERSION))
        raise ConfigurationError(
            f"invalid configuration: the SQLite store needs SQLite {needed} or newer; this Python's sqlite3 module "
            f"uses SQLite {sqlite3.sqlite_version} (use a newer Python build, or set MEMORY_STORE to cosmos)")


class SqliteDatabase:
    """One SQLite file, opened (and brought up to the current schema) once per thread."""

    def __init__(self, path: str | Path, *, busy_timeout_seconds: float = 10.0) -> None:
        """Opens ``path`` for this thread, creating the file and its schema if need be.

        Raises ``ConfigurationError`` when Python's SQLite library is older than ``MIN_SQLITE_VERSION``,
        ``Unavailable`` when the file cannot be created, opened or upgraded.
        """
        _refuse_old_sqlite()
        self.path = Path(path)
        self._timeout = busy_timeout_seconds
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        # This process's writers of the file, its purges included, take turns before SQLite's lock (``sqlite_busy``).
        self._turn = WritersTurn()
        self._checkpointer = WalCheckpointer(self.path, purge=partial(purge_erased, turn=self._turn))
        try:
            _make_folders(self.path.parent)
            self._purge_at_open(self.connection())  # creates the schema, so a bad path fails at start
        except (sqlite3.Error, OSError) as e:
            raise Unavailable(f"the SQLite store at {self.path} (MEMORY_SQLITE_PATH) cannot be opened: {e}") from e

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (autocommit mode: transactions are explicit)."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            # Freed space and pages are overwritten with zeros: an erased entry's text does not stay in the file
            # (the index and the log: ``sqlite_erasure``).
            db.execute("PRAGMA secure_delete=ON")
            # The log is checkpointed by ``WalCheckpointer``; the commit that reaches this only when it cannot.
            db.execute(f"PRAGMA wal_autocheckpoint={SAFETY_NET_PAGES}")
            bring_up_to_date(db)
            self._local.db = db
            with self._lock:
                self._connections.append(db)
        return db

    # -- measuring ------------------------------------------------------------

    @contextmanager
    def measure(self) -> Iterator[SqliteMetrics]:
        """Count the round trips, rows and VM steps of every call this thread makes inside the block."""
        metrics = SqliteMetrics()
        stack: list[SqliteMetrics] = self._local.__dict__.setdefault("measuring", [])
        stack.append(metrics)
        db = self.connection()

        def step() -> int:
            for open_metrics in stack:
                open_metrics.vm_steps += 1
            return 0

        db.set_progress_handler(step, 1)
        try:
            yield metrics
        finally:
            stack.remove(metrics)
            if not stack:
                db.set_progress_handler(None, 0)

    def count(self, rows: int) -> None:
        """Adds one round trip bringing back ``rows`` rows to every open measurement of this thread."""
        for metrics in self._local.__dict__.get("measuring", ()):
            metrics.round_trips += 1
            metrics.rows += rows

    # -- transactions ---------------------------------------------------------

    @contextmanager
    def write(self, *, wait_seconds: float | None = None) -> Iterator[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction, committed when the block ends and rolled back if it raises.

        ``wait_seconds``: how long to wait for another writer's lock, when not the store's busy
        timeout (a write a read makes on the side waits less than the read's caller would). A writer of this
        process (another thread's write, the checkpoint thread's purge) is waited for on the process's
        ``WritersTurn``, within the same time: the write begins as that one ends.
        Raises ``Unavailable`` when SQLite fails (a busy timeout, a full disk), with SQLite's own error even when
        SQLite rolled the transaction back by itself (``sqlite_transaction``).
        """
        try:
            db = self.connection()
            self.count(0)
            with self._turn.taken(self._timeout if wait_seconds is None else wait_seconds) as left:
                with busy_timeout(db, wait_seconds if left is None else left), write_transaction(db):
                    yield db
            self._checkpointer.wrote(db)
        except sqlite3.Error as e:
            raise _failed("write", e) from e

    def purge_erased(self) -> None:
        """Take erased entries' words out of the full-text index and empty the log (``sqlite_erasure``), on the
        checkpoint thread, within moments: after a write that deleted entries. Never raises, never waits; the file
        owes the purge until it is done (a process that dies first leaves it to the next open)."""
        self._checkpointer.owe_purge()

    def _purge_at_open(self, db: sqlite3.Connection) -> None:
        """The purge a file still owes (a process died before its own), before this process serves it; and at
        close, the one the thread had not done."""
        with busy_timeout(db, LOG_CAP_WAIT_SECONDS):
            try:
                if not purge_erased(db, turn=self._turn):
                    self._checkpointer.owe_purge()  # readers of an older state: the thread tries again
            except sqlite3.OperationalError:
                self._checkpointer.owe_purge()  # another process holds the file: the thread tries again

    def read(self, sql: str, params: Sequence[object]) -> list[Any]:
        """The rows of one statement, counted. Raises ``Unavailable`` when SQLite fails."""
        try:
            rows = self.connection().execute(sql, params).fetchall()
        except sqlite3.Error as e:
            raise _failed("read", e) from e
        self.count(len(rows))
        return rows

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction for the block (WAL: writers go on, this thread reads the state
        of its first read). Nested blocks join the outer one."""
        depth = self._local.__dict__.get("snapshot_depth", 0)
        db = self.connection()
        if depth == 0:
            try:
                db.execute("BEGIN")
            except sqlite3.Error as e:
                raise _failed("read", e) from e
        self._local.snapshot_depth = depth + 1
        try:
            yield
        finally:
            self._local.snapshot_depth = depth
            if depth == 0:
                try:
                    db.execute("COMMIT")
                except sqlite3.Error as e:
                    raise _failed("read", e) from e

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection inside one read transaction (``snapshot``): every statement of the
        block reads one state of the file. Raises ``Unavailable`` when SQLite fails, inside the block too."""
        try:
            with self.snapshot():
                yield self.connection()
        except sqlite3.Error as e:
            raise _failed("read", e) from e

    def close(self) -> None:
        """Closes every thread's connection and ends the checkpoint thread; a later call opens a new one.
        A purge handed to the thread and not yet done is done here first (a short-lived process, such as the
        stdio front or the command line, would otherwise leave erased words on disk until the next open)."""
        self._checkpointer.close()
        if self._checkpointer.pending_purge():
            with suppress(sqlite3.Error):  # else the file still owes it: the next open does it
                self._purge_at_open(self.connection())
        with self._lock:
            for db in self._connections:
                db.close()
            self._connections.clear()
        self._local = threading.local()


def _failed(what: str, error: sqlite3.Error) -> Unavailable:
    """The domain error for a failed ``what`` ("read", "write"): ``TimedOut`` when SQLite gave up waiting for the
    file's lock (SQLITE_BUSY, after the busy timeout), ``Unavailable`` otherwise (a full disk, a damaged file)."""
    message = f"the SQLite store could not complete the {what}: {error}"
    busy = (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF == sqlite3.SQLITE_BUSY  # extended codes too
    return TimedOut(message) if busy else Unavailable(message)
