"""The Cosmos store's writes of memory: entries appended and erased, profiles saved and erased.

``CosmosWrites`` answers the write half of the ``MemoryStore`` Protocol (records aside:
``cosmos_records``) for ``CosmosMemoryStore``, which delegates to it. Every write that can
change a read goes through ``Stamps.write`` (``cosmos_stamps``): one transactional batch that
also moves the partition's stamp, so the write and its stamp commit together or not at all.
Round trips are the cost, so:

- ``append`` is one batch once the profile and the stamp are known to this process (the
  profile cache and the stamps' hints); the first append of a profile in a process reads it
  first (and creates it in the batch when missing);
  the batch is If-Match the partition stamp, which carries each profile's ``cleared_on``
  (``save_profile`` moves it there in its own batch): an entry at or before it is refused
  (``EntryBeforeClear``) against the very stamp the batch commits on, at no round trip more;
- ``save_profile`` with an etag replaces with If-Match, and a 412 becomes ``Conflict`` for the
  service to re-read and retry;
- ``delete_profile`` is a point read and one batch If-Match the profile's etag, then one query for an entry
  of its scope (an append that raced the erasure), and rarely the profile made again, create-only;
- ``seal_copies`` is one batch in the shared partition that moves its stamp alone (it then carries the
  source's watermark, which a team copy's append checks as above; the newest four sources by name, the
  older folded into one floor, ``StoredStamp.sealed``); a copy only the floor covers costs its append one
  point read of its source profile, refused only when that author's own ``cleared_on`` covers it;
- ``seal_partition`` is one batch that moves the owner partition's stamp alone (it then carries the purge's
  watermark, which every append to the partition checks as above, whatever its profile);
- ``delete_entries`` is one query for the ids still there plus one transactional batch per 98
  deletes (``erase_items``), a store operation (a time budget) per 500 ids; each batch's stamp logs the ids it
  erases (``StoredStamp.erased``), for other processes' kept reads (``CosmosKeptReads.load_erased``).

A stamp another process moved first costs a 412, a point read of the stamp and the batch again
(``Stamps.write``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime

from memory_core.adapters import cosmos_documents as docs
from memory_core.adapters import cosmos_queries as queries
from memory_core.adapters.cosmos_calls import Calls, OpenOperation, ProfileCache
from memory_core.adapters.cosmos_stamp_item import StoredStamp
from memory_core.adapters.cosmos_stamps import CALLER_OPERATIONS, BatchRefused, Operation, Stamps
from memory_core.domain.errors import Conflict, EntryBeforeClear, EntryExists
from memory_core.domain.models import MemoryEntry, MemoryProfile, ProfileKey
from memory_core.domain.records import ABSENT, Record, appended_records

_DELETES_PER_BATCH = CALLER_OPERATIONS  # 100 a batch (a Cosmos DB limit), less the stamp and the checkpoint
_IDS_PER_QUERY = 500  # ids per ARRAY_CONTAINS parameter, well under the query size limit
_WRITE_ATTEMPTS = 3


class CosmosWrites:
    """The writes of ``CosmosMemoryStore`` (records aside). Thread-safe: what it keeps is the stamps'
    and the profile cache's, each locked."""

    def __init__(self, operation: OpenOperation, stamps: Stamps, profiles: ProfileCache) -> None:
        """``operation``: opens one named store operation (``CosmosAccount.operation``)."""
        self._operation = operation
        self._stamps = stamps
        self._profiles = profiles

    # -- MemoryStore: writes --------------------------------------------------

    def append(self, profile: MemoryProfile, entry: MemoryEntry) -> MemoryProfile:
        return self.append_with_records(profile, entry, ())

    def append_with_records(self, profile: MemoryProfile, entry: MemoryEntry, records: Sequence[Record]) -> MemoryProfile:
        if profile.key != entry.key:
            raise ValueError("append takes an entry of the profile's key")
        key = entry.key
        if any((r.partition.instance_id, r.partition.owner) != (key.instance_id, key.upn) for r in records):
            raise ValueError("append_with_records takes records of the entry's partition")
        docs.entry_item(entry)  # an id Cosmos DB cannot hold fails here, before any request
        creates, puts = appended_records(records)
        source = entry.copied_from
        # A record to create goes before the entry: a taken id (a key's mark outliving its erased entry, 409)
        # fails the batch as a taken entry id does, and on the test server, which applies a batch in order
        # without rolling back, stops it before the entry is stored.
        created: list[Operation] = [("create", (docs.record_item(r),)) for r in creates]
        extra: list[Operation] = [("upsert", (docs.record_item(r),)) for r in puts]
        with self._operation("append_with_records" if records else "append") as calls:
            for _ in range(_WRITE_ATTEMPTS):
                stored = self._profiles.get(key) or self._read_profile(calls, key)
                # A missing profile is created in the same batch: the entry, its audit
                # event, the profile and the stamp commit together or not at all. A known one is
                # read in it, so that the batch fails when a purge's seal erased the profile since
                # this process saw it (its cache, or the read above): the entry never lands without
                # its profile, which lists the scope (``partition_keys``, the person's agent list).
                new: list[Operation] = (
                    [("read", (key.profile_id,))] if stored is not None else [("create", (docs.profile_item(profile),))]
                )

                def operations(first: int, new: list[Operation] = new) -> list[Operation]:
                    return [*new, *created, ("create", (docs.entry_item(entry, first),)), *extra]

                def covered(stamp: StoredStamp | None, known: MemoryProfile | None = stored) -> None:
                    # The stamp the batch is If-Match on carries the profile's watermark: checked against it, the
                    # refusal holds when the batch commits (a clear saved since moved the stamp: 412, read, again).
                    # A team copy: also against the watermark a clear of its source sealed there (``seal_copies``).
                    _refuse_covered(entry, stamp.cleared_on(key.profile_id) if stamp else None,
                                    known.cleared_on if known else profile.cleared_on,
                                    stamp.named_seal(source.profile_id) if stamp and source else None,
                                    stamp.partition_sealed_on if stamp else None)
                    if stamp is not None and source is not None:
                        self._refuse_under_floor(calls, entry, source, stamp)

                try:
                    # A profile created is not only an entry added: it erases checkpoints (the domain's promise).
                    results = self._stamps.write(calls, key.instance_id, key.upn, operations, inserts=1,
                                                 erases_checkpoint=stored is None, guard=covered,
                                                 clear=_clear_of(profile) if stored is None else None)
                except BatchRefused as refused:
                    if stored is None and refused.index == 0 and refused.status == 409:
                        continue  # a concurrent first append made the profile: read that one
                    if stored is not None and refused.index == 0 and refused.status == 404:
                        self._profiles.discard(key)  # erased since it was seen: read again, create it
                        continue
                    if refused.status == 409:  # the entry's id, or a record's to create (after the profile's)
                        raise EntryExists(f"a memory entry with id {entry.id}, or a record to create with it,"
                                          " already exists") from refused.error
                    raise refused.error from None
                if stored is None:
                    stored = docs.profile_from_item(key, results[0]["resourceBody"])
                    self._profiles.put(stored)
                return stored
        raise Conflict("the memory profile kept appearing and disappearing; retry")

    def save_profile(self, profile: MemoryProfile) -> MemoryProfile:
        key = profile.key
        item = docs.profile_item(profile)
        operation: Operation = (
            ("upsert", (item,)) if profile.etag is None
            else ("create", (item,)) if profile.etag == ABSENT  # 409 when one is stored: kept as it is
            else ("replace", (item["id"], item), {"if_match_etag": profile.etag})
        )
        with self._operation("save_profile") as calls:
            try:
                (result,) = self._stamps.write(calls, key.instance_id, key.upn, lambda _: [operation],
                                               clear=_clear_of(profile))
            except BatchRefused as refused:
                if refused.status in (404, 409, 412):
                    self._profiles.discard(key)
                    raise Conflict("the stored profile changed or went since it was read") from refused.error
                raise refused.error from None
        stored = docs.profile_from_item(key, result["resourceBody"])
        self._profiles.put(stored)
        return stored

    def seal_copies(self, source: ProfileKey, watermark: datetime) -> None:
        shared = source.shared()
        with self._operation("seal_copies") as calls:
            # Only the stamp: its etag moves, so a copy's batch If-Match the stamp before is refused (412), reads
            # this one and is checked against the watermark it now carries; its counts stay, as no read changed.
            self._stamps.write(calls, shared.instance_id, shared.upn, lambda _: [],
                               clear=(source.profile_id, watermark), counts=False)

    def seal_partition(self, instance_id: str, upn: str, watermark: datetime) -> None:
        with self._operation("seal_partition") as calls:
            # Only the stamp, which every append's batch is If-Match on: one stored before this is read by the
            # caller's next read; one after is checked against the watermark the stamp now carries.
            self._stamps.write(calls, instance_id, upn, lambda _: [], erases_checkpoint=False, seal=watermark)

    def delete_profile(self, key: ProfileKey) -> None:
        self._profiles.discard(key)
        pk = [key.instance_id, key.upn]
        with self._operation("delete_profile") as calls:
            for _ in range(_WRITE_ATTEMPTS):
                item = calls.read(key.profile_id, pk)
                if item is None:
                    return
                # If-Match the etag read: the copy made again below is never older than the profile erased (a
                # clear's watermark saved since the read is read again, not lost).
                erase: Operation = ("delete", (key.profile_id,), {"if_match_etag": item["_etag"]})
                try:
                    self._stamps.write(calls, key.instance_id, key.upn, functools.partial(_only, erase))
                    break
                except BatchRefused as refused:
                    if refused.status == 404:
                        return  # erased by another meanwhile
                    if refused.status != 412:
                        raise refused.error from None
            else:
                raise Conflict("the memory profile kept changing while it was erased; retry")
            # No batch can ask whether the scope holds entries, so an append whose batch read the profile
            # before the erasure left its entry without one: the same profile is made again, create-only. An
            # append that made its own first wins (409), so no appended profile is ever overwritten.
            params = {"@instance_id": key.instance_id, "@upn": key.upn, "@profile_id": key.profile_id,
                      "@entry": docs.ENTRY}
            if calls.query(queries.ANY_ENTRY_OF_PROFILE, params, pk):
                again = {name: value for name, value in item.items() if not name.startswith("_")}  # as it was
                try:
                    self._stamps.write(calls, key.instance_id, key.upn, functools.partial(_only, ("create", (again,))))
                except BatchRefused as refused:
                    if refused.status != 409:
                        raise refused.error from None

    def delete_entries(self, key: ProfileKey, entry_ids: Sequence[str]) -> int:
        wanted = [docs.entry_item_id(e) for e in dict.fromkeys(entry_ids) if e]
        wanted = [i for i in wanted if docs.is_valid_id(i)]
        if not wanted:
            return 0
        pk = [key.instance_id, key.upn]
        deleted = 0
        for start in range(0, len(wanted), _IDS_PER_QUERY):
            # One store operation (its own time budget) per 500 ids: one query and at most 6 batches, however
            # many entries are erased. One budget for them all answered 503 past a size (a clear of 15,600
            # entries on the test server: 32 queries and 160 batches, cut at 20 s), and so did each replay of
            # the clear by the sweep, each getting only as far as the budget took it.
            with self._operation("delete_entries") as calls:
                # Only ids still there go into a batch: a batch with a missing id
                # fails as a whole, so this keeps the usual case at one batch per 98.
                params = {
                    "@instance_id": key.instance_id, "@upn": key.upn, "@profile_id": key.profile_id,
                    "@entry": docs.ENTRY, "@ids": wanted[start:start + _IDS_PER_QUERY],
                }
                existing = calls.query(queries.EXISTING_ENTRY_IDS, params, pk)
                for at in range(0, len(existing), _DELETES_PER_BATCH):
                    deleted += erase_items(calls, self._stamps, key.instance_id, key.upn,
                                           existing[at:at + _DELETES_PER_BATCH], entries_of=key)
        return deleted

    def _refuse_under_floor(self, calls: Calls, copy: MemoryEntry, source: ProfileKey, stamp: StoredStamp) -> None:
        """``EntryBeforeClear`` when ``stamp``'s seal floor covers ``copy`` and so does its source profile's own
        ``cleared_on``, read now (one point read, only when the floor alone covers the copy; a source profile gone,
        erased by a purge, refuses it as the floor says). The floor folds other authors' seals: it may cover a copy
        no clear of its author sealed, which is stored, as SQLite stores it.

        Exact with the batch If-Match ``stamp``: a clear seals only after its source profile stored its watermark.
        A seal in ``stamp`` (folded since) was preceded by that save, so the read sees it; a clear whose seal is
        not in ``stamp`` either moves the stamp before the batch commits (412: read, checked again) or seals after
        it, and then reads which copies to erase and finds this one (``domain.erasures``, ``custody_sweep``)."""
        floor = stamp.floor
        if floor is None or copy.created_on > floor:
            return
        found = self._read_profile(calls, source)
        _refuse_covered(copy, floor if found is None else found.cleared_on)

    def _read_profile(self, calls: Calls, key: ProfileKey) -> MemoryProfile | None:
        """The stored profile of ``key`` (one point read), remembered; None when there is none."""
        item = calls.read(key.profile_id, [key.instance_id, key.upn])
        if item is None:
            return None
        stored = docs.profile_from_item(key, item)
        self._profiles.put(stored)
        return stored


