"""Erased text leaves the SQLite file, not only the store's answers.

Deleting an entry's row leaves its words in three places SQLite does not clean by itself:

- the freed space of the row's pages: ``PRAGMA secure_delete`` (set on every connection,
  ``sqlite_database``) overwrites it, and every freed page, with zeros;
- the full-text index: an external-content FTS5 delete adds a "delete" marker in a new
  segment, and the older segment keeps the erased words (stemmed) until segments happen to
  merge. Merging every segment into one drops them (``merge_index``). (FTS5's own
  ``secure-delete`` option would remove them in place, but it needs SQLite 3.42, and the
  Python this runs on links 3.40.)
- the write-ahead log: frames holding pages as they were before the delete. A ``TRUNCATE``
  checkpoint copies the log back into the file and empties it.

A memory-tool file index (a record) holds the user's words too: its file and directory names.
Rewriting or deleting it leaves the old names in the log, and in the file until a checkpoint;
emptying the log is their purge (no index to merge).

Triggers mark the file as owing a purge (``erasure_purges``: one row for entries, one for names)
in the very transaction that erases: each raises its row's ``generation``, and a purge records
the generation it saw as ``purged``, never lowering it, and never deletes the row. So a process
that dies before the purge leaves it owed, and an erasure committed while a purge ran (in this
process or another) stays owed for the next one. The store hands a purge to its checkpoint thread
after each write that erased, runs one at open for a file that owes it, and one at close.

What it costs: the merge rewrites the whole index, whoever's entries it holds (docs/performance.md,
"Erasures on SQLite"). Done as one ``'optimize'`` it held the writers' lock throughout: about 60 ms at
10,000 entries and 400 ms at 100,000, and every write of every user waited behind it. ``merge_index``
does the same merge a few pages at a time, with pauses in which writers go on: a write waits for one
step at most, the merge takes longer to finish, and the erasure's request waits for neither.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import AbstractContextManager, nullcontext

from memory_core.adapters.sqlite_busy import WritersTurn, busy_timeout
from memory_core.adapters.sqlite_fulltext import recreate_index
from memory_core.adapters.sqlite_transaction import write_transaction

RETRY_PAUSE_SECONDS = 0.005

TURN_WAIT_SECONDS = 1.0
"""How long a step of the purge that takes the writers' lock waits for its turn among this process's writers
(``sqlite_busy.WritersTurn``) before asking SQLite without it."""

MERGE_PAGES = 16
"""Index pages one step of the purge's merge writes (FTS5's ``pgsz``, 4,050 bytes by default)."""

MIN_PAUSE_SECONDS = 0.01
"""The least pause after a step of the merge. A writer that found the lock taken retries after 1, 3, 8 and 18 ms
(SQLite's busy handler), so a pause of 10 ms lets in every writer that came during a step of a few ms."""

REBUILD_PAST_LEVELS = 256
"""The depth of the index's structure past which a purge rebuilds the index instead of merging it.

On the SQLite this runs on (3.40), every merge of all segments (``'optimize'``, or ``'merge'`` with a negative
count) leaves its one segment a level above the deepest before, and the levels below stay, empty: each purge
deepens the structure by one or two levels, and past 2,000 FTS5 reports the index corrupt ("database disk image
is malformed"; the table cannot even be opened), so every write of an entry fails, for good, after one or two
thousand erasures. ``'rebuild'`` makes the index again from the entries, on one level. It holds the writers'
lock while it reads every entry (docs/performance.md, "Erasures on SQLite"), once per hundred purges or more."""

MERGE_SLACK_STEPS = 16
"""Steps the merge may take beyond one per ``MERGE_PAGES`` of the index it started with, for segments written
meanwhile, before it finishes as one ``'optimize'``."""

ENTRIES, NAMES = 1, 2
"""``erasure_purges`` rows: erased entries (the index is merged and the log emptied) and rewritten
file indexes (the log is emptied)."""

FILE_INDEX_KIND = "memory_file_index"
"""The record kind that holds memory-tool names (``domain.file_index.INDEX_KIND``)."""

_RAISE = "INSERT INTO erasure_purges (id, generation) VALUES ({row}, 1) " \
         "ON CONFLICT (id) DO UPDATE SET generation = generation + 1;"

ERASURE_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS erasure_purges (
    id INTEGER PRIMARY KEY CHECK (id IN ({ENTRIES}, {NAMES})),
    generation INTEGER NOT NULL,
    purged INTEGER NOT NULL DEFAULT 0
);
CREATE TRIGGER IF NOT EXISTS entries_erased AFTER DELETE ON entries BEGIN
    {_RAISE.format(row=ENTRIES)}
END;
CREATE TRIGGER IF NOT EXISTS entries_rewritten AFTER UPDATE OF content_markdown ON entries BEGIN
    {_RAISE.format(row=ENTRIES)}
END;
CREATE TRIGGER IF NOT EXISTS file_index_replaced BEFORE INSERT ON records
WHEN new.kind = '{FILE_INDEX_KIND}' AND EXISTS (
    SELECT 1 FROM records WHERE instance_id = new.instance_id AND owner = new.owner AND kind = new.kind AND id = new.id
) BEGIN
    {_RAISE.format(row=NAMES)}
END;
CREATE TRIGGER IF NOT EXISTS file_index_rewritten AFTER UPDATE ON records
WHEN old.kind = '{FILE_INDEX_KIND}' BEGIN
    {_RAISE.format(row=NAMES)}
END;
CREATE TRIGGER IF NOT EXISTS file_index_erased AFTER DELETE ON records
WHEN old.kind = '{FILE_INDEX_KIND}' BEGIN
    {_RAISE.format(row=NAMES)}
END;
"""

UPGRADE_MARK = f"INSERT OR IGNORE INTO erasure_purges (id, generation) VALUES ({ENTRIES}, 1), ({NAMES}, 1)"
"""A file from before purges may hold the words of everything it ever erased: owed both purges."""


def purge_owed(db: sqlite3.Connection) -> bool:
    """Whether an erasure's words may still be in the index or the log."""
    return db.execute("SELECT 1 FROM erasure_purges WHERE generation > purged LIMIT 1").fetchone() is not None


def purge_erased(db: sqlite3.Connection, *, retry_seconds: float = 1.0, turn: WritersTurn | None = None) -> bool:
    """Remove erased words from the full-text index (when entries were erased) and empty the log, if the file
    owes it.

    ``db``: a connection in autocommit mode, with ``secure_delete`` on, out of any transaction;
    its busy timeout bounds the wait for other writers before the index merge, and ``retry_seconds``
    the truncation of the log: its tries while readers of older states or another checkpoint stand in its way (it
    never waits for those in SQLite, so writers never wait behind it), and each try's wait for its turn on
    ``turn``, so the truncation takes ``retry_seconds`` and the last try's checkpoint at most. ``turn``: this
    process's writers of the file (``SqliteDatabase``'s), which every step that takes the writers' lock (the merge's
    steps, a rebuild, the truncation) takes its turn among, so a write of this process waits for a step on it, not
    in SQLite's busy handler; None, none (a connection of its own, as a test's). Answers False when the
    log could not be emptied in that time: the file still owes the purge, and the next one does it.
    Raises ``sqlite3.Error`` when SQLite fails; the purge stays owed then too.

    An index whose structure is past ``REBUILD_PAST_LEVELS`` levels is rebuilt instead of merged, owed or not
    (so at the first purge or open that finds it so): see ``index_levels``.
    """
    owed = db.execute("SELECT id, generation FROM erasure_purges WHERE generation > purged").fetchall()
    deep = index_levels(db) > REBUILD_PAST_LEVELS
    if not owed and not deep:
        return True
    if deep:  # from the entries as they are: no erased word either
        try:
            with _taken(turn):
                _index_step(db, "rebuild", None)
        except sqlite3.DatabaseError as error:
            if not unopenable(error):
                raise  # busy, a full disk: the purge stays owed, and the next one tries again
            with _taken(turn):
                recreate_index(db)  # past FTS5's own bound: it cannot open the index to rebuild it
    elif any(row == ENTRIES for row, _ in owed):
        merge_index(db, turn=turn)
    # A TRUNCATE checkpoint holds the writers' lock while it waits for readers, so it is tried without waiting
    # (a reader of an older state, or another checkpoint under way, refuses it at once) and tried again a while:
    # waiting under the busy timeout stalled every writer behind one slow read.
    with busy_timeout(db, 0):
        deadline = time.monotonic() + retry_seconds
        while not _log_emptied(db, turn, deadline - time.monotonic()):
            if time.monotonic() >= deadline:
                return False
            time.sleep(RETRY_PAUSE_SECONDS)
    # What was seen, never more: an erasure since stays owed. One transaction, in turn like every step above: the
    # first write after the truncation restarts the log and syncs its header (several ms on a busy disk), and a
    # writer of this process that came meanwhile slept in SQLite's busy handler, 1 to 10 ms a try, past its end.
    with _taken(turn), write_transaction(db):
        for row, generation in owed:
            db.execute("UPDATE erasure_purges SET purged = max(purged, ?) WHERE id = ?", (generation, row))
    return True


def merge_index(db: sqlite3.Connection, *, turn: WritersTurn | None = None) -> int:
    """Merge every segment of the full-text index into one, without the erased entries' words, as ``'optimize'``
    does, but ``MERGE_PAGES`` index pages at a time: each step is a write transaction of its own, followed by a pause as
    long as the step took and at least ``MIN_PAUSE_SECONDS``, so a writer waiting on its busy handler gets in
    between two steps instead of waiting for the whole merge (which grows with the whole index). Answers the steps.

    FTS5's ``'merge'`` with a negative page count puts every segment on one level and starts merging them; each
    later step, with a positive count, carries that merge on (segments written meanwhile by other writers hold no
    erased word and are left to later merges), and a step that changes fewer than two rows found nothing left
    (https://sqlite.org/fts5.html#the_merge_command). Should writers keep the steps busy past a bound set by the
    index's size at the start, the rest is done as one ``'optimize'``: the words leave whatever happens. Each step
    takes its turn among this process's writers on ``turn`` (``purge_erased``), the pause after it outside it.
    Raises ``sqlite3.Error`` when SQLite fails (the erasure stays owed)."""
    pages = MERGE_PAGES
    (rows,) = db.execute("SELECT count(*) FROM entries_fts_data").fetchone()
    bound, steps, count = rows // pages + MERGE_SLACK_STEPS, 0, -pages
    while True:
        started = time.monotonic()
        command = ("optimize", None) if steps >= bound else ("merge", count)
        with _taken(turn):
            changed = _index_step(db, *command)
        steps += 1
        if changed < 2 or command[0] == "optimize":
            return steps
        count = pages
        time.sleep(max(MIN_PAUSE_SECONDS, time.monotonic() - started))


def unopenable(error: sqlite3.DatabaseError) -> bool:
    """Whether ``error`` is FTS5 refusing to open the index at all (its structure record past its bounds), the one
    failure a new index mends; any other (busy, a full disk, I/O) is left to the next purge."""
    return "vtable constructor failed" in str(error) or "malformed" in str(error)


def index_levels(db: sqlite3.Connection) -> int:
    """The levels in the full-text index's structure record (FTS5's ``%_data`` row 10: a 4-byte cookie, then a
    varint, the level count; SQLite 3.43 and later may put a 4-byte version mark before it). 0 when the index
    has no structure yet or the record reads otherwise than this expects (nothing is then rebuilt)."""
    row = db.execute("SELECT block FROM entries_fts_data WHERE id = 10").fetchone()
    block = bytes(row[0] or b"") if row else b""
    at = 8 if block[4:8] == b"\xff\x00\x00\x01" else 4
    levels = 0
    for offset, byte in enumerate(block[at:at + 9]):  # SQLite's varint: 7 bits a byte, high bit set on all but the last
        levels = (levels << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return levels if offset < 4 else 0
    return 0


def _log_emptied(db: sqlite3.Connection, turn: WritersTurn | None = None, turn_wait: float = TURN_WAIT_SECONDS) -> bool:
    """Copy the log back into the file and truncate it; answers False when a reader of an older state or another
    checkpoint stood in the way (nothing waited for in SQLite; the turn, ``turn_wait`` seconds at most).

    A ``TRUNCATE`` checkpoint takes the writers' lock before it copies, and holds it through the copy and both
    ``fsync``s (the log's, the file's), several ms on a busy disk: every write of the file, from any process,
    waited that long, more with SQLite's busy handler sleeping 1, 2, 5, 10 ms between its tries. So a ``PASSIVE``
    checkpoint, which takes no writers' lock, copies and syncs first; the ``TRUNCATE`` after it finds only what
    was written in between (usually nothing) and is left with truncating the file (docs/performance.md, "The
    purge's truncation, and appends over stdio"). The ``TRUNCATE`` takes its turn on ``turn``; the ``PASSIVE``
    checkpoint, which locks no writer out, does not."""
    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    with _taken(turn, turn_wait):
        return not db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]


def _taken(turn: WritersTurn | None, seconds: float = TURN_WAIT_SECONDS) -> AbstractContextManager[object]:
    """``turn`` taken for a block that holds the writers' lock (``seconds`` at most, capped at
    ``TURN_WAIT_SECONDS``; none at all when none is left), or nothing."""
    return nullcontext() if turn is None else turn.taken(max(0.0, min(TURN_WAIT_SECONDS, seconds)))


def _index_step(db: sqlite3.Connection, command: str, rank: int | None) -> int:
    """One FTS5 command in a write transaction of its own (``write_transaction``); answers the rows it changed."""
    with write_transaction(db):
        (before,) = db.execute("SELECT total_changes()").fetchone()
        db.execute("INSERT INTO entries_fts(entries_fts, rank) VALUES (?, ?)", (command, rank))
        (after,) = db.execute("SELECT total_changes()").fetchone()
    return int(after - before)
