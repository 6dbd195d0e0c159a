"""What a person or an operator sees at a glance: a user's agent scopes, a deletion request's size.

These are read-only summaries over the store, used by the console's endpoints;
they never change memory.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory_core.domain.deletion import DeletionKind, DeletionRequest, DeletionStatus
from memory_core.domain.errors import InvalidInput
from memory_core.domain.models import ProfileKey, Scope, agent_profile_prefix
from memory_core.domain.paging import Page, check_page_size, decode_token, encode_token
from memory_core.domain.store import EntryWindow, MemoryStore
from memory_core.domain.views import agent_name_of, updated_on_of

AGENTS_PAGE = 100
"""Agents in a page of ``agent_scopes`` when the caller names no limit (each costs a read of its scope)."""
MAX_AGENTS_PAGE = 500
"""The most a page of ``agent_scopes`` holds: 500 scopes' entries are read to count them."""

_AGENTS_LISTING = "memory-agents"
_AGENT_HASH = re.compile(r"[0-9a-f]{32}")  # models.agent_hash: what follows the prefix in an agent's profile id


@dataclass(frozen=True, slots=True)
class AgentScope:
    """One agent's memory about a user: who the agent is and how much is visible now."""

    agent_object_id: str
    agent_name: str | None
    entry_count: int
    updated_on: datetime | None


def agent_scopes(
    store: MemoryStore, instance_id: str, upn: str, *, limit: int = AGENTS_PAGE, continuation: str | None = None
) -> Page[AgentScope]:
    """One page of the user's agent scopes in the instance, in a stable order of their agent's id (the hash in the
    profile id: not alphabetical, and not by time), and the continuation when more follow.

    The order is the profile key's and not "most recently updated first" because that one moves under writes: an
    agent written to between two page reads would jump to the front and be skipped, or be listed twice. Here an
    agent that holds a scope throughout the walk is listed exactly once however its scopes change meanwhile; one
    whose scope appears or goes during the walk is listed at most once. A client wanting the newest first sorts
    what it read (the console does). ``InvalidInput`` (400) for a limit outside 1 to ``MAX_AGENTS_PAGE`` or a
    continuation this listing did not answer.

    A scope whose entries are all cleared or held still appears, with ``entry_count`` 0, so a person can see that
    an agent once held memory about them. Reads a page of the partition's agent profile keys (one bounded query),
    then those scopes alone: never the other agents' entries, nor the user scope's, often most of a person's
    memory (10,000 of them made the console's agent list take 7-8 s on the Cosmos DB test server).
    """
    check_page_size(limit, MAX_AGENTS_PAGE)
    prefix = agent_profile_prefix(upn)
    position = decode_token(_AGENTS_LISTING, continuation)
    if position is not None and (len(position) != 1 or not _AGENT_HASH.fullmatch(position[0])):
        raise InvalidInput("continuation is not a token this listing answered; start again without it",
                           code="invalid_continuation")
    keys = store.partition_keys(instance_id, upn, prefix=prefix, after=prefix + position[0] if position else None,
                                limit=limit + 1)
    page = keys[:limit]
    token = encode_token(_AGENTS_LISTING, [page[-1].profile_id[len(prefix):]]) if len(keys) > limit else None
    scopes = [
        AgentScope(
            agent_object_id=state.key.agent_object_id or "",
            agent_name=agent_name_of(state, None),
            entry_count=len(state.visible_entries()),
            updated_on=updated_on_of(state),
        )
        for state in store.load([k for k in page if k.agent_object_id])
    ]
    return Page(scopes, token)


def request_entry_counts(store: MemoryStore, requests: Sequence[DeletionRequest]) -> list[int | None]:
    """How many of the user's own entries each request erases (or erased); None when unknowable.

    Executed requests, and approved ones the sweep has counted, answer their recorded count; a forget
    answers 1. Other pending and approved requests count the entries their hold hides now: each
    person's memory is read once for the page however many requests they have (a person with 300
    pending clears cost 300 reads of their memory, a minute at 3,000 entries). A rejected request no
    longer hides anything and answers None.
    """
    counted: dict[str, int | None] = {}
    uncounted: dict[tuple[str, str], list[DeletionRequest]] = {}
    for request in requests:
        if request.status is DeletionStatus.REJECTED:
            counted[request.id] = None
        elif request.erased_entries is not None:
            counted[request.id] = request.erased_entries
        elif request.kind is DeletionKind.FORGET:
            counted[request.id] = 1
        else:
            uncounted.setdefault((request.instance_id, request.upn), []).append(request)
    for (instance_id, upn), theirs in uncounted.items():
        by_window = {r.id: n for r in theirs if (n := _count_under_watermark(store, r)) is not None}
        counted.update(by_window)
        wanted = {r.id for r in theirs} - set(by_window)
        if not wanted:
            continue
        counts = dict.fromkeys(wanted, 0)
        for state in store.load_partition(instance_id, upn):
            for hold in state.holds:  # every state of a partition carries the same holds
                if hold.request_id in wanted:
                    counts[hold.request_id] += sum(1 for e in state.entries if hold.covers(e))
        counted.update(counts)
    return [counted[r.id] for r in requests]


def _count_under_watermark(store: MemoryStore, request: DeletionRequest) -> int | None:
    """``request_entry_counts`` for a clear or a replace, whose hold covers one profile's entries up to a watermark:
    two counts of the profile's time index (all, and those after the watermark) instead of a read of every entry of
    the person's memory (a pending clear of 60,000 entries made the operator's page take over 1 s). None for any
    other hold (a purge's, a forget's, one naming an author): those are counted from the entries.

    The hold is read (``load_heads``: the profile and the partition's holds, no entry), so a request whose hold is
    gone counts 0, as when counted from the entries."""
    if request.kind not in (DeletionKind.CLEAR, DeletionKind.REPLACE) or not request.scope:
        return None
    key = ProfileKey(request.instance_id, request.upn, Scope(request.scope), request.agent_object_id)
    (head,) = store.load_heads([key])
    holds = [h for h in head.holds if h.request_id == request.id]
    if not holds:
        return 0
    watermarks = {h.watermark for h in holds}
    if len(watermarks) != 1 or any(h.profile_ids != (key.profile_id,) or h.author_upn is not None or h.entry_ids
                                   for h in holds):
        return None
    (watermark,) = watermarks
    if watermark is None:
        return None
    return store.count_entries(EntryWindow(key)).count - store.count_entries(EntryWindow(key, after=watermark)).count
