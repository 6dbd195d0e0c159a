"""The SQLite store's log of erased entries (``domain.erased_entries.ErasedEntries``), kept by a trigger.

Every row deleted from ``entries``, by any process or code path, logs its partition and id in the same
transaction (``seq``: AUTOINCREMENT, so one file's erasures are numbered in the order they commit, and a
number is never handed out twice), with the table's largest rowid after it (``table_max``): SQLite gives a
new row the table's largest rowid plus one, so a row stored after a read whose partition's sequence was
``S`` has a rowid above the smallest of ``S`` and every ``table_max`` logged since (``stored_after``).
A read's mark is the last number handed out. The log holds
no words of the user, but names them: each row keeps the partition (instance and UPN) and the entry's random id,
and survives the user's purge until later erasures push it out. It is bounded: every ``_TRIM_EVERY``-th erasure
drops those more than ``KEEP`` erasures older, of every partition. A mark older than the oldest row kept is no
longer covered (``covers``), and the reader lists what is still stored instead.
"""

from __future__ import annotations

KEEP = 4096
"""Erasures kept, over the whole file (a clear of more leaves the next command to list what is stored)."""
_TRIM_EVERY = 256

ERASED_LOG_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS erased_entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    instance_id TEXT NOT NULL,
    upn TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    table_max INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS erased_entries_by_partition ON erased_entries (instance_id, upn, seq);
CREATE TRIGGER IF NOT EXISTS log_entry_delete AFTER DELETE ON entries BEGIN
    INSERT INTO erased_entries (instance_id, upn, entry_id, table_max)
    VALUES (old.instance_id, old.upn, old.id, (SELECT COALESCE(MAX(rowid), 0) FROM entries));
END;
CREATE TRIGGER IF NOT EXISTS trim_erased_entries AFTER INSERT ON erased_entries
WHEN new.seq % {_TRIM_EVERY} = 0 BEGIN
    DELETE FROM erased_entries WHERE seq <= new.seq - {KEEP};
END;
"""

MARK_SQL = "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'erased_entries'), 0)"
"""The last number handed out: a read's mark (0 before the file's first erasure)."""
OLDEST_SQL = "SELECT MIN(seq) FROM erased_entries"
SINCE_SQL = "SELECT entry_id FROM erased_entries WHERE instance_id=? AND upn=? AND seq > ?"
LOWEST_SQL = "SELECT MIN(table_max) FROM erased_entries WHERE seq > ?"
"""The smallest the table's largest rowid has been since a mark (None when nothing was erased since)."""


def stored_after(sequence: int, lowest: int | None) -> int:
    """A rowid below every row stored since a read whose partition's sequence was ``sequence`` (a rowid of the
    partition then, or 0), given ``LOWEST_SQL``'s answer for its mark.

    The table's largest rowid was at least ``sequence`` at the read, and only an erasure lowers it; each new
    row takes the largest plus one.
    """
    return sequence if lowest is None else min(sequence, lowest)


def covers(oldest: int | None, mark: int) -> bool:
    """True when the log still holds every erasure numbered after ``mark`` (``oldest``: its oldest row's).

    A trim drops every row up to a number and keeps the row that triggered it, so the log is empty only
    before the file's first erasure, and every number above the oldest row's was never dropped.
    """
    return oldest is None or mark >= oldest - 1
