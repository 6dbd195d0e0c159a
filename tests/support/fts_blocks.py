"""What SQLite's full-text index holds on disk, for the tests of erasure: a word must leave the index's blocks."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def index_blocks_holding(path: Path, word: str) -> int:
    """How many of the FTS5 index's stored blocks (``entries_fts_data``) of the database at ``path`` hold ``word``'s
    bytes, read on a connection of its own."""
    db = sqlite3.connect(path)
    try:
        return sum(word.encode() in bytes(block or b"") for (block,) in db.execute("SELECT block FROM entries_fts_data"))
    finally:
        db.close()
