"""What an operator sees at a glance: each deletion request's size (``domain.overview``)."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.deletion import DeletionStatus
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import Scope, agent_hash
from memory_core.domain.overview import WINDOW_COUNTS, agent_scopes, request_entry_counts
from memory_core.domain.service import DeletionMode, MemoryService, PendingDeletion
from tests.support.clock import TickingClock

ALEX, BLAKE = Caller(upn="alex@contoso.com"), Caller(upn="blake@contoso.com")
AGENT = AgentContext("/agents/travel")


def _request(outcome: object) -> str:
    assert isinstance(outcome, PendingDeletion)
    return outcome.request_id


def test_a_page_of_requests_counts_each_clear_without_reading_anyones_memory(
    store: SqliteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Alex's clears of two scopes and a rejected forget, Blake's clear: each request counts what its hold hides
    (a rejected one, None) from counts of the profile's index, reading no one's memory (a person with 300 pending
    clears made the listing read their memory 300 times, and one pending clear of 60,000 entries made it take over
    1 s); an executed request answers its recorded count."""
    service = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    for n in range(3):
        service.append(ALEX, "i", Scope.USER, None, f"- user fact {n}")
    service.append(ALEX, "i", Scope.AGENT, AGENT, "- agent fact")
    forgotten = service.append(ALEX, "i", Scope.AGENT, AGENT, "- forget me")
    service.append(BLAKE, "i", Scope.USER, None, "- blake's")
    forget = _request(service.forget(ALEX, "i", forgotten.entry_id or ""))
    user_clear = _request(service.clear(ALEX, "i", Scope.USER, None, confirm=True))
    agent_clear = _request(service.clear(ALEX, "i", Scope.AGENT, AGENT, confirm=True))
    blake_clear = _request(service.clear(BLAKE, "i", Scope.USER, None, confirm=True))
    service.custody.reject("op", "i", forget, "kept")
    requests = service.custody.page("i", None, limit=100).items
    reads: list[Any] = []
    real = store.load_partition
    monkeypatch.setattr(store, "load_partition", lambda *args: reads.append(args) or real(*args))
    counts = dict(zip([r.id for r in requests], request_entry_counts(store, requests), strict=True))
    assert counts == {forget: None, user_clear: 3, agent_clear: 2, blake_clear: 1}
    assert reads == []
    service.custody.approve("op", "i", user_clear)
    service.custody.sweep()
    (executed,) = service.custody.page("i", DeletionStatus.EXECUTED, limit=10).items
    assert request_entry_counts(store, [executed]) == [3]


