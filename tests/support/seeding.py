"""Seed large memories quickly, straight into a store, for tests that need thousands of entries.

SQLite: the store's own ``append`` (about 2 s for 10,000). Cosmos DB: the first
entry through the store (it creates the profile), the rest in transactional
batches of 98 creates and the partition stamp's move, the same items and stamp
the store writes (``cosmos_stamps``).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.adapters import cosmos_documents as docs
from memory_core.adapters.cosmos_stamps import CALLER_OPERATIONS, Operation
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


def entries_at(
    store: MemoryStore, key: ProfileKey, times: list[datetime], *, ids: list[str] | None = None,
    kind: EntryKind = EntryKind.APPEND,
) -> list[MemoryEntry]:
    """One entry of ``key`` per time in ``times`` (``- fact n``; ``ids`` when given), appended through
    the store in that order: for the store contract's ordering and paging at exact times and ties."""
    entries = []
    for n, at in enumerate(times):
        entry = MemoryEntry(id=ids[n] if ids else uuid.uuid4().hex, key=key, content_markdown=f"- fact {n}",
                            kind=kind, created_on=at, author_upn=key.upn)
        store.append(MemoryProfile(key, "Alex", None, None, times[0], times[0]), entry)
        entries.append(entry)
    return entries


def seed(store: MemoryStore, entries: list[MemoryEntry], cosmos: CosmosServer | None = None) -> None:
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
    write_cosmos_entries(store, entries[1:])


def write_cosmos_entries(store: CosmosMemoryStore, entries: list[MemoryEntry]) -> None:
    """Create ``entries`` (all of one key) in transactional batches of 98 that move the partition's
    stamp, as the store's own writes do, so a running server's read snapshots see them."""
    _stamped_batches(store, entries, lambda first, chunk: [
        ("create", (docs.entry_item(e, first + n),)) for n, e in enumerate(chunk)
    ], inserts=True)


def erase_cosmos_entries(store: CosmosMemoryStore, entries: list[MemoryEntry]) -> None:
    """Erase ``entries`` (all of one key) in stamped transactional batches of 98 (which erase the
    partition's checkpoint, as the store's own erasures do)."""
    _stamped_batches(store, entries, lambda _, chunk: [("delete", (docs.entry_item_id(e.id),)) for e in chunk])


def _stamped_batches(
    store: CosmosMemoryStore,
    entries: list[MemoryEntry],
    operations: Callable[[int, list[MemoryEntry]], list[Operation]],
    *,
    inserts: bool = False,
) -> None:
    if not entries:
        return
    key = entries[0].key
    with store._operation("seed") as calls:
        for at in range(0, len(entries), CALLER_OPERATIONS):
            chunk = entries[at:at + CALLER_OPERATIONS]
            store._stamps.write(calls, key.instance_id, key.upn, functools.partial(operations, chunk=chunk),
                                inserts=len(chunk) if inserts else 0)


CORRECTION = "- Correction: I moved to Oslo in March; I no longer live in Bergen."


def memory_with_correction(key: ProfileKey, count: int = 10_000) -> list[MemoryEntry]:
    """``count`` entries of ``key`` whose oldest says Bergen and whose newest is the correction."""
    entries = make_entries(key, count, text=lambda n: "- I live in Bergen." if n == 0 else fact(n))
    return [*entries[:-1], replace(entries[-1], content_markdown=CORRECTION)]


def unseed(cosmos: CosmosServer, entries: list[MemoryEntry], database: str = "memory",
           container: str = "Memories") -> None:
    """Remove seeded entries from the Cosmos test server (stamped transactional batches of 98 deletes)."""
    from tests.adapters.cosmos_support import cosmos_store

    store = cosmos_store(cosmos, database, container)
    try:
        erase_cosmos_entries(store, entries)
    finally:
        store.close()


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
