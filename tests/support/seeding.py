"""Seed large memories quickly, straight into a store, for tests that need thousands of entries.

SQLite: the store's own ``append`` (about 2 s for 10,000). Cosmos DB: the first
entry through the store (it creates the profile), the rest in transactional
batches of 100 creates through the real SDK, the same item layout the store writes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.adapters import cosmos_documents as docs
from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.store import MemoryStore
from tests.support.cosmos_server import CosmosServer
from tests.support.local_server import RunningServer

START = datetime(2025, 1, 1, tzinfo=UTC)


def fact(n: int) -> str:
    return f"- fact {n}: the user mentioned item number {n} once"


def make_entries(
    key: ProfileKey, count: int, *, text: Callable[[int], str] = fact, start: datetime = START,
    step: timedelta = timedelta(minutes=1), agent_name: str | None = None,
) -> list[MemoryEntry]:
    """``count`` append entries of ``key``, oldest first, ``step`` apart from ``start``."""
    return [
        MemoryEntry(id=uuid.uuid4().hex, key=key, content_markdown=text(n), kind=EntryKind.APPEND,
                    created_on=start + n * step, author_upn=key.upn,
                    agent_name=agent_name if key.scope is Scope.AGENT else None)
        for n in range(count)
    ]


def seed(store: MemoryStore, entries: list[MemoryEntry], cosmos: CosmosServer | None = None,
         database: str = "memory", container: str = "Memories") -> None:
    """Store ``entries`` (all of one key); with ``cosmos``, in batches through the SDK.

    The Cosmos test server scans its whole container for every query, so a test that
    seeds thousands of entries there removes them afterwards (``unseed``) to keep
    the rest of the suite fast.
    """
    if not entries:
        return
    key = entries[0].key
    profile = MemoryProfile(key, "Alex", "alex", "Agent" if key.agent_object_id else None,
                            entries[0].created_on, entries[0].created_on)
    store.append(profile, entries[0])
    if cosmos is None or not isinstance(store, CosmosMemoryStore):
        for entry in entries[1:]:
            store.append(profile, entry)
        return
    client = cosmos.client()
    try:
        proxy = client.get_database_client(database).get_container_client(container)
        rest = [docs.entry_item(e) for e in entries[1:]]
        for at in range(0, len(rest), 100):
            proxy.execute_item_batch([("create", (item,)) for item in rest[at:at + 100]],
                                     partition_key=[key.instance_id, key.upn])
    finally:
        client.close()


CORRECTION = "- Correction: I moved to Oslo in March; I no longer live in Bergen."


def memory_with_correction(key: ProfileKey, count: int = 10_000) -> list[MemoryEntry]:
    """``count`` entries of ``key`` whose oldest says Bergen and whose newest is the correction."""
    entries = make_entries(key, count, text=lambda n: "- I live in Bergen." if n == 0 else fact(n))
    return [*entries[:-1], replace(entries[-1], content_markdown=CORRECTION)]


def unseed(cosmos: CosmosServer, entries: list[MemoryEntry], database: str = "memory",
           container: str = "Memories") -> None:
    """Remove seeded entries from the Cosmos test server (transactional batches of 100 deletes)."""
    if not entries:
        return
    key = entries[0].key
    client = cosmos.client()
    try:
        proxy = client.get_database_client(database).get_container_client(container)
        ids = [docs.entry_item_id(e.id) for e in entries]
        for at in range(0, len(ids), 100):
            proxy.execute_item_batch([("delete", (i,)) for i in ids[at:at + 100]],
                                     partition_key=[key.instance_id, key.upn])
    finally:
        client.close()


@contextmanager
def seeded_server(server: RunningServer, request: pytest.FixtureRequest, *batches: list[MemoryEntry]) -> Iterator[None]:
    """``seed_server`` for the block; on a Cosmos-backed server the entries are removed afterwards."""
    for entries in batches:
        seed_server(server, request, entries)
    try:
        yield
    finally:
        if server.env.get("MEMORY_STORE") == "cosmos":
            account = request.getfixturevalue("cosmos_account")
            for entries in batches:
                unseed(account, entries)


def seed_server(server: RunningServer, request: pytest.FixtureRequest, entries: list[MemoryEntry]) -> None:
    """Store ``entries`` in the store a running local server (tests/support/local_server.py) uses."""
    env = server.env
    if env.get("MEMORY_STORE") == "cosmos":
        from tests.adapters.cosmos_support import cosmos_store

        account = request.getfixturevalue("cosmos_account")
        store: MemoryStore = cosmos_store(account)
        try:
            seed(store, entries, account)
        finally:
            store.close()
        return
    from memory_core.adapters.sqlite_store import SqliteMemoryStore

    sqlite = SqliteMemoryStore(env["MEMORY_SQLITE_PATH"])
    try:
        seed(sqlite, entries)
    finally:
        sqlite.close()
