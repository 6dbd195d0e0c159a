"""The SQLite store's statement texts stay few: ``sqlite3`` keeps 128 prepared statements a connection
(``cached_statements``), an LRU by text, and a text past them pushes a hot statement out to be prepared again.

Under a mixed load on ``python -m memory_core serve`` (REST, memory tool and MCP calls from several threads), each
connection's texts stay well under the cache and none is prepared twice; a second load of the same shape adds
(almost) none. The two sources of texts that grew with use are held to a few: ``IN (...)`` lists, padded to a power
of two (``sqlite_rows.in_list``), and the busy timeout a write sets after waiting for the process's turn, in
sixteenths of its budget (``sqlite_busy``).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

import pytest

from memory_core.adapters import sqlite_database
from memory_core.adapters.sqlite_busy import WritersTurn, _in_sixteenths
from memory_core.adapters.sqlite_rows import in_list
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.models import ProfileKey, Scope
from tests.support.statement_texts import counted_server, counts, mixed_load

CACHE = 128  # sqlite3's default cached_statements, which the store keeps
UPN = "alex@contoso.com"
_WAIT = "PRAGMA busy_timeout="


def _load(api: str, users: range, rounds: int) -> None:
    with ThreadPoolExecutor(4) as pool:
        for done in [pool.submit(mixed_load, api, i, rounds) for i in users]:
            done.result()


def test_a_mixed_load_on_serve_keeps_each_connections_texts_under_the_cache(tmp_path: Path) -> None:
    with counted_server(tmp_path) as (server, out):
        _load(server.api, range(8), 8)
        known = {text for row in counts(out) for text in row["sample"]}
        _load(server.api, range(8, 16), 8)
        rows = counts(out)
    busiest = max(rows, key=lambda row: row["texts"])
    assert busiest["texts"] <= CACHE * 3 // 4, busiest["sample"]  # room for what this load does not reach
    assert sum(row["reprepares"] for row in rows) == 0
    added = {text for row in rows for text in row["sample"] if not text.startswith(_WAIT)} - known
    assert len(added) <= 8, sorted(added)  # a load of the same shape again: the texts do not keep growing
    # the waits after the turn: sixteenths of the store's budget (17), beside the few fixed waits, however slow
    # the machine (a slow one waits longer for the turn, and reaches more of the sixteenths)
    assert len([text for text in busiest["sample"] if text.startswith(_WAIT)]) <= 24


class _Recording(sqlite3.Connection):
    """A real connection that keeps the text of every statement it runs."""

    ran: ClassVar[list[str]] = []

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:  # type: ignore[override]
        self.ran.append(sql)
        return super().execute(sql, parameters)


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[SqliteMemoryStore, list[str]]]:
    ran: list[str] = []
    monkeypatch.setattr(_Recording, "ran", ran)
    connect = sqlite3.connect
    monkeypatch.setattr(sqlite_database.sqlite3, "connect", lambda *a, **k: connect(*a, factory=_Recording, **k))
    store = SqliteMemoryStore(tmp_path / "texts.sqlite3")
    yield store, ran
    store.close()


def test_reads_of_any_number_of_profiles_take_a_few_texts(recorded: tuple[SqliteMemoryStore, list[str]]) -> None:
    store, ran = recorded
    keys = [ProfileKey("texts", UPN, Scope.AGENT, f"agent-{n:03d}") for n in range(40)]
    for count in range(1, 41):
        some = keys[:count]
        store.load(some)
        store.load_heads(some)
        store.load_since(some, None)
        store.load_since(some, 0)
        store.load_present(some, (), 0)
        store.search_index(some, ["tea"])
    texts = {sql for sql in ran if " IN (?" in sql}
    # 1, 2, 4, 8, 16, 32, 64 marks for each statement that takes a list; one text per count was 40 each
    assert len(texts) <= 10 * 7, len(texts)


@pytest.mark.parametrize(("values", "marks", "bound"), [
    (["a"], "?", ["a"]),
    (["a", "b"], "?,?", ["a", "b"]),
    (["a", "b", "c"], "?,?,?,?", ["a", "b", "c", "c"]),
    ([str(n) for n in range(5)], ",".join("?" * 8), ["0", "1", "2", "3", "4", "4", "4", "4"]),
])
def test_an_in_list_is_padded_to_a_power_of_two_with_its_last_value(
    values: list[str], marks: str, bound: list[str]
) -> None:
    assert in_list(values) == (marks, bound)


@pytest.mark.alone
def test_the_wait_left_after_the_turn_is_one_of_seventeen_values() -> None:
    turn = WritersTurn()
    lefts = set()
    for hold in (0.01, 0.03, 0.05, 0.07, 0.09, 0.11, 0.13):
        release = threading.Event()
        held = threading.Event()
        holder = threading.Thread(target=lambda: _hold(turn, held, release))
        holder.start()
        assert held.wait(5)
        threading.Timer(hold, release.set).start()
        started = time.monotonic()
        with turn.taken(0.16) as left:
            waited = time.monotonic() - started
            # within the budget's rest (measured here a moment after the turn came), at most a sixteenth under it
            assert left is not None and 0.16 - waited - 0.01 <= left <= 0.16
            lefts.add(round(left / 0.01, 6))
        holder.join()
    assert all(value == int(value) for value in lefts), lefts  # whole sixteenths of the 0.16 s budget


def test_a_wait_with_less_than_a_sixteenth_left_is_a_sixteenth_not_none() -> None:
    """0 is SQLite's "do not wait": a turn that left a moment of the budget must still wait, a sixteenth; only a
    turn that left nothing waits for nothing."""
    assert _in_sixteenths(0.001, 0.16) == pytest.approx(0.01)
    assert _in_sixteenths(0.0, 0.16) == 0.0
    assert _in_sixteenths(0.155, 0.16) == pytest.approx(0.15)


def _hold(turn: WritersTurn, held: threading.Event, release: threading.Event) -> None:
    with turn.taken(1):
        held.set()
        release.wait(1)
