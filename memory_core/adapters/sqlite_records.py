"""The records half of the SQLite store: audit events, deletion requests, holds and settings.

Records live in one ``records`` table keyed by (instance_id, owner, kind, id); their
data is JSON. Optimistic concurrency by ``etag``, as on Cosmos DB; ``expires_on`` stands
in for Cosmos DB's ttl, erased by ``erase_expired_records``.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import lru_cache

from memory_core.adapters.sqlite_database import SqliteDatabase
from memory_core.adapters.sqlite_erasure import FILE_INDEX_KIND
from memory_core.adapters.sqlite_rows import iso
from memory_core.domain.errors import Conflict
from memory_core.domain.records import (
    ABSENT,
    RECORD_KIND,
    Partition,
    Record,
    RecordKind,
    check_delete_record_and_put,
    check_put_records,
)

RECORD_INSERT = (
    "INSERT OR REPLACE INTO records (instance_id, owner, kind, id, data, etag, expires_on) VALUES (?,?,?,?,?,?,?)"
)
_RECORD_CREATE = RECORD_INSERT.replace("OR REPLACE", "OR IGNORE")
RECORD_CREATE_ONLY = (  # only the primary key's conflict is skipped (a rowcount of 0); any other still fails
    RECORD_INSERT.replace("OR REPLACE ", "") + " ON CONFLICT (instance_id, owner, kind, id) DO NOTHING"
)
_RECORD_REPLACE = (
    "UPDATE records SET data=?, etag=?, expires_on=?"
    " WHERE instance_id=? AND owner=? AND kind={kind} AND id=? AND etag=?"
)
_RECORD_BY_KEY = "instance_id=? AND owner=? AND kind={kind} AND id=?"

KIND_TEXTS = 256
"""How many statement texts ``with_kind`` keeps, the least recently used dropped first."""


@lru_cache(maxsize=KIND_TEXTS)
def with_kind(template: str, kind: str) -> str:
    """``template`` with the record kind written in where it says ``{kind}``, as an SQL string literal.

    Every statement that picks records by kind goes through here. ``records`` has partial indexes on ``kind``
    (the deletion requests', ``sqlite_schema``); a kind bound as ``?`` there makes SQLite prepare the statement
    again at every call, to see whether they apply (docs/performance.md, "The partition seal's read in each
    append"), where a written-in kind is prepared once per connection and still lets them serve a deletion
    request's listing. Only a kind ``records.RECORD_KIND`` allows (lowercase letters, digits, underscores; 1-40)
    is written in, so no value can change the statement; any other raises ``ValueError``. The texts are cached
    (``KIND_TEXTS`` at most), and so are the prepared statements, by ``sqlite3``'s own bounded cache per
    connection.
    """
    if not RECORD_KIND.fullmatch(kind):
        raise ValueError(f"not a record kind: {kind!r}")
    return template.format(kind=f"'{kind}'")


def data_text(value: object) -> str:
    """``value`` as JSON text, as a record's data is stored: ASCII only (``json.dumps``' ``ensure_ascii``: a NUL is
    ``\\u0000``, an ``é`` ``\\u00e9``), so one value has one text, which the field filters rely on."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def record_values(record: Record, etag: str) -> tuple[object, ...]:
    """The ``RECORD_INSERT`` parameters of ``record`` with a new ``etag``."""
    p = record.partition
    return (p.instance_id, p.owner, record.kind, record.id, data_text(record.data), etag,
            iso(record.expires_on) if record.expires_on else None)


def purge_if_names_rewritten(database: SqliteDatabase, records: Sequence[Record]) -> None:
    """After a committed write of ``records``: a rewritten memory-tool file index leaves its old names (the user's
    words) in the log, so the purge that empties it is handed over (``sqlite_erasure``)."""
    if any(r.kind == FILE_INDEX_KIND for r in records):
        database.purge_erased()


def _write(db: sqlite3.Connection, record: Record, etag: str) -> None:
    """Store ``record`` with the new ``etag`` inside the caller's transaction, as its own etag asks:
    none, create or replace; ``ABSENT``, create only; another, replace only that version. ``Conflict``
    when the stored record no longer is as the caller read it."""
    values = record_values(record, etag)
    if record.etag is None:
        db.execute(RECORD_INSERT, values)
    elif record.etag == ABSENT:
        if db.execute(_RECORD_CREATE, values).rowcount != 1:
            raise Conflict(f"the {record.kind} record was created since it was read")
    elif db.execute(with_kind(_RECORD_REPLACE, record.kind), (*values[4:], *values[:2], values[3], record.etag)
                    ).rowcount != 1:
        raise Conflict(f"the {record.kind} record changed or went since it was read")


def _field_is_one_of(name: str, values: Sequence[str], params: list[object]) -> str:
    """The filter keeping records whose data field ``name`` is exactly one of ``values`` (text, not a number or
    other JSON), as Cosmos DB compares. Two tests: ``json_extract`` of the field, which the indexes on it
    (``sqlite_schema``: ``deletion_requests_by_id`` and the others) serve, against each value and, for a value
    holding a NUL, also against it up to its first NUL: what ``json_extract`` answers for text with a NUL depends on
    SQLite's version (3.40.1 answers ``a`` for ``"a\\u0000b"``; 3.51.1, after 3.45's JSON rewrite, ``a\\0b``), so
    the seek takes both and alone may also keep the record of ``a\\0b`` for ``a``; then the field's JSON text
    (``->``, as written: ``data_text``) against each value's, which is exact. ``ValueError`` for a name that is
    not an identifier."""
    if not name.isidentifier():
        raise ValueError(f"not a field name: {name!r}")
    if not values:
        return " AND 0"
    seek = [*values, *(value.split("\0", 1)[0] for value in values if "\0" in value)]
    params += seek
    params += [data_text(value) for value in values]
    seek_marks = ",".join("?" * len(seek))
    marks = ",".join("?" * len(values))
    return f" AND json_extract(data, '$.{name}') IN ({seek_marks}) AND data -> '$.{name}' IN ({marks})"


def _json_filters(where: Mapping[str, str] | None, params: list[object]) -> str:
    """The filter keeping records whose data fields equal ``where``'s, each exactly (``_field_is_one_of``)."""
    return "".join(_field_is_one_of(name, [value], params) for name, value in (where or {}).items())


#: The most values one query compares a data field to (``MemoryStore.page_records``' ``where_in``).
MAX_FIELD_VALUES = 100


def _json_in(name: str, values: Sequence[str], params: list[object]) -> str:
    """The filter keeping records whose data field ``name`` equals one of ``values``, as ``_json_filters`` compares
    (an index on it, as ``deletion_requests_by_id``, serves each value); nothing matches none. ``ValueError`` past
    ``MAX_FIELD_VALUES`` and for a name that is not an identifier."""
    if len(values) > MAX_FIELD_VALUES:
        raise ValueError(f"at most {MAX_FIELD_VALUES} values a query")
    return _field_is_one_of(name, values, params)


#: The most suffixes one query compares (``MemoryStore.page_records``' ``key_suffixes``).
MAX_KEY_SUFFIXES = 100


def _ending_in_any(suffixes: Sequence[str], params: list[object]) -> str:
    """The filter keeping records whose id ends in one of ``suffixes``: per length in UTF-8 bytes, one ``substr`` of
    the id's bytes looked up in the list of that length's suffixes, as bytes (one lookup a row, not one comparison a
    suffix). Bytes, not text: ``length`` and ``substr`` of text stop at a NUL, and LIKE ignores ASCII case and takes
    ``%`` and ``_`` as wildcards. A byte suffix that is valid UTF-8 starts on a character, so it matches where the
    text does (the database's text is UTF-8: SQLite's default, never changed). The empty suffix keeps every record,
    none keeps no record. ``ValueError`` past ``MAX_KEY_SUFFIXES``, and (``UnicodeEncodeError``) for a suffix UTF-8
    cannot encode (a lone surrogate), as for such an id."""
    if len(suffixes) > MAX_KEY_SUFFIXES:
        raise ValueError(f"at most {MAX_KEY_SUFFIXES} key suffixes a query")
    by_length: dict[int, list[bytes]] = {}
    for suffix in suffixes:
        encoded = suffix.encode("utf-8")
        by_length.setdefault(len(encoded), []).append(encoded)
    if 0 in by_length:
        return ""
    tests = []
    for length, same in sorted(by_length.items()):
        tests.append(f"substr(CAST(id AS BLOB), -?) IN ({','.join('?' * len(same))})")
        params += [length, *same]
    return f" AND ({' OR '.join(tests)})" if tests else " AND 0"


class SqliteRecords:
    """The record operations of the ``MemoryStore`` Protocol on a ``SqliteDatabase``."""

    _db: SqliteDatabase

    def put_record(self, record: Record) -> Record:
        etag = uuid.uuid4().hex
        with self._db.write() as db:
            _write(db, record, etag)
        purge_if_names_rewritten(self._db, [record])
        return Record(record.partition, record.kind, record.id, record.data, etag)

    def put_records(self, records: Sequence[Record]) -> list[Record]:
        check_put_records(records)
        etags = [uuid.uuid4().hex for _ in records]
        with self._db.write() as db:  # one transaction: all or none (a Conflict rolls it back)
            for record, etag in zip(records, etags, strict=True):
                _write(db, record, etag)
        purge_if_names_rewritten(self._db, records)
        return [Record(r.partition, r.kind, r.id, r.data, etag) for r, etag in zip(records, etags, strict=True)]

    def create_record(self, record: Record) -> Record:
        etag = uuid.uuid4().hex
        with self._db.write() as db:
            if db.execute(_RECORD_CREATE, record_values(record, etag)).rowcount != 1:
                raise Conflict(f"the {record.kind} record already exists")
        return Record(record.partition, record.kind, record.id, record.data, etag)

    def get_record(self, partition: Partition, kind: str, record_id: str) -> Record | None:
        rows = self._db.read(with_kind("SELECT data, etag FROM records WHERE " + _RECORD_BY_KEY, kind),
                             [partition.instance_id, partition.owner, record_id])
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
        key_suffixes: Sequence[str] | None = None,
        where_in: tuple[str, Sequence[str]] | None = None,
    ) -> list[Record]:
        return self._select_records(partition, kind, where, after, limit, descending=descending,
                                    key_suffixes=key_suffixes, where_in=where_in)

    def _select_records(
        self,
        partition: Partition,
        kind: str,
        where: Mapping[str, str] | None,
        after: str | None,
        limit: int | None,
        *,
        descending: bool,
        key_suffixes: Sequence[str] | None = None,
        where_in: tuple[str, Sequence[str]] | None = None,
    ) -> list[Record]:
        # The primary key (instance_id, owner, kind, id) serves the filter, the
        # order and the keyset position: SQLite reads only the rows it answers
        # (plus those a ``where`` skips).
        sql = "SELECT id, data, etag FROM records WHERE instance_id=? AND owner=? AND kind={kind}"
        params: list[object] = [partition.instance_id, partition.owner]
        sql += _json_filters(where, params)
        if key_suffixes is not None:
            sql += _ending_in_any(key_suffixes, params)
        if where_in is not None:
            sql += _json_in(*where_in, params)
        # With ``where_in``, ``+id`` keeps the primary key from serving the position and the order: the planner
        # would walk every record of the kind in id order, where an index on the field (deletion_requests_by_id)
        # seeks each value and sorts the few it finds.
        column = "+id" if where_in is not None else "id"
        if after is not None:
            sql += f" AND {column} < ?" if descending else f" AND {column} > ?"
            params.append(after)
        sql += f" ORDER BY {column} DESC" if descending else f" ORDER BY {column}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = self._db.read(with_kind(sql, kind), params)
        return [Record(partition, kind, row[0], json.loads(row[1]), row[2]) for row in rows]

    def query_records_of_owner(self, owner: str, kind: str, where: Mapping[str, str] | None = None) -> list[Record]:
        params: list[object] = [owner]
        sql = "SELECT instance_id, id, data, etag FROM records WHERE owner=? AND kind={kind}"
        sql += _json_filters(where, params)
        rows = self._db.read(with_kind(sql + " ORDER BY instance_id, id", kind), params)
        return [Record(Partition(row[0], owner), kind, row[1], json.loads(row[2]), row[3]) for row in rows]

    def erase_expired_records(self, now: datetime) -> int:
        # The sweep step that stands in for Cosmos DB's ttl; served by records_by_expiry.
        with self._db.write() as db:
            return db.execute(
                "DELETE FROM records WHERE expires_on IS NOT NULL AND expires_on <= ?", (iso(now),)
            ).rowcount

    def delete_record(self, partition: Partition, kind: str, record_id: str, etag: str | None = None) -> bool:
        _no_conditional_hold(kind, etag)
        key = (partition.instance_id, partition.owner, record_id)
        delete = with_kind("DELETE FROM records WHERE " + _RECORD_BY_KEY, kind)
        with self._db.write() as db:
            deleted = db.execute(delete, key).rowcount == 1 if etag is None else _delete_if_match(db, kind, key, etag)
        if deleted and kind == FILE_INDEX_KIND:
            self._db.purge_erased()
        return deleted

    def delete_record_and_put(self, erased: Record, written: Record) -> Record | None:
        check_delete_record_and_put(erased, written)
        key = (erased.partition.instance_id, erased.partition.owner, erased.id)
        etag = uuid.uuid4().hex
        with self._db.write() as db:  # one transaction: a Conflict writing ``written`` rolls back the erasure
            if not _delete_if_match(db, erased.kind, key, str(erased.etag)):
                return None
            _write(db, written, etag)
        if erased.kind == FILE_INDEX_KIND:
            self._db.purge_erased()
        purge_if_names_rewritten(self._db, [written])
        return Record(written.partition, written.kind, written.id, written.data, etag)


def _delete_if_match(db: sqlite3.Connection, kind: str, key: tuple[str, str, str], etag: str) -> bool:
    """Erase the record keyed ``key`` if it still has ``etag``, inside the caller's transaction: False when it is
    not stored, ``Conflict`` when it was written since it was read (checked and erased in one statement)."""
    if db.execute(with_kind("DELETE FROM records WHERE " + _RECORD_BY_KEY + " AND etag=?", kind),
                  (*key, etag)).rowcount == 1:
        return True
    if db.execute(with_kind("SELECT 1 FROM records WHERE " + _RECORD_BY_KEY, kind), key).fetchone():
        raise Conflict(f"the stored {kind} record changed since it was read")
    return False


def _no_conditional_hold(kind: str, etag: str | None) -> None:
    """``MemoryStore.delete_record``: a hold is erased unconditionally (as on Cosmos DB, where its erasure moves the
    partition's stamp in a batch of its own)."""
    if etag is not None and kind == RecordKind.HOLD:
        raise ValueError("a hold is erased without an etag")
