"""SqliteMemoryStore: the embedded store used when no cloud store is configured.

One database file, WAL journal, one connection per thread. Every write runs in
its own ``BEGIN IMMEDIATE`` transaction, so concurrent appends from a threaded
server serialize instead of overwriting each other, and a crash leaves either
the whole write or none of it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_core.adapters.sqlite_fulltext import DROP_SQL, FULLTEXT_SCHEMA, REBUILD_SQL, page_of_matches, replaces_sql
from memory_core.adapters.sqlite_stamps import STAMP_SQL, STAMPS_SCHEMA
from memory_core.domain.errors import Conflict, Unavailable
from memory_core.domain.models import (
    EntryKind,
    Hold,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Scope,
    ScopeState,
    Share,
)
from memory_core.domain.records import Partition, Record, RecordKind
from memory_core.domain.snapshots import PartitionStamp, StampedLoad
from memory_core.domain.store import EntryCount, EntryWindow, PageCursor

_SCHEMA_VERSION = 6  # 3: the FTS5 index (sqlite_fulltext) and partition stamps (sqlite_stamps); 4: entries_by_kind;
# 5: records.expires_on (retention); 6: the FTS5 index keyed by time (sqlite_fulltext)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS profiles (
    instance_id TEXT NOT NULL,
    upn TEXT NOT NULL,
    profile_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    agent_object_id TEXT,
    name TEXT,
    user_name TEXT,
    agent_name TEXT,
    created_on TEXT NOT NULL,
    updated_on TEXT NOT NULL,
    cleared_on TEXT,
    etag TEXT NOT NULL,
    PRIMARY KEY (instance_id, upn, profile_id)
);
CREATE TABLE IF NOT EXISTS entries (
    id TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    upn TEXT NOT NULL,
    profile_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    agent_object_id TEXT,
    kind TEXT NOT NULL,
    content_markdown TEXT NOT NULL,
    created_on TEXT NOT NULL,
    author_upn TEXT NOT NULL,
    author_user_id TEXT,
    agent_name TEXT,
    reason TEXT,
    session_id TEXT,
    operation_id TEXT,
    tags TEXT NOT NULL,
    share TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    PRIMARY KEY (instance_id, upn, id)
);
CREATE INDEX IF NOT EXISTS entries_by_profile ON entries (instance_id, upn, profile_id, created_on);
-- A budgeted read looks up a profile's newest replace entry without reading the others (version 3).
CREATE INDEX IF NOT EXISTS entries_by_kind ON entries (instance_id, upn, profile_id, kind, created_on);
CREATE TABLE IF NOT EXISTS records (
    instance_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    data TEXT NOT NULL,
    etag TEXT NOT NULL,
    expires_on TEXT,
    PRIMARY KEY (instance_id, owner, kind, id)
);
CREATE INDEX IF NOT EXISTS records_by_expiry ON records (expires_on) WHERE expires_on IS NOT NULL;
"""
_RECORD_INSERT = (
    "INSERT OR REPLACE INTO records (instance_id, owner, kind, id, data, etag, expires_on) VALUES (?,?,?,?,?,?,?)"
)


# Read by position: sqlite3.Row lookups by name dominate the cost of a large read.
_ENTRY_COLUMNS = (
    "id, profile_id, kind, content_markdown, created_on, author_upn, author_user_id, agent_name,"
    " reason, session_id, operation_id, tags, share, content_sha256"
)
_KINDS = {k.value: k for k in EntryKind}
_SHARES = {s.value: s for s in Share}


def _statements(script: str) -> list[str]:
    """``script`` split into whole statements (trigger bodies hold semicolons of their own)."""
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    return [s for s in statements if s]


@dataclass(eq=False)  # measurements are told apart by identity
class SqliteMetrics:
    """What a block of store calls cost: statements sent to SQLite (each read or write
    transaction is one round trip), rows read back, and SQLite virtual-machine
    instructions executed (the work of scans and index seeks)."""

    round_trips: int = 0
    rows: int = 0
    vm_steps: int = 0


def _json_filters(where: Mapping[str, str] | None, params: list[object]) -> str:
    sql = ""
    for name, value in (where or {}).items():
        if not name.isidentifier():
            raise ValueError(f"not a field name: {name!r}")
        sql += f" AND json_extract(data, '$.{name}')=?"
        params.append(value)
    return sql


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


