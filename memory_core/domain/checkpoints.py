"""Checkpoints: a read's snapshots stored beside the memory, so a fresh process starts from them.

A process keeps its snapshots in memory (``snapshots.SnapshotCache``), and a new one (a
Functions instance just started, a restarted ``serve``) has none: its first full read of a
memory loads and renders every entry, about 83 ms at 10,000 entries on SQLite and a query of
the whole partition on Cosmos DB. A store that implements ``ReadCheckpoints`` keeps a copy of
a large read's snapshots (a *checkpoint*), and such a first read becomes: the checkpoint, one
query for what was added since (``added_entries.added_since``), and the snapshot extended with it.

What a store promises, which is what makes a checkpoint safe to start from:

- **Kept only while current.** ``keep_checkpoint`` stores a checkpoint only when the
  partition's stamp is still the one the checkpoint was built at, checked in the same
  transaction as the write. A checkpoint built while another process erased an entry is
  refused, never stored.
- **Erased with what it shows.** Every write to the partition that is not an entry added
  (a forget, a clear, a hold placed or lifted, a replace's purge, an expiry, a profile
  created, changed or erased: the writes that move the stamp's ``changes`` past its
  ``inserts``) erases every checkpoint of the partition in the same transaction. Text a
  custody rule erased therefore never outlives its entry in a checkpoint, and a checkpoint
  that exists was built under the profile and holds the partition has now: only entries
  can have been added since.

The domain still trusts nothing it has not checked on the read: a checkpoint is only used
through ``added_since``, which answers None unless the stamp read now shows nothing but
entries added since the checkpoint's stamp.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from memory_core.domain.errors import Unavailable
from memory_core.domain.models import EntryKind, MemoryEntry, ProfileKey, ScopeState, Share
from memory_core.domain.snapshots import PartitionStamp, ScopeSnapshot, Snapshots

CHECKPOINT_MIN_SECTIONS = 256
"""A read is checkpointed once it shows this many entries: below it a fresh process builds the
read about as fast as it reads a checkpoint (at 256 entries a full build is about 2 ms on SQLite),
and every checkpoint is a write."""

CHECKPOINT_REFRESH_SECTIONS = 256
"""A checkpoint is written again once a read shows this many entries more than it does: a fresh
process then loads at most about this many entries beside it."""

FORMAT = 2
"""The payload's layout, and the rendering of its sections (2: headings on one line, another author's heading lines
escaped). A checkpoint of another layout is ignored (the read is built instead)."""


@dataclass(frozen=True, slots=True)
class StoredCheckpoint:
    """A checkpoint as a store keeps it: the stamp it was built at, and the domain's payload (text)."""

    stamp: PartitionStamp
    payload: str


@runtime_checkable
class ReadCheckpoints(Protocol):
    """A store that keeps checkpoints of reads, per owner partition (see the module's promises)."""

    def read_checkpoint(self, instance_id: str, upn: str, read_key: str) -> StoredCheckpoint | None:
        """What ``keep_checkpoint`` last stored for ``read_key`` in the partition, if it still exists."""
        ...

    def keep_checkpoint(self, instance_id: str, upn: str, read_key: str, checkpoint: StoredCheckpoint) -> bool:
        """Store ``checkpoint`` for ``read_key`` (replacing the one before) if the partition's stamp is
        ``checkpoint.stamp`` at the moment of the write; False, storing nothing, when it is not or when
        the store cannot hold one this large. Raises ``Unavailable`` when the store cannot be reached."""
        ...


def read_key(keys: Sequence[ProfileKey], viewer: str) -> str:
    """A fixed-length name for the read of ``keys`` by ``viewer`` (documents are rendered per viewer)."""
    named = "\n".join([viewer, *(k.profile_id for k in keys)])
    return hashlib.sha256(named.encode("utf-8")).hexdigest()[:32]


def encode(keys: Sequence[ProfileKey], snapshots: Snapshots) -> str:
    """``snapshots`` (the read of ``keys``) as a checkpoint's payload."""
    return json.dumps({
        "format": FORMAT,
        "sequence": snapshots.sequence,
        "profiles": [k.profile_id for k in keys],
        "scopes": [{
            "document": s.document,
            "last_entry": _entry_data(s.last_entry) if s.last_entry is not None else None,
            "entry_agent_name": s.entry_agent_name,
            "sections": s.sections,
        } for s in snapshots.scopes],
    }, ensure_ascii=False, separators=(",", ":"))


