"""What a read shows: the caller's own visible entries, plus shared ones the policy allows.

Shared entries (team copies and legacy entries) of an instance live in one
partition, so whatever the number of users, a team or legacy read costs one
query on the caller's partition and one on the shared partition.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_core.domain.models import MemoryEntry, ProfileKey, ScopeState
from memory_core.domain.search import FullTextIndex
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore


def visible_scopes(
    store: MemoryStore, viewer_upn: str, keys: Sequence[ProfileKey], policy: SharingPolicy
) -> list[tuple[ScopeState, list[MemoryEntry]]]:
    """For each key (all in the viewer's partition): its state and the entries the viewer sees, oldest first."""
    own = store.load(keys)
    shares = policy.shares_read()
    if not shares:
        return [(state, state.visible_entries()) for state in own]
    shared = store.load([key.shared() for key in keys])
    result = []
    for state, shared_state in zip(own, shared, strict=True):
        others = [
            e for e in shared_state.visible_entries() if e.share in shares and e.author_upn != viewer_upn
        ]
        merged = sorted([*state.visible_entries(), *others], key=lambda e: e.sort_key)
        result.append((state, merged))
    return result


def visible_matches(
    index: FullTextIndex, viewer_upn: str, keys: Sequence[ProfileKey], policy: SharingPolicy, terms: Sequence[str]
) -> tuple[list[MemoryEntry], dict[str, float]]:
    """The entries matching ``terms`` that a read of ``keys`` would show the viewer, and their scores.

    The same rules as ``visible_scopes`` (watermark, holds, the newest replace, the
    sharing policy), applied to what the index found instead of every entry.
    """
    shares = policy.shares_read()
    visible: list[MemoryEntry] = []
    scores: dict[str, float] = {}
    for state, matched in index.search_index(keys, terms):
        visible += [e for e in state.visible_entries() if e.id in matched]
        scores.update(matched)
    if shares:
        for state, matched in index.search_index([key.shared() for key in keys], terms):
            visible += [
                e for e in state.visible_entries()
                if e.id in matched and e.share in shares and e.author_upn != viewer_upn
            ]
            scores.update(matched)
    return visible, scores
