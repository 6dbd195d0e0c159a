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
    an agent once held memory about them; so does a scope a clear made a profile for to hold its watermark before
    anything was stored there (``seals.advance_watermark``): the listing cannot tell it from one whose entries were
    all forgotten since, and hiding both would hide an agent that did hold memory. Reads a page of the partition's agent profile keys (one bounded query),
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
    answers 1. Other pending and approved requests count the entries their hold hides now. A rejected
    request no longer hides anything and answers None.

    Bounded store work per person on the page, however many requests they have: their clears and replaces, up to
    ``WINDOW_COUNTS`` of them, cost one read of their holds (``load_heads``, no entry) and one count of the
    profile's time index per request (a pending clear of 60,000 entries is counted without reading them); more
    of them, or a purge's (whose hold covers all their profiles), cost one read of their memory for all. A person
    with 300 pending clears once cost 300 reads of their memory (a minute at 3,000 entries), then 900 store calls.
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
        windowed = len(theirs) <= WINDOW_COUNTS and all(_windowed_kind(r) for r in theirs)
        by_window = _counts_under_watermarks(store, theirs) if windowed else {}
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


WINDOW_COUNTS = 10
"""The most clears and replaces of one person that a page counts from their profiles' time indexes (a count each);
past it, or beside a purge, their memory is read once instead and every request of theirs counted from it."""


def _windowed_kind(request: DeletionRequest) -> bool:
    return request.kind in (DeletionKind.CLEAR, DeletionKind.REPLACE) and bool(request.scope)


def _counts_under_watermarks(store: MemoryStore, requests: Sequence[DeletionRequest]) -> dict[str, int]:
    """``request_entry_counts`` for one person's clears and replaces, whose holds cover one profile's entries up to a
    watermark: one read of the person's holds (``load_heads`` of every profile named, no entry), then one count of
    each profile's entries up to each watermark (``EntryWindow.up_to``: one statement, so a write between two
    counts cannot tear it), instead of a read of every entry of the person's memory (a pending clear of 60,000
    entries made the operator's page take over 1 s). A request whose hold is gone counts 0, as when counted from
    the entries; one whose hold has another shape (several profiles, an author, entries by id) is left out, to be
    counted from the entries."""
    keys = {r.id: ProfileKey(r.instance_id, r.upn, Scope(r.scope), r.agent_object_id) for r in requests if r.scope}
    heads = store.load_heads(list(dict.fromkeys(keys.values())))
    holds = heads[0].holds if heads else ()  # every head of a partition carries the same holds
    windows: dict[str, EntryWindow] = {}
    counts: dict[str, int] = {}
    for request_id, key in keys.items():
        theirs = [h for h in holds if h.request_id == request_id]
        watermarks = {h.watermark for h in theirs}
        if not theirs:
            counts[request_id] = 0
        elif len(watermarks) == 1 and None not in watermarks and all(
                h.profile_ids == (key.profile_id,) and h.author_upn is None and not h.entry_ids for h in theirs):
            windows[request_id] = EntryWindow(key, up_to=theirs[0].watermark)
    by_window = {window: store.count_entries(window).count for window in set(windows.values())}
    counts.update({request_id: by_window[window] for request_id, window in windows.items()})
    return counts
