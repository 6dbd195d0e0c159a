"""The store Protocol: what the service needs from any persistence technology.

Every operation stays inside one owner partition ``(instance_id, upn)``, so a
Cosmos DB implementation answers each with a single-partition request. The
contract suite in ``tests/contract`` runs against every implementation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, ScopeState, Share
from memory_core.domain.records import Partition, Record


@dataclass(frozen=True, slots=True)
class EntryWindow:
    """The entries of one profile that a newest-first read may see.

    An entry is in the window when it was created strictly after ``after`` (the
    clear watermark, hold watermarks), at or before ``up_to`` (what a hold's
    watermark covers, counted in one statement), its ``(created_on, id)`` is at or
    after ``start`` (the newest replace, which starts the document anew), and its id
    is not in ``excluded_ids`` (entries held one by one).
    """

    key: ProfileKey
    after: datetime | None = None
    up_to: datetime | None = None
    start: tuple[datetime, str] | None = None
    excluded_ids: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class PageCursor:
    """Where the next newest-first page starts: entries created before ``created_on``,
    or at it but not among ``seen_ids`` (so equal timestamps are neither lost nor repeated)."""

    created_on: datetime
    seen_ids: frozenset[str]


@dataclass(frozen=True, slots=True)
class EntryCount:
    """How many entries a window holds, and when the oldest of them was created."""

    count: int
    oldest: datetime | None


@dataclass(frozen=True, slots=True)
class EntryFacts:
    """What an erasure needs to know of a stored entry, without its text: its id, when it was created, whether it
    is team-shared (its copy goes with it) and who wrote it (a shared copy's author: ``Hold.covers_facts``)."""

    id: str
    created_on: datetime
    share: Share
    author_upn: str


@dataclass(frozen=True, slots=True)
class ScopeFacts:
    """One scope of an owner's partition, as ``load_partition`` answers it (a profile stored, or entries stored under
    its key), with the facts of its entries in ``(created_on, id)`` order instead of the entries themselves."""

    key: ProfileKey
    entries: tuple[EntryFacts, ...]


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

    def load_partition_within(self, instance_id: str, upn: str, at_most: int) -> list[ScopeState] | None:
        """``load_partition``'s answer when the owner's partition holds no more than ``at_most`` entries; None
        when it holds more, having read no more than about ``at_most`` items (one bounded query).

        On Cosmos DB the partition's profiles and holds count with its entries (``TOP``), so a partition
        a few entries short of ``at_most`` may answer None too; one holding more never answers states.
        """
        ...

    def partition_keys(
        self, instance_id: str, upn: str, *, prefix: str = "", after: str | None = None, limit: int | None = None
    ) -> list[ProfileKey]:
        """The key of every profile of one owner, in ``profile_id`` order, without entries: one query of
        the profiles alone (every entry is stored with its profile), as ``partition_owners`` finds owners.

        ``prefix``: only the profiles whose id begins with it (``models.agent_profile_prefix``: one person's
        agent scopes); ``after``: only those whose id sorts after it (as ``partition_owners``, by code point);
        ``limit``: the first ``limit`` of those, read from the profile id's index, so that a page costs
        ``limit`` profiles however many the owner has.
        """
        ...

    def get_entry(self, instance_id: str, upn: str, entry_id: str) -> MemoryEntry | None:
        """One entry of the owner's partition, or None."""
        ...

    def load_heads(self, keys: Sequence[ProfileKey]) -> list[ScopeState]:
        """Like ``load`` but without entries: profiles and the partition's holds (``entries`` is empty).

        One query on Cosmos DB; what a budgeted read starts from.
        """
        ...

    def newest_entries(
        self, window: EntryWindow, limit: int, *, cursor: PageCursor | None = None, kind: EntryKind | None = None
    ) -> list[MemoryEntry]:
        """Up to ``limit`` entries of ``window`` (of ``kind``, when given), newest first, from ``cursor`` on.

        One bounded query (``ORDER BY created_on DESC`` with ``LIMIT``/``TOP``): the
        work is proportional to ``limit``, not to the number of entries stored.
        """
        ...

    def oldest_entries(
        self, window: EntryWindow, limit: int, *, after: tuple[datetime, str] | None = None
    ) -> list[MemoryEntry]:
        """Up to ``limit`` entries of ``window``, oldest first by ``(created_on, id)``, strictly after ``after``.

        What an entries page is read from when no listing is kept (``domain.stored_pages``):
        entries sharing one ``created_on`` come in id order and a page boundary among them
        loses and repeats none. Bounded work: ``limit`` entries from the profile's time index,
        plus on Cosmos DB (ordered by one field, so no composite index is needed) the entries
        that share the page's last timestamp when the page boundary falls among them.
        """
        ...

    def count_entries(self, window: EntryWindow) -> EntryCount:
        """The number of entries in ``window`` and the oldest one's ``created_on`` (one aggregate query)."""
        ...

    def entry_facts(self, window: EntryWindow) -> list[EntryFacts]:
        """The facts of every entry of ``window``, in ``(created_on, id)`` order: one query that reads those
        fields only, never an entry's text. What a clear and a replace find what their watermark covers from
        (``EntryWindow(key, up_to=watermark)``: at or before it), at once (``domain.erasures``) or in the sweep's
        plan (``domain.custody_sweep``), where a load of the scope read every entry whole. SQLite reads the
        profile's time index and the rows it points to; Cosmos DB one single-partition query projecting four
        fields (docs/cosmos.md, "Cost model")."""
        ...

    def partition_facts(self, instance_id: str, upn: str) -> list[ScopeFacts]:
        """``load_partition`` without text or holds: every scope of one owner (each stored profile, and each key an
        entry is stored under), in ``profile_id`` order, with the facts of all its entries. What a purge finds what
        it covers from, in the sweep's plan and seal (``domain.custody_sweep``, ``domain.seals``), across every
        scope, and in the instance's ``~shared`` partition. One statement on SQLite (the scopes' keys and four
        columns of each entry); on Cosmos DB one single-partition query projecting the key's fields and the
        facts' (docs/cosmos.md, "Cost model")."""
        ...

    def delete_profile(self, key: ProfileKey) -> None:
        """Erase ``key``'s profile while its scope holds no entries (erase them first). Missing is fine.

        A scope that holds an entry keeps its profile as stored, an entry appended while the erasure runs
        included: a scope with entries always has a profile (``partition_keys`` lists it), and the profile
        an ``append`` made and answered is never replaced by this call. SQLite checks and erases in one
        statement. Cosmos DB cannot make a batch conditional on a query: it erases the profile If-Match the
        etag it read, then looks for an entry of the scope and, finding one (an append whose batch read the
        profile first), makes the same profile again create-only (409: an append made one first, kept). So
        there a concurrent reader may see such an entry without its profile for that moment.
        """
        ...

    def put_record(self, record: Record) -> Record:
        """Create or replace a record; with ``record.etag`` set, only if unchanged, and with
        ``records.ABSENT``, only if still no record has its id: else ``Conflict``.

        Returns the stored record with its new etag.
        """
        ...

    def create_record(self, record: Record) -> Record:
        """Create a record only if none has its id; ``Conflict`` when one exists. Returns it with its etag."""
        ...

    def put_records(self, records: Sequence[Record]) -> list[Record]:
        """Create or replace each of ``records`` in one atomic unit; the stored records, in order.

        For a change and the audit event that describes it: either every record is stored or none
        is (one SQLite transaction, one Cosmos DB transactional batch). Each record's etag is honoured
        as by ``put_record``: a record no longer as read is ``Conflict``, and nothing is written. Put
        such a record first: the Cosmos protocol server the tests use applies a batch's operations in
        order without rolling back.
        They must all live in one partition and none may be a hold (holds move the partition's
        stamp): ``ValueError``, and nothing is written.
        """
        ...

    def get_record(self, partition: Partition, kind: str, record_id: str) -> Record | None:
        ...

    def query_records(
        self, partition: Partition, kind: str, where: Mapping[str, str] | None = None, limit: int | None = None
    ) -> list[Record]:
        """Records of ``kind`` in ``partition`` whose top-level ``data`` fields equal ``where``, ordered by id.

        With ``limit``, the first ``limit`` of them, limited in the query itself.
        """
        ...

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
        """Up to ``limit`` records of ``kind`` in ``partition`` matching ``where``, ordered by id
        (descending when asked), starting after id ``after`` in that order; with ``key_suffixes``, only those
        whose id ends in one of them (case-sensitive, no pattern characters; the query compares the
        partition's ids of ``kind``, not their data; at most 100 suffixes, else ``ValueError``; text UTF-8 cannot
        encode, a lone surrogate, ``ValueError`` as for such an id). With ``where_in`` (a field name and texts),
        only those whose top-level ``data`` field equals one of the texts (none: no record; at most 100, else
        ``ValueError``), compared as ``where`` compares.

        One query whose limit and order the backend applies (``TOP``/``ORDER BY`` on
        Cosmos DB, ``LIMIT`` on SQLite), so its cost does not grow with the partition.
        """
        ...

    def query_records_of_owner(self, owner: str, kind: str, where: Mapping[str, str] | None = None) -> list[Record]:
        """Records of ``kind`` under partition owner ``owner`` in every instance (one cross-partition query).

        For the scheduled sweep only, which must find approved deletion requests
        in every instance; everything else stays inside one partition.
        """
        ...

    def partition_owners(self, instance_id: str, limit: int, *, after: str | None = None) -> list[str]:
        """Up to ``limit`` owners of the instance's partitions that hold a profile, each once, in the
        backend's order of strings, starting after ``after`` (None: from the first).

        The service's own partitions that hold profiles (``~shared``) are among them. For an
        operator's scan across users (``domain.hidden_text_scan``) only: no caller's path reads
        more than its own partitions. One bounded query on SQLite; on Cosmos DB a cross-partition
        ``TOP``/``ORDER BY`` query of profile items, repeated while a page is short of owners.
        """
        ...

    def erase_expired_records(self, now: datetime) -> int:
        """Erase records whose ``expires_on`` is at or before ``now``; the count erased.

        A store whose backend expires items itself (Cosmos DB's per-item ``ttl``) erases nothing here.
        """
        ...

    def delete_record(self, partition: Partition, kind: str, record_id: str, etag: str | None = None) -> bool:
        """Erase a record; False when it was not there. With ``etag``, only if the stored record still has
        it: ``Conflict`` (nothing erased) when it was written since it was read (SQLite checks and erases in
        one statement, Cosmos DB deletes If-Match). Not for a hold (``ValueError``): a hold's erasure moves the
        partition's stamp in a batch of its own."""
        ...

    def delete_record_and_put(self, erased: Record, written: Record) -> Record | None:
        """Erase ``erased`` If-Match its etag and write ``written`` (as its etag asks, as by ``put_record``) in one
        atomic unit: both or neither (one SQLite transaction, one Cosmos DB transactional batch, the erasure
        first). Answers ``written`` as stored, or None when ``erased`` is not stored (nothing written);
        ``Conflict`` (nothing written) when it was written since it was read, or ``written`` is not as its etag
        asks. For a step whose proof must stand the moment its erasure does (a dismissal's journal, marked).
        Both in one partition, neither a hold, ``erased`` with its etag: ``ValueError``, nothing written."""
        ...

    def append(self, profile: MemoryProfile, entry: MemoryEntry) -> MemoryProfile:
        """Store ``entry``; create ``profile`` first if no profile exists for its key, also when it was erased
        since this process last saw it (a purge's seal): no entry is stored without a profile.

        Returns the stored profile (the existing one when it was already there).
        Concurrent appends never overwrite each other, and an entry never replaces one of the
        same id in its owner's partition, in any profile: ``EntryExists``, and nothing is written
        (the entry id an ``Idempotency-Key`` derives relies on it, ``domain.idempotency``).
        An entry created at or before the stored profile's ``cleared_on`` is refused in the same atomic
        write: ``EntryBeforeClear``, nothing written. So a clear that saved its watermark and then read what
        to erase never misses an entry stamped before the watermark and stored after the read: that entry
        is refused, and its writer stamps it after the watermark (``domain.audited_appends``). SQLite reads
        the profile in the append's transaction; Cosmos DB's batch is If-Match the partition stamp, which
        carries each profile's watermark (``save_profile`` moves it there in the same batch).
        A team copy (``MemoryEntry.copied_from``) is refused the same way when a watermark ``seal_copies`` sealed
        for its source scope covers it: a clear seals before it reads which copies to erase, so a copy stored after
        that read is never one of the entries it erased. And any entry a watermark ``seal_partition`` sealed on its
        partition covers, whatever its scope (a purge's, which outlives the profiles it erases).
        """
        ...

    def seal_copies(self, source: ProfileKey, watermark: datetime) -> None:
        """From now on refuse (``EntryBeforeClear``, in ``append``'s atomic write) every team copy of an entry of
        ``source`` created at or before ``watermark``, in the shared partition of its scope; a seal never moves back
        (the later watermark holds). Called once ``source``'s profile stores ``watermark`` as its ``cleared_on``.
        Changes no read. SQLite: nothing to write, the append's transaction reads the source profile's
        ``cleared_on`` itself; Cosmos DB: one batch that moves the shared partition's stamp, which then carries
        the watermark (docs/cosmos.md). What a store keeps for it is bounded however many authors clear, and every
        store refuses the same copies: those at or before their own source's sealed watermark, never a copy of an
        author whose clears do not cover it (Cosmos DB folds all but the newest four seals into one floor and checks
        a copy only the floor covers against its source profile's ``cleared_on``, one point read then)."""
        ...

    def seal_partition(self, instance_id: str, upn: str, watermark: datetime) -> None:
        """From now on refuse (``EntryBeforeClear``, in ``append``'s atomic write) every entry of the owner's
        partition created at or before ``watermark``, in any scope: one with a profile, one whose profile is erased
        later, one with none yet. A seal never moves back (the later watermark holds) and is kept for good (a
        purge's leftovers may still arrive: a slow writer, an abandoned worker thread). What a purge's seal stores
        before it reads what to erase (``domain.seals``): it erases the profiles a scope's ``cleared_on`` lives in.
        Changes no read; team copies in the shared partition are not this seal's (their marks refuse them).
        SQLite: one record of the partition, read in the append's transaction; Cosmos DB: the partition stamp, which
        the append's batch is If-Match on, carries it (docs/cosmos.md)."""
        ...

    def append_with_records(self, profile: MemoryProfile, entry: MemoryEntry, records: Sequence[Record]) -> MemoryProfile:
        """``append``, and write ``records`` in the same atomic unit.

        Every record must live in the entry's partition ``(instance_id, upn)``. Either
        the entry and every record are stored, or none is: one SQLite transaction, one
        Cosmos DB transactional batch. Creating a missing profile may happen before
        (a profile without entries reads as empty). A record with no etag is put (created
        or replaced); one carrying ``records.ABSENT`` is created only. ``ValueError`` for a
        record elsewhere or with another etag; ``EntryExists`` (nothing written) when the
        partition holds an entry of that id, or a record of the id of one to create (the
        mark of an ``Idempotency-Key``, ``domain.idempotency``, relies on both).
        """
        ...

    def save_profile(self, profile: MemoryProfile) -> MemoryProfile:
        """Create or replace a profile record.

        When ``profile.etag`` is set the write only succeeds if the stored record
        still has that etag; otherwise ``Conflict`` is raised. With ``records.ABSENT``
        it only creates: ``Conflict`` when a profile of its key is stored (one a first
        append made meanwhile is kept as it is). Returns the stored profile with its new etag.
        """
        ...

    def delete_entries(self, key: ProfileKey, entry_ids: Sequence[str]) -> int:
        """Erase the named entries of ``key``; missing ids are ignored. Returns the count erased."""
        ...

    def measure(self) -> AbstractContextManager[Any]:
        """Count the work of every call this thread makes inside the block.

        Yields an object with at least ``round_trips`` (requests to the backend,
        retries included); tests and benchmarks read it.
        """
        ...

    def close(self) -> None:
        """Release connections. The store is unusable afterwards."""
        ...
