"""The SQLite store's full-text index: FTS5 over entry content, kept in step by triggers.

``entries_fts`` is an external-content FTS5 table over ``entries`` (the text is
stored once), tokenized with Porter stemming over unicode61, so "trains",
"training" and "train" share a stem. Beside the content it indexes one word per
entry naming its profile (``scope``), so a query is confined to the caller's
profiles inside the index itself. Triggers index every insert, delete and
content change in the same transaction as the write itself: the index cannot
drift from the entries, whichever code path writes them.

The index's rowid is a search key, not the entry's rowid: the entry's
``created_on`` in 4-second buckets, negated, in the high bits, the entry's rowid
in the low 32. Ascending key order is therefore newest-first order (up to entries
of one bucket), so a query ranks inside FTS5 (``ORDER BY score DESC, rowid``) and
joins only one page of matches to their entries, instead of joining every match
to sort by time; the entry is found again from the key alone
(``search_key & 0xFFFFFFFF``). Newest first is also the order FTS5 reads rowids
in, so among equal scores the top-N sorter keeps the first rows it sees and
discards the rest without reshuffling. Inside one bucket key order is insertion
order, so ``page_of_matches`` sorts each run of equal scores in one bucket by the
domain's tie order (newest first, then id), reading the whole run when it
straddles the edge of the rows fetched.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from memory_core.adapters.sqlite_rows import in_list
from memory_core.adapters.sqlite_transaction import write_transaction

_ROWID_BITS = 32
_BUCKET_SECONDS = 4
_EPOCH_2000 = 946684800
_WINDOW_MARGIN = 32
"""Matches fetched past each edge of a page, so a run of equal keys at an edge is usually whole."""


def _scope_token(row: str) -> str:
    """SQL for one word naming an entry's profile: 'k', the hex of its three key parts, 'q'.

    Hex keeps it one unicode61 token whatever the ids hold; the 'x' separators (not hex
    digits) keep it unambiguous; no Porter rule ends in 'q', so stemming leaves it whole.
    """
    return f"'k' || hex({row}.instance_id) || 'x' || hex({row}.upn) || 'x' || hex({row}.profile_id) || 'q'"


def _search_key(row: str) -> str:
    """SQL for an entry's search key: minus its time bucket (4 s since 2000, clamped to 31 bits),
    then its rowid, so newer entries have smaller keys.

    Buckets only need to grow with time: clamping a date past 2272 (or an unreadable one,
    bucket 0) keeps every key unique and the order right, only coarser.
    """
    seconds = f"COALESCE(CAST(strftime('%s', {row}.created_on) AS INTEGER), {_EPOCH_2000})"
    bucket = f"max(-2147483647, min(2147483647, ({seconds} - {_EPOCH_2000}) / {_BUCKET_SECONDS}))"
    return f"(-{bucket} * {1 << _ROWID_BITS} + {row}.rowid)"


def scope_token(instance_id: str, upn: str, profile_id: str) -> str:
    """The same word as ``_scope_token``, for a query."""
    return "k" + "x".join(part.encode("utf-8").hex() for part in (instance_id, upn, profile_id)) + "q"


INDEX_TABLE_SQL = """CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5(
    scope, content_markdown, content='entries_fts_source', content_rowid='search_key',
    tokenize='porter unicode61 remove_diacritics 2'
)"""

FULLTEXT_SCHEMA = f"""
CREATE VIEW IF NOT EXISTS entries_fts_source AS
    SELECT {_search_key("entries")} AS search_key, {_scope_token("entries")} AS scope, content_markdown FROM entries;
{INDEX_TABLE_SQL};
CREATE TRIGGER IF NOT EXISTS entries_fts_insert AFTER INSERT ON entries BEGIN
    SELECT RAISE(ABORT, 'the search index keys entries by a 32-bit rowid') WHERE new.rowid >= {1 << _ROWID_BITS};
    INSERT INTO entries_fts(rowid, scope, content_markdown)
    VALUES ({_search_key("new")}, {_scope_token("new")}, new.content_markdown);
END;
CREATE TRIGGER IF NOT EXISTS entries_fts_delete AFTER DELETE ON entries BEGIN
    INSERT INTO entries_fts(entries_fts, rowid, scope, content_markdown)
    VALUES ('delete', {_search_key("old")}, {_scope_token("old")}, old.content_markdown);
