"""The writes of the SQLite store's profiles and entries: ``SqliteWrites``, that half of ``SqliteMemoryStore``.

Appends (the entry, its profile if new and the records that come with it), profiles saved and erased, entries
erased. Each is one ``SqliteDatabase.write`` transaction, so a crash leaves all of it or none, and concurrent
writers serialize; a write that erased entries, or rewrote a memory-tool file index, hands the purge of the erased
words to the checkpoint thread after its commit (``sqlite_erasure``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from memory_core.adapters.sqlite_database import SqliteDatabase
from memory_core.adapters.sqlite_records import (
    RECORD_CREATE_ONLY,
    RECORD_INSERT,
    purge_if_names_rewritten,
    record_values,
    with_kind,
)
from memory_core.adapters.sqlite_rows import entry_values, id_arrays, iso, parse, profile_from_row, profile_values
from memory_core.domain.errors import Conflict, EntryBeforeClear, EntryExists
from memory_core.domain.models import MemoryEntry, MemoryProfile, ProfileKey, random_hex
from memory_core.domain.records import ABSENT, Partition, Record, appended_records


class SqliteWrites:
    """The ``MemoryStore`` Protocol's writes of profiles and entries (mixed into ``SqliteMemoryStore``, which sets
    ``_db``). Every write raises ``Unavailable`` when SQLite fails, its transaction rolled back."""

    _db: SqliteDatabase

    def delete_profile(self, key: ProfileKey) -> None:
        # One statement: the check and the erasure see the same entries, so an append (one transaction with its
        # profile) either lands first and keeps the profile or lands after and makes one of its own.
        where = _where(key)
        with self._db.write() as db:
            db.execute(
                "DELETE FROM profiles WHERE instance_id=? AND upn=? AND profile_id=? AND NOT EXISTS"
                " (SELECT 1 FROM entries WHERE instance_id=? AND upn=? AND profile_id=?)",
                (*where, *where),
            )

    def append(self, profile: MemoryProfile, entry: MemoryEntry) -> MemoryProfile:
        return self.append_with_records(profile, entry, ())

    def append_with_records(self, profile: MemoryProfile, entry: MemoryEntry, records: Sequence[Record]) -> MemoryProfile:
        key = entry.key
        if any((r.partition.instance_id, r.partition.owner) != (key.instance_id, key.upn) for r in records):
            raise ValueError("append_with_records takes records of the entry's partition")
        creates, puts = appended_records(records)
        created = [record_values(record, random_hex()) for record in creates]
        rows = [record_values(record, random_hex()) for record in puts]
        with self._db.write() as db:
            # The profile and the partition's seal in one read. ``BEGIN IMMEDIATE`` holds the write lock, so a
            # profile found absent here is still absent at the insert below, and one found is not written again:
            # every append but a scope's first writes no profile row.
            row = db.execute(_PROFILE_AND_SEAL_SQL, (key.instance_id, key.upn, PARTITION_SEAL_ID, *_where(key))
                             ).fetchone()
            if row["etag"] is None:  # no profile (its etag is NOT NULL): the scope's first entry creates it
                stored = replace(profile, etag=random_hex())
                db.execute("INSERT INTO profiles VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                           profile_values(stored, stored.etag or ""))
            else:
                stored = profile_from_row(key, row)
            # In the entry's transaction: a clear that chose a later watermark and erased before this commits
            # would leave the entry hidden and never erased. Refused, the writer stamps it after the clear.
            cleared_on = stored.cleared_on
            source = entry.copied_from
            if source is not None:  # a team copy: its source's watermark too (what ``seal_copies`` seals)
                found = db.execute("SELECT cleared_on FROM profiles WHERE instance_id=? AND upn=? AND profile_id=?",
                                   (source.instance_id, source.upn, source.profile_id)).fetchone()
                sealed = parse(found[0]) if found else None
                cleared_on = max((w for w in (cleared_on, sealed) if w is not None), default=None)
            # And the partition's seal (a purge's, ``seal_partition``): it outlives the profiles the purge erased.
            if row["seal"] is not None:
                sealed = parse(json.loads(row["seal"])["watermark"])
                cleared_on = max((w for w in (cleared_on, sealed) if w is not None), default=None)
            if cleared_on is not None and entry.created_on <= cleared_on:
                raise EntryBeforeClear(cleared_on)
            # Before the entry, as in the Cosmos DB batch: a record to create whose id is taken (a key's mark
            # outliving its erased entry) refuses the write as a taken entry id does, everything rolled back.
            for values, record in zip(created, creates, strict=True):
                if db.execute(RECORD_CREATE_ONLY, values).rowcount != 1:
                    raise EntryExists(f"a {record.kind} record {record.id} already exists")
            # Never over another entry of the same id (an Idempotency-Key's entry): refused, the transaction
            # rolled back, the profile insert above with it. Only the key's conflict is skipped; others still fail.
            inserted = db.execute("INSERT INTO entries VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
                                  " ON CONFLICT (instance_id, upn, id) DO NOTHING", entry_values(entry)).rowcount
            if inserted != 1:
                raise EntryExists(f"a memory entry with id {entry.id} already exists")
            # In the entry's transaction: a crash leaves both or neither.
            db.executemany(RECORD_INSERT, rows)
        purge_if_names_rewritten(self._db, records)
        return stored

    def save_profile(self, profile: MemoryProfile) -> MemoryProfile:
        key = profile.key
        etag = uuid.uuid4().hex
        with self._db.write() as db:
            if profile.etag == ABSENT:  # create only: a profile stored meanwhile stays as it is
                if db.execute("INSERT OR IGNORE INTO profiles VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                              profile_values(profile, etag)).rowcount != 1:
                    raise Conflict("a memory profile of this scope was stored since it was read")
            elif profile.etag is not None:
                changed = db.execute(
                    "UPDATE profiles SET name=?, user_name=?, agent_name=?, created_on=?, updated_on=?,"
                    " cleared_on=?, etag=? WHERE instance_id=? AND upn=? AND profile_id=? AND etag=?",
                    (*profile_values(profile, etag)[5:], *_where(key), profile.etag),
                ).rowcount
                if changed != 1:
                    raise Conflict("the memory profile changed since it was read")
            else:
                db.execute("INSERT OR REPLACE INTO profiles VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", profile_values(profile, etag))
        return MemoryProfile(
            key, profile.name, profile.user_name, profile.agent_name,
            profile.created_on, profile.updated_on, profile.cleared_on, etag,
        )

    def seal_copies(self, source: ProfileKey, watermark: datetime) -> None:
        # Nothing to write: an append of a team copy reads its source profile's cleared_on in its transaction.
        return None

    def seal_partition(self, instance_id: str, upn: str, watermark: datetime) -> None:
        # One record of the partition, which every append reads in its transaction; never moved back.
        with self._db.write() as db:
            found = db.execute(_PARTITION_SEAL_SQL, (instance_id, upn, PARTITION_SEAL_ID)
                               ).fetchone()
            sealed = parse(json.loads(found[0])["watermark"]) if found is not None else None
            if sealed is not None and sealed >= watermark:
                return
            record = Record(Partition(instance_id, upn), PARTITION_SEAL_KIND, PARTITION_SEAL_ID,
                            {"watermark": iso(watermark)})
            db.execute(RECORD_INSERT, record_values(record, uuid.uuid4().hex))

    def delete_entries(self, key: ProfileKey, entry_ids: Sequence[str]) -> int:
        if not entry_ids:
            return 0
        whole, by_hex = id_arrays(entry_ids)
        with self._db.write() as db:
            deleted = db.execute(DELETE_ENTRIES_SQL, (whole, *_where(key))).rowcount
            if by_hex is not None:
                deleted += db.execute(_DELETE_ENTRIES_BY_HEX_SQL, (*_where(key), by_hex)).rowcount
        if deleted:
            self._db.purge_erased()  # erased: out of the search index and the log too, not only out of answers
        return deleted


PARTITION_SEAL_KIND = "partition_seal"
PARTITION_SEAL_ID = "seal"
"""The record (in the owner's partition, naming no text) that keeps ``seal_partition``'s watermark."""
_PARTITION_SEAL_SQL = with_kind("SELECT data FROM records WHERE instance_id=? AND owner=? AND kind={kind} AND id=?",
                                PARTITION_SEAL_KIND)
"""The seal's record, by primary key. Its kind is written in, not bound (``sqlite_records.with_kind``): bound, SQLite
prepared the statement again at every call, 8.5 against 1.7 µs a read, about 20 µs inside an append's transaction
(docs/performance.md, "The partition seal's read in each append")."""
_PROFILE_AND_SEAL_SQL = (
    "SELECT p.name, p.user_name, p.agent_name, p.created_on, p.updated_on, p.cleared_on, p.etag,"
    f" ({_PARTITION_SEAL_SQL}) AS seal"
    " FROM (SELECT 1) LEFT JOIN profiles AS p ON p.instance_id=? AND p.upn=? AND p.profile_id=?"
)
"""An append's one read: its profile's columns (all NULL when it has none) and the partition seal's data (NULL when
none), always one row, each by primary key. Until 2026-12-08 an append wrote the profile with ``INSERT OR IGNORE``
and read it and the seal with two more statements: 16.6, 7.8 and 6.0 µs in its transaction (docs/performance.md,
"The stdio append at 10 facts, per call (2026-12-08, thirty-sixth session)")."""


DELETE_ENTRIES_SQL = (
    "DELETE FROM entries WHERE rowid IN (SELECT e.rowid FROM json_each(?) AS ids CROSS JOIN entries AS e"
    " ON e.instance_id=? AND e.upn=? AND e.profile_id=? AND e.id=ids.value)"
)
"""Erases a profile's entries named by a JSON array of ids (those without a NUL: ``sqlite_rows.id_arrays``), in one
statement, whatever their number.

