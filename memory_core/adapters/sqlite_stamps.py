"""The SQLite store's partition stamps (``domain.snapshots.ChangeStamps``), kept by triggers.

Every write that can change what a read shows moves its partition's stamp in
the same transaction: an entry added (``inserts`` too), changed or erased; a
profile created, changed or erased; a hold placed, changed or lifted. Because
triggers keep them, every process and every code path that writes the file
moves them; a snapshot checked against them cannot miss a write.
Other records (audit events, deletion requests) do not change a read and leave the stamp alone.
"""

from __future__ import annotations

_BUMP = (
    "INSERT INTO partition_stamps (instance_id, upn, changes, inserts) VALUES ({row}.instance_id, {owner}, 1, {added})"
    " ON CONFLICT (instance_id, upn) DO UPDATE SET changes = changes + 1, inserts = inserts + {added};"
)


def _trigger(name: str, event: str, table: str, row: str, owner: str, added: int, when: str = "") -> str:
    bump = _BUMP.format(row=row, owner=f"{row}.{owner}", added=added)
    return f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON {table}{when} BEGIN\n    {bump}\nEND;\n"


STAMPS_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS partition_stamps (
    instance_id TEXT NOT NULL,
    upn TEXT NOT NULL,
    changes INTEGER NOT NULL,
    inserts INTEGER NOT NULL,
    PRIMARY KEY (instance_id, upn)
);
"""
    + _trigger("stamp_entry_insert", "INSERT", "entries", "new", "upn", 1)
    + _trigger("stamp_entry_update", "UPDATE", "entries", "new", "upn", 0)
    + _trigger("stamp_entry_delete", "DELETE", "entries", "old", "upn", 0)
    + _trigger("stamp_profile_insert", "INSERT", "profiles", "new", "upn", 0)
    + _trigger("stamp_profile_update", "UPDATE", "profiles", "new", "upn", 0)
    + _trigger("stamp_profile_delete", "DELETE", "profiles", "old", "upn", 0)
    + _trigger("stamp_hold_insert", "INSERT", "records", "new", "owner", 0, " WHEN new.kind = 'hold'")
    + _trigger("stamp_hold_update", "UPDATE", "records", "new", "owner", 0, " WHEN new.kind = 'hold'")
    + _trigger("stamp_hold_delete", "DELETE", "records", "old", "owner", 0, " WHEN old.kind = 'hold'")
)

STAMP_SQL = "SELECT changes, inserts FROM partition_stamps WHERE instance_id=? AND upn=?"
SEQUENCE_SQL = "SELECT COALESCE(MAX(rowid), 0) FROM entries WHERE instance_id=? AND upn=?"
"""An entry's sequence is its rowid. The partition's largest, not the table's: SQLite hands a new row
the table's largest rowid plus one, so once the table's largest row is deleted its rowid is handed out
again, and a partition that did not lose that row would miss the new entry. The partition's largest
row, while it is there, keeps every later entry above it, and removing it moves the stamp."""
