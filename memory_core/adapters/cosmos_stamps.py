"""Partition stamps on Cosmos DB: what lets the Cosmos store implement ``domain.snapshots.ChangeStamps``.

One stamp item per owner partition (``type: "stamp"``, id ``stamp:{owner digest}``,
the partition's own key) holds ``changes`` (writes that can change a read),
``inserts`` (those that added entries) and ``sequence`` (the last entry
sequence handed out). Every write that can change a read (an entry stored or
erased, a profile created, saved or erased, a hold placed, changed or lifted)
is one transactional batch whose first operation moves the stamp, replacing it
If-Match its etag (or creating it when the partition has none), and every entry
in it carries the sequence it takes (``seq``). Hence:

- the stamp and the write commit together or not at all: no crash can leave a
  write without its bump;
- two writers that start from the same stamp cannot both commit: the second
  gets 412 on the stamp, Cosmos DB rolls its whole batch back, and it re-reads
  the stamp and tries again, so no bump (and no sequence) is ever lost or reused;
- sequences follow commit order, so "every entry after sequence n" is exactly
  what was added since a read that saw sequence n.

A read point-reads the stamp first and only then queries (``CosmosMemoryStore.
load_since``). Under the account's session consistency (Cosmos DB's default; an
account set to eventual consistency would void this) the query then sees at
least every write the stamp counts, so a snapshot labelled with a stamp never
misses a write the stamp counts. Entries the query finds beyond the stamp's
sequence are left for the next read, which will see a moved stamp.

A partition written before stamps existed has no stamp item: a write creates
it (Create in the batch: 409 when another writer made it first, then retry),
and a read treats it as unknown (a full load, which creates it). Entries
stored before then have no ``seq`` and count as sequence 0. A new stamp starts
``changes`` at the clock in microseconds, so a stamp that was ever lost and made
again never equals one a snapshot was built at. The app never deletes stamps.

On the test server a batch is applied operation by operation (no rollback) but
within one turn of its event loop (no request sees it half done); the stamp
goes first, so a stamp refused with 412 leaves the rest of the batch unapplied
there too.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from azure.cosmos.exceptions import CosmosBatchOperationError, CosmosResourceExistsError

from memory_core.adapters.cosmos_calls import Calls
from memory_core.adapters.cosmos_documents import SCHEMA_VERSION
from memory_core.domain.errors import Unavailable
from memory_core.domain.snapshots import PartitionStamp

STAMP = "stamp"
UNKNOWN = PartitionStamp(-1, -1)
"""What ``partition_stamp`` answers for a partition without a stamp item: equal to no stamp a
snapshot is built at (those count from the clock), so the read loads everything."""

_ATTEMPTS = 64  # 412s in a row before giving up, if the operation's time budget lasts that long
_BACKOFF_CAP = 0.1  # seconds; the jitter lets contending writers take turns
_LAST_TRY = 0.5  # seconds of the budget kept for one more stamp read and batch
_CACHE_SIZE = 4096
_CHECK_REUSED_WITHIN = 1.0  # seconds: a snapshot check and the load that follows it, on one thread
_CHECKS_KEPT = 4  # partitions whose check a thread remembers (a sharing read checks two)
_RETRY_AFTER_CONTENDED = 1

Operation = tuple[Any, ...]
"""One operation of ``ContainerProxy.execute_item_batch``: (kind, args) or (kind, args, kwargs)."""


def stamp_item_id(owner: str) -> str:
    """``stamp:`` + a digest of the owner: unique per instance even where ids are unique per instance only."""
    return "stamp:" + hashlib.sha256(owner.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class StoredStamp:
    """A partition's stamp item as read or written, with its etag."""

    changes: int
    inserts: int
    sequence: int
    etag: str | None = None

    @property
    def stamp(self) -> PartitionStamp:
        return PartitionStamp(self.changes, self.inserts)

    def moved(self, inserts: int) -> StoredStamp:
        """The stamp after one more write that adds ``inserts`` entries (no etag yet)."""
        return StoredStamp(self.changes + 1, self.inserts + inserts, self.sequence + inserts)

    @staticmethod
    def new() -> StoredStamp:
        return StoredStamp(time.time_ns() // 1000, 0, 0)

    @staticmethod
    def from_item(item: Mapping[str, Any]) -> StoredStamp:
        return StoredStamp(int(item["changes"]), int(item["inserts"]), int(item["sequence"]), item.get("_etag"))

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
        }


class BatchRefused(Exception):
    """An operation of the caller's in a stamped batch failed, so nothing of the batch was stored.

    ``index`` counts the caller's operations (the stamp is not one of them); ``error`` is the
    SDK's error, for the caller to re-raise when the status is not one it expects.
    """

    def __init__(self, index: int, status: int | None, error: CosmosBatchOperationError) -> None:
        super().__init__(f"operation {index} of a stamped batch failed with {status}")
        self.index = index
        self.status = status
        self.error = error