One statement, not one per entry: the full-text index's delete trigger (``sqlite_fulltext``) runs inside every
statement that erases, and FTS5 writes its pending changes out as a new segment at the end of each statement (its
savepoint), merging segments as they pile up: 60,000 single-row statements took 10-12 s, where one took 1.7-3.2 s
(docs/performance.md, "A memory of 60,000 entries over HTTP"). The triggers still run for every row, in the
same transaction: every row's words leave the index and the erasure is marked owed a purge, as before.
``CROSS JOIN`` keeps the ids driving the search (the primary key, one seek each), so erasing one entry of a large
profile reads no other entry."""


_DELETE_ENTRIES_BY_HEX_SQL = (
    "DELETE FROM entries WHERE instance_id=? AND upn=? AND profile_id=?"
    " AND hex(id) IN (SELECT value FROM json_each(?))"
)
"""Erases a profile's entries whose ids hold a NUL, named by a JSON array of their hex (``sqlite_rows.id_arrays``):
``DELETE_ENTRIES_SQL``'s ``json_each`` reads such an id only up to its NUL on SQLite before 3.45. ``hex(id)`` is no
index's key, so this walks the profile's entries: only a call naming an id with a NUL pays it (the service names only
stored ids, and writes none with a NUL), in the same transaction as the ids without one."""


def _where(key: ProfileKey) -> tuple[str, str, str]:
    return key.instance_id, key.upn, key.profile_id
