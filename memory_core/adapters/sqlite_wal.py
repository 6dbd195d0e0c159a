"""The SQLite store's WAL checkpoints, taken off the writers' path.

In WAL mode SQLite copies the log back into the database file (a *checkpoint*) inside the
``COMMIT`` that takes the log past ``wal_autocheckpoint`` pages, 1,000 by default. An append
writes about 15 pages (the entry, its full-text index, its audit event, the partition's stamp),
so about every 65th append paid for a checkpoint: some 4 ms on an append whose median is 0.23 ms,
and most of its 99th percentile (docs/performance.md, "The tail of an append").

``WalCheckpointer`` takes them instead, on a thread of its own: every committed write tells it
(``wrote``), and every ``WRITES_PER_CHECKPOINT`` writes it runs ``PRAGMA wal_checkpoint(PASSIVE)``
on a connection of its own, which copies what no reader still needs and never waits for, nor
blocks, a reader or a writer. SQLite releases the GIL while it works, so a request thread goes on.

What callers may rely on:

- Durability is SQLite's, unchanged: a write is in the log when its ``COMMIT`` returns, and a
  process that dies with the log not yet copied back leaves it to be replayed by the next open.
- The log stays bounded: the writers' own connections keep an automatic checkpoint, at
  ``SAFETY_NET_PAGES``, should the thread fall behind or be gone; and should even that lose the
  race to the thread's checkpoints under a stream of writes, the write that finds the log file
  past ``LOG_CAP_BYTES`` copies it back and truncates it itself (``wrote``), waiting for it.
- Nothing runs at import or construction: the thread starts with the first checkpoint due, ends
  after ``IDLE_SECONDS`` without one (a store nobody writes holds no thread), and ``close`` ends it.
  It is the only thread: a purge that could not finish waits for its next attempt in the thread's loop.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from memory_core.adapters.sqlite_busy import busy_timeout

log = logging.getLogger("memory_core.sqlite")

WRITES_PER_CHECKPOINT = 32
"""Writes between two checkpoints: about 500 pages (2 MB) of log at an append's 15 pages."""

SAFETY_NET_PAGES = 4_000
"""The writers' own ``wal_autocheckpoint`` (pages, about 16 MB of log).

A passive checkpoint copies the frames that were in the log when it began. Under writes that follow
each other without a pause (a bulk import, a benchmark's loop) new frames arrive while it copies, so
the log is never wholly copied back, and SQLite starts it over only once it is: it grows until a
writer's own checkpoint at this size finishes the job. The thread has copied most of it by then,
so that checkpoint costs about what the default one did (2-3 ms), once per ~270 appends instead of
once per ~65. With pauses between writes, as agents write, the thread's checkpoints complete and the
log starts over well before this."""

LOG_CAP_BYTES = 2 * SAFETY_NET_PAGES * 4096
"""The log file's size past which a writer truncates it itself (checked every ``WRITES_PER_CHECKPOINT``
writes). A writer's automatic checkpoint skips when the thread is copying; under a stream of writes
on a busy machine the log was seen at 37 MB, past the net's 16 MB, with nothing to stop it."""

LOG_CAP_WAIT_SECONDS = 1.0
"""How long that truncation waits for other writers and for readers of older states."""

PURGE_RETRY_SECONDS = 0.2
"""The pause before a purge that could not finish (readers of an older state) is tried again."""

PURGE_ATTEMPTS = 25
"""Purges tried in a row (about 30 s with their waits) before the thread leaves one to the next erasure or open."""

IDLE_SECONDS = 30.0
"""The thread ends after this long without a checkpoint due; the next one due starts it again."""


