"""Read checkpoints on Cosmos DB: what lets the Cosmos store implement ``domain.checkpoints.ReadCheckpoints``.

One checkpoint item per owner partition (``type: "checkpoint"``, id ``checkpoint:{owner digest}``,
the partition's own key) holds up to ``KEPT_PER_PARTITION`` reads' checkpoints, by read key:
the stamp each was built at, when it was kept (a counter: the least recently kept go first)
and its payload, zlib-compressed and base64-encoded (the domain's JSON of 10,000 entries is
about 1.6 MB of text; an item may hold 2 MB). None of its fields is in the container's
indexing policy (infra/arm/cosmos-sql.json), and no query of the store selects it.

The domain's promises, and how they hold here:

- **Kept only while current.** A checkpoint is written in one transactional batch whose first
  operation rewrites the partition's stamp, counters unchanged, If-Match the etag of a stamp
  whose counters are the checkpoint's (``Stamps.checkpoint``). Any write since moved the
  stamp, so the batch fails with 412 and nothing is stored. Every checkpoint write goes
  through that If-Match too, so merging into the item read just before is safe.
- **Erased with what it shows.** That rewrite also sets the stamp's ``checkpointed`` flag, and
  every stamped write that is not only entries added (a forget, a clear, a hold placed or
  lifted, a replace's purge, a profile created, saved or erased) deletes the item in its own
  batch and clears the flag (``Stamps.write``). An append leaves both. The app never writes
  the item any other way, and Cosmos DB never expires it (it has no ``ttl``). What Cosmos DB
  does expire on its own (audit events, finished deletion requests) no read shows; a hold,
  which a read does depend on, may not expire (``cosmos_records._no_expiry``).

A checkpoint (with the others kept beside it) that would make the item larger than
``MAX_ITEM_BYTES`` drops the others, least recently kept first; one too large alone is
refused. A transactional batch carries at most 2 MB, so the bound leaves room for the stamp.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from memory_core.adapters.cosmos_calls import Calls
from memory_core.adapters.cosmos_documents import SCHEMA_VERSION
from memory_core.adapters.cosmos_stamp_item import StoredStamp, checkpoint_item_id
from memory_core.adapters.cosmos_stamps import BatchRefused, Operation, Stamps
from memory_core.domain.checkpoints import StoredCheckpoint
from memory_core.domain.snapshots import PartitionStamp

CHECKPOINT = "checkpoint"
KEPT_PER_PARTITION = 8
"""Reads kept per owner partition (one per read shape: user, each agent, each combined read)."""
MAX_ITEM_BYTES = 1_500_000
"""The largest checkpoint item written, as JSON: Cosmos DB's item limit is 2 MB (``cosmos_documents``),
and its system properties and the batch's stamp must fit beside it."""
_COMPRESSION = 6  # zlib's default: about 7 ms for 1.6 MB of text, 10% smaller than level 1