END;
CREATE TRIGGER IF NOT EXISTS entries_fts_update AFTER UPDATE ON entries BEGIN
    INSERT INTO entries_fts(entries_fts, rowid, scope, content_markdown)
    VALUES ('delete', {_search_key("old")}, {_scope_token("old")}, old.content_markdown);
    INSERT INTO entries_fts(rowid, scope, content_markdown)
    VALUES ({_search_key("new")}, {_scope_token("new")}, new.content_markdown);
END;
"""

DROP_SQL = """
DROP TRIGGER IF EXISTS entries_fts_insert;
DROP TRIGGER IF EXISTS entries_fts_delete;
DROP TRIGGER IF EXISTS entries_fts_update;
DROP TABLE IF EXISTS entries_fts;
DROP VIEW IF EXISTS entries_fts_source;
"""
"""Removes an index of an older layout (keyed by the entries' rowid), so ``FULLTEXT_SCHEMA`` can create this one."""

REBUILD_SQL = "INSERT INTO entries_fts(entries_fts) VALUES ('rebuild')"
"""Re-derives the whole index from ``entries`` (an upgrade from a store that had none)."""

_SHADOW_TABLES = ("entries_fts_data", "entries_fts_idx", "entries_fts_docsize", "entries_fts_config")


def recreate_index(db: sqlite3.Connection) -> None:
    """Make the full-text index anew from ``entries``, in one write transaction, when FTS5 cannot even open it (a
    structure it calls corrupt: ``sqlite_erasure.REBUILD_PAST_LEVELS``). The index holds nothing the entries do
    not, so nothing is lost; the triggers, which name the table, stay.

    A table FTS5 cannot open cannot be dropped either, so its row leaves the schema directly
    (``writable_schema``), its shadow tables are dropped and the table is made again.
    Raises ``sqlite3.Error`` when SQLite fails (the transaction is rolled back; SQLite's own error, also when
    SQLite rolled it back by itself: ``sqlite_transaction``)."""
    with write_transaction(db):
        db.execute("PRAGMA writable_schema=ON")
        try:
            db.execute("DELETE FROM sqlite_schema WHERE type = 'table' AND name = 'entries_fts'")
        finally:
            db.execute("PRAGMA writable_schema=RESET")  # off, and this connection reads the schema again
        for table in _SHADOW_TABLES:
            db.execute(f"DROP TABLE IF EXISTS {table}")
        db.execute(INDEX_TABLE_SQL)
        db.execute(REBUILD_SQL)


def match_expression(scope_tokens: Sequence[str], terms: Sequence[str]) -> str:
    """An FTS5 query for entries of the given profiles matching any of ``terms`` (by stem):
    ``scope : ("k..q") AND content_markdown : ("train" OR "dog")``.

    Terms are not prefix queries: FTS5 expands a prefix over every word of the whole index
    that starts with it, which made a common word cost as much at 10 entries as at 10,000.
    Porter stemming already lets "train" find "trains" and "training".

    The profile filter runs inside the index, so a search costs what the caller's own
    profiles match, not what the whole database does. Every term is quoted, so no user
    text is read as FTS5 syntax (AND, NEAR, column filters).
    """
    scopes = " OR ".join(f'"{token}"' for token in scope_tokens)
    words = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    return f"scope : ({scopes}) AND content_markdown : ({words})"


def _matches_sql(entry_columns: str, profile_count: int, *, bucket: bool) -> str:
    """Matches ranked inside FTS5, then joined to their entries: search key, entry columns, score.

    With ``bucket`` the matches are those with a key in [?, ?] (one bucket), all of them;
    without, a LIMIT/OFFSET window of all the matches, best first, then by key (newest first).
    """
    marks = ",".join("?" * profile_count)
    columns = ", ".join(f"e.{c.strip()}" for c in entry_columns.split(","))
    window = "AND rowid BETWEEN ? AND ?" if bucket else "ORDER BY score DESC, rowid LIMIT ? OFFSET ?"
    # bm25() is lower for better matches; negated, every score is positive (FTS5 floors
    # each term's IDF at a small positive number, so even a term in every entry adds).
    # The scope column weighs 0: it filters, it does not rank. FTS5 scores every match
    # (bm25 needs each one's length and term counts); only the window is joined to entries.
    # The profile check on the join is belt and braces: the scope word already confines.
    return (
        "WITH ranked(search_key, score) AS ("
        " SELECT rowid, -bm25(entries_fts, 0.0, 1.0) AS score FROM entries_fts"
        f" WHERE entries_fts MATCH ? {window})"
        f" SELECT ranked.search_key, {columns}, ranked.score FROM ranked"
        f" JOIN entries e ON e.rowid = ranked.search_key & {(1 << _ROWID_BITS) - 1}"
        f" WHERE e.instance_id=? AND e.upn=? AND e.profile_id IN ({marks})"
        " ORDER BY ranked.score DESC, ranked.search_key"
    )


Read = Callable[[str, Sequence[object]], list[Any]]
"""Runs one statement and returns its rows (the store's, so it counts and translates errors)."""


def page_of_matches(
    read: Read,
    entry_columns: str,
    keys: tuple[str, str, Sequence[str]],
    terms: Sequence[str],
    skip: int,
    take: int | None,
) -> list[Any]:
    """Rows (entry columns, then the score) of ``take`` matches after the first ``skip`` (None: all).

    ``keys`` is (instance_id, upn, profile ids). The order is the domain's: score
    descending, then newest first, then id; so consecutive pages neither repeat nor skip a
    match. ``read`` must run inside one read transaction: a re-read bucket must score as the window did.
    """
    instance_id, upn, ids = keys
    match = match_expression([scope_token(instance_id, upn, pid) for pid in ids], terms)
    bound = in_list(ids)[1]  # a few statement texts, not one for each count of profiles (``in_list``)
    tail = [instance_id, upn, *bound]
    window_sql = _matches_sql(entry_columns, len(bound), bucket=False)
    in_order = _domain_order(entry_columns)
    if take is None:  # every match: sort them all here, then skip (an offset in key order could split a run)
        return [row[1:] for row in in_order(read(window_sql, [match, -1, 0, *tail]))[skip:]]
    start = max(0, skip - _WINDOW_MARGIN)
    wanted = skip - start + take + _WINDOW_MARGIN
    rows = read(window_sql, [match, wanted, start, *tail])
    runs = _runs(rows)
    page: list[Any] = []
    position = start
    for index, run in enumerate(runs):
        first, last = position, position + len(run)  # [first, last) in key order
        position = last
        if last <= skip or first >= skip + take:
            continue
        open_left = index == 0 and start > 0
        open_right = index == len(runs) - 1 and len(rows) == wanted
        if open_left or open_right:
            whole = _bucket(read, entry_columns, len(bound), match, tail, run[0])
            if open_left:
                first -= sum(1 for row in whole if row[0] < run[0][0])
            run = whole
        for offset, row in enumerate(in_order(run)):
            if skip <= first + offset < skip + take:
                page.append(row[1:])
    return page


def _runs(rows: Sequence[Any]) -> list[list[Any]]:
    """``rows`` (in key order) cut into runs of equal score and bucket: the only places key order
    and the domain's order (newest first, then id) may disagree."""
    runs: list[list[Any]] = []
    for row in rows:
        if runs and runs[-1][0][-1] == row[-1] and runs[-1][0][0] >> _ROWID_BITS == row[0] >> _ROWID_BITS:
            runs[-1].append(row)
        else:
            runs.append([row])
    return runs


def _bucket(read: Read, entry_columns: str, profile_count: int, match: str, tail: Sequence[str],
            sample: Any) -> list[Any]:
    """Every match in ``sample``'s bucket with ``sample``'s score, in key order."""
    low = (sample[0] >> _ROWID_BITS) << _ROWID_BITS
    high = low + (1 << _ROWID_BITS) - 1
    rows = read(_matches_sql(entry_columns, profile_count, bucket=True), [match, low, high, *tail])
    return [row for row in rows if row[-1] == sample[-1]]


def _domain_order(entry_columns: str) -> Callable[[Sequence[Any]], list[Any]]:
    """Sorts rows (search key, entry columns, score) in the domain's order: score descending,
    newest first, then id. Key order decides nothing."""
    names = [c.strip() for c in entry_columns.split(",")]
    id_at, created_at = 1 + names.index("id"), 1 + names.index("created_on")

    def in_order(rows: Sequence[Any]) -> list[Any]:
        # The keys of domain.search.best_first: -score, -timestamp, id.
        return sorted(
            rows, key=lambda row: (-row[-1], -datetime.fromisoformat(row[created_at]).timestamp(), row[id_at])
        )

    return in_order

