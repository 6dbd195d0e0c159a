"""``partition_owners``: the owners of an instance's memories, each once, in order, a page at a time, on every store.

What the operator's hidden-text scan walks (``domain.hidden_text_scan``): a page must name each
owner once however many profiles (one per agent) the owner has, continue after the last owner it
gave, and never name another instance's owners or a partition that holds only records.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from memory_core.domain.models import SHARED_OWNER, EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.records import DELETIONS_OWNER, Partition, Record, RecordKind
from memory_core.domain.store import MemoryStore

T0 = datetime(2026, 1, 2, tzinfo=UTC)


def _memory(store: MemoryStore, instance: str, owner: str, agents: int = 0) -> None:
    """One user-scope entry of ``owner``, and one agent-scope entry for each of ``agents`` agents (a profile each)."""
    keys = [ProfileKey(instance, owner, Scope.USER)] + [
        ProfileKey(instance, owner, Scope.AGENT, f"/agents/{n}") for n in range(agents)]
    for key in keys:
        store.append(MemoryProfile(key, None, None, None, T0, T0),
                     MemoryEntry(uuid.uuid4().hex, key, "- x", EntryKind.APPEND, T0, owner))


def _walk(store: MemoryStore, instance: str, limit: int) -> list[list[str]]:
    pages = [store.partition_owners(instance, limit)]
    while len(pages[-1]) == limit:
        pages.append(store.partition_owners(instance, limit, after=pages[-1][-1]))
    return pages


def test_owners_come_once_each_in_order_a_page_at_a_time(store: MemoryStore) -> None:
    """Five owners, one with ten agents' memories (more profiles than a page's query reads on Cosmos DB), read two
    at a time: pages of 2, 2 and 1, each owner once and in order."""
    instance = f"own-{uuid.uuid4().hex[:8]}"
    owners = ["carol@contoso.com", "alex@contoso.com", "erin@contoso.com", "bob@contoso.com", "dan@contoso.com"]
    for owner in owners:
        _memory(store, instance, owner, agents=10 if owner == "alex@contoso.com" else 0)
    assert _walk(store, instance, 2) == [["alex@contoso.com", "bob@contoso.com"],
                                         ["carol@contoso.com", "dan@contoso.com"], ["erin@contoso.com"]]
    assert store.partition_owners(instance, 10, after="bob@contoso.com") == [
        "carol@contoso.com", "dan@contoso.com", "erin@contoso.com"]
    assert store.partition_owners(instance, 10, after="erin@contoso.com") == []


def test_only_this_instances_memories_are_named(store: MemoryStore) -> None:
    """Another instance's owners, and partitions holding only records (deletion requests), are not named; the
    shared partition, which holds legacy memory, is."""
    instance, other = (f"own-{uuid.uuid4().hex[:8]}" for _ in range(2))
    _memory(store, instance, "alex@contoso.com")
    _memory(store, instance, SHARED_OWNER)
    _memory(store, other, "bob@contoso.com")
    store.put_record(Record(Partition(instance, DELETIONS_OWNER), RecordKind.DELETION_REQUEST, "r1", {}))
    assert store.partition_owners(instance, 10) == ["alex@contoso.com", SHARED_OWNER]
    assert store.partition_owners(f"own-{uuid.uuid4().hex[:8]}", 10) == []
