"""The Cosmos store's reads of memory: profiles, entries and holds, stamps and checkpoints.

``CosmosReads`` answers the read half of the ``MemoryStore`` Protocol (records aside:
``cosmos_records``), ``ChangeStamps``' stamp reads (``domain.snapshots``) and ``ReadCheckpoints``
(``domain.checkpoints``) for ``CosmosMemoryStore``, which delegates to it; the loads of a read kept
between calls (``load_since``, ``load_present``, ``load_erased``) are ``cosmos_kept_reads``'s. Every
call is one store operation (``cosmos_account``: its time budget and error translation) inside one
logical partition. Round trips are the cost, so:

- ``load`` and ``load_heads`` are one query each (one page up to 4 MB of items); holds and the
  partition's stamp ride along (the stamp is remembered for the next write's If-Match), and
  ``load_stamped_heads`` answers it with the heads: a budgeted read built with nothing kept reads no stamp first;
- ``partition_stamp`` and ``entry_sequence`` are one point read of the stamp item (about 1 RU while
  it stays under 1 KB: ``cosmos_stamp_item``), so a service read whose snapshot is current costs one point read;
  ``entry_sequence`` costs none inside a read whose ``partition_stamp`` read the stamp already;
- ``newest_entries``, ``oldest_entries``, ``count_entries``, ``entry_facts`` and ``partition_facts`` are one
  query each (two for ``oldest_entries`` when its page ends among entries of one timestamp); ``get_entry`` is a
  point read;
- a large read leaves a checkpoint (``ReadCheckpoints``, kept by ``cosmos_checkpoints``), so
  another process's first read of it is a point read and a query for what was added since.

The states a load answers (``scope_states``, this module's loads' and ``cosmos_kept_reads``') also
refresh the process's profile cache (``cosmos_calls.ProfileCache``), which lets the next append skip
its profile read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memory_core.adapters import cosmos_documents as docs
from memory_core.adapters import cosmos_queries as queries
from memory_core.adapters.cosmos_calls import OpenOperation, ProfileCache
from memory_core.adapters.cosmos_checkpoints import CosmosCheckpoints
from memory_core.adapters.cosmos_stamp_item import STAMP, UNKNOWN, StoredStamp
from memory_core.adapters.cosmos_stamps import Stamps
from memory_core.domain.checkpoints import StoredCheckpoint
from memory_core.domain.models import EntryKind, Hold, MemoryEntry, MemoryProfile, ProfileKey, Scope, ScopeState
from memory_core.domain.records import RecordKind
from memory_core.domain.snapshots import PartitionStamp, StampedLoad
from memory_core.domain.store import EntryCount, EntryFacts, EntryWindow, PageCursor, ScopeFacts


class CosmosReads:
    """The reads of ``CosmosMemoryStore`` (records aside). Thread-safe: what it keeps is the stamps'
    and the profile cache's, each locked."""

    def __init__(self, operation: OpenOperation, stamps: Stamps, checkpoints: CosmosCheckpoints,
                 profiles: ProfileCache) -> None:
        """``operation``: opens one named store operation (``CosmosAccount.operation``)."""
        self._operation = operation
        self._stamps = stamps
        self._checkpoints = checkpoints
        self._profiles = profiles

    # -- MemoryStore: reads ---------------------------------------------------

    def load(self, keys: Sequence[ProfileKey]) -> list[ScopeState]:
        if not keys:
            return []
        instance_id, upn = keys[0].instance_id, keys[0].upn
        if any(k.instance_id != instance_id or k.upn != upn for k in keys):
            raise ValueError("load takes keys of one (instance_id, upn) partition")
        params = {
            "@instance_id": instance_id,
            "@upn": upn,
            "@profile_ids": list(dict.fromkeys(k.profile_id for k in keys)),
            "@hold": RecordKind.HOLD,
            "@stamp": STAMP,
        }
        with self._operation("load") as calls:
            items = calls.query(queries.LOAD, params, [instance_id, upn])
        self._stamps.notice(items)
        return scope_states(keys, items, self._profiles)

    def load_partition(self, instance_id: str, upn: str) -> list[ScopeState]:
        params = {
            "@instance_id": instance_id, "@upn": upn,
            "@profile": docs.PROFILE, "@entry": docs.ENTRY, "@hold": RecordKind.HOLD,
        }
        with self._operation("load_partition") as calls:
            items = calls.query(queries.LOAD_PARTITION, params, [instance_id, upn])
        return self._partition_states(items)

    def load_partition_within(self, instance_id: str, upn: str, at_most: int) -> list[ScopeState] | None:
        top = max(0, at_most) + 1
        params = {
            "@instance_id": instance_id, "@upn": upn, "@top": top,
            "@profile": docs.PROFILE, "@entry": docs.ENTRY, "@hold": RecordKind.HOLD,
        }
        with self._operation("load_partition_within") as calls:
            items = calls.query(queries.LOAD_PARTITION_TOP, params, [instance_id, upn])
        # TOP filled: more may follow, and part of a partition must never pass for all of it.
        return None if len(items) >= top else self._partition_states(items)

    def _partition_states(self, items: list[dict[str, Any]]) -> list[ScopeState]:
        """Every profile of a partition's items (profiles, entries, holds), with its entries, in key order."""
        keys = {docs.key_of_item(i) for i in items if i.get("type") in (docs.PROFILE, docs.ENTRY)}
        return scope_states(sorted(keys, key=lambda k: k.profile_id), items, self._profiles) if keys else []

    def partition_facts(self, instance_id: str, upn: str) -> list[ScopeFacts]:
        """One single-partition query projecting the key's fields and the facts' (no text crosses the wire), its
        scopes as ``load_partition`` finds them (a profile, or an entry's key), each scope's facts sorted here."""
        params = {"@instance_id": instance_id, "@upn": upn, "@profile": docs.PROFILE, "@entry": docs.ENTRY}
        with self._operation("partition_facts") as calls:
            items = calls.query(queries.PARTITION_FACTS, params, [instance_id, upn])
        scopes: dict[str, tuple[ProfileKey, list[EntryFacts]]] = {}
        for item in items:
            key = ProfileKey(instance_id, upn, Scope(item["scope"]), item.get("agent_object_id"))
            facts = scopes.setdefault(key.profile_id, (key, []))[1]
            if item.get("type") == docs.ENTRY:
                facts.append(docs.facts_from_item(item))
        return [ScopeFacts(key, tuple(sorted(facts, key=lambda f: (f.created_on, f.id))))
                for _, (key, facts) in sorted(scopes.items())]

    def partition_keys(
        self, instance_id: str, upn: str, *, prefix: str = "", after: str | None = None, limit: int | None = None
    ) -> list[ProfileKey]:
        params: dict[str, Any] = {"@instance_id": instance_id, "@upn": upn, "@profile": docs.PROFILE}
        if limit is not None:
            if limit <= 0:
                return []
            params.update({"@top": limit, "@prefix": prefix, "@after": max(after or "", prefix)})
            with self._operation("partition_keys") as calls:
                items = calls.query(queries.PARTITION_KEYS_PAGE, params, [instance_id, upn])
            return [docs.key_of_item(i) for i in items]
        with self._operation("partition_keys") as calls:
            items = calls.query(queries.PARTITION_KEYS, params, [instance_id, upn])
        keys = sorted((docs.key_of_item(i) for i in items), key=lambda k: k.profile_id)
        return [k for k in keys if k.profile_id.startswith(prefix) and k.profile_id > (after or "")]

    def load_heads(self, keys: Sequence[ProfileKey]) -> list[ScopeState]:
        return scope_states(keys, self._heads(keys, "load_heads"), self._profiles) if keys else []

    def load_stamped_heads(self, keys: Sequence[ProfileKey]) -> StampedLoad:
        """``load_heads``'s one query, with the stamp item it returns (the same query's view of the partition):
        no point read of the stamp. A partition without one reads as ``UNKNOWN`` and sequence 0, as
        ``partition_stamp`` and ``entry_sequence`` read it."""
        items = self._heads(keys, "load_stamped_heads")
        found = next((StoredStamp.from_item(i) for i in items if i.get("type") == STAMP), None)
        states = scope_states(keys, items, self._profiles)
        if found is None:
            return StampedLoad(UNKNOWN, 0, states)
        return StampedLoad(found.stamp, found.sequence, states, found.erasures)

    def _heads(self, keys: Sequence[ProfileKey], name: str) -> list[dict[str, Any]]:
        """The profiles of ``keys``, the partition's holds and its stamp item (remembered for the next write)."""
        instance_id, upn = keys[0].instance_id, keys[0].upn
        if any(k.instance_id != instance_id or k.upn != upn for k in keys):
            raise ValueError(f"{name} takes keys of one (instance_id, upn) partition")
        params = {
            "@instance_id": instance_id, "@upn": upn, "@profile": docs.PROFILE,
            "@profile_ids": list(dict.fromkeys(k.profile_id for k in keys)), "@hold": RecordKind.HOLD,
            "@stamp": STAMP,
        }
        with self._operation(name) as calls:
            items = calls.query(queries.LOAD_HEADS, params, [instance_id, upn])
        self._stamps.notice(items)
        return items

    def newest_entries(
        self, window: EntryWindow, limit: int, *, cursor: PageCursor | None = None, kind: EntryKind | None = None
    ) -> list[MemoryEntry]:
        if limit <= 0:
            return []
        where, params = queries.window_filter(window)
        if kind is not None:
            where += " AND c.kind = @kind"
            params["@kind"] = kind.value
        if cursor is not None:
            where += (" AND (c.created_on < @cursor_at OR (c.created_on = @cursor_at"
                      " AND NOT ARRAY_CONTAINS(@cursor_seen, c.id)))")
            params["@cursor_at"] = docs.iso(cursor.created_on)
            params["@cursor_seen"] = sorted(docs.entry_item_id(i) for i in cursor.seen_ids)
        # One field in ORDER BY: the container's range index serves it (no composite
        # index needed); equal timestamps are kept apart by the cursor's seen ids.
        sql = f"SELECT TOP {int(limit)} * FROM c WHERE {where} ORDER BY c.created_on DESC"
        with self._operation("newest_entries") as calls:
            items = calls.query(sql, params, [window.key.instance_id, window.key.upn])
        entries = [docs.entry_from_item(window.key, i) for i in items]
        entries.sort(key=lambda e: e.sort_key, reverse=True)
        return entries

    def oldest_entries(
        self, window: EntryWindow, limit: int, *, after: tuple[datetime, str] | None = None
    ) -> list[MemoryEntry]:
        """One query ordered on ``created_on`` alone (its range index serves it; no composite
        index), asking one entry more than ``limit``: when that one shares the page's last
        timestamp, ``TOP`` may have cut among entries of equal time in any order, so a second
        query reads every entry of that time and the page is cut in id order."""
        if limit <= 0:
            return []
        pk = [window.key.instance_id, window.key.upn]
        where, params = queries.oldest_filter(window, after)
        with self._operation("oldest_entries") as calls:
            items = calls.query(f"SELECT TOP {int(limit) + 1} * FROM c WHERE {where} ORDER BY c.created_on ASC",
                                params, pk)
            entries = sorted((docs.entry_from_item(window.key, i) for i in items), key=lambda e: e.sort_key)
            if len(entries) > limit and entries[limit].created_on == entries[limit - 1].created_on:
                tie_where, tie_params = queries.oldest_filter(window, after, entries[limit].created_on)
                ties = calls.query(f"SELECT * FROM c WHERE {tie_where}", tie_params, pk)
                earlier = [e for e in entries if e.created_on < entries[limit].created_on]
                entries = earlier + sorted((docs.entry_from_item(window.key, i) for i in ties), key=lambda e: e.sort_key)
        return entries[:limit]

    def count_entries(self, window: EntryWindow) -> EntryCount:
        where, params = queries.window_filter(window)
        sql = f"SELECT COUNT(1) AS n, MIN(c.created_on) AS oldest FROM c WHERE {where}"
        with self._operation("count_entries") as calls:
            rows = calls.query(sql, params, [window.key.instance_id, window.key.upn])
        row = rows[0] if rows else {}
        return EntryCount(int(row.get("n") or 0), docs.parse_time(row.get("oldest")))

    def entry_facts(self, window: EntryWindow) -> list[EntryFacts]:
        """One single-partition query projecting four fields (no text crosses the wire), ordered here: an
        ``ORDER BY`` would add nothing the caller needs to the query's cost."""
        where, params = queries.window_filter(window)
        with self._operation("entry_facts") as calls:
            items = calls.query(f"SELECT {docs.FACT_FIELDS} FROM c WHERE {where}", params,
                                [window.key.instance_id, window.key.upn])
        return sorted((docs.facts_from_item(i) for i in items), key=lambda f: (f.created_on, f.id))

    def get_entry(self, instance_id: str, upn: str, entry_id: str) -> MemoryEntry | None:
        item_id = docs.entry_item_id(entry_id)
        if not entry_id or not docs.is_valid_id(item_id):
            return None  # no stored entry can have this id
        with self._operation("get_entry") as calls:
            item = calls.read(item_id, [instance_id, upn])
        if item is None or item.get("type") != docs.ENTRY:
            return None
        return docs.entry_from_item(docs.key_of_item(item), item)

    def partition_owners(self, instance_id: str, limit: int, *, after: str | None = None) -> list[str]:
        owners: list[str] = []
        position = after or ""
        top = max(limit, 1) * 4
        with self._operation("partition_owners") as calls:
            while len(owners) < limit:
                params = {"@instance_id": instance_id, "@profile": docs.PROFILE, "@after": position, "@top": top}
                rows = calls.query(queries.PARTITION_OWNERS, params, None)
                owners.extend(dict.fromkeys(rows))  # each query starts after the last owner the one before read
                if len(rows) < top:
                    break
                position = rows[-1]
        return owners[:max(0, limit)]

    # -- ChangeStamps (domain.snapshots), kept by cosmos_stamps ----------------

    def partition_stamp(self, instance_id: str, upn: str) -> PartitionStamp:
        """The partition's stamp: one point read of a small item (about 1 RU)."""
        with self._operation("partition_stamp") as calls:
            stored = self._stamps.check(calls, instance_id, upn)
        return stored.stamp if stored is not None else UNKNOWN

    def entry_sequence(self, instance_id: str, upn: str) -> int:
        """The sequence the partition's stamp last handed out: one point read (about 1 RU); 0 without a stamp.

        Inside a read whose ``partition_stamp`` already read the stamp (``Stamps.one_read``), that stamp's
        sequence, with no round trip: read earlier in the same read, it is at most the sequence now, so
        every entry stored after it still has a higher one (a budgeted read built right after its stamp
        check). The stamp stays lent to the read's next load."""
        checked = self._stamps.checked_in_read(instance_id, upn)
        if checked is not None:
            return checked.sequence
        with self._operation("entry_sequence") as calls:
            stored = self._stamps.read(calls, instance_id, upn)
        return stored.sequence if stored is not None else 0

    # -- ReadCheckpoints (domain.checkpoints), kept by cosmos_checkpoints ----------

    def read_checkpoint(self, instance_id: str, upn: str, read_key: str) -> StoredCheckpoint | None:
        """The checkpoint kept for ``read_key``: one point read of the partition's checkpoint item."""
        with self._operation("read_checkpoint") as calls:
            return self._checkpoints.read(calls, instance_id, upn, read_key)

    def keep_checkpoint(self, instance_id: str, upn: str, read_key: str, checkpoint: StoredCheckpoint) -> bool:
        """Stored with the stamp's If-Match in one batch (False when the stamp moved, the partition has
        none, or the checkpoint would not fit in an item); a point read of the item first when the
        partition has one. Raises ``Unavailable`` when the account cannot be reached."""
        with self._operation("keep_checkpoint") as calls:
            return self._checkpoints.keep(calls, instance_id, upn, read_key, checkpoint)


