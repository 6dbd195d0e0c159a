"""CosmosMemoryStore: the ``MemoryStore`` Protocol on Azure Cosmos DB for NoSQL.

One container (``COSMOS_CONTAINER`` in ``COSMOS_DATABASE``) with the
hierarchical partition key ``/instance_id`` then ``/upn`` (MultiHash, version
2) holds profiles, entries and records; item layout in
``memory_core.adapters.cosmos_documents``. Every request names the full
partition key and every query also filters on both key fields in its WHERE
clause, so each operation stays inside one logical partition.

The store composes its parts and delegates to them; each part's docstring says
what its calls cost in round trips, which is the cost here:

- ``cosmos_reads``: loads, entries pages and counts, stamps and checkpoints
  (a service read whose snapshot is current costs one point read);
- ``cosmos_kept_reads``: the loads of a read kept between calls (``load_since``,
  ``load_present``, ``load_erased``), each the stamp and one query;
- ``cosmos_writes``: appends (one batch once the profile and stamp are known),
  profiles saved and erased, entries erased;
- ``cosmos_records``: audit events, deletion requests, holds;
- ``cosmos_stamps``: the partition stamp (``ChangeStamps``) that every write
  able to change a read moves in its own transactional batch; the stamp item
  (its id, fields and per-profile watermarks): ``cosmos_stamp_item``;
- ``cosmos_checkpoints``: read checkpoints (``ReadCheckpoints``);
- ``cosmos_account``: the client, the container check, the time budget and the
  error translation of every operation; ``cosmos_calls``: one operation's calls,
  their metering, the profile cache; ``cosmos_queries``: the SQL.

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

One ``CosmosClient`` per store, made on first use and reused; the composition
root builds one store per process. Every HTTP call's request charge is logged
at DEBUG on ``memory_core.adapters.cosmos``; ``measure()`` gives the round
trips and RU of a block of calls (the benchmark uses it).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from azure.cosmos import SSLConfiguration

from memory_core.adapters.cosmos_account import EXPECTED_PARTITION_KEY, PROVISION_COMMAND, CosmosAccount
from memory_core.adapters.cosmos_calls import CallMetrics, Meter, ProfileCache
from memory_core.adapters.cosmos_checkpoints import CosmosCheckpoints
from memory_core.adapters.cosmos_kept_reads import CosmosKeptReads
from memory_core.adapters.cosmos_reads import CosmosReads
from memory_core.adapters.cosmos_records import CosmosRecords
from memory_core.adapters.cosmos_stamps import Stamps
from memory_core.adapters.cosmos_writes import CosmosWrites
from memory_core.domain.checkpoints import StoredCheckpoint
from memory_core.domain.erased_entries import ErasedLoad
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, ScopeState
from memory_core.domain.present_entries import PresentLoad
from memory_core.domain.records import Partition, Record
from memory_core.domain.snapshots import PartitionStamp, StampedLoad
from memory_core.domain.store import EntryCount, EntryFacts, EntryWindow, PageCursor, ScopeFacts

if TYPE_CHECKING:
    from memory_core.settings import Settings

_PROFILE_CACHE_SIZE = 4096


class CosmosMemoryStore:
    """The ``MemoryStore`` Protocol (with ``ChangeStamps``, ``ReadSpans``, ``ReadCheckpoints``, ``PresentEntries``
    and ``ErasedEntries``) on one Cosmos DB container. Thread-safe; one per process."""

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
        self._reads = CosmosReads(self._operation, self._stamps, self._checkpoints, self._profiles)
        self._kept = CosmosKeptReads(self._operation, self._stamps, self._profiles)
        self._writes = CosmosWrites(self._operation, self._stamps, self._profiles)
        self._records = CosmosRecords(self._operation, self._stamps)

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

    def close(self) -> None:
        self._account.close()

    def one_read(self) -> AbstractContextManager[None]:
        """The span of one service read on this thread (``domain.snapshots.ReadSpans``): a stamp its
        ``partition_stamp`` read may label its next ``load_since`` of the partition (one round trip
        saved), and nothing it read outlives it. No request."""
        return self._stamps.one_read()

    # -- MemoryStore: reads (cosmos_reads) ----------------------------------------

    def load(self, keys: Sequence[ProfileKey]) -> list[ScopeState]:
        return self._reads.load(keys)

    def load_partition(self, instance_id: str, upn: str) -> list[ScopeState]:
        return self._reads.load_partition(instance_id, upn)

    def load_partition_within(self, instance_id: str, upn: str, at_most: int) -> list[ScopeState] | None:
        return self._reads.load_partition_within(instance_id, upn, at_most)

    def partition_keys(
        self, instance_id: str, upn: str, *, prefix: str = "", after: str | None = None, limit: int | None = None
    ) -> list[ProfileKey]:
        return self._reads.partition_keys(instance_id, upn, prefix=prefix, after=after, limit=limit)

    def load_heads(self, keys: Sequence[ProfileKey]) -> list[ScopeState]:
        return self._reads.load_heads(keys)

    def newest_entries(
        self, window: EntryWindow, limit: int, *, cursor: PageCursor | None = None, kind: EntryKind | None = None
    ) -> list[MemoryEntry]:
        return self._reads.newest_entries(window, limit, cursor=cursor, kind=kind)

    def oldest_entries(
        self, window: EntryWindow, limit: int, *, after: tuple[datetime, str] | None = None
    ) -> list[MemoryEntry]:
        return self._reads.oldest_entries(window, limit, after=after)

    def count_entries(self, window: EntryWindow) -> EntryCount:
        return self._reads.count_entries(window)

    def entry_facts(self, window: EntryWindow) -> list[EntryFacts]:
        return self._reads.entry_facts(window)

    def partition_facts(self, instance_id: str, upn: str) -> list[ScopeFacts]:
        return self._reads.partition_facts(instance_id, upn)

    def get_entry(self, instance_id: str, upn: str, entry_id: str) -> MemoryEntry | None:
        return self._reads.get_entry(instance_id, upn, entry_id)

    def partition_owners(self, instance_id: str, limit: int, *, after: str | None = None) -> list[str]:
        return self._reads.partition_owners(instance_id, limit, after=after)

    # -- ChangeStamps and ReadCheckpoints (cosmos_reads) ---------------------------

    def partition_stamp(self, instance_id: str, upn: str) -> PartitionStamp:
        return self._reads.partition_stamp(instance_id, upn)

    def entry_sequence(self, instance_id: str, upn: str) -> int:
        return self._reads.entry_sequence(instance_id, upn)

    def load_stamped_heads(self, keys: Sequence[ProfileKey]) -> StampedLoad:
        return self._reads.load_stamped_heads(keys)

    def read_checkpoint(self, instance_id: str, upn: str, read_key: str) -> StoredCheckpoint | None:
        return self._reads.read_checkpoint(instance_id, upn, read_key)

    def keep_checkpoint(self, instance_id: str, upn: str, read_key: str, checkpoint: StoredCheckpoint) -> bool:
        return self._reads.keep_checkpoint(instance_id, upn, read_key, checkpoint)

    # -- kept reads: ChangeStamps, PresentEntries, ErasedEntries (cosmos_kept_reads) ------

    def load_since(self, keys: Sequence[ProfileKey], after: int | None) -> StampedLoad:
        return self._kept.load_since(keys, after)

    def load_present(self, keys: Sequence[ProfileKey], known: Collection[str], after: int) -> PresentLoad:
        return self._kept.load_present(keys, known, after)

    def load_erased(
        self, keys: Sequence[ProfileKey], known: Collection[str], mark: int, after: int
    ) -> ErasedLoad | None:
        return self._kept.load_erased(keys, known, mark, after)

    # -- MemoryStore: writes (cosmos_writes) ----------------------------------------

    def append(self, profile: MemoryProfile, entry: MemoryEntry) -> MemoryProfile:
        return self._writes.append(profile, entry)

    def append_with_records(self, profile: MemoryProfile, entry: MemoryEntry, records: Sequence[Record]) -> MemoryProfile:
        return self._writes.append_with_records(profile, entry, records)

    def save_profile(self, profile: MemoryProfile) -> MemoryProfile:
        return self._writes.save_profile(profile)

    def seal_copies(self, source: ProfileKey, watermark: datetime) -> None:
        self._writes.seal_copies(source, watermark)

    def seal_partition(self, instance_id: str, upn: str, watermark: datetime) -> None:
        self._writes.seal_partition(instance_id, upn, watermark)

    def delete_profile(self, key: ProfileKey) -> None:
        self._writes.delete_profile(key)

    def delete_entries(self, key: ProfileKey, entry_ids: Sequence[str]) -> int:
        return self._writes.delete_entries(key, entry_ids)

    # -- MemoryStore: records (cosmos_records) --------------------------------------

    def put_record(self, record: Record) -> Record:
        return self._records.put_record(record)

    def create_record(self, record: Record) -> Record:
        return self._records.create_record(record)

    def put_records(self, records: Sequence[Record]) -> list[Record]:
        return self._records.put_records(records)

    def get_record(self, partition: Partition, kind: str, record_id: str) -> Record | None:
        return self._records.get_record(partition, kind, record_id)

    def query_records(
        self, partition: Partition, kind: str, where: Mapping[str, str] | None = None, limit: int | None = None
    ) -> list[Record]:
        return self._records.query_records(partition, kind, where, limit)

    def page_records(
        self,
        partition: Partition,
        kind: str,
        *,
        limit: int,
        where: Mapping[str, str] | None = None,
        after: str | None = None,
        descending: bool = False,
        key_suffixes: Sequence[str] | None = None,
        where_in: tuple[str, Sequence[str]] | None = None,
    ) -> list[Record]:
        return self._records.page_records(partition, kind, limit=limit, where=where, after=after,
                                          descending=descending, key_suffixes=key_suffixes, where_in=where_in)

    def query_records_of_owner(self, owner: str, kind: str, where: Mapping[str, str] | None = None) -> list[Record]:
        return self._records.query_records_of_owner(owner, kind, where)

    def erase_expired_records(self, now: datetime) -> int:
        return self._records.erase_expired_records(now)

    def delete_record(self, partition: Partition, kind: str, record_id: str, etag: str | None = None) -> bool:
        return self._records.delete_record(partition, kind, record_id, etag)

    def delete_record_and_put(self, erased: Record, written: Record) -> Record | None:
        return self._records.delete_record_and_put(erased, written)


__all__ = ["EXPECTED_PARTITION_KEY", "PROVISION_COMMAND", "CallMetrics", "CosmosMemoryStore"]
