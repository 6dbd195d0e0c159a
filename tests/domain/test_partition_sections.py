"""A partition's part of a sharing read, as a checkpoint's payload: what is decoded is what was encoded,
whatever the entries hold and however many lines they take; a payload of another layout is never taken."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

from memory_core.domain.listings import position_time
from memory_core.domain.models import EntryKind, MemoryEntry, ProfileKey, Scope, ScopeState, Share
from memory_core.domain.partition_sections import ANY_OTHER, ENTRIES_PER_LINE, FORMAT, PartitionSections, entry_row
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
        assert (restored.positions, restored.offer_of, restored.agents, restored.texts) == \
            (built.positions, built.offer_of, built.agents, built.texts)
        assert restored.offers == built.offers and restored.latest == built.latest
        assert None in restored.texts and any("\n" in t for t in restored.texts if t)  # empty content; newlines
        # Positions sort as (time in UTC, id) do, though the entries' times are in another zone.
        assert restored.positions == sorted(restored.positions)
        assert restored.positions == [position_time(e.created_on) + e.id for e in state.entries]
        # Newest first, as a budgeted read decodes them, then every one.
        assert [restored.entries[i] for i in reversed(range(len(state.entries)))] == state.entries[::-1]


def test_a_payload_of_another_read_or_layout_is_not_taken() -> None:
    part = PartitionSections.of(StampedLoad(PartitionStamp(1, 1), 1, [ScopeState(USER, None, [_entry(USER, 1)])]),
                                ANY_OTHER)
    payload = part.encode([USER])
    assert PartitionSections.decode([AGENT], PartitionStamp(1, 1), payload) is None
    assert PartitionSections.decode([USER], PartitionStamp(1, 1), payload.replace(f'"format":{FORMAT}', '"format":0')) is None
    assert PartitionSections.decode([USER], PartitionStamp(1, 1), "not json") is None
    assert PartitionSections.decode([USER], PartitionStamp(1, 1), "[1]\n[]") is None
    assert PartitionSections.decode([USER], PartitionStamp(1, 1), payload.replace("\n", "x", 1)) is None


def _format_1(part: PartitionSections, keys: list[ProfileKey]) -> str:
    """``part`` as the first layout held it (a list per row: time, id, offer, agent, section), as kept by
    releases before the columns."""
    header = {"format": 1, "profiles": [k.profile_id for k in keys], "sequence": part.sequence,
              "scopes": [{"rows": [[p[:32], p[32:], o, a, t] for p, o, a, t in
                                   zip(s.positions, s.offer_of, s.agents, s.texts, strict=True)],
                          "offers": s.offers, "latest": [[o, entry_row(e)] for o, e in s.latest.items()]}
                         for s in part.scopes]}
    lines = [json.dumps([entry_row(s.entries[i]) for i in range(len(s))]) for s in part.scopes]
    return "\n".join([json.dumps(header), *lines])


def test_a_part_kept_in_the_first_layout_is_refused_not_misread() -> None:
    keys = [USER, AGENT]
    states = [ScopeState(key, None, [_entry(key, n) for n in range(40)]) for key in keys]
    part = PartitionSections.of(StampedLoad(PartitionStamp(3, 3), 5, states), ANY_OTHER)
    old = _format_1(part, keys)
    assert len(part.scopes[0].positions[0]) == 32 + len("user-0")  # the split above is the position's
    assert json.loads(old.partition("\n")[0])["scopes"][0]["rows"][0][1] == "user-0"
    assert PartitionSections.decode(keys, PartitionStamp(3, 3), old) is None
    assert PartitionSections.decode(keys, PartitionStamp(3, 3), part.encode(keys)) is not None


def test_a_part_without_entries_round_trips() -> None:
    part = PartitionSections.of(StampedLoad(PartitionStamp(2, 0), 0, [ScopeState(USER, None, [])]), ANY_OTHER)
    decoded = PartitionSections.decode([USER], PartitionStamp(2, 0), part.encode([USER]))
    assert decoded is not None and decoded.count == 0 and decoded.scopes[0].latest == {}
