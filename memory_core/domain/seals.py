"""The sweep's seal, and the erasure of names from the memory tool's file index.

What callers (``domain.custody_sweep``, ``domain.custody``, ``domain.erasures``, ``domain.scope_clears``) may rely
on:

- ``seal``: once it returns, nothing an executed request covered can show again when its hold is
  lifted. A purge first seals its watermark on the user's whole partition (``MemoryStore.seal_partition``: from
  then on the store refuses an entry stamped at or before it, in any scope, and its writer stamps it after), then
  erases what its watermark covers and is still stored (an entry stored after the sweep's plan and before that
  seal included; answered as a count, which the sweep adds to the request's ``erased_entries``), with the team
  copy of each team-shared one, its mark stored first (``team_copies.withdraw``), so
  whatever a purge erases leaves teammates' reads too; and the profile of every
  scope it left empty; a scope an entry was appended to meanwhile keeps its profile, since the store
  erases a profile only while its scope holds no entries (``MemoryStore.delete_profile``): the scope
  stays listed (``partition_keys``, the person's agent list), and the profile an append made is never
  overwritten. A clear or a replace moves its scope's ``cleared_on`` to the watermark (``advance_watermark``).
- ``advance_watermark``: a scope's ``cleared_on`` moved forward, conditional on the profile's etag (``Conflict``
  after 8 races), in a profile it creates when the scope has none: what a clear, a replace and the replay of either
  (``domain.erasures``) store before they seal, so their watermark holds in a scope nobody has written to yet.
- ``erase_file_names``: what an erasure took leaves the file index (``file_index.erased``);
  ``erase_request_file_names`` chooses what that is for one request.

Each is idempotent: the sweep runs them again after a crash (``domain.custody_sweep``).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from memory_core.domain import team_copies
from memory_core.domain.deletion import DeletionKind, DeletionRequest
from memory_core.domain.errors import Conflict
from memory_core.domain.file_index import INDEX_ID, INDEX_KIND, erased
from memory_core.domain.models import MemoryProfile, ProfileKey, Scope, ScopeState, Share
from memory_core.domain.records import ABSENT, Partition, Record
from memory_core.domain.store import MemoryStore

_ATTEMPTS = 8


def seal(store: MemoryStore, request: DeletionRequest) -> int:
    """Make sure nothing ``request`` covered can show again once its hold is gone (a forget needs nothing). Answers
    how many of the user's entries this call erased (a purge's late ones; 0 for the others, and for a run again)."""
    if request.kind is DeletionKind.PURGE:
        erased = 0
        if request.watermark is not None:
            # Sealed before the read below: an entry stamped under the watermark and stored before it is found and
            # erased; one stored after it is refused by the store, whatever its scope (the profiles this erases
            # would take a scope's ``cleared_on`` with them), and its writer stamps it after the watermark.
            store.seal_partition(request.instance_id, request.upn, request.watermark)
        # The facts of every scope, not the entries whole: what is erased and which scopes are left empty are
        # decided by ids, times and shares alone.
        for scope in store.partition_facts(request.instance_id, request.upn):
            leftovers = [f for f in scope.entries if request.watermark and f.created_on <= request.watermark]
            # Stored after the plan, a team-shared leftover's copy was neither marked nor read by it: its mark first
            # (a copy still on its way is refused), then the copy, then the entry, so a crash between them leaves
            # the entry for the next run to find again and never a copy whose entry is gone.
            team_copies.withdraw(store, scope.key, [f.id for f in leftovers if f.share is Share.TEAM])
            erased += store.delete_entries(scope.key, [f.id for f in leftovers])
            if len(leftovers) == len(scope.entries):  # every entry read was a leftover (ids are unique in a scope)
                # Kept by the store when an append landed since the read above: its entry stays, with a profile.
                store.delete_profile(scope.key)
        return erased
    if request.kind in (DeletionKind.CLEAR, DeletionKind.REPLACE) and request.watermark is not None and request.scope:
        key = ProfileKey(request.instance_id, request.upn, Scope(request.scope), request.agent_object_id)
        advance_watermark(store, key, request.watermark, request.watermark)
    return 0


def advance_watermark(
    store: MemoryStore, key: ProfileKey, watermark: datetime, updated_on: datetime, *,
    first: ScopeState | None = None, seed: MemoryProfile | None = None,
) -> None:
    """Move ``key``'s profile's ``cleared_on`` forward to ``watermark`` (never back; ``updated_on`` never back
    either), conditional on the profile's etag: ``Conflict`` after 8 races. Once it returns, the profile holds
    ``watermark`` or a later one, so the store refuses an entry of the scope stamped at or before it
    (``MemoryStore.append``). A scope with no profile gets one carrying ``watermark`` (``seed``'s names, or none;
    created at ``watermark``), created only where none is stored: the watermark lives in the profile, and
    a writer's first entry stamped under it and stored later (an agent's first write, stalled) must be refused
    all the same; a profile a first append made meanwhile is kept, and the next attempt moves its watermark.
    ``first``: the scope as the caller has just read it, which spares the first attempt a load. Reads the profile
    only (``load_heads``): the scope may hold tens of thousands of entries."""
    for attempt in range(_ATTEMPTS):
        (state,) = [first] if attempt == 0 and first is not None else store.load_heads([key])
        try:
            if state.profile is None:
                made = seed or MemoryProfile(key, None, None, None, watermark, updated_on)
                # Created at its watermark: the scope's first moment is the clear's.
                store.save_profile(replace(made, created_on=watermark, updated_on=max(made.updated_on, updated_on),
                                           cleared_on=watermark, etag=ABSENT))
                return
            if state.profile.cleared_on is not None and state.profile.cleared_on >= watermark:
                return
            store.save_profile(replace(state.profile, cleared_on=watermark,
                                       updated_on=max(state.profile.updated_on, updated_on)))
            return
        except Conflict:
            continue
    raise Conflict("the memory profile kept changing while its watermark was stored; retry")


def erase_request_file_names(store: MemoryStore, request: DeletionRequest, own: list[str]) -> None:
    """The names of the user's entries ``own`` and, for a clear, a replace or a purge, the directories and
    whitespace-only files made by its watermark, leave the file index (``file_index.erased``)."""
    if request.kind is DeletionKind.FORGET:
        erase_file_names(store, request.instance_id, request.upn, None, None, own)
    elif request.kind is DeletionKind.PURGE:
        erase_file_names(store, request.instance_id, request.upn, None, request.watermark, own)
    else:  # a clear or a replace of one scope
        tree = request.agent_object_id if request.scope == Scope.AGENT.value else None
        erase_file_names(store, request.instance_id, request.upn, [tree], request.watermark, own)


def erase_file_names(
    store: MemoryStore, instance_id: str, upn: str, agent_object_ids: list[str | None] | None,
    made_by: datetime | None, entry_ids: list[str],
) -> None:
    """Take out of ``upn``'s memory tool file index what an erasure took: the files of ``entry_ids`` and, made
    at or before ``made_by``, the directories and whitespace-only files, in the trees of ``agent_object_ids``
    (None in it: user memory; None: every tree). Paths are the user's words: an erased file's path must not
    outlive its text. Conditional on the index's etag, retried on a race; ``Conflict`` after 8 races."""
    partition = Partition(instance_id, upn)
    for _ in range(_ATTEMPTS):
        record = store.get_record(partition, INDEX_KIND, INDEX_ID)
        data = erased(record.data, agent_object_ids, made_by, set(entry_ids)) if record else None
        if record is None or data is None:
            return
        try:
            store.put_record(Record(partition, INDEX_KIND, INDEX_ID, data, record.etag))
            return
        except Conflict:
            continue
    raise Conflict("the memory file index kept changing during the erasure; retry")


__all__ = ["erase_file_names", "erase_request_file_names", "seal"]
