"""The store Protocol: what the service needs from any persistence technology.

Every operation stays inside one owner partition ``(instance_id, upn)``, so a
Cosmos DB implementation answers each with a single-partition request. The
contract suite in ``tests/contract`` runs against every implementation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from memory_core.domain.models import MemoryEntry, MemoryProfile, ProfileKey, ScopeState
from memory_core.domain.records import Partition, Record


class MemoryStore(Protocol):
    """Persistence of profiles and entries.

    Implementations translate their own failures into ``memory_core.domain.errors``:
    ``Unavailable`` when the backend cannot be reached or is throttling past its
    retries, ``Conflict`` when an ``etag`` no longer matches.
    """

    def load(self, keys: Sequence[ProfileKey]) -> list[ScopeState]:
        """Profiles, all stored entries and the partition's holds for ``keys``, in key order.

        All keys share one ``(instance_id, upn)`` partition; this is one query.
        A key with nothing stored yields ``ScopeState(key, None, [], holds)``.
        Holds are the ``RecordKind.HOLD`` records of the partition.
        """
        ...

    def load_partition(self, instance_id: str, upn: str) -> list[ScopeState]:
        """Every profile of one owner, with entries and holds (one query)."""
        ...

    def get_entry(self, instance_id: str, upn: str, entry_id: str) -> MemoryEntry | None:
        """One entry of the owner's partition, or None."""
        ...

    def delete_profile(self, key: ProfileKey) -> None:
        """Erase a profile record (its entries are erased separately). Missing is fine."""
        ...

    def put_record(self, record: Record) -> Record:
        """Create or replace a record; with ``record.etag`` set, only if unchanged, else ``Conflict``.

        Returns the stored record with its new etag.
        """
        ...

    def create_record(self, record: Record) -> Record:
        """Create a record only if none has its id; ``Conflict`` when one exists. Returns it with its etag."""
        ...

    def get_record(self, partition: Partition, kind: str, record_id: str) -> Record | None:
        ...

    def query_records(
        self, partition: Partition, kind: str, where: Mapping[str, str] | None = None, limit: int | None = None
    ) -> list[Record]:
        """Records of ``kind`` in ``partition`` whose top-level ``data`` fields equal ``where``, ordered by id."""
        ...

    def delete_record(self, partition: Partition, kind: str, record_id: str) -> bool:
        """Erase a record; False when it was not there."""
        ...

    def append(self, profile: MemoryProfile, entry: MemoryEntry) -> MemoryProfile:
        """Store ``entry``; create ``profile`` first if no profile exists for its key.

        Returns the stored profile (the existing one when it was already there).
        Concurrent appends never overwrite each other.
        """
        ...

    def save_profile(self, profile: MemoryProfile) -> MemoryProfile:
        """Create or replace a profile record.

        When ``profile.etag`` is set the write only succeeds if the stored record
        still has that etag; otherwise ``Conflict`` is raised. Returns the
        stored profile with its new etag.
        """
        ...

    def delete_entries(self, key: ProfileKey, entry_ids: Sequence[str]) -> int:
        """Erase the named entries of ``key``; missing ids are ignored. Returns the count erased."""
        ...

    def close(self) -> None:
        """Release connections. The store is unusable afterwards."""
        ...
