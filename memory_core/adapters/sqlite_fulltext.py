"""The SQLite store's full-text index: FTS5 over entry content, kept in step by triggers.

``entries_fts`` is an external-content FTS5 table over ``entries`` (the text is
stored once), tokenized with Porter stemming over unicode61, so "trains",
"training" and "train" share a stem. Beside the content it indexes one word per
entry naming its profile (``scope``), so a query is confined to the caller's
profiles inside the index itself. Triggers index every insert, delete and
content change in the same transaction as the write itself: the index cannot
drift from the entries, whichever code path writes them.

The index is keyed by the entries' rowid. SQLite keeps rowids unless the
database is ``VACUUM``-ed (the store never does); after a manual ``VACUUM``,
``rebuild_sql`` re-derives the index from the entries.
"""

from __future__ import annotations

from collections.abc import Sequence


def _scope_token(row: str) -> str:
    """SQL for one word naming an entry's profile: 'k', the hex of its three key parts, 'q'.

    Hex keeps it one unicode61 token whatever the ids hold; the 'x' separators (not hex
    digits) keep it unambiguous; no Porter rule ends in 'q', so stemming leaves it whole.
    """
    return f"'k' || hex({row}.instance_id) || 'x' || hex({row}.upn) || 'x' || hex({row}.profile_id) || 'q'"


def scope_token(instance_id: str, upn: str, profile_id: str) -> str:
    """The same word as ``_scope_token``, for a query."""
    return "k" + "x".join(part.encode("utf-8").hex() for part in (instance_id, upn, profile_id)) + "q"


FULLTEXT_SCHEMA = f"""
CREATE VIEW IF NOT EXISTS entries_fts_source AS
    SELECT rowid, {_scope_token("entries")} AS scope, content_markdown FROM entries;
CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5(
    scope, content_markdown, content='entries_fts_source', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS entries_fts_insert AFTER INSERT ON entries BEGIN
    INSERT INTO entries_fts(rowid, scope, content_markdown)
    VALUES (new.rowid, {_scope_token("new")}, new.content_markdown);
END;
CREATE TRIGGER IF NOT EXISTS entries_fts_delete AFTER DELETE ON entries BEGIN
    INSERT INTO entries_fts(entries_fts, rowid, scope, content_markdown)
    VALUES ('delete', old.rowid, {_scope_token("old")}, old.content_markdown);
END;
CREATE TRIGGER IF NOT EXISTS entries_fts_update AFTER UPDATE ON entries BEGIN
    INSERT INTO entries_fts(entries_fts, rowid, scope, content_markdown)
    VALUES ('delete', old.rowid, {_scope_token("old")}, old.content_markdown);
    INSERT INTO entries_fts(rowid, scope, content_markdown)
    VALUES (new.rowid, {_scope_token("new")}, new.content_markdown);
END;
"""

REBUILD_SQL = "INSERT INTO entries_fts(entries_fts) VALUES ('rebuild')"
"""Re-derives the whole index from ``entries`` (an upgrade from a store that had none)."""


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


def matches_sql(entry_columns: str, profile_count: int) -> str:
    """A page (LIMIT, OFFSET) of the matching entries of some profiles of one partition, best first,
    each with its positive BM25 score as the last column."""
    marks = ",".join("?" * profile_count)
    columns = ", ".join(f"e.{c.strip()}" for c in entry_columns.split(","))
    # bm25() is lower for better matches; negated, every score is positive (FTS5 floors
    # each term's IDF at a small positive number, so even a term in every entry adds).
    # The scope column weighs 0: it filters, it does not rank.
    return (
        f"SELECT {columns}, -bm25(entries_fts, 0.0, 1.0) FROM entries_fts JOIN entries e ON e.rowid = entries_fts.rowid"
        f" WHERE entries_fts MATCH ? AND e.instance_id=? AND e.upn=? AND e.profile_id IN ({marks})"
        f" ORDER BY {len(entry_columns.split(',')) + 1} DESC, e.created_on DESC, e.id LIMIT ? OFFSET ?"
    )


def replaces_sql(entry_columns: str, profile_count: int) -> str:
    """The replace entries of some profiles: they decide where each visible document starts."""
    marks = ",".join("?" * profile_count)
    return (
        f"SELECT {entry_columns} FROM entries WHERE instance_id=? AND upn=? AND profile_id IN ({marks})"
        " AND kind='replace'"
    )
