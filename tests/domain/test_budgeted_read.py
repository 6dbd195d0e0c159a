"""A kept budgeted read grows only where growing is exact; otherwise it is read again from the store."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain import budgeted_read
from memory_core.domain.budgeted_read import KeptWindow, grown_read, kept_read, read_within
from memory_core.domain.identity import Caller
from memory_core.domain.models import EntryKind, MemoryEntry, ProfileKey, Scope, ScopeState
from memory_core.domain.service import MemoryService
from memory_core.domain.sharing import SharingPolicy

ALEX = Caller(upn="alex@contoso.com", name="Alex")
KEY = ProfileKey("i", ALEX.upn, Scope.USER)
T0 = datetime(2026, 12, 3, tzinfo=UTC)


def _entry(n: int, kind: EntryKind = EntryKind.APPEND, seconds: int | None = None) -> MemoryEntry:
    return MemoryEntry(f"e{n}", KEY, f"- fact {n}", kind, T0 + timedelta(seconds=n if seconds is None else seconds),
                       ALEX.upn)


def test_a_kept_window_never_guesses_an_entry_it_does_not_hold() -> None:
    window = KeptWindow([_entry(3), _entry(2)], total=4, oldest=T0)
    assert window.at(1) == _entry(2) and window.at(4) is None
    with pytest.raises(budgeted_read._BeyondKept):
        window.at(2)


def test_a_kept_window_grows_by_visible_appends_and_refuses_replaces_and_late_clocks() -> None:
    window = KeptWindow([_entry(3), _entry(2)], total=4, oldest=T0)
    grown = window.grown(ScopeState(KEY, None, [_entry(5), _entry(4)]), limit=3)
    assert grown is not None and [e.id for e in grown.read_so_far()] == ["e5", "e4", "e3"]
    assert (grown.total(), grown.oldest()) == (6, T0)
    assert window.grown(ScopeState(KEY, None, [_entry(4, EntryKind.REPLACE)]), limit=3) is None
    assert window.grown(ScopeState(KEY, None, [_entry(9, seconds=1)]), limit=3) is None
    assert window.grown(ScopeState(KEY, None, [_entry(3)]), limit=3) is window  # already held: nothing new


def test_a_kept_read_whose_fill_needs_older_entries_than_it_holds_is_read_again(tmp_path: Path) -> None:
    store = SqliteMemoryStore(tmp_path / "m.sqlite3")
    service = MemoryService(store)
    for i in range(30):
        service.append(ALEX, "i", Scope.USER, None, f"- fact {i}")
    kept = kept_read(store, store, ALEX, Scope.USER, [KEY], None, 400)
    at = store.partition_stamp("i", ALEX.upn)
    short = replace(kept, windows=tuple(KeptWindow(w.read_so_far()[:1], w.total(), w.oldest()) for w in kept.windows))
    service.append(ALEX, "i", Scope.USER, None, "- one more")
    assert grown_read(store, short, (at,), ALEX, Scope.USER, [KEY], None, 400) is None
    grown = grown_read(store, kept, (at,), ALEX, Scope.USER, [KEY], None, 400)
    assert grown is not None
    assert grown.view == read_within(store, ALEX, Scope.USER, [KEY], None, 400, SharingPolicy.PRIVATE)
    store.close()
