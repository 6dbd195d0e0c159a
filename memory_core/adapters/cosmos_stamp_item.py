"""A partition's stamp item on Cosmos DB: its id, its fields and how one stamp follows another.

One stamp item per owner partition (``type: "stamp"``, id ``stamp:{owner digest}``, the partition's
own key; docs/cosmos.md, "Layout"). What callers may rely on:

- ``changes`` counts writes that can change a read and ``inserts`` those that added entries (together
  the domain's ``PartitionStamp``); ``sequence`` is the last entry sequence handed out, so a write
  adding ``n`` entries gives them the ``n`` sequences after it (``StoredStamp.moved``).
- ``checkpointed`` says whether the partition's read checkpoint item exists (``cosmos_checkpoints``
  keeps them): a write that erases the checkpoint clears it, a checkpoint's write sets it
  (``StoredStamp.marked``), so a read that finds it False needs no round trip for a checkpoint.
- ``clears`` is each profile's watermark: profile id -> the ``cleared_on`` the last ``save_profile``
  stored since stamps carry them. It moves only with the stamp, so a batch If-Match the stamp checks
  an entry's time against the watermark that holds when the batch commits (``Stamps.write``'s
  ``guard``). ``moved`` and ``marked`` keep every watermark the stamp carries (``moved`` with a
  ``clear`` replaces that one profile's).
- ``seals`` (a ``~shared`` stamp's): source profile id -> the watermark a clear sealed on that author's team copies
  (``StoredStamp.sealed``), and ``seal_floor``: at most ``SEALS_KEPT`` sources keep their own watermark, the
  newest; an older one is folded into the floor, which covers a copy of every source (``StoredStamp.sealed_on``).
  A watermark is never lost, only widened to more authors, so a copy a clear sealed is still refused. The floor
  alone is not a refusal: ``named_seal`` is what a source sealed itself, and a copy only the floor covers is
  refused once its source profile's own ``cleared_on`` covers it (``CosmosWrites``, one point read then).
  Seals the previous release stored in ``clears`` (ids of other partitions' profiles) still count, and the next
  ``sealed`` moves them into ``seals``, so they are folded too.
- ``partition_seal`` (only in a stamp of a partition a purge sealed, ``seal_partition``): a watermark covering
  every entry of the partition, whatever its profile; an append's batch, If-Match the stamp, checks it like
  ``clears``. It moves only forward and with the stamp, and ``moved``, ``sealed`` and ``marked`` keep it.
- ``erasures`` counts the entries the partition's writes erased (``Stamps.write``'s ``erased``) and ``erased``
  holds the ids of the newest of them, oldest first, at most ``ERASED_KEPT`` and ``ERASED_CHARS`` characters
  (``StoredStamp.moved``): the partition's log of erased entries (``domain.erased_entries``), written in the very
  batch that erases them. A read's mark is ``erasures``; ``erased_since`` answers the ids erased after a mark, or
  None when the log no longer reaches back to it. A stamp without a count (None: written before the log, or
  rewritten by a release without it, which drops both fields, as in a rolling upgrade) answers no mark until its next
  write, which starts the count again from the clock, as a new stamp does: above every mark a reader can hold, so
  no mark taken before is answered and such a reader lists what is stored once. The ``~shared`` partition's stamp
  counts but keeps no ids (``Stamps.write``): no kept read of the memory tool reads that partition, and every sharing
  read point-reads its stamp (under 1 KB).
- A new stamp counts ``changes`` and ``erasures`` from the clock (``StoredStamp.new``), so a stamp made again (its
  item erased and created anew) never equals one a snapshot was built at, nor covers a mark of the erased one (an
  old count is far below the new one's start); ``UNKNOWN``, what a partition without a stamp item reads as, equals
  none.

Its size is part of the cost model (docs/cosmos.md, "Reads, snapshots and search: the cost model per
store"): an unchanged read is one point read of this item, about 1 RU while it stays under 1 KB. It is
about 0.3 KB, plus about 0.1 KB for each profile whose watermark it carries (a profile id and a time); a
``~shared`` stamp also carries at most ``SEALS_KEPT`` seals and a floor, about 0.5 KB more at most (agent-scope
ids are the longest), whatever the number of authors who ever cleared. Once its partition erased entries, the log of
erased ids adds about 36 bytes an id (a 32-character id), at most ``ERASED_KEPT`` of them (``ERASED_CHARS`` bounds ids
longer than usual): with the log full a stamp with one watermark stays under 1 KB as a point read answers it, system
properties included (docs/cosmos.md, "What the log costs").
Reading and moving stamps in batches is ``cosmos_stamps``'s.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from memory_core.adapters.cosmos_documents import SCHEMA_VERSION
from memory_core.domain.models import SHARED_OWNER, ProfileKey, Scope, agent_profile_prefix
from memory_core.domain.snapshots import PartitionStamp

STAMP = "stamp"
SEALS_KEPT = 4
"""Sources whose seal a stamp keeps by name (the newest); the older ones are folded into its ``seal_floor``. Four keep
a ``~shared`` stamp's seals to about 0.5 KB, so the stamp stays under 1 KB, a 1 RU point read
(tests/contract/test_team_copy_seal_bounds.py); more would spare a few late copies under the floor their point read
of the source profile (``CosmosWrites``) and cost every sharing read more."""
ERASED_KEPT = 12
"""Erased entry ids a stamp keeps (the newest): a reader whose kept read is more erasures behind lists what is stored
instead (``CosmosKeptReads.load_erased``). The memory tool refreshes on every command, so it is usually one forget or
one edit behind; a clear of a scope, or many writers between two of its commands, costs its next command one listing.
Every read of the partition point-reads the stamp and every write replaces it, so the log is what keeps it small:
twelve ids of the usual 32 characters keep a stamp with one watermark under 1 KB as read (about 0.94 KB; sixteen
would pass it), a 1 RU point read (docs/cosmos.md, "What the log costs")."""
ERASED_CHARS = 480
"""The most characters of ids a stamp keeps (12 ids of the usual 32 take 384, so they are never cut by it): an
imported id may be up to 255 characters long, and the stamp is read by every read of its partition."""
_SHARED_USER = ProfileKey("", SHARED_OWNER, Scope.USER).profile_id  # the instance is not part of a profile id
_SHARED_AGENTS = agent_profile_prefix(SHARED_OWNER)
UNKNOWN = PartitionStamp(-1, -1)
"""What ``partition_stamp`` answers for a partition without a stamp item: equal to no stamp a
snapshot is built at (those count from the clock), so the read loads everything."""


def stamp_item_id(owner: str) -> str:
    """``stamp:`` + a digest of the owner: unique per instance even where ids are unique per instance only."""
    return "stamp:" + _digest(owner)


def checkpoint_item_id(owner: str) -> str:
    """The id of the partition's checkpoint item (``cosmos_checkpoints``), which the stamp erases."""
    return "checkpoint:" + _digest(owner)