class Stamps:
    """Reads and moves partition stamps; keeps the last one seen per partition (a hint for the next write's etag)."""

    def __init__(self, cache_size: int = _CACHE_SIZE) -> None:
        self._seen: OrderedDict[tuple[str, str], StoredStamp] = OrderedDict()
        self._size = cache_size
        self._lock = threading.Lock()
        self._local = threading.local()

    # -- reads -------------------------------------------------------------------

    def read(self, calls: Calls, instance_id: str, owner: str) -> StoredStamp | None:
        """The partition's stamp (one point read), or None when it has none yet."""
        item = calls.read(stamp_item_id(owner), [instance_id, owner])
        if item is None:
            self._forget(instance_id, owner)
            return None
        return self._keep(instance_id, owner, item)

    def check(self, calls: Calls, instance_id: str, owner: str) -> StoredStamp | None:
        """As ``read``, for a read checking its snapshot: the ``current`` of the same partition that
        follows on this thread within a second (the load that rebuilds or extends it) takes this stamp
        instead of reading again. A sharing read checks two partitions, then loads both."""
        found = self.read(calls, instance_id, owner)
        checked: OrderedDict[tuple[str, str], tuple[StoredStamp | None, float]] | None = getattr(
            self._local, "checked", None)
        if checked is None:
            checked = self._local.checked = OrderedDict()
        checked.pop((instance_id, owner), None)
        checked[(instance_id, owner)] = (found, time.monotonic())
        while len(checked) > _CHECKS_KEPT:
            checked.popitem(last=False)
        return found

    def current(self, calls: Calls, instance_id: str, owner: str) -> StoredStamp:
        """The partition's stamp, created when it has none yet (data from before stamps).

        A stamp this thread's ``check`` read just before is taken as is: any stamp read before
        the load's query is a correct label for what the query finds (it sees at least what that
        read saw); an older one only makes the next read extend or rebuild sooner.
        """
        checks = getattr(self._local, "checked", None)
        checked = checks.pop((instance_id, owner), None) if checks is not None else None
        if checked is not None and checked[0] is not None and time.monotonic() - checked[1] < _CHECK_REUSED_WITHIN:
            return checked[0]
        for _ in range(_ATTEMPTS):
            found = self.read(calls, instance_id, owner)
            if found is not None:
                return found
            try:
                return self._keep(instance_id, owner, calls.create(StoredStamp.new().item(instance_id, owner)))
            except CosmosResourceExistsError:
                continue  # a writer made it meanwhile: read that one
        raise _contended()

    def notice(self, items: Iterable[Mapping[str, Any]]) -> None:
        """Remember stamp items a query returned alongside what it was asked for."""
        for item in items:
            if item.get("type") == STAMP:
                self._keep(item["instance_id"], item["upn"], item)

    # -- writes ------------------------------------------------------------------

    def write(
        self,
        calls: Calls,
        instance_id: str,
        owner: str,
        operations: Callable[[int], Sequence[Operation]],
        *,
        inserts: int = 0,
    ) -> list[dict[str, Any]]:
        """Run ``operations(first_sequence)`` and move the stamp, in one transactional batch.

        ``inserts`` is how many entries the operations store; they take the sequences
        ``first_sequence`` to ``first_sequence + inserts - 1`` (each entry item carries its own).
        Returns the caller's operation results. Raises ``BatchRefused`` when one of the
        caller's operations fails, ``Unavailable`` when other writers keep moving the stamp
        first until the operation's time budget (``COSMOS_OPERATION_TIMEOUT``) is nearly spent,
        or 64 times in a row. Each writer that loses waits a random while (exponential, up to
        0.1 s) before it tries again, so contending writers take turns: sixteen at once on one
        partition all get through (tests/memory_tool/test_concurrency.py races eight).
        """
        pk = [instance_id, owner]
        known = self._cached(instance_id, owner)
        for attempt in range(_ATTEMPTS):
            if attempt:
                pause = random.uniform(0, min(_BACKOFF_CAP, 0.002 * 2**attempt))  # jitter, not a secret
                if calls.time_left() < pause + _LAST_TRY:
                    break
                time.sleep(pause)
            if known is None:
                known = self.read(calls, instance_id, owner)
            if known is None:
                moved = StoredStamp.new().moved(inserts)
                stamp_op: Operation = ("create", (moved.item(instance_id, owner),))
            else:
                moved = known.moved(inserts)
                stamp_op = ("replace", (stamp_item_id(owner), moved.item(instance_id, owner)),
                            {"if_match_etag": known.etag})
            try:
                results = calls.execute_batch([stamp_op, *operations(moved.sequence - inserts + 1)], pk)
            except CosmosBatchOperationError as e:
                if e.error_index == 0 and e.status_code in (404, 409, 412):
                    known = None  # another writer moved (or made) the stamp first: read it and go again
                    continue
                raise BatchRefused(e.error_index - 1, e.status_code, e) from e
            body = results[0].get("resourceBody")
            if body:
                self._keep(instance_id, owner, body)
            else:  # an answer without the body (no content on write): read the stamp next time
                self._forget(instance_id, owner)
            return results[1:]
        raise _contended()

    # -- the per-process hint ----------------------------------------------------

    def _cached(self, instance_id: str, owner: str) -> StoredStamp | None:
        with self._lock:
            return self._seen.get((instance_id, owner))

    def _keep(self, instance_id: str, owner: str, item: Mapping[str, Any]) -> StoredStamp:
        stored = StoredStamp.from_item(item)
        with self._lock:
            self._seen[(instance_id, owner)] = stored
            self._seen.move_to_end((instance_id, owner))
            while len(self._seen) > self._size:
                self._seen.popitem(last=False)
        return stored

    def _forget(self, instance_id: str, owner: str) -> None:
        with self._lock:
            self._seen.pop((instance_id, owner), None)


def _contended() -> Unavailable:
    return Unavailable("this memory is being written by many writers at once; retry",
                       retry_after_seconds=_RETRY_AFTER_CONTENDED)


__all__ = ["STAMP", "UNKNOWN", "BatchRefused", "Operation", "Stamps", "StoredStamp", "stamp_item_id"]
