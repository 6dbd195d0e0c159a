"""``partition_keys`` and ``load_partition_within``: one owner's memory read in parts, on every store.

What the operator's hidden-text scan reads a partition with (``domain.hidden_text_scan``): a memory that fits
in what is left of a page is read whole in one bounded query, and a larger one is never read whole; its
scopes are then read a page at a time from the keys of its profiles.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.domain import hidden_text_scan
from memory_core.domain.models import EntryKind, Hold, MemoryEntry, MemoryProfile, ProfileKey, Scope, ScopeState
from memory_core.domain.records import Partition, Record, RecordKind
from memory_core.domain.store import MemoryStore

T0 = datetime(2026, 1, 2, tzinfo=UTC)


def _memory(store: MemoryStore, instance: str, owner: str, sizes: list[int], hidden: str = "") -> list[ProfileKey]:
    """``owner``'s user scope and an agent scope per further size, holding that many entries each (every other
    one ending in ``hidden``)."""
    keys = [ProfileKey(instance, owner, Scope.USER)] + [
        ProfileKey(instance, owner, Scope.AGENT, f"/agents/{n}") for n in range(len(sizes) - 1)]
    for key, size in zip(keys, sizes, strict=True):
        for n in range(size):
            at = T0 + timedelta(seconds=n)
            store.append(MemoryProfile(key, None, None, None, T0, at),
                         MemoryEntry(uuid.uuid4().hex, key, f"- fact {n}" + ("" if n % 2 else hidden),
                                     EntryKind.APPEND, at, owner))
    return keys


def _shape(states: list[ScopeState] | None) -> list[tuple[str, list[str], tuple[Hold, ...]]] | None:
    if states is None:
        return None
    return [(s.key.profile_id, sorted(e.id for e in s.entries), s.holds) for s in states]


def test_the_keys_of_every_profile_of_one_owner_in_profile_id_order(store: MemoryStore) -> None:
    """An owner with a user scope and three agents' scopes: four keys, ordered as ``load_partition`` orders its
    states; another owner's and another instance's profiles are not among them; an owner with nothing, none."""
    instance, other = (f"keys-{uuid.uuid4().hex[:8]}" for _ in range(2))
    keys = _memory(store, instance, "alex@contoso.com", [1, 2, 1, 1])
    _memory(store, instance, "bob@contoso.com", [1, 1])
    _memory(store, other, "alex@contoso.com", [1, 1, 1, 1, 1, 1])
    found = store.partition_keys(instance, "alex@contoso.com")
    assert found == sorted(keys, key=lambda k: k.profile_id)
    assert found == [s.key for s in store.load_partition(instance, "alex@contoso.com")]
    assert store.partition_keys(instance, "carol@contoso.com") == []


def test_a_memory_within_the_limit_is_read_whole_and_a_larger_one_not_at_all(store: MemoryStore) -> None:
    """Seven entries in two scopes and a hold: within 100 or 20 entries, the same states as ``load_partition``
    (entries and holds); within 6, 3 or 0, None. An owner with nothing answers no states whatever the limit."""
    instance = f"within-{uuid.uuid4().hex[:8]}"
    user, agent = _memory(store, instance, "alex@contoso.com", [4, 3])
    hold = Hold("req-1", (user.profile_id,), T0)
    store.put_record(Record(Partition(instance, "alex@contoso.com"), RecordKind.HOLD, "req-1", hold.to_data()))
    whole = _shape(store.load_partition(instance, "alex@contoso.com"))
    assert whole is not None
    assert {pid: (len(ids), holds) for pid, ids, holds in whole} == {user.profile_id: (4, (hold,)),
                                                                     agent.profile_id: (3, (hold,))}
    for at_most in (100, 20):
        assert _shape(store.load_partition_within(instance, "alex@contoso.com", at_most)) == whole
    for at_most in (6, 3, 0):
        assert store.load_partition_within(instance, "alex@contoso.com", at_most) is None
    assert store.load_partition_within(instance, "carol@contoso.com", 10) == []


def test_the_scan_reads_a_memory_larger_than_its_page_in_parts_and_finds_each_entry_once(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The operator's scan with a budget of 5 entries a page, over memories of 3 entries, of 5 + 4 (two scopes,
    one entry held by a pending forget) and of 2, written with hidden text as a version before the rule did: no
    page reads more than 5 entries, and every visible entry holding hidden text is listed once."""
    monkeypatch.setattr(hidden_text_scan, "ENTRIES_PER_PAGE", 5)
    instance = f"scan-{uuid.uuid4().hex[:8]}"
    hidden = "".join(chr(0xE0000 + ord(ch)) for ch in "obey")
    _memory(store, instance, "alex@contoso.com", [3], hidden)
    user, _agent = _memory(store, instance, "bob@contoso.com", [5, 4], hidden)
    _memory(store, instance, "carol@contoso.com", [2], hidden)
    (bob_user,) = store.load([user])
    held = next(e for e in bob_user.entries if e.content_markdown == "- fact 2" + hidden)
    hold = Hold("req-1", (user.profile_id,), None, (held.id,))
    store.put_record(Record(Partition(instance, "bob@contoso.com"), RecordKind.HOLD, "req-1", hold.to_data()))
    pages = [hidden_text_scan.scan_page(store, instance, 20, None)]
    while pages[-1].continuation is not None:
        pages.append(hidden_text_scan.scan_page(store, instance, 20, pages[-1].continuation))
    assert all(p.entries_scanned <= 5 for p in pages)
    assert sum(p.entries_scanned for p in pages) == 3 + 8 + 2 and sum(p.owners_scanned for p in pages) == 3
    found = sorted((f.entry.key.upn.split("@")[0], f.entry.key.scope.value,
                    f.entry.content_markdown.removesuffix(hidden)) for p in pages for f in p.findings)
    assert found == [("alex", "user", "- fact 0"), ("alex", "user", "- fact 2"), ("bob", "agent", "- fact 0"),
                     ("bob", "agent", "- fact 2"), ("bob", "user", "- fact 0"), ("bob", "user", "- fact 4"),
                     ("carol", "user", "- fact 0")]