def _parse(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


class SqliteMemoryStore:
    """The ``MemoryStore`` Protocol on a local SQLite file."""

    def __init__(self, path: str | Path, *, busy_timeout_seconds: float = 10.0) -> None:
        self._path = Path(path)
        self._timeout = busy_timeout_seconds
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            self._connection()  # creates the schema, so a bad path fails at start
        except (sqlite3.Error, OSError) as e:
            raise Unavailable(f"the SQLite store at {self._path} cannot be opened: {e}") from e

    # -- measuring ------------------------------------------------------------

    @contextmanager
    def measure(self) -> Iterator[SqliteMetrics]:
        """Count the round trips, rows and VM steps of every call this thread makes inside the block."""
        metrics = SqliteMetrics()
        stack: list[SqliteMetrics] = self._local.__dict__.setdefault("measuring", [])
        stack.append(metrics)
        db = self._connection()

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

    def _count(self, rows: int) -> None:
        for metrics in self._local.__dict__.get("measuring", ()):
            metrics.round_trips += 1
            metrics.rows += rows

    # -- connection handling ------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self._path, timeout=self._timeout, isolation_level=None, check_same_thread=False)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version < _SCHEMA_VERSION:
                db.execute("BEGIN IMMEDIATE")
                try:
                    if 0 < version < 5 and "expires_on" not in {r[1] for r in db.execute("PRAGMA table_info(records)")}:
                        db.execute("ALTER TABLE records ADD COLUMN expires_on TEXT")  # records may expire (retention)
                    if 0 < version < 6:
                        for statement in _statements(DROP_SQL):  # an index of an older layout, if any
                            db.execute(statement)
                    for statement in _statements(_SCHEMA + FULLTEXT_SCHEMA + STAMPS_SCHEMA):
                        db.execute(statement)
                    if 0 < version < 6:
                        db.execute(REBUILD_SQL)  # index what an older store holds, in this layout
                    db.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            self._local.db = db
            with self._lock:
                self._connections.append(db)
        return db

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        try:
            db = self._connection()
            self._count(0)
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.Error as e:
            raise Unavailable(f"the SQLite store could not complete the write: {e}") from e

    def _read(self, sql: str, params: Sequence[object]) -> list[Any]:
        try:
            rows = self._connection().execute(sql, params).fetchall()
        except sqlite3.Error as e:
            raise Unavailable(f"the SQLite store could not complete the read: {e}") from e
        self._count(len(rows))
        return rows

    # -- MemoryStore --------------------------------------------------------

    def load(self, keys: Sequence[ProfileKey]) -> list[ScopeState]:
        if not keys:
            return []
        instance_id, upn = keys[0].instance_id, keys[0].upn
        ids = [k.profile_id for k in keys]
        marks = ",".join("?" * len(ids))
        entries = self._read(
            f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE instance_id=? AND upn=? AND profile_id IN ({marks})"
            " ORDER BY created_on, id",
            [instance_id, upn, *ids],
        )
        return self._states(keys, self._profiles(keys), entries)

    # -- ChangeStamps (domain.snapshots) ------------------------------------------

    def partition_stamp(self, instance_id: str, upn: str) -> PartitionStamp:
        rows = self._read(STAMP_SQL, [instance_id, upn])
        return PartitionStamp(rows[0][0], rows[0][1]) if rows else PartitionStamp(0, 0)

    def load_since(self, keys: Sequence[ProfileKey], after: int | None) -> StampedLoad:
        """One read transaction: the stamp, profiles, holds and the entries after ``after`` (rowid)."""
        instance_id, upn = keys[0].instance_id, keys[0].upn
        ids = [k.profile_id for k in keys]
        marks = ",".join("?" * len(ids))
        if after is None:
            sql = (f"SELECT rowid, {_ENTRY_COLUMNS} FROM entries WHERE instance_id=? AND upn=?"
                   f" AND profile_id IN ({marks}) ORDER BY created_on, id")
            params: list[object] = [instance_id, upn, *ids]
        else:
            # NOT INDEXED: walk the rowids after ``after`` instead of the profile's whole index range.
            sql = (f"SELECT rowid, {_ENTRY_COLUMNS} FROM entries NOT INDEXED WHERE rowid > ? AND instance_id=?"
                   f" AND upn=? AND profile_id IN ({marks}) ORDER BY created_on, id")
            params = [after, instance_id, upn, *ids]
        db = self._connection()
        try:
            db.execute("BEGIN")
            try:
                stamp = db.execute(STAMP_SQL, (instance_id, upn)).fetchall()
                profiles = self._profiles(keys)
                rows = db.execute(sql, params).fetchall()
                states = self._states(keys, profiles, [row[1:] for row in rows])
            finally:
                db.execute("COMMIT")
        except sqlite3.Error as e:
            raise Unavailable(f"the SQLite store could not complete the read: {e}") from e
        sequence = max([after or 0, *(row[0] for row in rows)])
        return StampedLoad(PartitionStamp(*stamp[0]) if stamp else PartitionStamp(0, 0), sequence, states)

    def _profiles(self, keys: Sequence[ProfileKey]) -> list[Any]:
        marks = ",".join("?" * len(keys))
        return self._read(
            f"SELECT * FROM profiles WHERE instance_id=? AND upn=? AND profile_id IN ({marks})",
            [keys[0].instance_id, keys[0].upn, *(k.profile_id for k in keys)],
        )

    def _states(self, keys: Sequence[ProfileKey], profiles: Sequence[Any], entries: Sequence[Any]) -> list[ScopeState]:
        """States of ``keys`` (one partition) from profile and entry rows, with the partition's holds."""
        holds = self._holds(keys[0].instance_id, keys[0].upn)
        by_id = {k.profile_id: k for k in keys}
        profile_of = {row["profile_id"]: self._profile(by_id[row["profile_id"]], row) for row in profiles}
        entries_of: dict[str, dict[str, MemoryEntry]] = {k.profile_id: {} for k in keys}
        for row in entries:
            entries_of[row[1]].setdefault(row[0], self._entry(by_id[row[1]], row))
        return [
            ScopeState(k, profile_of.get(k.profile_id), list(entries_of[k.profile_id].values()), holds) for k in keys
        ]

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """``FullTextIndex``: one read transaction for the block (WAL: writers go on, this thread
        reads the state of its first read). Nested blocks join the outer one."""
        depth = self._local.__dict__.get("snapshot_depth", 0)
        db = self._connection()
        if depth == 0:
            try:
                db.execute("BEGIN")
            except sqlite3.Error as e:
                raise Unavailable(f"the SQLite store could not complete the read: {e}") from e
        self._local.snapshot_depth = depth + 1
        try:
            yield
        finally:
            self._local.snapshot_depth = depth
            if depth == 0:
                try:
                    db.execute("COMMIT")
                except sqlite3.Error as e:
                    raise Unavailable(f"the SQLite store could not complete the read: {e}") from e

    def search_index(
        self, keys: Sequence[ProfileKey], terms: Sequence[str], *, skip: int = 0, take: int | None = None
    ) -> list[tuple[ScopeState, dict[str, float]]]:
        """``FullTextIndex``: a page of the FTS5 matches of ``terms`` in ``keys`` (one partition), with
        the profiles, holds and replace entries that decide which of them are visible.

        One read transaction (``snapshot``): the page, and the state that decides its visibility,
        come from one state of the store."""
        if not keys or not terms:
            return [(ScopeState(k, None), {}) for k in keys]
        instance_id, upn = keys[0].instance_id, keys[0].upn
        ids = [k.profile_id for k in keys]
        with self.snapshot():
            matched = page_of_matches(self._read, _ENTRY_COLUMNS, (instance_id, upn, ids), terms, skip, take)
            replaces = self._read(replaces_sql(_ENTRY_COLUMNS, len(ids)), [instance_id, upn, *ids])
            states = self._states(keys, self._profiles(keys), [*(row[:-1] for row in matched), *replaces])
        scores: dict[str, dict[str, float]] = {pid: {} for pid in ids}
        for row in matched:
            scores[row[1]][row[0]] = float(row[-1])
        return [(state, scores[state.key.profile_id]) for state in states]

    def _holds(self, instance_id: str, upn: str) -> tuple[Hold, ...]:
        rows = self._read(
            "SELECT data FROM records WHERE instance_id=? AND owner=? AND kind=? ORDER BY id",
            [instance_id, upn, RecordKind.HOLD],
        )
        return tuple(Hold.from_data(json.loads(row[0])) for row in rows)

    def load_heads(self, keys: Sequence[ProfileKey]) -> list[ScopeState]:
        if not keys:
            return []
        instance_id, upn = keys[0].instance_id, keys[0].upn
        ids = [k.profile_id for k in keys]
        profiles = self._read(
            f"SELECT * FROM profiles WHERE instance_id=? AND upn=? AND profile_id IN ({','.join('?' * len(ids))})",
            [instance_id, upn, *ids],
        )
        holds = self._holds(instance_id, upn)
        by_id = {k.profile_id: k for k in keys}
        profile_of = {row["profile_id"]: self._profile(by_id[row["profile_id"]], row) for row in profiles}
        return [ScopeState(k, profile_of.get(k.profile_id), [], holds) for k in keys]

    def newest_entries(
        self, window: EntryWindow, limit: int, *, cursor: PageCursor | None = None, kind: EntryKind | None = None
    ) -> list[MemoryEntry]:
        where, params = _window_filter(window)
        if kind is not None:
            where += " AND kind=?"
            params.append(kind.value)
        if cursor is not None:
            at = _iso(cursor.created_on)
            where += " AND (created_on<? OR (created_on=? AND id NOT IN (SELECT value FROM json_each(?))))"
            params += [at, at, json.dumps(sorted(cursor.seen_ids))]
        # The (instance_id, upn, profile_id, created_on) index serves the order, so
        # SQLite reads ``limit`` rows from its end, whatever the profile holds.
        rows = self._read(
            f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE {where} ORDER BY created_on DESC, id DESC LIMIT ?",
            [*params, max(0, limit)],
        )
        return [self._entry(window.key, row) for row in rows]

    def count_entries(self, window: EntryWindow) -> EntryCount:
        where, params = _window_filter(window)
        ((count, oldest),) = self._read(f"SELECT COUNT(*), MIN(created_on) FROM entries WHERE {where}", params)
        return EntryCount(int(count), _parse(oldest))

    def load_partition(self, instance_id: str, upn: str) -> list[ScopeState]:
        rows = self._read(
            "SELECT profile_id, scope, agent_object_id FROM profiles WHERE instance_id=? AND upn=?"
            " UNION SELECT profile_id, scope, agent_object_id FROM entries WHERE instance_id=? AND upn=?",
            [instance_id, upn, instance_id, upn],
        )
        keys = sorted(
            {ProfileKey(instance_id, upn, Scope(row[1]), row[2]) for row in rows}, key=lambda k: k.profile_id
        )
        if not keys:
            return []
        return self.load(keys)

    def get_entry(self, instance_id: str, upn: str, entry_id: str) -> MemoryEntry | None:
        rows = self._read(
            f"SELECT {_ENTRY_COLUMNS}, scope, agent_object_id FROM entries WHERE instance_id=? AND upn=? AND id=?",
            [instance_id, upn, entry_id],
        )
        if not rows:
            return None
        row = rows[0]
        return self._entry(ProfileKey(instance_id, upn, Scope(row[-2]), row[-1]), row[:-2])

    def delete_profile(self, key: ProfileKey) -> None:
        with self._write() as db:
            db.execute(
                "DELETE FROM profiles WHERE instance_id=? AND upn=? AND profile_id=?",
                (key.instance_id, key.upn, key.profile_id),
            )

    # -- records ----------------------------------------------------------------

    def put_record(self, record: Record) -> Record:
        p = record.partition
        etag = uuid.uuid4().hex
        data = json.dumps(record.data, separators=(",", ":"), sort_keys=True)
        expires = _iso(record.expires_on) if record.expires_on else None
        with self._write() as db:
            if record.etag is not None:
                changed = db.execute(
                    "UPDATE records SET data=?, etag=?, expires_on=?"
                    " WHERE instance_id=? AND owner=? AND kind=? AND id=? AND etag=?",
                    (data, etag, expires, p.instance_id, p.owner, record.kind, record.id, record.etag),
                ).rowcount
                if changed != 1:
                    raise Conflict(f"the {record.kind} record changed since it was read")
            else:
                db.execute(_RECORD_INSERT, (p.instance_id, p.owner, record.kind, record.id, data, etag, expires))
        return Record(p, record.kind, record.id, record.data, etag)

    def create_record(self, record: Record) -> Record:
        p = record.partition
        etag = uuid.uuid4().hex
        data = json.dumps(record.data, separators=(",", ":"), sort_keys=True)
        with self._write() as db:
            created = db.execute(
                "INSERT OR IGNORE INTO records (instance_id, owner, kind, id, data, etag, expires_on)"
                " VALUES (?,?,?,?,?,?,?)",
                (p.instance_id, p.owner, record.kind, record.id, data, etag,
                 _iso(record.expires_on) if record.expires_on else None),
            ).rowcount
            if created != 1:
                raise Conflict(f"the {record.kind} record already exists")
        return Record(p, record.kind, record.id, record.data, etag)

    def get_record(self, partition: Partition, kind: str, record_id: str) -> Record | None:
        rows = self._read(
            "SELECT data, etag FROM records WHERE instance_id=? AND owner=? AND kind=? AND id=?",
            [partition.instance_id, partition.owner, kind, record_id],
        )
        return Record(partition, kind, record_id, json.loads(rows[0][0]), rows[0][1]) if rows else None

    def query_records(
        self, partition: Partition, kind: str, where: Mapping[str, str] | None = None, limit: int | None = None
    ) -> list[Record]:
        return self._select_records(partition, kind, where, None, limit, descending=False)

    def page_records(
        self,
        partition: Partition,
        kind: str,
        *,
        limit: int,
        where: Mapping[str, str] | None = None,
        after: str | None = None,
        descending: bool = False,
    ) -> list[Record]:
        return self._select_records(partition, kind, where, after, limit, descending=descending)

    def _select_records(
        self,
        partition: Partition,
        kind: str,
        where: Mapping[str, str] | None,
        after: str | None,
        limit: int | None,
        *,
        descending: bool,
    ) -> list[Record]:
        # The primary key (instance_id, owner, kind, id) serves the filter, the
        # order and the keyset position: SQLite reads only the rows it answers
        # (plus those a ``where`` skips).
        sql = "SELECT id, data, etag FROM records WHERE instance_id=? AND owner=? AND kind=?"
        params: list[object] = [partition.instance_id, partition.owner, kind]
        sql += _json_filters(where, params)
        if after is not None:
            sql += " AND id < ?" if descending else " AND id > ?"
            params.append(after)
        sql += " ORDER BY id DESC" if descending else " ORDER BY id"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [Record(partition, kind, row[0], json.loads(row[1]), row[2]) for row in self._read(sql, params)]

    def query_records_of_owner(self, owner: str, kind: str, where: Mapping[str, str] | None = None) -> list[Record]:
        params: list[object] = [owner, kind]
        sql = "SELECT instance_id, id, data, etag FROM records WHERE owner=? AND kind=?" + _json_filters(where, params)
        rows = self._read(sql + " ORDER BY instance_id, id", params)
        return [Record(Partition(row[0], owner), kind, row[1], json.loads(row[2]), row[3]) for row in rows]

    def erase_expired_records(self, now: datetime) -> int:
        # The sweep step that stands in for Cosmos DB's ttl; served by records_by_expiry.
        with self._write() as db:
            return db.execute(
                "DELETE FROM records WHERE expires_on IS NOT NULL AND expires_on <= ?", (_iso(now),)
            ).rowcount

    def delete_record(self, partition: Partition, kind: str, record_id: str) -> bool:
        with self._write() as db:
            return (
                db.execute(
                    "DELETE FROM records WHERE instance_id=? AND owner=? AND kind=? AND id=?",
                    (partition.instance_id, partition.owner, kind, record_id),
                ).rowcount
                == 1
            )

    def append(self, profile: MemoryProfile, entry: MemoryEntry) -> MemoryProfile:
        return self.append_with_records(profile, entry, ())

    def append_with_records(self, profile: MemoryProfile, entry: MemoryEntry, records: Sequence[Record]) -> MemoryProfile:
        key = entry.key
        rows = []
        for record in records:
            if (record.partition.instance_id, record.partition.owner) != (key.instance_id, key.upn):
                raise ValueError("append_with_records takes records of the entry's partition")
            rows.append((key.instance_id, key.upn, record.kind, record.id,
                         json.dumps(record.data, separators=(",", ":"), sort_keys=True), uuid.uuid4().hex,
                         _iso(record.expires_on) if record.expires_on else None))
        with self._write() as db:
            db.execute(
                "INSERT OR IGNORE INTO profiles VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                self._profile_row(profile, uuid.uuid4().hex),
            )
            db.execute(
                "INSERT INTO entries VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    entry.id,
                    key.instance_id,
                    key.upn,
                    key.profile_id,
                    key.scope.value,
                    key.agent_object_id,
                    entry.kind.value,
                    entry.content_markdown,
                    _iso(entry.created_on),
                    entry.author_upn,
                    entry.author_user_id,
                    entry.agent_name,
                    entry.reason,
                    entry.session_id,
                    entry.operation_id,
                    json.dumps(list(entry.tags)),
                    entry.share.value,
                    entry.content_sha256,
                ),
            )
            # In the entry's transaction: a crash leaves both or neither.
            db.executemany(_RECORD_INSERT, rows)
            row = db.execute(
                "SELECT * FROM profiles WHERE instance_id=? AND upn=? AND profile_id=?",
                (key.instance_id, key.upn, key.profile_id),
            ).fetchone()
        return self._profile(key, row)

    def save_profile(self, profile: MemoryProfile) -> MemoryProfile:
        key = profile.key
        etag = uuid.uuid4().hex
        with self._write() as db:
            if profile.etag is not None:
                changed = db.execute(
                    "UPDATE profiles SET name=?, user_name=?, agent_name=?, created_on=?, updated_on=?,"
                    " cleared_on=?, etag=? WHERE instance_id=? AND upn=? AND profile_id=? AND etag=?",
                    (
                        profile.name,
                        profile.user_name,
                        profile.agent_name,
                        _iso(profile.created_on),
                        _iso(profile.updated_on),
                        _iso(profile.cleared_on) if profile.cleared_on else None,
                        etag,
                        key.instance_id,
                        key.upn,
                        key.profile_id,
                        profile.etag,
                    ),
                ).rowcount
                if changed != 1:
                    raise Conflict("the memory profile changed since it was read")
            else:
                db.execute("INSERT OR REPLACE INTO profiles VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", self._profile_row(profile, etag))
        return MemoryProfile(
            key, profile.name, profile.user_name, profile.agent_name,
            profile.created_on, profile.updated_on, profile.cleared_on, etag,
        )

    def delete_entries(self, key: ProfileKey, entry_ids: Sequence[str]) -> int:
        if not entry_ids:
            return 0
        deleted = 0
        with self._write() as db:
            for entry_id in entry_ids:
                deleted += db.execute(
                    "DELETE FROM entries WHERE instance_id=? AND upn=? AND profile_id=? AND id=?",
                    (key.instance_id, key.upn, key.profile_id, entry_id),
                ).rowcount
        return deleted

    def close(self) -> None:
        with self._lock:
            for db in self._connections:
                db.close()
            self._connections.clear()
        self._local = threading.local()

    # -- row mapping --------------------------------------------------------

    @staticmethod
    def _profile_row(profile: MemoryProfile, etag: str) -> tuple[object, ...]:
        key = profile.key
        return (
            key.instance_id,
            key.upn,
            key.profile_id,
            key.scope.value,
            key.agent_object_id,
            profile.name,
            profile.user_name,
            profile.agent_name,
            _iso(profile.created_on),
            _iso(profile.updated_on),
            _iso(profile.cleared_on) if profile.cleared_on else None,
            etag,
        )

    @staticmethod
    def _profile(key: ProfileKey, row: sqlite3.Row) -> MemoryProfile:
        created = _parse(row["created_on"])
        updated = _parse(row["updated_on"])
        if created is None or updated is None:
            raise Unavailable("a memory profile in the SQLite store is damaged (no timestamps)")
        return MemoryProfile(
            key=key,
            name=row["name"],
            user_name=row["user_name"],
            agent_name=row["agent_name"],
            created_on=created,
            updated_on=updated,
            cleared_on=_parse(row["cleared_on"]),
            etag=row["etag"],
        )

    @staticmethod
    def _entry(key: ProfileKey, row: Sequence[Any]) -> MemoryEntry:
        (entry_id, _, kind, content, created, author, author_id, agent_name,
         reason, session_id, operation_id, tags, share, sha) = row
        return MemoryEntry(
            id=entry_id,
            key=key,
            content_markdown=content,
            kind=_KINDS[kind],
            created_on=datetime.fromisoformat(created),
            author_upn=author,
            author_user_id=author_id,
            agent_name=agent_name,
            reason=reason,
            session_id=session_id,
            operation_id=operation_id,
            tags=tuple(json.loads(tags)) if tags != "[]" else (),
            share=_SHARES[share],
            content_sha256=sha,
        )


def _window_filter(window: EntryWindow) -> tuple[str, list[object]]:
    """The WHERE clause (and its parameters) selecting the entries of ``window``."""
    key = window.key
    where = "instance_id=? AND upn=? AND profile_id=?"
    params: list[object] = [key.instance_id, key.upn, key.profile_id]
    if window.after is not None:
        where += " AND created_on>?"
        params.append(_iso(window.after))
    if window.start is not None:
        at = _iso(window.start[0])
        where += " AND (created_on>? OR (created_on=? AND id>=?))"
        params += [at, at, window.start[1]]
    if window.excluded_ids:
        where += " AND id NOT IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(sorted(window.excluded_ids)))
    return where, params


__all__ = ["SqliteMemoryStore"]