class CosmosCheckpoints:
    """Reads and writes partitions' checkpoint items, moving their stamps through ``stamps``. Thread-safe
    (stateless besides the stamps' hints)."""

    def __init__(self, stamps: Stamps, *, max_item_bytes: int = MAX_ITEM_BYTES,
                 kept_per_partition: int = KEPT_PER_PARTITION) -> None:
        self._stamps = stamps
        self._max_item_bytes = max_item_bytes
        self._kept_per_partition = kept_per_partition

    def read(self, calls: Calls, instance_id: str, owner: str, read_key: str) -> StoredCheckpoint | None:
        """The checkpoint kept for ``read_key`` (one point read of the partition's item); None when there
        is none, or what is stored cannot be read back (the domain then builds the read).

        No round trip when this very read has just read the partition's stamp and it has no
        checkpoint (a read whose snapshot a forget or a clear made out of date): a stamp read since
        could only show one kept since, which the read then merely does not start from.
        """
        checked = self._stamps.checked_in_read(instance_id, owner)
        if checked is not None and not checked.checkpointed:
            return None
        item = calls.read(checkpoint_item_id(owner), [instance_id, owner])
        if item is None or item.get("type") != CHECKPOINT:
            return None
        reads = item.get("reads")
        kept = reads.get(read_key) if isinstance(reads, Mapping) else None
        if not isinstance(kept, Mapping):
            return None
        try:
            stamp = PartitionStamp(int(kept["changes"]), int(kept["inserts"]))
            payload = zlib.decompress(base64.b64decode(kept["payload"], validate=True)).decode("utf-8")
        except (KeyError, TypeError, ValueError, binascii.Error, zlib.error):
            return None  # not what ``keep`` writes (binascii's and UnicodeDecodeError are ValueErrors too)
        return StoredCheckpoint(stamp, payload)

    def keep(self, calls: Calls, instance_id: str, owner: str, read_key: str, checkpoint: StoredCheckpoint) -> bool:
        """Store ``checkpoint`` for ``read_key`` while the partition's stamp is ``checkpoint.stamp``; False,
        storing nothing, when it is not (or the partition has no stamp) or the checkpoint is too large.

        One transactional batch (the stamp, the item's upsert), after one point read of the item when
        the partition has one (to keep the other reads' checkpoints).
        """
        payload = base64.b64encode(zlib.compress(checkpoint.payload.encode("utf-8"), _COMPRESSION)).decode("ascii")
        entry = {"changes": checkpoint.stamp.changes, "inserts": checkpoint.stamp.inserts, "payload": payload}

        def operations(stamp: StoredStamp) -> Sequence[Operation] | None:
            # The stamp says whether an item exists: without one, nothing to keep beside this read,
            # and anything stored under the id (there should be nothing) is overwritten.
            reads = self._reads(calls, instance_id, owner) if stamp.checkpointed else {}
            item = self._item(instance_id, owner, read_key, entry, reads)
            return [("upsert", (item,))] if item is not None else None

        try:
            written = self._stamps.checkpoint(calls, instance_id, owner, checkpoint.stamp, operations)
        except BatchRefused as refused:
            if refused.status == 413:
                return False  # larger than the account takes after all: a cache, so not an error
            raise refused.error from None
        return written is not None

    def _reads(self, calls: Calls, instance_id: str, owner: str) -> dict[str, Any]:
        item = calls.read(checkpoint_item_id(owner), [instance_id, owner])
        reads = item.get("reads") if item is not None and item.get("type") == CHECKPOINT else None
        return dict(reads) if isinstance(reads, Mapping) else {}

    def _item(
        self, instance_id: str, owner: str, read_key: str, entry: dict[str, Any], reads: dict[str, Any],
    ) -> dict[str, Any] | None:
        """The item with ``entry`` kept for ``read_key``, the others trimmed to fit; None when it cannot fit."""
        others = sorted(((k, v) for k, v in reads.items() if k != read_key and isinstance(v, Mapping)),
                        key=lambda kv: _kept(kv[1]))
        entry = {**entry, "kept": max((_kept(v) for _, v in others), default=0) + 1}
        others = others[max(0, len(others) - (self._kept_per_partition - 1)):]  # room for this one
        while True:
            item = {
                "id": checkpoint_item_id(owner),
                "type": CHECKPOINT,
                "schema_version": SCHEMA_VERSION,
                "instance_id": instance_id,
                "upn": owner,
                "reads": {**dict(others), read_key: entry},
            }
            # As the SDK sends it (json.dumps escapes non-ASCII; the payloads are ASCII already).
            if len(json.dumps(item)) <= self._max_item_bytes:
                return item
            if not others:
                return None
            others = others[1:]  # the least recently kept first


def _kept(entry: Mapping[str, Any]) -> int:
    value = entry.get("kept")
    return value if isinstance(value, int) else 0


__all__ = ["CHECKPOINT", "KEPT_PER_PARTITION", "MAX_ITEM_BYTES", "CosmosCheckpoints"]
