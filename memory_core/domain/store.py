"""The store Protocol: what the service needs from any persistence technology.

Every operation stays inside one owner partition ``(instance_id, upn)``, so a
Cosmos DB implementation answers each with a single-partition request. The
contract suite in ``tests/contract`` runs against every implementation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memory_core.domain.models import MemoryEntry, MemoryProfile, ProfileKey, ScopeState


class MemoryStore(Protocol):
    """Persistence of profiles and entries.

    Implementations translate their own failures into ``memory_core.domain.errors``:
    ``Unavailable`` when the backend cannot be reached or is throttling past its
    retries, ``Conflict`` when an ``etag`` no longer matches.
    """

    def load(self, keys: Sequence[ProfileKey]) -> list[ScopeState]:
        """Profiles and all stored entries for ``keys``, in the same order.

        All keys share one ``(instance_id, upn)`` partition; this is one query.
        A key with nothing stored yields ``ScopeState(key, None, [])``.
        """
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
