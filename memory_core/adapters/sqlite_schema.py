"""The SQLite store's tables, its schema version and the upgrade of an older file.

A file records its layout in ``PRAGMA user_version``. Opening a file of an older
version upgrades it in one ``BEGIN IMMEDIATE`` transaction (a crash leaves the old
layout whole); a new file is created at the current version.
"""

from __future__ import annotations

import sqlite3

from memory_core.adapters.sqlite_checkpoints import CHECKPOINTS_SCHEMA
from memory_core.adapters.sqlite_erased_log import ERASED_LOG_SCHEMA
from memory_core.adapters.sqlite_erasure import ERASURE_SCHEMA, UPGRADE_MARK
from memory_core.adapters.sqlite_fulltext import DROP_SQL, FULLTEXT_SCHEMA, REBUILD_SQL
from memory_core.adapters.sqlite_stamps import STAMPS_SCHEMA
from memory_core.adapters.sqlite_transaction import write_transaction

SCHEMA_VERSION = 11  # 3: the FTS5 index (sqlite_fulltext) and partition stamps (sqlite_stamps); 4: entries_by_kind;
# 5: records.expires_on (retention); 6: the FTS5 index keyed by time (sqlite_fulltext);
# 7: read checkpoints (sqlite_checkpoints); 8: the deletion-request indexes; 9: erasure purges (sqlite_erasure);
# 10: the log of erased entries (sqlite_erased_log) and entries_by_partition; 11: deletion_requests_by_id
TABLES_SCHEMA = """
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
-- A partition's largest rowid (sqlite_stamps.SEQUENCE_SQL, read by every load that a later one grows from) is one
-- seek, not a walk of the partition's entries: 0.004 against 15 ms at 60,000; an append pays under 0.01 ms (version 10).
CREATE INDEX IF NOT EXISTS entries_by_partition ON entries (instance_id, upn);
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
-- An instance's deletion requests share one partition, finished ones included: a listing by status, by user, or
-- by user and status, seeks to its requests in order instead of reading every request (version 8). The
-- expressions are the ones sqlite_records writes for a ``where``; only deletion requests are indexed, so no
-- other write pays for them.
CREATE INDEX IF NOT EXISTS deletion_requests_by_status ON records
    (instance_id, owner, json_extract(data, '$.status'), id) WHERE kind = 'deletion_request';
CREATE INDEX IF NOT EXISTS deletion_requests_by_user ON records
    (instance_id, owner, json_extract(data, '$.upn'), id) WHERE kind = 'deletion_request';
CREATE INDEX IF NOT EXISTS deletion_requests_by_user_and_status ON records
    (instance_id, owner, json_extract(data, '$.upn'), json_extract(data, '$.status'), id)
    WHERE kind = 'deletion_request';
-- Whether the request a hold names is stored (hold_requests.request_stored, once per hold an orphan-holds page
-- reads) is one seek, not a read of every request: 500 holds over 20,000 requests took 21-29 s a page (version 11).
CREATE INDEX IF NOT EXISTS deletion_requests_by_id ON records
    (instance_id, owner, json_extract(data, '$.id'), id) WHERE kind = 'deletion_request';
"""


def statements(script: str) -> list[str]:
    """``script`` split into whole statements (trigger bodies hold semicolons of their own)."""
    found, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            found.append(pending.strip())
            pending = ""
    return [s for s in found if s]


def bring_up_to_date(db: sqlite3.Connection) -> None:
    """Creates the schema in a new file, or upgrades an older one, to ``SCHEMA_VERSION``.

    ``db`` must be in autocommit mode (``isolation_level=None``). Raises ``sqlite3.Error``
    when the file cannot be read or written; the upgrade is then rolled back whole, and the error is SQLite's
    own also when SQLite rolled it back by itself (``sqlite_transaction``).
    """
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version >= SCHEMA_VERSION:
        return
    with write_transaction(db):
        if 0 < version < 5 and "expires_on" not in {r[1] for r in db.execute("PRAGMA table_info(records)")}:
            db.execute("ALTER TABLE records ADD COLUMN expires_on TEXT")  # records may expire (retention)
        if 0 < version < 6:
            for statement in statements(DROP_SQL):  # an index of an older layout, if any
                db.execute(statement)
        for statement in statements(TABLES_SCHEMA + FULLTEXT_SCHEMA + STAMPS_SCHEMA + CHECKPOINTS_SCHEMA
                                    + ERASURE_SCHEMA + ERASED_LOG_SCHEMA):
            db.execute(statement)
        if 0 < version < 6:
            db.execute(REBUILD_SQL)  # index what an older store holds, in this layout
        if 0 < version < 9:
            db.execute(UPGRADE_MARK)  # a file from before purges: the index and the log may hold erased words
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    if 0 < version < 9:
        # Rows deleted before secure_delete was on left their text in free space, which only a rebuild of the
        # file drops (once; it rewrites the file, a few seconds per 100 MB).
        db.execute("VACUUM")
