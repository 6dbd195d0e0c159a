"""Erased text leaves the SQLite file, not only the store's answers.

Deleting an entry's row leaves its words in three places SQLite does not clean by itself:

- the freed space of the row's pages: ``PRAGMA secure_delete`` (set on every connection,
  ``sqlite_database``) overwrites it, and every freed page, with zeros;
- the full-text index: an external-content FTS5 delete adds a "delete" marker in a new
  segment, and the older segment keeps the erased words (stemmed) until segments happen to
  merge. ``'optimize'`` merges every segment into one without them. (FTS5's own
  ``secure-delete`` option would remove them in place, but it needs SQLite 3.42, and the
  Python this runs on links 3.40.)
- the write-ahead log: frames holding pages as they were before the delete. A ``TRUNCATE``
  checkpoint copies the log back into the file and empties it.

A trigger marks the file as owing a purge (``erasure_purges``) in the very transaction that
deletes an entry or rewrites its text, counting a generation, so a process that dies before the
purge leaves it owed, and a purge clears only the generation it saw: an erasure committed while
it ran keeps the mark for the purge that follows it. The store purges after each deletion of
entries and when it opens a file that owes one.

What it costs: ``'optimize'`` rewrites the whole index, whoever's entries it holds, in one write
transaction (docs/performance.md, "Erasures on SQLite": about 40 ms at 10,000 entries and 400 ms
at 100,000); deletions are rare beside writes, and an erasure's request waits for it.
"""

from __future__ import annotations

import sqlite3
import time

RETRY_PAUSE_SECONDS = 0.005

ERASURE_SCHEMA = """
CREATE TABLE IF NOT EXISTS erasure_purges (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS entries_erased AFTER DELETE ON entries BEGIN
    INSERT INTO erasure_purges (id, generation) VALUES (1, 1)
    ON CONFLICT (id) DO UPDATE SET generation = generation + 1;
END;
CREATE TRIGGER IF NOT EXISTS entries_rewritten AFTER UPDATE OF content_markdown ON entries BEGIN
    INSERT INTO erasure_purges (id, generation) VALUES (1, 1)
    ON CONFLICT (id) DO UPDATE SET generation = generation + 1;
END;
"""


def purge_owed(db: sqlite3.Connection) -> bool:
    """Whether an erasure's words may still be in the index or the log."""
    return db.execute("SELECT 1 FROM erasure_purges").fetchone() is not None


def purge_erased(db: sqlite3.Connection, *, retry_seconds: float = 1.0) -> bool:
    """Remove erased words from the full-text index and empty the log, if the file owes it.

    ``db``: a connection in autocommit mode, with ``secure_delete`` on, out of any transaction;
    its busy timeout bounds the wait for other writers and for readers of older states, and
    ``retry_seconds`` the retries while another connection checkpoints. Answers False when the
    log could not be emptied in that time: the mark stays, and the next purge does it. Raises ``sqlite3.Error`` when SQLite fails; the mark stays then too.
    """
    row = db.execute("SELECT generation FROM erasure_purges").fetchone()
    if row is None:
        return True
    generation = row[0]
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("INSERT INTO entries_fts(entries_fts) VALUES ('optimize')")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    # Another checkpoint under way (the WAL thread's) is refused at once, not waited for: tried again a while.
    deadline = time.monotonic() + retry_seconds
    while db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]:
        if time.monotonic() >= deadline:
            return False
        time.sleep(RETRY_PAUSE_SECONDS)
    db.execute("DELETE FROM erasure_purges WHERE generation = ?", (generation,))
    return True