def erase_items(
    calls: Calls, stamps: Stamps, instance_id: str, owner: str, item_ids: Sequence[str],
    entries_of: ProfileKey | None = None,
) -> int:
    """Erase up to ``CALLER_OPERATIONS`` items of one partition and move its stamp in one batch; the
    count erased. Shared with ``cosmos_records`` (a hold's erasure). Entries of ``entries_of`` are logged in the
    stamp as erased (``Stamps.write``'s ``erased``) in the same batch.

    An item already gone fails the whole batch (404): the ids still there (entries
    of ``entries_of`` by query, else by point read) are erased in a new batch.
    """
    left = list(item_ids)
    while left:
        # Entries erased are logged in the stamp the batch moves (their domain ids); a hold's record is not an entry.
        erased = [i[len(docs.ENTRY_ID_PREFIX):] for i in left] if entries_of is not None else []
        try:
            stamps.write(calls, instance_id, owner, functools.partial(_deletes, left), erased=erased)
            return len(left)
        except BatchRefused as refused:
            if refused.status != 404:
                raise refused.error from None
        if entries_of is None:
            left = [i for i in left if calls.read(i, [instance_id, owner]) is not None]
        else:
            params = {"@instance_id": instance_id, "@upn": owner, "@profile_id": entries_of.profile_id,
                      "@entry": docs.ENTRY, "@ids": left}
            left = calls.query(queries.EXISTING_ENTRY_IDS, params, [instance_id, owner])
    return 0


def _clear_of(profile: MemoryProfile) -> tuple[str, datetime] | None:
    """What the stamp carries of ``profile``'s watermark (``Stamps.write``'s ``clear``)."""
    return (profile.key.profile_id, profile.cleared_on) if profile.cleared_on is not None else None


def _refuse_covered(entry: MemoryEntry, *watermarks: datetime | None) -> None:
    """``EntryBeforeClear`` when a watermark of the entry's profile covers it (``MemoryStore.append``)."""
    cleared = max((w for w in watermarks if w is not None), default=None)
    if cleared is not None and entry.created_on <= cleared:
        raise EntryBeforeClear(cleared)


def _only(operation: Operation, _first_sequence: int) -> list[Operation]:
    return [operation]


def _deletes(item_ids: Sequence[str], _first_sequence: int) -> list[Operation]:
    return [("delete", (i,)) for i in item_ids]


__all__ = ["CosmosWrites", "erase_items"]
