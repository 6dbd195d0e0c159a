"""Benchmark: how many store calls each write makes (SQLite, in process), in both deletion modes.

Run from the repository root:

    python bench/bench_store_calls.py

A wrapper counts every call on the ``MemoryStore`` interface: an append, a memory-tool insert (a new version
that keeps the old text), a memory-tool str_replace that removes text (a forget of the old version), a memory-tool
rename (no version written or retired), a forget and a clear. On Cosmos DB each call is about one round trip. The counts are exact and do not depend on the
machine; compare them between versions to see what a change adds.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import Scope
from memory_core.domain.service import DeletionMode, MemoryService


class CountingStore:
    """A store that counts the calls made on it (every public method)."""

    def __init__(self, inner: SqliteMemoryStore) -> None:
        self._inner = inner
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if not callable(attribute) or name.startswith("_"):
            return attribute

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return attribute(*args, **kwargs)

        return counted


def counts(mode: DeletionMode) -> dict[str, int]:
    store = CountingStore(SqliteMemoryStore(Path(tempfile.mkdtemp()) / "calls.sqlite3"))
    service = MemoryService(store, deletion_mode=mode)  # type: ignore[arg-type]
    caller, files = Caller(upn="alex@contoso.com"), MemoryFiles(service)
    files.execute(caller, "i", None, {"command": "create", "path": "/memories/a.md", "file_text": "one\ntwo\n"})
    for n in range(5):
        service.append(caller, "i", Scope.USER, None, f"- fact {n}")
    result: dict[str, int] = {}

    def count(label: str, operation: Callable[[], object]) -> None:
        store.calls = 0
        operation()
        result[label] = store.calls

    count("append", lambda: service.append(caller, "i", Scope.USER, None, "- x"))
    count("memory-tool insert", lambda: files.execute(caller, "i", None, {
        "command": "insert", "path": "/memories/a.md", "insert_line": 1, "insert_text": "inserted"}))
    count("memory-tool str_replace removing text", lambda: files.execute(caller, "i", None, {
        "command": "str_replace", "path": "/memories/a.md", "old_str": "two", "new_str": "2"}))
    count("memory-tool rename", lambda: files.execute(caller, "i", None, {
        "command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"}))
    entry_id = str(service.append(caller, "i", Scope.USER, None, "- y").entry_id)
    count("forget", lambda: service.forget(caller, "i", entry_id))
    count("clear", lambda: service.clear(caller, "i", Scope.USER, None, confirm=True))
    return result


def main() -> None:
    by_mode = {mode: counts(mode) for mode in (DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL)}
    print("| operation | immediate | operator_approval |")
    print("|---|---:|---:|")
    for label in by_mode[DeletionMode.IMMEDIATE]:
        print(f"| {label} | {by_mode[DeletionMode.IMMEDIATE][label]} | {by_mode[DeletionMode.OPERATOR_APPROVAL][label]} |")


if __name__ == "__main__":
    main()