def _digest(owner: str) -> str:
    return hashlib.sha256(owner.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class StoredStamp:
    """A partition's stamp item as read or written, with its etag."""

    changes: int
    inserts: int
    sequence: int
    etag: str | None = None
    checkpointed: bool = False
    """True while the partition's checkpoint item exists (it is written and erased with the stamp)."""
    clears: tuple[tuple[str, str], ...] = ()
    """(profile id, ISO ``cleared_on``) of each profile of the partition whose watermark was saved since stamps
    carry them: what an append's batch, If-Match this stamp, checks its entry's time against."""
    seals: tuple[tuple[str, str], ...] = ()
    """(source profile id, ISO watermark) of at most ``SEALS_KEPT`` sources, the newest seals (``sealed``)."""
    seal_floor: str | None = None
    """ISO watermark covering a team copy of any source: the latest of the seals folded out of ``seals``."""
    partition_seal: str | None = None
    """ISO watermark covering every entry of the partition, whatever its profile (``seal_partition``: a purge's)."""
    erasures: int | None = None
    """How many entries the partition's writes erased, counted from the clock at the count's start (the stamp's
    making, or the first write after a release without the log dropped it): a read's mark for ``erased_since``. None
    in a stamp written before the log or rewritten by a release without it, until its next write."""
    erased: tuple[str, ...] = ()
    """The ids of the newest ``erasures`` (oldest first), bounded by ``ERASED_KEPT`` and ``ERASED_CHARS``."""

    @property
    def stamp(self) -> PartitionStamp:
        return PartitionStamp(self.changes, self.inserts)

    def moved(
        self, inserts: int, *, erases_checkpoint: bool, clear: tuple[str, datetime] | None = None,
        erased: Sequence[str] = (), keeps: int = ERASED_KEPT,
    ) -> StoredStamp:
        """The stamp after one more write that adds ``inserts`` entries (no etag yet); still
        checkpointed unless the write erases the checkpoint; with ``clear`` (profile id, cleared_on)
        carrying that profile's watermark; logging ``erased`` (the ids of the entries the write erases):
        ``erasures`` grows by their number and ``erased`` keeps the newest within its bounds (at most ``keeps``
        ids; with 0 a read learns only whether anything was erased since its mark). A stamp without a count starts
        one here from the clock (``_count_start``), not from ``changes``: a release without the log drops the count
        and the ids when it rewrites the stamp, and a count it dropped may run ahead of ``changes`` (one batch erases
        many entries), so a restart below it could answer a reader's mark with a set missing what that release
        erased."""
        clears = self.clears
        if clear is not None:
            clears = tuple(sorted({**dict(clears), clear[0]: clear[1].isoformat()}.items()))
        counted = _count_start() if self.erasures is None else self.erasures
        return replace(self, changes=self.changes + 1, inserts=self.inserts + inserts, sequence=self.sequence + inserts,
                       etag=None, checkpointed=self.checkpointed and not erases_checkpoint, clears=clears,
                       erasures=counted + len(erased), erased=_kept_ids(self.erased, erased, keeps))

    def erased_since(self, mark: int) -> frozenset[str] | None:
        """The ids of the entries erased after a read whose mark was ``mark`` (its ``erasures``), or None when this
        stamp cannot say: it keeps no count, its count is below the mark (a stamp made again), or it no longer keeps
        every id erased since (more than it keeps, or a stamp made again or its count started again since the mark)."""
        if self.erasures is None or not 0 <= self.erasures - mark <= len(self.erased):
            return None
        return frozenset(self.erased[len(self.erased) - (self.erasures - mark):])

    def sealed(self, clear: tuple[str, datetime]) -> StoredStamp:
        """The same stamp (no etag yet) sealing ``clear`` (source profile id, watermark): what a seal of team copies
        stores (``Stamps.write`` with ``counts=False``). Afterwards ``sealed_on`` of that id is at least the
        watermark, and of every id at least what it was (a seal never moves back). At most ``SEALS_KEPT`` sources
        keep their own watermark, the newest; the others are folded into ``seal_floor`` (their latest), and a seal
        the floor already covers is not kept by name. Seals the previous release stored in ``clears`` leave it for
        ``seals`` (and so are folded too); the shared partition's own profiles' watermarks stay in ``clears``."""
        source, watermark = clear
        # Seals the previous release kept in ``clears`` (every id there but the shared partition's own profiles') are
        # moved into the named seals first, so they are folded like any other and the stamp stays bounded.
        own = tuple((p, w) for p, w in self.clears if _own_profile(p))
        named = dict(self.seals)
        for legacy, sealed_at in self.clears:
            if not _own_profile(legacy) and (legacy not in named or _time(named[legacy]) < _time(sealed_at)):
                named[legacy] = sealed_at
        held = self.sealed_on(source)
        if held is None or held < watermark:
            named[source] = watermark.isoformat()
        elif len(own) == len(self.clears):
            return replace(self, etag=None)
        floor = self.floor
        newest_first = sorted(named.items(), key=lambda item: _time(item[1]), reverse=True)
        for _, folded in newest_first[SEALS_KEPT:]:
            at = _time(folded)
            floor = at if floor is None or at > floor else floor
        kept = tuple(sorted((s, w) for s, w in newest_first[:SEALS_KEPT] if floor is None or _time(w) > floor))
        return replace(self, etag=None, clears=own, seals=kept, seal_floor=floor.isoformat() if floor else None)

    def sealed_on(self, source_profile_id: str) -> datetime | None:
        """The latest watermark sealed on team copies of ``source_profile_id``'s entries (None: none sealed): its
        ``named_seal`` or the floor. A copy at or before it may have been sealed by its source's clear; one past it
        certainly was not."""
        found = [w for w in (self.named_seal(source_profile_id), self.floor) if w is not None]
        return max(found, default=None)

    def named_seal(self, source_profile_id: str) -> datetime | None:
        """The latest watermark a clear of ``source_profile_id`` sealed on its team copies that this stamp keeps by
        that id (None: none by name, though the floor may cover it): its own seal, or one stored in ``clears``
        before seals had a field of their own. A copy at or before it was sealed by its source's clear."""
        found = [_time(w) for w in (dict(self.seals).get(source_profile_id),) if w]
        legacy = None if _own_profile(source_profile_id) else self.cleared_on(source_profile_id)
        return max([*found, legacy] if legacy else found, default=None)

    @property
    def floor(self) -> datetime | None:
        """``seal_floor`` as a time (None: nothing folded yet)."""
        return _time(self.seal_floor) if self.seal_floor else None

    def partition_sealed(self, watermark: datetime) -> StoredStamp:
        """This stamp (no etag yet) also refusing every entry of the partition at or before ``watermark``; a seal
        never moves back (the later watermark holds)."""
        held = self.partition_sealed_on
        at = watermark if held is None or held < watermark else held
        return replace(self, etag=None, partition_seal=at.isoformat())

    @property
    def partition_sealed_on(self) -> datetime | None:
        """The watermark ``partition_sealed`` stored (None: none): every entry at or before it is refused."""
        return _time(self.partition_seal) if self.partition_seal else None

    def marked(self) -> StoredStamp:
        """The same stamp, checkpointed (no etag yet): what a checkpoint's write stores."""
        return replace(self, etag=None, checkpointed=True)

    def cleared_on(self, profile_id: str) -> datetime | None:
        """The watermark this stamp carries for ``profile_id`` (None: none saved since stamps carry them)."""
        found = dict(self.clears).get(profile_id)
        return _time(found) if found else None

    @staticmethod
    def new() -> StoredStamp:
        now = _count_start()
        return StoredStamp(now, 0, 0, erasures=now)

    @staticmethod
    def from_item(item: Mapping[str, Any]) -> StoredStamp:
        clears = item.get("clears") or {}
        seals = item.get("seals") or {}
        floor = item.get("seal_floor")
        purged = item.get("partition_seal")
        erasures = item.get("erasures")
        return StoredStamp(int(item["changes"]), int(item["inserts"]), int(item["sequence"]), item.get("_etag"),
                           item.get("checkpointed") is True, tuple(sorted((str(k), str(v)) for k, v in clears.items())),
                           tuple(sorted((str(k), str(v)) for k, v in seals.items())), str(floor) if floor else None,
                           str(purged) if purged else None, int(erasures) if erasures is not None else None,
                           tuple(str(i) for i in item.get("erased") or ()))

    def item(self, instance_id: str, owner: str) -> dict[str, Any]:
        return {
            "id": stamp_item_id(owner),
            "type": STAMP,
            "schema_version": SCHEMA_VERSION,
            "instance_id": instance_id,
            "upn": owner,
            "changes": self.changes,
            "inserts": self.inserts,
            "sequence": self.sequence,
            "checkpointed": self.checkpointed,
            "clears": dict(self.clears),
            # Only in a stamp that sealed team copies (a ``~shared`` one): every other stamp stays as small as before.
            **({"seals": dict(self.seals)} if self.seals else {}),
            **({"seal_floor": self.seal_floor} if self.seal_floor else {}),
            # Only in the stamp of a partition a purge sealed.
            **({"partition_seal": self.partition_seal} if self.partition_seal else {}),
            **({"erasures": self.erasures} if self.erasures is not None else {}),
            # Only once the partition erased an entry.
            **({"erased": list(self.erased)} if self.erased else {}),
        }


def _count_start() -> int:
    """Where a stamp's counts start: the clock in microseconds. A count grows by one a write or an erased entry, at
    most about 100 a batch, and a batch is a round trip of milliseconds: far slower than the clock, so a count started
    now is above every value one started earlier has reached, and so above every mark a reader holds of it (with the
    clocks of the processes writing a partition in step to within the time between their writes). Microseconds stay
    below 2**53, which a JSON number holds exactly."""
    return time.time_ns() // 1000


def _own_profile(profile_id: str) -> bool:
    """Whether ``profile_id`` is a profile of the shared partition itself (its watermark, not a seal)."""
    return profile_id == _SHARED_USER or profile_id.startswith(_SHARED_AGENTS)


def _kept_ids(kept: tuple[str, ...], erased: Sequence[str], keeps: int) -> tuple[str, ...]:
    """``kept`` then ``erased``, the oldest dropped until at most ``keeps`` ids of at most ``ERASED_CHARS``
    characters are left."""
    if not erased:
        return kept
    ids = [*kept, *erased][-keeps:] if keeps > 0 else []
    chars = sum(map(len, ids))
    start = 0
    while chars > ERASED_CHARS:
        chars -= len(ids[start])
        start += 1
    return tuple(ids[start:])


def _time(iso: str) -> datetime:
    """A watermark as the item stores it (``datetime.isoformat``) read back: the one parse of ``clears``, ``seals``,
    ``seal_floor`` and ``partition_seal``, so every comparison of two of them reads both alike."""
    return datetime.fromisoformat(iso)


__all__ = [
    "ERASED_CHARS", "ERASED_KEPT", "SEALS_KEPT", "STAMP", "UNKNOWN", "StoredStamp", "checkpoint_item_id", "stamp_item_id",
]
