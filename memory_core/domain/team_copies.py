"""Team-shared entries: the copy of each in its instance's shared partition, which teammates read.

A write shared with the team (``Share.TEAM``) stores the entry in the author's memory and a
copy, under ``shared_copy_id``, in the shared partition of the same scope; erasing the entry
erases the copy, and a clear or replace withdraws the author's copies from before it
(``copies_before`` finds them), sealing them first so that a copy still on its way is refused by the store. Custody
erases them (``domain.erasures`` at once, the sweep after approval), and ``domain.entry_removals`` a dropped
version's: only those erase memory (docs/custody.md), and this module's ``withdraw`` for them.

A forget takes one entry, not a watermark, and so does a memory-tool version dropped (``domain.entry_removals``):
before its copy is erased, ``forbid`` stores the copy's mark (a
``team_copy`` record of the copy's id in the shared partition, naming no text, kept for good), and ``share`` creates
that mark, create-only, in the copy's own atomic write (``MemoryStore.append_with_records``): a copy on its way when
the entry was forgotten finds the mark taken and is not stored (``EntryExists``), on either store, at no round trip
more. The mark a copy creates for itself expires at once (its write is the only reader); ``forbid`` puts one that
never does. ``withdraw`` is the pair, the marks and then the copies erased, for whoever erases entries by id.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from memory_core.domain.errors import EntryBeforeClear, EntryExists
from memory_core.domain.identity import Caller
from memory_core.domain.models import (
    SHARED_OWNER,
    EntryKind,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Share,
    shared_copy_id,
)
from memory_core.domain.records import ABSENT, Partition, Record, RecordKind
from memory_core.domain.store import EntryWindow, MemoryStore

log = logging.getLogger("memory_core.team_copies")

# Marks per write in ``forbid_all``: a Cosmos DB transactional batch takes at most 100 operations.
_BATCH = 100


def share(store: MemoryStore, entry: MemoryEntry) -> None:
    """Offer ``entry`` to the instance when it is team-shared: its copy in the shared partition.

    The copy of a replace is kind ``held_replace``: it renders like a replace but cuts off nothing before it.
    The shared partition holds every author's copies, and a replace in it would hide all of theirs from every
    reader; the author's own earlier copies are withdrawn by custody (``copies_before``) instead.
    Idempotent: a copy already stored (the id derives from the entry's) is left as it is."""
    if entry.share is not Share.TEAM:
        return
    shared_key = entry.key.shared()
    kind = EntryKind.HELD_REPLACE if entry.kind is EntryKind.REPLACE else entry.kind
    copy = replace(entry, id=shared_copy_id(entry.id), key=shared_key, kind=kind)
    seed = MemoryProfile(shared_key, None, None, None, entry.created_on, entry.created_on)
    # Created only while no mark is stored: ``forbid`` stored one when the entry was forgotten. Expired at once
    # (it is in the past): nothing reads it after this write, so shared partitions do not keep one per copy.
    mark = replace(_mark(copy.key.instance_id, copy.id), etag=ABSENT, expires_on=entry.created_on)
    # EntryExists: offered before (a retried write, Idempotency-Key, offers it again), or the entry was forgotten
    # (its mark is taken). EntryBeforeClear: the shared scope was cleared after the entry was made (stored, the copy
    # would be hidden and never erased), or a clear of the author's scope erased the entry and sealed its copies
    # (``MemoryStore.seal_copies``): it must not outlive it. Either way the entry stays its author's, unshared: said
    # in the log, as nothing else tells (the write that shared it answered already, or answers its own entry).
    try:
        store.append_with_records(seed, copy, [mark])
    except EntryExists:
        pass
    except EntryBeforeClear as refused:
        log.info("team copy %s not stored: a clear at %s of its author's scope or of the shared one covers it",
                 copy.id, refused.cleared_on.isoformat())


def forbid(store: MemoryStore, instance_id: str, entry_id: str) -> None:
    """From now on no team copy of entry ``entry_id`` is stored (``share`` finds its mark taken): what the sweep's
    plan of a forget does before it reads the copy, so a copy its writer stores after that is refused. One record
    write; the mark is kept for good (a late copy may come any time), about 0.3 KB, and names no text. Idempotent.
    ``withdraw`` forbids, then erases, the copies themselves."""
    forbid_all(store, instance_id, [entry_id])


def forbid_all(store: MemoryStore, instance_id: str, entry_ids: Sequence[str]) -> None:
    """``forbid`` for each of ``entry_ids``, in batches of at most ``_BATCH`` records (one write each; a lone mark,
    a plain record write): what the sweep of a purge does before it reads the copies of the team-shared entries it
    erases."""
    marks = [_mark(instance_id, shared_copy_id(entry_id)) for entry_id in dict.fromkeys(entry_ids)]
    for start in range(0, len(marks), _BATCH):
        batch = marks[start:start + _BATCH]
        if len(batch) == 1:
            store.put_record(batch[0])
        else:
            store.put_records(batch)


def withdraw(store: MemoryStore, key: ProfileKey, entry_ids: Sequence[str]) -> None:
    """Erase the team copies of ``entry_ids``, entries of ``key``'s scope, forbidding each first (``forbid_all``):
    a copy its writer has not stored yet (a team-shared write stores the entry, then the copy) is refused once its
    mark is, instead of outliving its entry. Callers pass team-shared entries only: a write to the shared partition
    resets the instance's shared checkpoints. What a forget (``domain.erasures``), a memory-tool version dropped
    (``domain.entry_removals``) and a purge's seal (``domain.seals``) do with the copies of what they erase.
    Idempotent."""
    if not entry_ids:
        return
    forbid_all(store, key.instance_id, entry_ids)
    store.delete_entries(key.shared(), [shared_copy_id(entry_id) for entry_id in entry_ids])


def _mark(instance_id: str, copy_id: str) -> Record:
    return Record(Partition(instance_id, SHARED_OWNER), RecordKind.TEAM_COPY, copy_id, {})


def copies_before(store: MemoryStore, caller: Caller, key: ProfileKey, watermark: datetime) -> list[str]:
    """The ids of the caller's shared copies in ``key``'s scope created at or before ``watermark``: what a
    clear or replace withdraws (``domain.erasures`` erases them)."""
    # Their facts only (``entry_facts``): the shared scope holds every author's copies, text and all.
    return [f.id for f in store.entry_facts(EntryWindow(key.shared(), up_to=watermark)) if f.author_upn == caller.upn]
