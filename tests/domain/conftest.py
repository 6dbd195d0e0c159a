"""Fixtures of the domain tests: the service's rules run over the real embedded store.

What both stores must do alike is the contract suite's (tests/contract, parametrized over every store); these
tests are about the domain, so one real store serves them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    """A SQLite store in the test's own folder, closed after the test. A module may define its own ``store``."""
    opened = SqliteMemoryStore(tmp_path / "domain.sqlite3")
    yield opened
    opened.close()