class WalCheckpointer:
    """Checkpoints one SQLite file's WAL on a thread of its own, every ``writes_per_checkpoint`` writes."""

    def __init__(self, path: Path, *, writes_per_checkpoint: int = WRITES_PER_CHECKPOINT,
                 idle_seconds: float = IDLE_SECONDS,
                 purge: Callable[[sqlite3.Connection], bool] | None = None) -> None:
        """``purge``: run on the thread when ``owe_purge`` asks (``sqlite_erasure.purge_erased``: it empties the
        log, so the thread that takes the other checkpoints takes that one too, and never races itself)."""
        self._path = path
        self._purge = purge
        self._purge_owed = threading.Event()
        self._every = writes_per_checkpoint
        self._idle = idle_seconds
        self._writes = 0
        self._due = threading.Event()
        self._lock = threading.Lock()
        self._running: tuple[threading.Thread, threading.Event] | None = None  # the thread and its stop signal
        self.checkpoints = 0
        """Checkpoints the thread took so far (tests and benchmarks)."""
        self.truncations = 0
        """Times a writer found the log past ``LOG_CAP_BYTES`` and truncated it (tests and benchmarks)."""
        self.purges = 0
        """Purges the thread finished so far (tests and benchmarks)."""
        self._purge_failures = 0
        self._retry_at: float | None = None  # when the thread tries an unfinished purge again (time.monotonic)

    @property
    def thread(self) -> threading.Thread | None:
        """The checkpoint thread, while one runs."""
        running = self._running
        return running[0] if running else None

    def wrote(self, db: sqlite3.Connection) -> None:
        """Count one committed write on ``db`` (the writer's connection, out of its transaction); every
        ``writes_per_checkpoint``-th hands a checkpoint to the thread.

        Never raises. Waits only when the log file is past ``LOG_CAP_BYTES``: then this write copies it
        back and truncates it on ``db`` before handing over.
        """
        self._writes += 1  # a count lost to a race only moves one checkpoint by a write
        if self._writes % self._every == 0:
            if self._log_bytes() > LOG_CAP_BYTES:
                self._truncate(db)
            self._hand_over()

    def owe_purge(self) -> None:
        """Hand the thread a purge (``purge``), to run as soon as it can: after a write that erased entries.
        Never raises, never waits."""
        self._purge_owed.set()
        self._hand_over()

    def _hand_over(self) -> None:
        with self._lock:
            self._due.set()
            if self._running is None:
                stop = threading.Event()
                thread = threading.Thread(target=self._run, args=(stop,), daemon=True,
                                          name=f"wal-checkpoint {self._path.name}")
                self._running = (thread, stop)
                thread.start()

    def _log_bytes(self) -> int:
        try:
            return os.stat(f"{self._path}-wal").st_size
        except OSError:
            return 0  # no log (yet), or not a file-backed database

    def _truncate(self, db: sqlite3.Connection) -> None:
        try:
            with busy_timeout(db, LOG_CAP_WAIT_SECONDS):
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            self.truncations += 1
        except sqlite3.Error:
            log.warning("truncating the WAL of %s failed", self._path, exc_info=True)  # the write stands

    def _run(self, stop: threading.Event) -> None:
        db: sqlite3.Connection | None = None  # the thread's own, kept while it runs
        try:
            while True:
                retry_at = self._retry_at  # a purge waiting for its retry: never idle, wait until then at most
                if not self._due.wait(self._idle if retry_at is None else max(0.0, retry_at - time.monotonic())):
                    if retry_at is not None and time.monotonic() < retry_at:
                        continue  # woken a little early: wait the rest
                    if retry_at is None and self._ended(stop):
                        return
                if stop.is_set():
                    return
                self._due.clear()
                self._retry_at = None  # a purge handed over during the pause is the retry, run sooner
                db = self._purged(db) if self._purge_owed.is_set() else self._checkpoint(db)
        finally:
            if db is not None:
                db.close()

    def _ended(self, stop: threading.Event) -> bool:
        """Whether the thread (of ``stop``) ends, idle: unless a checkpoint was handed over while it decided."""
        with self._lock:
            if self._due.is_set():
                return False
            if self._running is not None and self._running[1] is stop:
                self._running = None
            return True

    def _checkpoint(self, db: sqlite3.Connection | None) -> sqlite3.Connection | None:
        """One passive checkpoint; answers the connection to use for the next (None after a failure)."""
        try:
            if db is None:
                db = self._connect()
            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            self.checkpoints += 1
            return db
        except sqlite3.Error:
            # A busy or failing file: the writers' safety net still bounds the log, and the next
            # checkpoint handed over tries again, on a new connection. Nothing a caller did failed.
            log.warning("a background WAL checkpoint of %s failed", self._path, exc_info=True)
            if db is not None:
                db.close()
            return None

    def _connect(self) -> sqlite3.Connection:
        """The thread's own connection. ``secure_delete`` on, as the writers' (whatever SQLite's build defaults to):
        a purge's index merge frees the pages that held erased words, which must be zeroed."""
        db = sqlite3.connect(self._path, timeout=0, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA secure_delete=ON")
        return db

    def pending_purge(self) -> bool:
        """Whether a purge was handed over and not yet finished by the thread."""
        return self._purge_owed.is_set()

    def _purged(self, db: sqlite3.Connection | None) -> sqlite3.Connection | None:
        """One purge (it takes the checkpoint too); answers the connection to use next. A purge that could not
        finish is tried again by this thread's loop after ``PURGE_RETRY_SECONDS`` (or sooner, when a write hands
        the thread work meanwhile), up to ``PURGE_ATTEMPTS`` times in a row; then the file keeps owing it, and the
        next erasure or open does it."""
        self._purge_owed.clear()
        try:
            if db is None:
                db = self._connect()
            with busy_timeout(db, LOG_CAP_WAIT_SECONDS):
                done = self._purge is None or self._purge(db)
        except sqlite3.Error:
            log.warning("purging erased text from %s failed", self._path, exc_info=True)
            if db is not None:
                db.close()
            db, done = None, False
        if done:
            self.purges += 1
            self._purge_failures = 0
        else:
            self._purge_failures += 1
            if self._purge_failures < PURGE_ATTEMPTS:
                self._purge_owed.set()
                self._retry_at = time.monotonic() + PURGE_RETRY_SECONDS  # the loop waits for it: no thread of its own
            else:
                log.warning("erased text in %s: %d purges in a row could not finish; the next erasure or open does it",
                            self._path, PURGE_ATTEMPTS)
                self._purge_failures = 0
        return db

    def close(self) -> None:
        """End the thread, after the checkpoint it is taking if any. A later write due a checkpoint
        starts a new one (the database may be opened again after ``close``)."""
        with self._lock:
            running, self._running = self._running, None
            if running is not None:
                running[1].set()
                self._due.set()
        if running is not None and running[0] is not threading.current_thread():
            running[0].join(timeout=5)
