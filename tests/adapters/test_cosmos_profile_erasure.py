"""``CosmosWrites.delete_profile``'s own steps against the Cosmos DB protocol server, through the real SDK.

No transactional batch can ask whether a scope holds entries, so the Cosmos store erases a profile If-Match the
etag it read and then looks for an entry an append stored meanwhile, making the same profile again, create-only,
when it finds one. The contract suite (tests/contract/test_seal_races.py) races appends around the whole call;
these tests put a write inside it, between its steps, where only this store has steps.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.adapters import cosmos_queries as queries
from memory_core.adapters.cosmos_calls import Calls
from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from tests.adapters.cosmos_support import cosmos_store
from tests.support.cosmos_server import CosmosServer

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
UPN = "alex@contoso.com"


@pytest.fixture
def two(cosmos_account: CosmosServer) -> Iterator[tuple[CosmosMemoryStore, CosmosMemoryStore]]:
    """Two store objects on the same container: the sealing process's and a writer's."""
    sealer, writer = cosmos_store(cosmos_account), cosmos_store(cosmos_account)
    yield sealer, writer
    sealer.close()
    writer.close()


def _key() -> ProfileKey:
    return ProfileKey(f"erasure-{uuid.uuid4().hex[:8]}", UPN, Scope.AGENT, "/agents/planner")


def _append(store: CosmosMemoryStore, key: ProfileKey, profile: MemoryProfile, at: datetime) -> MemoryProfile:
    return store.append(profile, MemoryEntry(uuid.uuid4().hex, key, "- fact", EntryKind.APPEND, at, UPN))


def _fields(profile: MemoryProfile | None) -> tuple[object, ...]:
    assert profile is not None
    return (profile.name, profile.user_name, profile.agent_name, profile.created_on, profile.updated_on,
            profile.cleared_on)


def test_an_append_that_makes_the_profile_before_it_is_made_again_keeps_its_own(
    two: tuple[CosmosMemoryStore, CosmosMemoryStore], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An append landed before the erasure (its entry now stands alone); a second one makes its own profile after
    the store found that entry and before it makes the erased profile again: the create-only write meets it (409)
    and the second append's profile stays, as it answered it."""
    sealer, writer = two
    key = _key()
    _append(writer, key, MemoryProfile(key, "Alex", "alex", "Planner", T0, T0), T0)  # the writer knows the profile
    renamed = MemoryProfile(key, "Alex Wilber", "alex", "Planner, renamed", T0 + timedelta(days=1),
                            T0 + timedelta(days=1), T0 + timedelta(hours=20))
    answered: list[MemoryProfile] = []
    query = Calls.query

    def then_append(calls: Calls, sql: str, params: Any, pk: Any) -> list[Any]:
        found = query(calls, sql, params, pk)
        if sql == queries.ANY_ENTRY_OF_PROFILE and not answered:
            answered.append(_append(writer, key, renamed, T0 + timedelta(days=1, seconds=1)))
        return found

    monkeypatch.setattr(Calls, "query", then_append)
    sealer.delete_profile(key)
    monkeypatch.undo()

    assert answered and _fields(answered[0]) == _fields(renamed)
    (state,) = sealer.load([key])
    assert _fields(state.profile) == _fields(renamed)
    assert len(state.entries) == 2


def test_a_profile_saved_while_it_is_erased_is_the_one_made_again(
    two: tuple[CosmosMemoryStore, CosmosMemoryStore], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scope holds an entry; its profile is saved (a clear's watermark) after the store read it for the
    erasure. The erasure is If-Match the etag read: it fails, reads again and erases the saved version, so the
    profile made again for the entry is the saved one, never the stale copy."""
    sealer, writer = two
    key = _key()
    stored = _append(writer, key, MemoryProfile(key, "Alex", "alex", "Planner", T0, T0), T0)
    watermark = T0 + timedelta(hours=1)
    read = Calls.read
    saved: list[MemoryProfile] = []

    def then_save(calls: Calls, item_id: str, pk: list[str]) -> dict[str, Any] | None:
        item = read(calls, item_id, pk)
        if item_id == key.profile_id and not saved:
            (state,) = writer.load([key])
            assert state.profile is not None
            saved.append(writer.save_profile(replace(state.profile, cleared_on=watermark, updated_on=watermark)))
        return item

    monkeypatch.setattr(Calls, "read", then_save)
    sealer.delete_profile(key)
    monkeypatch.undo()

    assert saved
    (state,) = sealer.load([key])
    assert _fields(state.profile) == (*_fields(stored)[:4], watermark, watermark)


def test_erasing_an_emptied_scopes_profile_costs_a_read_a_batch_and_a_query(
    two: tuple[CosmosMemoryStore, CosmosMemoryStore],
) -> None:
    """The usual case, the stamp known to the process (docs/cosmos.md's table): the profile's point read, the
    stamped delete and the query that finds no entry; the profile is gone."""
    sealer, _ = two
    key = _key()
    entry = MemoryEntry(uuid.uuid4().hex, key, "- fact", EntryKind.APPEND, T0, UPN)
    sealer.append(MemoryProfile(key, "Alex", "alex", "Planner", T0, T0), entry)
    sealer.delete_entries(key, [entry.id])
    with sealer.measure() as metrics:
        sealer.delete_profile(key)
    assert metrics.round_trips == 3
    assert sealer.load([key])[0].profile is None