def decode(keys: Sequence[ProfileKey], stored: StoredCheckpoint) -> Snapshots | None:
    """The snapshots ``stored`` holds for the read of ``keys``; None when it is of another layout or
    another read. Their states carry no profile or holds: extending them from the store supplies those."""
    try:
        data = json.loads(stored.payload)
        if data.get("format") != FORMAT or data.get("profiles") != [k.profile_id for k in keys]:
            return None
        scopes = tuple(
            ScopeSnapshot.of(ScopeState(key, None), str(s["document"]),
                             _entry(key, s["last_entry"]) if s["last_entry"] is not None else None,
                             s["entry_agent_name"], int(s["sections"]))
            for key, s in zip(keys, data["scopes"], strict=True)
        )
        return Snapshots(stored.stamp, int(data["sequence"]), scopes, sum(s.sections for s in scopes))
    except (ValueError, KeyError, TypeError):
        return None  # not what ``encode`` writes: build the read instead


def _entry_data(entry: MemoryEntry) -> dict[str, Any]:
    return {
        "id": entry.id, "content_markdown": entry.content_markdown, "kind": entry.kind.value,
        "created_on": entry.created_on.isoformat(), "author_upn": entry.author_upn,
        "author_user_id": entry.author_user_id, "agent_name": entry.agent_name, "reason": entry.reason,
        "session_id": entry.session_id, "operation_id": entry.operation_id, "tags": list(entry.tags),
        "share": entry.share.value, "content_sha256": entry.content_sha256,
    }


def _entry(key: ProfileKey, data: dict[str, Any]) -> MemoryEntry:
    return MemoryEntry(
        id=str(data["id"]), key=key, content_markdown=str(data["content_markdown"]), kind=EntryKind(data["kind"]),
        created_on=datetime.fromisoformat(data["created_on"]), author_upn=str(data["author_upn"]),
        author_user_id=data["author_user_id"], agent_name=data["agent_name"], reason=data["reason"],
        session_id=data["session_id"], operation_id=data["operation_id"], tags=tuple(data["tags"]),
        share=Share(data["share"]), content_sha256=str(data["content_sha256"]),
    )


class Checkpointing:
    """Where ``SnapshotCache`` finds and leaves checkpoints of one store's reads. Thread-safe (stateless)."""

    def __init__(self, store: ReadCheckpoints, min_sections: int = CHECKPOINT_MIN_SECTIONS,
                 refresh_sections: int = CHECKPOINT_REFRESH_SECTIONS) -> None:
        self._store = store
        self._min_sections = min_sections
        self._refresh_sections = refresh_sections
        self.kept = 0
        self.refused = 0

    def stored(self, keys: Sequence[ProfileKey], viewer: str) -> Snapshots | None:
        """The read's checkpoint, as snapshots to extend (``SnapshotCache`` checks them against the store)."""
        stored = self._store.read_checkpoint(keys[0].instance_id, keys[0].upn, read_key(keys, viewer))
        return decode(keys, stored) if stored is not None else None

    def due(self, snapshots: Snapshots) -> bool:
        """True when ``snapshots`` should be stored: large enough, and grown enough past the checkpoint
        this process knows of (``snapshots.checkpointed``; None: none)."""
        if snapshots.shown < self._min_sections:
            return False
        return snapshots.checkpointed is None or snapshots.shown - snapshots.checkpointed >= self._refresh_sections

    def keep(self, keys: Sequence[ProfileKey], viewer: str, snapshots: Snapshots) -> bool:
        """Store ``snapshots`` as the read's checkpoint; False when the store refused it (the partition
        moved on, the payload is too large for it, or it is unavailable: the read is answered anyway)."""
        return self.keep_stored(keys, read_key(keys, viewer), StoredCheckpoint(snapshots.stamp, encode(keys, snapshots)))

    def keep_stored(self, keys: Sequence[ProfileKey], name: str, checkpoint: StoredCheckpoint) -> bool:
        """Store ``checkpoint`` as ``name`` in the partition of ``keys``; False when the store refused it."""
        try:
            kept = self._store.keep_checkpoint(keys[0].instance_id, keys[0].upn, name, checkpoint)
        except Unavailable:
            kept = False  # a cache write: the read it belongs to has its answer already
        if kept:
            self.kept += 1
        else:
            self.refused += 1
        return kept


__all__ = [
    "CHECKPOINT_MIN_SECTIONS", "CHECKPOINT_REFRESH_SECTIONS", "Checkpointing", "ReadCheckpoints",
    "StoredCheckpoint", "decode", "encode", "read_key",
]
