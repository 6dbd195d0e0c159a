"""A budgeted read costs store work in proportion to the budget, not to the memory's size, on every store.

Rows are the entries the store hands back; round trips are HTTP requests to Cosmos DB
(every attempt) or SQL statements run on SQLite. Both are counted for a combined
read of a memory of 10 and of 10,000 user entries (10 agent entries each time).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.budget import page_size_for
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import MemoryEntry, ProfileKey, Scope, ScopeState
from memory_core.domain.service import MemoryService
from memory_core.domain.snapshots import StampedLoad
from memory_core.domain.store import MemoryStore
from tests.support.seeding import make_entries, seed

ALEX = Caller(upn="alex@contoso.com", name="Alex", user_name="alex")
AGENT = AgentContext("/agents/benefits", "Benefits Assistant")
BUDGET = 2000


@dataclass
class Cost:
    store_calls: int = 0
    rows: int = 0
    round_trips: int = 0


class CountingStore:
    """The store, counting its calls and the entries they hand back."""

    def __init__(self, store: MemoryStore) -> None:
        self.inner = store
        self.cost = Cost()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        if not callable(method):
            return method

        def counted(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            self.cost.store_calls += 1
            items = result.states if isinstance(result, StampedLoad) else result
            if isinstance(items, list):
                for item in items:
                    self.cost.rows += len(item.entries) if isinstance(item, ScopeState) else int(
                        isinstance(item, MemoryEntry))
            return result

        return counted


@contextmanager
def round_trips(store: MemoryStore, cost: Cost) -> Iterator[None]:
    if isinstance(store, CosmosMemoryStore):
        with store.measure() as metrics:
            yield
        cost.round_trips = metrics.round_trips
        return
    assert isinstance(store, SqliteMemoryStore)
    connection = store._db.connection()

    def statement(sql: str) -> None:
        cost.round_trips += 1

    connection.set_trace_callback(statement)
    try:
        yield
    finally:
        connection.set_trace_callback(None)


def _read(store: MemoryStore, instance: str, max_chars: int | None) -> tuple[Cost, str]:
    counting = CountingStore(store)
    service = MemoryService(counting)  # type: ignore[arg-type]
    with round_trips(store, counting.cost):
        if max_chars is None:
            view = service.get(ALEX, instance, Scope.COMBINED, AGENT)
        else:
            view = service.get_within(ALEX, instance, Scope.COMBINED, AGENT, max_chars)
    return counting.cost, view.content_markdown


def test_budgeted_read_cost_is_flat_from_10_to_10000_entries(
    store: MemoryStore, request: pytest.FixtureRequest
) -> None:
    """Rows stay within one page per scope and round trips stay constant from 10 to 10,000 entries; the
    unbudgeted read of the same memory, cold (no snapshot yet in the process), reads every row."""
    cosmos = request.getfixturevalue("cosmos_account") if isinstance(store, CosmosMemoryStore) else None
    costs: dict[int, Cost] = {}
    for size in (10, 10_000):
        instance = f"cost-{size}-{uuid.uuid4().hex[:8]}"
        user = make_entries(ProfileKey(instance, ALEX.upn, Scope.USER), size)
        agent = make_entries(ProfileKey(instance, ALEX.upn, Scope.AGENT, AGENT.object_id), 10, agent_name=AGENT.name)
        seed(store, user, cosmos)
        seed(store, agent, cosmos)
        _read(store, instance, BUDGET)  # warm: the first Cosmos call of a store checks its container
        costs[size], content = _read(store, instance, BUDGET)
        assert user[-1].content_markdown in content and len(content) <= BUDGET
        if size == 10_000:
            unbudgeted, _ = _read(store, instance, None)
            assert unbudgeted.rows == 10_010
    small, large = costs[10], costs[10_000]
    print(f"\n{type(store).__name__}: 10 entries {small}; 10,000 entries {large}")
    assert large.rows <= 2 * page_size_for(BUDGET)
    # The larger memory leaves entries out, which costs a replace look-up and a count: two calls, whatever its size.
    assert large.store_calls <= small.store_calls + 2
    assert large.round_trips <= small.round_trips + 2 * (2 if isinstance(store, SqliteMemoryStore) else 1)
