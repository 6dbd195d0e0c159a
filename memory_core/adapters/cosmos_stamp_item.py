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
- A new stamp counts ``changes`` from the clock (``StoredStamp.new``), so a stamp made again (its item
  erased and created anew) never equals one a snapshot was built at; ``UNKNOWN``, what a partition
  without a stamp item reads as, equals none.

Its size is part of the cost model (docs/cosmos.md, "Reads, snapshots and search: the cost model per
store"): an unchanged read is one point read of this item, about 1 RU while it stays under 1 KB. It is
about 0.3 KB, plus about 0.1 KB for each profile whose watermark it carries (a profile id and a time).
Reading and moving stamps in batches is ``cosmos_stamps``'s.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from memory_core.adapters.cosmos_documents import SCHEMA_VERSION
from memory_core.domain.snapshots import PartitionStamp

STAMP = "stamp"
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

    @property
    def stamp(self) -> PartitionStamp:
        return PartitionStamp(self.changes, self.inserts)

    def moved(
        self, inserts: int, *, erases_checkpoint: bool, clear: tuple[str, datetime] | None = None
    ) -> StoredStamp:
        """The stamp after one more write that adds ``inserts`` entries (no etag yet); still
        checkpointed unless the write erases the checkpoint; with ``clear`` (profile id, cleared_on)
        carrying that profile's watermark."""
        clears = self.clears
        if clear is not None:
            clears = tuple(sorted({**dict(clears), clear[0]: clear[1].isoformat()}.items()))
        return StoredStamp(self.changes + 1, self.inserts + inserts, self.sequence + inserts,
                           checkpointed=self.checkpointed and not erases_checkpoint, clears=clears)

    def sealed(self, clear: tuple[str, datetime]) -> StoredStamp:
        """The same stamp (no etag yet) carrying ``clear`` (profile id, watermark), unless it carries a later one
        for that id: what a seal of team copies stores (``Stamps.write`` with ``counts=False``)."""
        held = self.cleared_on(clear[0])
        if held is not None and held >= clear[1]:
            return replace(self, etag=None)
        clears = tuple(sorted({**dict(self.clears), clear[0]: clear[1].isoformat()}.items()))
        return replace(self, etag=None, clears=clears)

    def marked(self) -> StoredStamp:
        """The same stamp, checkpointed (no etag yet): what a checkpoint's write stores."""
        return StoredStamp(self.changes, self.inserts, self.sequence, checkpointed=True, clears=self.clears)

    def cleared_on(self, profile_id: str) -> datetime | None:
        """The watermark this stamp carries for ``profile_id`` (None: none saved since stamps carry them)."""
        found = dict(self.clears).get(profile_id)
        return datetime.fromisoformat(found) if found else None

    @staticmethod
    def new() -> StoredStamp:
        return StoredStamp(time.time_ns() // 1000, 0, 0)

    @staticmethod
    def from_item(item: Mapping[str, Any]) -> StoredStamp:
        clears = item.get("clears") or {}
        return StoredStamp(int(item["changes"]), int(item["inserts"]), int(item["sequence"]), item.get("_etag"),
                           item.get("checkpointed") is True, tuple(sorted((str(k), str(v)) for k, v in clears.items())))

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
        }


__all__ = ["STAMP", "UNKNOWN", "StoredStamp", "checkpoint_item_id", "stamp_item_id"]
