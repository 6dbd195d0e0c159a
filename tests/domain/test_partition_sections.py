"""A partition's part of a sharing read, as a checkpoint's payload: what is decoded is what was encoded,
whatever the entries hold and however many lines they take."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from memory_core.domain.models import EntryKind, MemoryEntry, ProfileKey, Scope, ScopeState, Share
from memory_core.domain.partition_sections import ANY_OTHER, ENTRIES_PER_LINE, PartitionSections
from memory_core.domain.snapshots import PartitionStamp, StampedLoad

USER = ProfileKey("i", "~shared", Scope.USER)
AGENT = ProfileKey("i", "~shared", Scope.AGENT, "agent-1")
START = datetime(2025, 1, 1, tzinfo=UTC)


def _entry(key: ProfileKey, n: int) -> MemoryEntry:
    return MemoryEntry(
        id=f"{key.scope.value}-{n}", key=key, content_markdown="" if n % 97 == 5 else f"- fact {n}\n\"quoted\"\n\n",
        kind=EntryKind.APPEND if n % 50 else EntryKind.IMPORT,
        # Times in another zone, as a store may return them: the position is UTC, the entry as stored.
        created_on=(START + timedelta(seconds=n)).astimezone(timezone(timedelta(hours=2))),
        author_upn=f"user{n % 3}@contoso.com" if n % 7 else "", author_user_id=f"oid-{n}" if n % 2 else None,
        agent_name="Helper" if key.scope is Scope.AGENT else None, reason="r" if n % 3 else None,
        session_id="s" if n % 4 else None, operation_id=f"op-{n}", tags=("a", "b") if n % 5 else (),
        share=Share.LEGACY if n % 7 == 0 else Share.TEAM, content_sha256=f"sha-{n}",
    )


def test_a_part_decodes_to_the_entries_and_sections_it_was_encoded_from_across_lines() -> None:
    sizes = {USER: 2 * ENTRIES_PER_LINE + 3, AGENT: ENTRIES_PER_LINE}
    states = [ScopeState(key, None, [_entry(key, n) for n in range(size)]) for key, size in sizes.items()]
    part = PartitionSections.of(StampedLoad(PartitionStamp(9, 7), 42, states), ANY_OTHER)
    decoded = PartitionSections.decode(list(sizes), PartitionStamp(9, 7), part.encode(list(sizes)))
    assert decoded is not None
    assert (decoded.stamp, decoded.sequence, decoded.count) == (PartitionStamp(9, 7), 42, sum(sizes.values()))
    for built, restored, state in zip(part.scopes, decoded.scopes, states, strict=True):
        assert restored.rows == built.rows and restored.offers == built.offers
        assert restored.latest == built.latest
        # Newest first, as a budgeted read decodes them, then every one.
        assert [restored.entries[i] for i in reversed(range(len(state.entries)))] == state.entries[::-1]


def test_a_payload_of_another_read_or_layout_is_not_taken() -> None:
    part = PartitionSections.of(StampedLoad(PartitionStamp(1, 1), 1, [ScopeState(USER, None, [_entry(USER, 1)])]),
                                ANY_OTHER)
    payload = part.encode([USER])
    assert PartitionSections.decode([AGENT], PartitionStamp(1, 1), payload) is None
    assert PartitionSections.decode([USER], PartitionStamp(1, 1), payload.replace('"format":1', '"format":0')) is None
    assert PartitionSections.decode([USER], PartitionStamp(1, 1), "not json") is None
