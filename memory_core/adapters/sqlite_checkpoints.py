"""The SQLite store's read checkpoints (``domain.checkpoints.ReadCheckpoints``), erased by triggers.

A checkpoint holds rendered memory text, so custody needs it gone whenever that text may be:
the triggers below erase every checkpoint of a partition in the same transaction as any write
that can change a read *other than an entry added*, the very writes after which the partition's
stamp (``sqlite_stamps``) no longer counts "only added since": an entry changed or erased, a
profile created, changed or erased, a hold placed, changed or lifted. Triggers do it, so every
process and every code path that writes the file does it, as with the stamps.

A checkpoint is stored only while the partition's stamp is the one it was built at: the insert
checks it in the same statement (one ``BEGIN IMMEDIATE`` transaction, so no write can come
between the check and the insert). ``SqliteCheckpoints`` reads and keeps them: the
``ReadCheckpoints`` half of the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_core.domain.checkpoints import StoredCheckpoint
from memory_core.domain.snapshots import PartitionStamp

if TYPE_CHECKING:  # sqlite_database builds the schema, which holds this module's triggers
    from memory_core.adapters.sqlite_database import SqliteDatabase

KEPT_PER_PARTITION = 8
"""Checkpoints kept per owner partition (one per read shape: user, each agent, each combined read);
the least recently kept go first. Bounds what a user with many agents costs on disk."""

CHECKPOINT_WAIT_SECONDS = 0.05
"""How long keeping a checkpoint waits for another process's write lock before giving up: the
read that keeps it is answered either way, and should not wait behind a long write for a cache."""


def _erase_trigger(name: str, event: str, table: str, row: str, owner: str, when: str = "") -> str:
    return (
        f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON {table}{when} BEGIN\n"
        f"    DELETE FROM read_checkpoints WHERE instance_id = {row}.instance_id AND upn = {row}.{owner};\n"
        "END;\n"
    )


CHECKPOINTS_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS read_checkpoints (
    instance_id TEXT NOT NULL,
    upn TEXT NOT NULL,
    read_key TEXT NOT NULL,
    changes INTEGER NOT NULL,
    inserts INTEGER NOT NULL,
    kept INTEGER NOT NULL,
    payload TEXT NOT NULL,
    PRIMARY KEY (instance_id, upn, read_key)
);
"""
    # Not on entry INSERT: an entry added leaves a checkpoint valid (a read extends it).
    + _erase_trigger("checkpoint_erase_entry_update", "UPDATE", "entries", "new", "upn")
    + _erase_trigger("checkpoint_erase_entry_delete", "DELETE", "entries", "old", "upn")
    + _erase_trigger("checkpoint_erase_profile_insert", "INSERT", "profiles", "new", "upn")
    + _erase_trigger("checkpoint_erase_profile_update", "UPDATE", "profiles", "new", "upn")
    + _erase_trigger("checkpoint_erase_profile_delete", "DELETE", "profiles", "old", "upn")
    + _erase_trigger("checkpoint_erase_hold_insert", "INSERT", "records", "new", "owner", " WHEN new.kind = 'hold'")
    + _erase_trigger("checkpoint_erase_hold_update", "UPDATE", "records", "new", "owner", " WHEN new.kind = 'hold'")
    + _erase_trigger("checkpoint_erase_hold_delete", "DELETE", "records", "old", "owner", " WHEN old.kind = 'hold'")
)

READ_SQL = "SELECT changes, inserts, payload FROM read_checkpoints WHERE instance_id=? AND upn=? AND read_key=?"

KEEP_SQL = (
    "INSERT INTO read_checkpoints (instance_id, upn, read_key, changes, inserts, kept, payload)"
    " SELECT :instance_id, :upn, :read_key, :changes, :inserts,"
    " COALESCE((SELECT MAX(kept) FROM read_checkpoints WHERE instance_id = :instance_id AND upn = :upn), 0) + 1,"
    " :payload"
    " WHERE EXISTS (SELECT 1 FROM partition_stamps WHERE instance_id = :instance_id AND upn = :upn"
    " AND changes = :changes AND inserts = :inserts)"
    " ON CONFLICT (instance_id, upn, read_key) DO UPDATE SET"
    " changes = excluded.changes, inserts = excluded.inserts, kept = excluded.kept, payload = excluded.payload"
)
"""Stores the checkpoint only while the partition's stamp is the one it was built at."""

TRIM_SQL = (
    "DELETE FROM read_checkpoints WHERE instance_id = :instance_id AND upn = :upn AND read_key NOT IN"
    " (SELECT read_key FROM read_checkpoints WHERE instance_id = :instance_id AND upn = :upn"
    " ORDER BY kept DESC LIMIT :kept_per_partition)"
)
"""Keeps the partition's ``KEPT_PER_PARTITION`` most recently kept checkpoints."""


class SqliteCheckpoints:
    """The ``ReadCheckpoints`` operations of the ``MemoryStore`` Protocol on a ``SqliteDatabase``."""

    _db: SqliteDatabase

    def read_checkpoint(self, instance_id: str, upn: str, read_key: str) -> StoredCheckpoint | None:
        rows = self._db.read(READ_SQL, [instance_id, upn, read_key])
        return StoredCheckpoint(PartitionStamp(rows[0][0], rows[0][1]), rows[0][2]) if rows else None

    def keep_checkpoint(self, instance_id: str, upn: str, read_key: str, checkpoint: StoredCheckpoint) -> bool:
        """Stored in one transaction with the stamp check; the partition keeps its newest
        ``KEPT_PER_PARTITION`` checkpoints. Waits at most ``CHECKPOINT_WAIT_SECONDS`` for another
        writer's lock (then ``Unavailable``): the read that keeps it has its answer already."""
        values = {"instance_id": instance_id, "upn": upn, "read_key": read_key, "changes": checkpoint.stamp.changes,
                  "inserts": checkpoint.stamp.inserts, "payload": checkpoint.payload,
                  "kept_per_partition": KEPT_PER_PARTITION}
        with self._db.write(wait_seconds=CHECKPOINT_WAIT_SECONDS) as db:
            kept = db.execute(KEEP_SQL, values).rowcount > 0
            if kept:
                db.execute(TRIM_SQL, values)
        return kept


__all__ = ["CHECKPOINTS_SCHEMA", "CHECKPOINT_WAIT_SECONDS", "KEEP_SQL", "KEPT_PER_PARTITION", "READ_SQL",
           "TRIM_SQL", "SqliteCheckpoints"]