def scope_states(
    keys: Sequence[ProfileKey], items: Sequence[Mapping[str, Any]], cache: ProfileCache
) -> list[ScopeState]:
    """The state of each of ``keys`` (in their order) from a load's items: its profile (None: none stored), its
    entries in order, and every hold among ``items``. Refreshes ``cache`` with what it found (a profile missing is
    forgotten), so the next append may skip its profile read: the states every load answers (``CosmosReads``'s and
    ``cosmos_kept_reads``')."""
    by_id = {k.profile_id: k for k in keys}
    profiles: dict[str, MemoryProfile] = {}
    entries: dict[str, list[MemoryEntry]] = {pid: [] for pid in by_id}
    hold_items = []
    for item in items:
        kind = item.get("type")
        if kind == docs.RECORD:
            hold_items.append(item)
            continue
        key = by_id.get(item.get("profile_id", ""))
        if key is None:
            continue
        if kind == docs.ENTRY:
            entries[key.profile_id].append(docs.entry_from_item(key, item))
        elif kind == docs.PROFILE:
            profiles[key.profile_id] = docs.profile_from_item(key, item)
    hold_items.sort(key=lambda i: i["record_id"])
    holds = tuple(Hold.from_data(i.get("data") or {}) for i in hold_items)
    states = []
    for key in keys:
        found = entries[key.profile_id]
        found.sort(key=lambda e: e.sort_key)
        profile = profiles.get(key.profile_id)
        if profile is None:
            cache.discard(key)
        else:
            cache.put(profile)
        states.append(ScopeState(key, profile, found, holds))
    return states


__all__ = ["CosmosReads", "scope_states"]
