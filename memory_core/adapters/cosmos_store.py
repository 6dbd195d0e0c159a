"""CosmosMemoryStore: the ``MemoryStore`` Protocol on Azure Cosmos DB for NoSQL.

One container (``COSMOS_CONTAINER`` in ``COSMOS_DATABASE``) with the
hierarchical partition key ``/instance_id`` then ``/upn`` (MultiHash, version
2) holds profiles, entries and records; item layout in
``memory_core.adapters.cosmos_documents``. Every request names the full
partition key and every query also filters on both key fields in its WHERE
clause, so each operation stays inside one logical partition.

Round trips are the cost, so:

- ``load`` is one query (one page up to 4 MB of items); holds and the
  partition's stamp ride along;
- the store stamps each partition (``ChangeStamps``, kept by
  ``memory_core.adapters.cosmos_stamps``): every write that can change a read
  (entries, profiles, holds) is one transactional batch that also moves the
  stamp, so a service read whose snapshot is current costs one point read;
- ``append`` is one batch once the profile and the stamp are known to this
  process (in-process caches); the first append of a profile in a process
  reads it first (and creates it in the batch when missing);
- ``save_profile`` and ``put_record`` with an etag replace with If-Match, and
  a 412 becomes ``Conflict`` for the service to re-read and retry;
- ``delete_entries`` is one query for the ids still there plus one
  transactional batch per 98 deletes;
- a large read leaves a checkpoint (``ReadCheckpoints``, kept by
  ``memory_core.adapters.cosmos_checkpoints``), so another process's first
  read of it is a point read and a query for what was added since.

The app never creates the database or the container (infra does: data-plane
RBAC cannot). On first use the container's partition key is checked; when the
container is missing or keyed differently every call answers ``Unavailable``
with code ``store_not_provisioned`` and a message naming the account,
database, container, the expected key and the command that creates it.

Failures: throttling (429) and transient faults are retried by the SDK's own
retry policy; what is still failing afterwards, and an account that cannot be
reached, becomes ``Unavailable`` (HTTP 503 with Retry-After). A credential the
account refuses (401/403, or no token) is ``Unavailable`` with code
``store_access_denied``; an item too large is ``PayloadTooLarge``. Any other
Cosmos error is a bug or a broken invariant and propagates to the generic
internal-error mapping (HTTP 500 with an incident id).

One ``CosmosClient`` per store, made on first use and reused
(``memory_core.adapters.cosmos_account``: the container check, the time budget
and the error translation of every operation; ``cosmos_queries``: the SQL); the
composition root builds one store per process. Every HTTP call's request charge is logged
at DEBUG on ``memory_core.adapters.cosmos``; ``measure()`` gives the round
trips and RU of a block of calls (the benchmark uses it).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from azure.cosmos import SSLConfiguration
from azure.cosmos.exceptions import CosmosResourceExistsError

from memory_core.adapters import cosmos_documents as docs
from memory_core.adapters import cosmos_queries as queries
from memory_core.adapters.cosmos_account import EXPECTED_PARTITION_KEY, PROVISION_COMMAND, CosmosAccount
from memory_core.adapters.cosmos_calls import CallMetrics, Calls, Meter, ProfileCache
from memory_core.adapters.cosmos_checkpoints import CosmosCheckpoints
from memory_core.adapters.cosmos_stamps import (
    CALLER_OPERATIONS,
    STAMP,
    UNKNOWN,
    BatchRefused,
    Operation,
    Stamps,
    StoredStamp,
)
from memory_core.domain.checkpoints import StoredCheckpoint
from memory_core.domain.errors import Conflict, Unavailable
from memory_core.domain.models import EntryKind, Hold, MemoryEntry, MemoryProfile, ProfileKey, ScopeState
from memory_core.domain.records import Partition, Record, RecordKind
from memory_core.domain.snapshots import PartitionStamp, StampedLoad
from memory_core.domain.store import EntryCount, EntryWindow, PageCursor

if TYPE_CHECKING:
    from memory_core.settings import Settings

_LOAD_ATTEMPTS = 3  # loads in a row that other writers' holds or erasures may overtake (load_since)
_DELETES_PER_BATCH = CALLER_OPERATIONS  # 100 a batch (a Cosmos DB limit), less the stamp and the checkpoint
_IDS_PER_QUERY = 500  # ids per ARRAY_CONTAINS parameter, well under the query size limit
_PROFILE_CACHE_SIZE = 4096
_WRITE_ATTEMPTS = 3

# -- the store ----------------------------------------------------------------


class CosmosMemoryStore:
    """The ``MemoryStore`` Protocol on one Cosmos DB container."""

    def __init__(
        self,
        endpoint: str,
        credential: Any,
        database: str,
        container: str,
        *,
        client_kwargs: Mapping[str, Any] | None = None,
        operation_timeout: float = 20.0,
        profile_cache_size: int = _PROFILE_CACHE_SIZE,
    ) -> None:
        """No network here: the client is made, and the container checked, on first use."""
        self.endpoint = endpoint
        self.database_name = database
        self.container_name = container
        self._credential = credential
        self._client_kwargs = dict(client_kwargs or {})
        self._meter = Meter()
        self._account = CosmosAccount(endpoint, credential, database, container, client_kwargs=self._client_kwargs,
                                      operation_timeout=operation_timeout, meter=self._meter)
        self._operation = self._account.operation
        self._profiles = ProfileCache(profile_cache_size)
        self._stamps = Stamps()
        self._checkpoints = CosmosCheckpoints(self._stamps)

    @classmethod
    def from_settings(cls, settings: Settings, **client_overrides: Any) -> CosmosMemoryStore:
        """The store for ``settings``: key auth when COSMOS_KEY is set, else DefaultAzureCredential.

        ``client_overrides`` go to ``CosmosClient`` last (tests pass a transport).
        """
        if not settings.cosmos_endpoint:
            raise ValueError("COSMOS_ENDPOINT is required for the Cosmos DB store")
        credential: Any
        if settings.cosmos_key is not None:
            credential = settings.cosmos_key.get_secret_value()
        else:
            from azure.identity import DefaultAzureCredential

            credential = DefaultAzureCredential()
        # Always give an ssl_config: without one the SDK turns verification off for
        # a localhost endpoint. SSLCaCerts=True is the system trust store.
        ssl_config = SSLConfiguration()
        ssl_config.SSLCaCerts = settings.cosmos_ca_bundle or True
        client_kwargs: dict[str, Any] = {
            "ssl_config": ssl_config,
            "connection_timeout": settings.cosmos_connection_timeout,
            "read_timeout": settings.cosmos_read_timeout,
            "user_agent_suffix": "memory-core",
        }
        client_kwargs.update(client_overrides)
        return cls(
            settings.cosmos_endpoint,
            credential,
            settings.cosmos_database,
            settings.cosmos_container,
            client_kwargs=client_kwargs,
            operation_timeout=settings.cosmos_operation_timeout,
        )

    # -- measuring ------------------------------------------------------------

    @contextmanager
    def measure(self) -> Iterator[CallMetrics]:
        """Count the round trips, RU and items read of every Cosmos call this thread makes inside the block."""
        with self._meter.measure() as metrics:
            yield metrics

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
        return self._states(keys, items)

    def load_partition(self, instance_id: str, upn: str) -> list[ScopeState]:
        params = {
            "@instance_id": instance_id, "@upn": upn,
            "@profile": docs.PROFILE, "@entry": docs.ENTRY, "@hold": RecordKind.HOLD,
        }
        with self._operation("load_partition") as calls:
            items = calls.query(queries.LOAD_PARTITION, params, [instance_id, upn])
        keys = {docs.key_of_item(i) for i in items if i.get("type") in (docs.PROFILE, docs.ENTRY)}
        return self._states(sorted(keys, key=lambda k: k.profile_id), items) if keys else []

    def load_heads(self, keys: Sequence[ProfileKey]) -> list[ScopeState]:
        if not keys:
            return []
        instance_id, upn = keys[0].instance_id, keys[0].upn
        if any(k.instance_id != instance_id or k.upn != upn for k in keys):
            raise ValueError("load_heads takes keys of one (instance_id, upn) partition")
        params = {
            "@instance_id": instance_id, "@upn": upn, "@profile": docs.PROFILE,
            "@profile_ids": list(dict.fromkeys(k.profile_id for k in keys)), "@hold": RecordKind.HOLD,
            "@stamp": STAMP,
        }
        with self._operation("load_heads") as calls:
            items = calls.query(queries.LOAD_HEADS, params, [instance_id, upn])
        self._stamps.notice(items)
        return self._states(keys, items)

    # -- ChangeStamps (domain.snapshots), kept by cosmos_stamps ----------------

    def partition_stamp(self, instance_id: str, upn: str) -> PartitionStamp:
        """The partition's stamp: one point read of a small item (about 1 RU)."""
        with self._operation("partition_stamp") as calls:
            stored = self._stamps.check(calls, instance_id, upn)
        return stored.stamp if stored is not None else UNKNOWN

    def entry_sequence(self, instance_id: str, upn: str) -> int:
        """The sequence the partition's stamp last handed out: one point read (about 1 RU); 0 without a stamp."""
        with self._operation("entry_sequence") as calls:
            stored = self._stamps.read(calls, instance_id, upn)
        return stored.sequence if stored is not None else 0

    def load_since(self, keys: Sequence[ProfileKey], after: int | None) -> StampedLoad:
        """The stamp (point read, created when missing; or the one ``partition_stamp`` read just
        before on this thread), then one query for profiles, holds, entries (all, or those after
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
            for _ in range(_LOAD_ATTEMPTS):
                # The first attempt may take this thread's check of the stamp; a retry reads it anew.
                stored = self._stamps.current(calls, instance_id, upn)
                items = calls.query(sql, params, [instance_id, upn])
                seen = next((StoredStamp.from_item(i) for i in items if i.get("type") == STAMP), None)
                if seen is None or seen.stamp.only_added_since(stored.stamp):
                    break
            else:
                raise Unavailable("this memory is being changed by other writers while it is read; retry",
                                  retry_after_seconds=1)
        items = [i for i in items if i.get("type") != docs.ENTRY or docs.sequence_of(i) <= stored.sequence]
        return StampedLoad(stored.stamp, stored.sequence, self._states(keys, items))

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

    def get_entry(self, instance_id: str, upn: str, entry_id: str) -> MemoryEntry | None:
        item_id = docs.entry_item_id(entry_id)
        if not entry_id or not docs.is_valid_id(item_id):
            return None  # no stored entry can have this id
        with self._operation("get_entry") as calls:
            item = calls.read(item_id, [instance_id, upn])
        if item is None or item.get("type") != docs.ENTRY:
            return None
        return docs.entry_from_item(docs.key_of_item(item), item)

    # -- MemoryStore: writes --------------------------------------------------
    # Every write that can change a read goes through ``self._stamps.write``: one
    # transactional batch that also moves the partition's stamp (``cosmos_stamps``).

    def append(self, profile: MemoryProfile, entry: MemoryEntry) -> MemoryProfile:
        return self.append_with_records(profile, entry, ())

    def append_with_records(self, profile: MemoryProfile, entry: MemoryEntry, records: Sequence[Record]) -> MemoryProfile:
        if profile.key != entry.key:
            raise ValueError("append takes an entry of the profile's key")
        key = entry.key
        if any((r.partition.instance_id, r.partition.owner) != (key.instance_id, key.upn) for r in records):
            raise ValueError("append_with_records takes records of the entry's partition")
        docs.entry_item(entry)  # an id Cosmos DB cannot hold fails here, before any request
        extra: list[Operation] = [("upsert", (docs.record_item(r),)) for r in records]
        with self._operation("append_with_records" if records else "append") as calls:
            for _ in range(_WRITE_ATTEMPTS):
                stored = self._profiles.get(key) or self._read_profile(calls, key)
                # A missing profile is created in the same batch: the entry, its audit
                # event, the profile and the stamp commit together or not at all.
                new: list[Operation] = [] if stored is not None else [("create", (docs.profile_item(profile),))]

                def operations(first: int, new: list[Operation] = new) -> list[Operation]:
                    return [*new, ("create", (docs.entry_item(entry, first),)), *extra]

                try:
                    # A profile created is not only an entry added: it erases checkpoints (the domain's promise).
                    results = self._stamps.write(calls, key.instance_id, key.upn, operations, inserts=1,
                                                 erases_checkpoint=bool(new))
                except BatchRefused as refused:
                    if new and refused.index == 0 and refused.status == 409:
                        continue  # a concurrent first append made the profile: read that one
                    if refused.status == 409:
                        raise Conflict(f"a memory entry with id {entry.id} already exists") from refused.error
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
            else ("replace", (item["id"], item), {"if_match_etag": profile.etag})
        )
        with self._operation("save_profile") as calls:
            try:
                (result,) = self._stamps.write(calls, key.instance_id, key.upn, lambda _: [operation])
            except BatchRefused as refused:
                if refused.status in (404, 412):
                    self._profiles.discard(key)
                    raise Conflict("the stored profile changed or went since it was read") from refused.error
                raise refused.error from None
        stored = docs.profile_from_item(key, result["resourceBody"])
        self._profiles.put(stored)
        return stored

    def delete_profile(self, key: ProfileKey) -> None:
        self._profiles.discard(key)
        with self._operation("delete_profile") as calls:
            self._delete_items(calls, key.instance_id, key.upn, [key.profile_id])

    def delete_entries(self, key: ProfileKey, entry_ids: Sequence[str]) -> int:
        wanted = [docs.entry_item_id(e) for e in dict.fromkeys(entry_ids) if e]
        wanted = [i for i in wanted if docs.is_valid_id(i)]
        if not wanted:
            return 0
        pk = [key.instance_id, key.upn]
        deleted = 0
        with self._operation("delete_entries") as calls:
            for start in range(0, len(wanted), _IDS_PER_QUERY):
                # Only ids still there go into a batch: a batch with a missing id
                # fails as a whole, so this keeps the usual case at one batch per 98.
                params = {
                    "@instance_id": key.instance_id, "@upn": key.upn, "@profile_id": key.profile_id,
                    "@entry": docs.ENTRY, "@ids": wanted[start:start + _IDS_PER_QUERY],
                }
                existing = calls.query(queries.EXISTING_ENTRY_IDS, params, pk)
                for at in range(0, len(existing), _DELETES_PER_BATCH):
                    deleted += self._delete_items(calls, key.instance_id, key.upn,
                                                  existing[at:at + _DELETES_PER_BATCH], entries_of=key)
        return deleted

    def _delete_items(
        self, calls: Calls, instance_id: str, owner: str, item_ids: Sequence[str], entries_of: ProfileKey | None = None
    ) -> int:
        """Erase up to 99 items of one partition and move its stamp in one batch; the count erased.

        An item already gone fails the whole batch (404): the ids still there (entries
        of ``entries_of`` by query, else by point read) are erased in a new batch.
        """
        left = list(item_ids)
        while left:
            try:
                self._stamps.write(calls, instance_id, owner, functools.partial(_deletes, left))
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

    def _read_profile(self, calls: Calls, key: ProfileKey) -> MemoryProfile | None:
        """The stored profile of ``key`` (one point read), remembered; None when there is none."""
        item = calls.read(key.profile_id, [key.instance_id, key.upn])
        if item is None:
            return None
        stored = docs.profile_from_item(key, item)
        self._profiles.put(stored)
        return stored

    # -- MemoryStore: records -------------------------------------------------
    # Holds decide what a read shows, so their writes move the stamp; other records do not.

    def put_record(self, record: Record) -> Record:
        item = docs.record_item(record)
        if record.kind != RecordKind.HOLD:
            with self._operation("put_record") as calls:
                body = calls.write(item, record.etag)
            return Record(record.partition, record.kind, record.id, record.data, body.get("_etag"))
        _no_expiry(record)
        operation: Operation = (
            ("upsert", (item,)) if record.etag is None
            else ("replace", (item["id"], item), {"if_match_etag": record.etag})
        )
        partition = record.partition
        with self._operation("put_record") as calls:
            try:
                (result,) = self._stamps.write(calls, partition.instance_id, partition.owner, lambda _: [operation])
            except BatchRefused as refused:
                if refused.status in (404, 412):
                    raise Conflict(f"the stored {record.kind} changed or went since it was read") from refused.error
                raise refused.error from None
        return Record(partition, record.kind, record.id, record.data, result["resourceBody"].get("_etag"))

    def create_record(self, record: Record) -> Record:
        item = docs.record_item(record)
        partition = record.partition
        with self._operation("create_record") as calls:
            try:
                if record.kind != RecordKind.HOLD:
                    body = calls.create(item)
                else:
                    _no_expiry(record)
                    (result,) = self._stamps.write(calls, partition.instance_id, partition.owner,
                                                   lambda _: [("create", (item,))])
                    body = result["resourceBody"]
            except (CosmosResourceExistsError, BatchRefused) as e:
                if isinstance(e, BatchRefused) and e.status != 409:
                    raise e.error from None
                raise Conflict(f"the {record.kind} record already exists") from e
        return Record(partition, record.kind, record.id, record.data, body.get("_etag"))

    def get_record(self, partition: Partition, kind: str, record_id: str) -> Record | None:
        item_id = docs.record_item_id(partition, kind, record_id)
        if not docs.is_valid_id(item_id):
            return None
        with self._operation("get_record") as calls:
            item = calls.read(item_id, [partition.instance_id, partition.owner])
        return docs.record_from_item(partition, item) if item is not None else None

    def query_records(
        self, partition: Partition, kind: str, where: Mapping[str, str] | None = None, limit: int | None = None
    ) -> list[Record]:
        if limit is not None:
            return self.page_records(partition, kind, limit=limit, where=where)
        sql, params = queries.records_query(partition.instance_id, partition.owner, kind, where)
        with self._operation("query_records") as calls:
            items = calls.query(sql, params, [partition.instance_id, partition.owner])
        return sorted((docs.record_from_item(partition, i) for i in items), key=lambda r: r.id)

    def page_records(
        self,
        partition: Partition,
        kind: str,
        *,
        limit: int,
        where: Mapping[str, str] | None = None,
        after: str | None = None,
        descending: bool = False,
    ) -> list[Record]:
        if limit < 1:
            return []
        sql, params = queries.records_query(partition.instance_id, partition.owner, kind, where)
        if after is not None:
            sql += " AND c.id < @after" if descending else " AND c.id > @after"
            params["@after"] = docs.record_item_id(partition, kind, after)
        # TOP and a single-field ORDER BY on c.id, which every indexing policy
        # indexes: the query reads only the items it answers. Within one partition
        # and kind, item ids are one prefix plus the record id, kept as is for the
        # characters paged ids use (letters, digits, - _ . ~ : +), so they sort alike.
        sql = sql.replace("SELECT *", f"SELECT TOP {int(limit)} *", 1)
        sql += " ORDER BY c.id DESC" if descending else " ORDER BY c.id"
        with self._operation("page_records") as calls:
            items = calls.query(sql, params, [partition.instance_id, partition.owner])
        return [docs.record_from_item(partition, i) for i in items]

    def query_records_of_owner(self, owner: str, kind: str, where: Mapping[str, str] | None = None) -> list[Record]:
        sql, params = queries.records_query(None, owner, kind, where)
        with self._operation("query_records_of_owner") as calls:
            items = calls.query(sql, params, None)
        records = [docs.record_from_item(Partition(i["instance_id"], owner), i) for i in items]
        return sorted(records, key=lambda r: (r.partition.instance_id, r.id))

    def erase_expired_records(self, now: datetime) -> int:
        return 0  # Cosmos DB erases items whose ttl has run out (the container has defaultTtl -1)

    def delete_record(self, partition: Partition, kind: str, record_id: str) -> bool:
        item_id = docs.record_item_id(partition, kind, record_id)
        if not docs.is_valid_id(item_id):
            return False
        with self._operation("delete_record") as calls:
            if kind != RecordKind.HOLD:
                return calls.delete(item_id, [partition.instance_id, partition.owner])
            return self._delete_items(calls, partition.instance_id, partition.owner, [item_id]) == 1

    def close(self) -> None:
        self._account.close()

    # -- helpers ------------------------------------------------------------------

    def _states(self, keys: Sequence[ProfileKey], items: Sequence[Mapping[str, Any]]) -> list[ScopeState]:
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
                self._profiles.discard(key)
            else:
                self._profiles.put(profile)
            states.append(ScopeState(key, profile, found, holds))
        return states


def _no_expiry(hold: Record) -> None:
    """Refuse a hold with ``expires_on``: Cosmos DB would erase it on its own, without moving the stamp."""
    if hold.expires_on is not None:
        raise ValueError("a hold never expires (its erasure must move the partition's stamp)")


def _deletes(item_ids: Sequence[str], _first_sequence: int) -> list[Operation]:
    return [("delete", (i,)) for i in item_ids]


def _partition_of(keys: Sequence[ProfileKey], operation: str) -> tuple[str, str]:
    """The one ``(instance_id, upn)`` partition of ``keys``; ``ValueError`` when there is none or several."""
    if not keys:
        raise ValueError(f"{operation} takes at least one key")
    instance_id, upn = keys[0].instance_id, keys[0].upn
    if any(k.instance_id != instance_id or k.upn != upn for k in keys):
        raise ValueError(f"{operation} takes keys of one (instance_id, upn) partition")
    return instance_id, upn


__all__ = ["EXPECTED_PARTITION_KEY", "PROVISION_COMMAND", "CallMetrics", "CosmosMemoryStore"]