def test_purges_are_counted_from_each_persons_memory_read_once(
    store: SqliteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A purge's hold covers every profile of the person, so its count comes from their entries: two purges of
    Alex's beside a pending clear of Alex's user scope read Alex's memory once for the page."""
    service = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    for n in range(3):
        service.append(ALEX, "i", Scope.USER, None, f"- user fact {n}")
    service.append(ALEX, "i", Scope.AGENT, AGENT, "- agent fact")
    user_clear = _request(service.clear(ALEX, "i", Scope.USER, None, confirm=True))
    purges = [service.custody.request_purge("op", "i", ALEX.upn).id for _ in range(2)]
    requests = service.custody.page("i", None, limit=100).items
    reads: list[Any] = []
    real = store.load_partition
    monkeypatch.setattr(store, "load_partition", lambda *args: reads.append(args) or real(*args))
    counts = dict(zip([r.id for r in requests], request_entry_counts(store, requests), strict=True))
    assert counts == {user_clear: 3, purges[0]: 4, purges[1]: 4}
    assert reads == [("i", ALEX.upn)]


def _counting_calls(store: SqliteMemoryStore, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    calls = dict.fromkeys(["load_heads", "count_entries", "load_partition"], 0)
    for name in calls:
        real = getattr(store, name)

        def counted(*args: Any, _real: Any = real, _name: str = name) -> Any:
            calls[_name] += 1
            return _real(*args)

        monkeypatch.setattr(store, name, counted)
    return calls


def test_one_persons_clears_cost_a_bounded_number_of_store_calls(
    store: SqliteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three clears of Alex's, a fact appended between each: one read of Alex's holds for all three and one count
    of the profile's index for each (each its own watermark). Thirty clears, past ``WINDOW_COUNTS``: one read of
    Alex's memory for all of them, where each once cost a read of the holds and two counts (300 pending clears of
    one person: 900 store calls, 0.6 s)."""
    service = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    for n in range(3):
        service.append(ALEX, "i", Scope.USER, None, f"- fact {n}")
        service.clear(ALEX, "i", Scope.USER, None, confirm=True)
    requests = service.custody.page("i", None, limit=100).items
    calls = _counting_calls(store, monkeypatch)
    assert sorted(c or 0 for c in request_entry_counts(store, requests)) == [1, 2, 3]
    assert calls == {"load_heads": 1, "count_entries": 3, "load_partition": 0}
    for _ in range(3 * WINDOW_COUNTS - 3):
        service.clear(ALEX, "i", Scope.USER, None, confirm=True)
    requests = service.custody.page("i", None, limit=100).items
    calls.update(dict.fromkeys(calls, 0))
    assert sorted(c or 0 for c in request_entry_counts(store, requests)) == [1, 2] + [3] * (3 * WINDOW_COUNTS - 2)
    assert calls == {"load_heads": 0, "count_entries": 0, "load_partition": 1}


def test_a_write_between_the_store_calls_does_not_tear_a_clears_count(
    store: SqliteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append after each count of the profile (after the watermark, so the clear does not hide it) leaves the
    clear's count of the four facts it hides as it was: counted as all less those after the watermark, in two
    statements, the append between them made it 3 (and an erasure between them could make it negative)."""
    service = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    for n in range(4):
        service.append(ALEX, "i", Scope.USER, None, f"- fact {n}")
    clear = _request(service.clear(ALEX, "i", Scope.USER, None, confirm=True))
    requests = service.custody.page("i", None, limit=100).items
    real = store.count_entries

    def count_then_append(window: Any) -> Any:
        counted = real(window)
        service.append(ALEX, "i", Scope.USER, None, "- written meanwhile")
        return counted

    monkeypatch.setattr(store, "count_entries", count_then_append)
    assert dict(zip([r.id for r in requests], request_entry_counts(store, requests), strict=True)) == {clear: 4}


def test_the_agent_list_counts_each_agents_visible_entries_without_reading_the_user_scope(
    store: SqliteMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two agents with memory, one of them cleared under approval, beside 30 user-scope entries: the list names
    both (the cleared one with 0 entries, in the order of their profile ids) and reads only the agents' scopes,
    never the whole partition nor the user scope (10,000 user entries made the console's agent list take
    seconds)."""
    service = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    planner = AgentContext("/agents/planner", name="Planner")
    for n in range(30):
        service.append(ALEX, "i", Scope.USER, None, f"- user fact {n}")
    for n in range(3):
        service.append(ALEX, "i", Scope.AGENT, AGENT, f"- travel fact {n}")
    service.append(ALEX, "i", Scope.AGENT, planner, "- planner fact")
    _request(service.clear(ALEX, "i", Scope.AGENT, planner, confirm=True))
    loaded: list[Any] = []
    monkeypatch.setattr(store, "load_partition", lambda *a: pytest.fail("the whole partition was read"))
    real_load = store.load
    monkeypatch.setattr(store, "load", lambda keys: loaded.extend(keys) or real_load(keys))
    page = agent_scopes(store, "i", ALEX.upn)
    assert page.continuation is None
    assert [(s.agent_object_id, s.agent_name, s.entry_count) for s in page.items] == sorted(
        [("/agents/planner", "Planner", 0), ("/agents/travel", None, 3)], key=lambda s: agent_hash(s[0]))
    assert loaded and all(k.scope is Scope.AGENT for k in loaded)
