"""The SQLite store's full-text index: FTS5 over entry content, kept in step by triggers.

``entries_fts`` is an external-content FTS5 table over ``entries`` (the text is
stored once), tokenized with Porter stemming over unicode61, so "trains",
"training" and "train" share a stem. Triggers index every insert, delete and
content change in the same transaction as the write itself: the index cannot
drift from the entries, whichever code path writes them.

The index is keyed by the entries' rowid. SQLite keeps rowids unless the
database is ``VACUUM``-ed (the store never does); after a manual ``VACUUM``,
``rebuild_sql`` re-derives the index from the entries.
"""

from __future__ import annotations

from collections.abc import Sequence

FULLTEXT_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5(
    content_markdown, content='entries', content_rowid='rowid', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS entries_fts_insert AFTER INSERT ON entries BEGIN
    INSERT INTO entries_fts(rowid, content_markdown) VALUES (new.rowid, new.content_markdown);
END;
CREATE TRIGGER IF NOT EXISTS entries_fts_delete AFTER DELETE ON entries BEGIN
    INSERT INTO entries_fts(entries_fts, rowid, content_markdown) VALUES ('delete', old.rowid, old.content_markdown);
END;
CREATE TRIGGER IF NOT EXISTS entries_fts_update AFTER UPDATE OF content_markdown ON entries BEGIN
    INSERT INTO entries_fts(entries_fts, rowid, content_markdown) VALUES ('delete', old.rowid, old.content_markdown);
    INSERT INTO entries_fts(rowid, content_markdown) VALUES (new.rowid, new.content_markdown);
END;
"""

REBUILD_SQL = "INSERT INTO entries_fts(entries_fts) VALUES ('rebuild')"
"""Re-derives the whole index from ``entries`` (an upgrade from a store that had none)."""


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 query matching any of ``terms`` as a prefix: ``"train"* OR "dog"*``.

    Every term is quoted, so no user text is read as FTS5 syntax (AND, NEAR, column filters).
    """
    return " OR ".join('"' + term.replace('"', '""') + '"*' for term in terms)


def matches_sql(entry_columns: str, profile_count: int) -> str:
    """Matching entries of some profiles of one partition, each with its positive BM25 score."""
    marks = ",".join("?" * profile_count)
    columns = ", ".join(f"e.{c.strip()}" for c in entry_columns.split(","))
    # bm25() is lower for better matches; negated, every score is positive (FTS5 floors
    # each term's IDF at a small positive number, so even a term in every entry adds).
    return (
        f"SELECT {columns}, -bm25(entries_fts) FROM entries_fts JOIN entries e ON e.rowid = entries_fts.rowid"
        f" WHERE entries_fts MATCH ? AND e.instance_id=? AND e.upn=? AND e.profile_id IN ({marks})"
    )


def replaces_sql(entry_columns: str, profile_count: int) -> str:
    """The replace entries of some profiles: they decide where each visible document starts."""
    marks = ",".join("?" * profile_count)
    return (
        f"SELECT {entry_columns} FROM entries WHERE instance_id=? AND upn=? AND profile_id IN ({marks})"
        " AND kind='replace'"
    )
