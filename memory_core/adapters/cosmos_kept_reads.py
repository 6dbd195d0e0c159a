"""The Cosmos store's kept reads: a read a process keeps, loaded and then brought up to date.

``CosmosKeptReads`` answers ``ChangeStamps``' loads for a read kept between calls (``domain.snapshots``'
``load_since``, ``domain.present_entries``' ``load_present`` and ``domain.erased_entries``' ``load_erased``) for
``CosmosMemoryStore``, which delegates to it; the other reads are ``cosmos_reads``'s, and both answer their
states alike (``cosmos_reads.scope_states``). Every call is one store operation (``cosmos_account``) inside one
logical partition, and each starts from the partition's stamp: a point read, or the one ``partition_stamp`` read
earlier in the same service read (``Stamps.one_read``). Round trips are the cost, so:

- ``load_since`` is the stamp then one query for profiles, holds, entries (all, or those after a sequence) and the
  stamp again;
- ``load_present`` (after an erasure the stamp's log no longer reaches back to) is the stamp then one query for
  profiles, holds, the stamp, the entries after a sequence whole and the others' ids, plus a query for each 500
  entries listed but not known;
- ``load_erased`` (after an erasure) is ``load_since``'s, after a sequence: the stamp logs the ids erased
  (``StoredStamp.erased_since``), so no row per entry still stored is read.

Each runs again when its query shows another writer's hold or erasure since the stamp it read, and raises
``Unavailable`` after ``_LOAD_ATTEMPTS`` in a row.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from memory_core.adapters import cosmos_documents as docs
from memory_core.adapters import cosmos_queries as queries
from memory_core.adapters.cosmos_calls import Calls, OpenOperation, ProfileCache
from memory_core.adapters.cosmos_reads import scope_states
from memory_core.adapters.cosmos_stamp_item import STAMP, StoredStamp
from memory_core.adapters.cosmos_stamps import Stamps
from memory_core.domain.erased_entries import ErasedLoad
from memory_core.domain.errors import Unavailable
from memory_core.domain.models import ProfileKey
from memory_core.domain.present_entries import PresentLoad
from memory_core.domain.records import RecordKind
from memory_core.domain.snapshots import StampedLoad

_LOAD_ATTEMPTS = 3  # loads in a row that other writers' holds or erasures may overtake (load_since)
_IDS_PER_QUERY = 500  # ids per ARRAY_CONTAINS parameter, well under the query size limit


class CosmosKeptReads:
    """The kept reads' loads of ``CosmosMemoryStore``. Thread-safe: what it keeps is the stamps' and the profile
    cache's, each locked."""

    def __init__(self, operation: OpenOperation, stamps: Stamps, profiles: ProfileCache) -> None:
        """``operation``: opens one named store operation (``CosmosAccount.operation``)."""
        self._operation = operation
        self._stamps = stamps
        self._profiles = profiles

    # -- ChangeStamps (domain.snapshots), PresentEntries and ErasedEntries ----------

    def load_since(self, keys: Sequence[ProfileKey], after: int | None) -> StampedLoad:
        """The stamp (point read, created when missing; or the one ``partition_stamp`` read earlier in
        this very service read, ``Stamps.one_read``), then one query for profiles, holds, entries (all, or those after
        sequence ``after``) and the stamp item again; entries past the stamp's sequence are left
        for the next read, so what is loaded is at least everything the stamp counts.

        Leaving entries out is exact only while nothing but entries was added since the stamp:
        a hold or a replace's purge written in between would show applied to the older entries
        while the newer ones are left out, a memory that never was (an import replace under
        approval would read as empty). So when the stamp the query returns shows any other write
        since, the stamp is read again and the query run again. Raises ``Unavailable`` when
        other writers keep doing so ``_LOAD_ATTEMPTS`` times in a row.
        """
        instance_id, upn = _partition_of(keys, "load_since")
        params: dict[str, Any] = {
            "@instance_id": instance_id, "@upn": upn, "@hold": RecordKind.HOLD, "@stamp": STAMP,
        }
        if after is None:
            sql = queries.LOAD
            params["@profile_ids"] = list(dict.fromkeys(k.profile_id for k in keys))
        else:
            sql = queries.LOAD_AFTER
            params.update({"@profile": docs.PROFILE, "@after": after})
        with self._operation("load_since") as calls:
            read = self._settled(calls, instance_id, upn, sql, params)
        assert read is not None  # no stamp is refused without ``usable``
        stored, items = read
        items = [i for i in items if i.get("type") != docs.ENTRY or docs.sequence_of(i) <= stored.sequence]
        states = scope_states(keys, items, self._profiles)
        return StampedLoad(stored.stamp, stored.sequence, states, stored.erasures)

    def load_present(self, keys: Sequence[ProfileKey], known: Collection[str], after: int) -> PresentLoad:
        """``PresentEntries``: the stamp (as ``load_since`` takes it), then one query for profiles, holds,
        the stamp again, the entries stored after sequence ``after`` whole and the others as their
        ids and sequences only. Entries past the stamp's sequence are left for the next read, as
        ``load_since`` leaves them. An entry listed but not known (which a read labelled ``after``
        with ``known`` never leaves) is read whole by id, 500 a query.

        As ``load_since``, when the stamp the query returns shows a write since the stamp other than
        entries added, or an entry it lists is gone when it is read, another writer erased during
        the read: it reads again, and raises ``Unavailable`` after ``_LOAD_ATTEMPTS`` in a row.
        """
        instance_id, upn = _partition_of(keys, "load_present")
        pk = [instance_id, upn]
        params: dict[str, Any] = {
            "@instance_id": instance_id, "@upn": upn, "@hold": RecordKind.HOLD, "@stamp": STAMP,
            "@entry": docs.ENTRY, "@profile_ids": list(dict.fromkeys(k.profile_id for k in keys)), "@after": after,
        }
        prefix = len(docs.ENTRY_ID_PREFIX)
        with self._operation("load_present") as calls:
            for _ in range(_LOAD_ATTEMPTS):
                stored = self._stamps.current(calls, instance_id, upn)
                items = calls.query(queries.LOAD_PRESENT, params, pk)
                seen = next((StoredStamp.from_item(i) for i in items if i.get("type") == STAMP), None)
                if seen is not None and not seen.stamp.only_added_since(stored.stamp):
                    continue
                listed = [i for i in items if i.get("type") == docs.ENTRY and docs.sequence_of(i) <= stored.sequence]
                new = [i for i in listed if str(i["id"])[prefix:] not in known]
                whole = [i for i in new if "content_markdown" in i]
                unread = [str(i["id"]) for i in new if "content_markdown" not in i]
                for start in range(0, len(unread), _IDS_PER_QUERY):
                    whole += calls.query(queries.ENTRIES_BY_ID,
                                         {"@instance_id": instance_id, "@upn": upn, "@entry": docs.ENTRY,
                                          "@ids": unread[start:start + _IDS_PER_QUERY]}, pk)
                if len(whole) == len(new):
                    break  # entries never change: each one listed and read is as the query saw it
            else:
                raise Unavailable("this memory is being changed by other writers while it is read; retry",
                                  retry_after_seconds=1)
        present = frozenset(str(i["id"])[prefix:] for i in listed)
        heads = [i for i in items if i.get("type") != docs.ENTRY]
        states = scope_states(keys, [*heads, *whole], self._profiles)
        return PresentLoad(StampedLoad(stored.stamp, stored.sequence, states, stored.erasures), present)

    def load_erased(
        self, keys: Sequence[ProfileKey], known: Collection[str], mark: int, after: int
    ) -> ErasedLoad | None:
        """``ErasedEntries``: the stamp (as ``load_since`` takes it), whose log names the entries erased since
        ``mark`` (``StoredStamp.erased_since``; None when it no longer reaches back), then ``load_since``'s one
        query for profiles, holds, the stamp again and the entries stored after sequence ``after``: no row per
        entry still stored. Retried as ``load_since`` when the query shows another write than entries added since
        the stamp (an erasure the stamp read did not log yet)."""
        instance_id, upn = _partition_of(keys, "load_erased")
        params: dict[str, Any] = {"@instance_id": instance_id, "@upn": upn, "@hold": RecordKind.HOLD,
                                  "@stamp": STAMP, "@profile": docs.PROFILE, "@after": after}
        with self._operation("load_erased") as calls:
            read = self._settled(calls, instance_id, upn, queries.LOAD_AFTER, params,
                                 usable=lambda stored: stored.erased_since(mark) is not None)
        if read is None:
            return None
        stored, items = read
        erased = stored.erased_since(mark)
        assert erased is not None  # ``usable`` above
        prefix = len(docs.ENTRY_ID_PREFIX)
        items = [i for i in items if i.get("type") != docs.ENTRY
                 or (docs.sequence_of(i) <= stored.sequence and str(i["id"])[prefix:] not in known)]
        states = scope_states(keys, items, self._profiles)
        return ErasedLoad(StampedLoad(stored.stamp, stored.sequence, states, stored.erasures), erased)

    def _settled(
        self, calls: Calls, instance_id: str, upn: str, sql: str, params: dict[str, Any],
        usable: Callable[[StoredStamp], bool] | None = None,
    ) -> tuple[StoredStamp, list[dict[str, Any]]] | None:
        """The stamp, then ``sql``'s items (which hold the stamp item again): run again while those show another
        write than entries added since the stamp read, ``Unavailable`` after ``_LOAD_ATTEMPTS`` in a row. None
        when ``usable`` refuses the stamp read (nothing is queried then). The first attempt may take this read's
        check of the stamp (``Stamps.one_read``); a retry reads it anew."""
        for _ in range(_LOAD_ATTEMPTS):
            stored = self._stamps.current(calls, instance_id, upn)
            if usable is not None and not usable(stored):
                return None
            items = calls.query(sql, params, [instance_id, upn])
            seen = next((StoredStamp.from_item(i) for i in items if i.get("type") == STAMP), None)
            if seen is None or seen.stamp.only_added_since(stored.stamp):
                return stored, items
        raise Unavailable("this memory is being changed by other writers while it is read; retry",
                          retry_after_seconds=1)


def _partition_of(keys: Sequence[ProfileKey], operation: str) -> tuple[str, str]:
    """The one ``(instance_id, upn)`` partition of ``keys``; ``ValueError`` when there is none or several."""
    if not keys:
        raise ValueError(f"{operation} takes at least one key")
    instance_id, upn = keys[0].instance_id, keys[0].upn
    if any(k.instance_id != instance_id or k.upn != upn for k in keys):
        raise ValueError(f"{operation} takes keys of one (instance_id, upn) partition")
    return instance_id, upn


__all__ = ["CosmosKeptReads"]
