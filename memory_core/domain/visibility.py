"""What a read shows: the caller's own visible entries, plus shared ones the policy allows.

Shared entries (team copies and legacy entries) of an instance live in one
partition, so whatever the number of users, a team or legacy read costs one
query on the caller's partition and one on the shared partition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memory_core.domain.models import MemoryEntry, ProfileKey, ScopeState
from memory_core.domain.search import FullTextIndex, SearchHit, best_first, rank_matches
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore


def visible_scopes(
    store: MemoryStore, viewer_upn: str, keys: Sequence[ProfileKey], policy: SharingPolicy
) -> list[tuple[ScopeState, list[MemoryEntry]]]:
    """For each key (all in the viewer's partition): its state and the entries the viewer sees, oldest first."""
    own = store.load(keys)
    if not policy.shares_read():
        return [(state, state.visible_entries()) for state in own]
    shared = store.load([key.shared() for key in keys])
    return [(state, merged_entries(state, shared_state, policy, viewer_upn))
            for state, shared_state in zip(own, shared, strict=True)]


def merged_entries(
    own: ScopeState, shared: ScopeState, policy: SharingPolicy, viewer_upn: str
) -> list[MemoryEntry]:
    """What a sharing read of one scope shows, oldest first: ``own``'s visible entries and those of the
    shared partition's (``shared``) that ``policy`` shows the viewer."""
    others = [e for e in shared.visible_entries() if policy.shows_shared(e, viewer_upn)]
    return sorted([*own.visible_entries(), *others], key=lambda e: e.sort_key)


def visible_matches(
    index: FullTextIndex,
    viewer_upn: str,
    keys: Sequence[ProfileKey],
    policy: SharingPolicy,
    terms: Sequence[str],
    tags: Sequence[str],
    limit: int,
) -> list[SearchHit]:
    """The best ``limit`` entries matching ``terms`` and carrying ``tags`` that a read of ``keys`` shows the viewer.

    The same rules as ``visible_scopes`` (watermark, holds, the newest replace, the
    sharing policy), applied to what the index found instead of every entry. The
    index answers best first, a page at a time, so a common term in a large memory
    costs the pages needed for ``limit`` visible hits, not every entry.
    """
    with index.snapshot():  # every page, own and shared, from one state of the store
        hits = _best_visible(index, keys, terms, tags, limit, lambda e: True)
        if policy.shares_read():
            hits += _best_visible(index, [key.shared() for key in keys], terms, tags, limit,
                                  lambda e: policy.shows_shared(e, viewer_upn))
    return best_first(hits)[:limit]


def _best_visible(
    index: FullTextIndex,
    keys: Sequence[ProfileKey],
    terms: Sequence[str],
    tags: Sequence[str],
    limit: int,
    shown: Callable[[MemoryEntry], bool],
) -> list[SearchHit]:
    # The first page is twice the limit: most matches are visible, and every entry of a page
    # is built in full. Pages then double: an index scores every match for each page, so when
    # most of the best matches are hidden or lack the tags, doubling keeps the pages read
    # logarithmic in the matches skipped, not linear.
    page = max(2 * limit, 20)
    hits: list[SearchHit] = []
    skip = 0
    while len(hits) < limit:
        found = index.search_index(keys, terms, skip=skip, take=page)
        matched = 0
        for state, scores in found:
            matched += len(scores)
            # Visibility of one entry depends only on the profile, the holds and the replace
            # entries, which every page carries: filtering page by page is exact.
            visible = [e for e in state.visible_entries() if e.id in scores and shown(e)]
            hits += rank_matches(visible, scores, tags, limit)
        if matched < page:
            break
        skip += page
        page *= 2
    return hits
