"""Partition stamps on Cosmos DB: what lets the Cosmos store implement ``domain.snapshots.ChangeStamps``.

``Stamps`` reads and moves each partition's stamp item (its id, fields and how one stamp follows
another: ``cosmos_stamp_item``). What callers rely on:

- ``Stamps.write`` runs the caller's operations in one transactional batch whose first operation
  moves the stamp If-Match its etag (or creates it): a write and its bump commit together or not at
  all; two writers that start from the same stamp cannot both commit, so no bump and no sequence is
  lost or reused; sequences follow commit order. A write that is not only entries added erases the
  partition's checkpoint in the same batch (second, after the stamp).
- A profile's watermark (the stamp's ``clears``: the ``cleared_on`` a ``save_profile`` stored) moves
  in the same batch as that save: an append's ``guard`` checks its entry's time against the stamp
  its batch is If-Match on, so the check holds when the batch commits.
- A read point-reads the stamp before it queries (``CosmosKeptReads.load_since``); under the account's
  session consistency the query then sees every write the stamp counts.
- ``Stamps.check`` inside ``Stamps.one_read`` lends the stamp it read to that read's next
  ``current`` of the partition, once, and never to a later read.
- Entries a batch erases are logged in the stamp it moves (``erased``: their ids and a count, bounded), so a
  reader's kept read learns what went from the stamp alone (``CosmosKeptReads.load_erased``).
- A partition written before stamps has no stamp item: it reads as unknown (``cosmos_stamp_item.UNKNOWN``, a full
  load), and ``current`` or the next write creates it.

Why this is exact, what it costs, and what the test server cannot show: docs/cosmos.md ("Reads,
snapshots and search: the cost model per store", "How it stays exact", and "What the test server
cannot exercise").
"""

from __future__ import annotations

import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from azure.cosmos.exceptions import CosmosBatchOperationError, CosmosResourceExistsError

from memory_core.adapters.cosmos_calls import Calls
from memory_core.adapters.cosmos_stamp_item import (
    ERASED_KEPT,
    STAMP,
    StoredStamp,
    checkpoint_item_id,
    stamp_item_id,
)
from memory_core.domain.errors import Unavailable
from memory_core.domain.models import SHARED_OWNER
from memory_core.domain.snapshots import PartitionStamp

BATCH_OPERATIONS = 100  # the most a transactional batch may hold (a Cosmos DB limit)
CALLER_OPERATIONS = BATCH_OPERATIONS - 2
"""The most operations a caller may put in one stamped batch: the rest are the stamp's move and,
when the partition has a checkpoint, its erasure."""

_ATTEMPTS = 64  # 412s in a row before giving up, if the operation's time budget lasts that long
_BACKOFF_CAP = 0.1  # seconds; the jitter lets contending writers take turns
_LAST_TRY = 0.5  # seconds of the budget kept for one more stamp read and batch
_CACHE_SIZE = 4096
_CHECKS_KEPT = 4  # partitions whose check one read remembers (a sharing read checks two)
_RETRY_AFTER_CONTENDED = 1
_CHECKPOINT_ATTEMPTS = 3  # a checkpoint is a cache: under contention it is simply not written

Operation = tuple[Any, ...]
"""One operation of ``ContainerProxy.execute_item_batch``: (kind, args) or (kind, args, kwargs)."""


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

    @contextmanager
    def one_read(self) -> Iterator[None]:
        """The span of one service read on this thread (``domain.snapshots.ReadSpans``): what its
        ``check`` calls read is kept for it alone and dropped when it ends. A span opened inside another
        is part of the outer one."""
        if self._checks() is not None:
            yield
            return
        self._local.checked = OrderedDict()
        try:
            yield
        finally:
            self._local.checked = None

    def check(self, calls: Calls, instance_id: str, owner: str) -> StoredStamp | None:
        """As ``read``, for a read checking its snapshot: inside a span (``one_read``), the read's next
        ``current`` of the partition (the load that rebuilds or extends the snapshot) takes this stamp
        instead of reading it again. A sharing read checks two partitions, then loads both."""
        found = self.read(calls, instance_id, owner)
        checked = self._checks()
        if checked is not None:
            checked.pop((instance_id, owner), None)
            checked[(instance_id, owner)] = found
            while len(checked) > _CHECKS_KEPT:
                checked.popitem(last=False)
        return found

    def checked_in_read(self, instance_id: str, owner: str) -> StoredStamp | None:
        """The stamp this very read's ``check`` read of the partition and no load has taken yet, if any
        (left for ``current``): a read that found its snapshot out of date asks it whether the partition
        has a checkpoint before paying a round trip for one. None outside a span."""
        checked = self._checks()
        return checked.get((instance_id, owner)) if checked is not None else None

    def current(self, calls: Calls, instance_id: str, owner: str) -> StoredStamp:
        """The partition's stamp, created when it has none yet (data from before stamps).

        The stamp this very read's ``check`` read is taken as is, once (it is cleared): any stamp
        read before the load's query, within the read, is a correct label for what the query finds
        (it sees at least what that read saw); an older one only makes the next read extend or
        rebuild sooner. A check from an earlier read never is: labelling this read's load with it
        would leave out entries appended before this read began.
        """
        checked = self._checks()
        found = checked.pop((instance_id, owner), None) if checked is not None else None
        if found is not None:
            return found
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
        erases_checkpoint: bool | None = None,
        clear: tuple[str, datetime] | None = None,
        guard: Callable[[StoredStamp | None], None] | None = None,
        counts: bool = True,
        seal: datetime | None = None,
        erased: Sequence[str] = (),
    ) -> list[dict[str, Any]]:
        """Run ``operations(first_sequence)`` and move the stamp, in one transactional batch.

        ``inserts`` is how many entries the operations store; they take the sequences
        ``first_sequence`` to ``first_sequence + inserts - 1`` (each entry item carries its own).
        ``erases_checkpoint``: whether the write erases the partition's checkpoint (in the same
        batch); None means when it adds no entries, which is every write but an append (an append
        that also creates a profile says True). At most ``CALLER_OPERATIONS`` operations
        (``ValueError``). Returns the caller's operation results. Raises ``BatchRefused`` when one
        of the caller's operations fails, ``Unavailable`` when other writers keep moving the stamp
        first until the operation's time budget (``COSMOS_OPERATION_TIMEOUT``) is nearly spent,
        or 64 times in a row. Each writer that loses waits a random while (exponential, up to
        0.1 s) before it tries again, so contending writers take turns: sixteen at once on one
        partition all get through (tests/memory_tool/test_concurrency.py races eight).

        ``clear`` (profile id, cleared_on): the moved stamp carries that profile's watermark (``save_profile``).
        ``guard`` is called with the stamp each attempt's batch is If-Match on (None: the batch creates it)
        before the batch is sent, and may raise to write nothing: what it checks of that stamp holds when the
        batch commits (an append refuses an entry a clear's watermark covers, ``CosmosWrites``).
        ``seal``: the moved stamp also refuses every entry of the partition at or before it (``seal_partition``).
        ``erased``: the ids of the entries the operations erase, logged in the moved stamp (``StoredStamp.moved``), so
        a reader learns which entries went from the stamp alone (``CosmosKeptReads.load_erased``); the ``~shared``
        partition's stamp counts them and keeps no ids.
        ``counts=False``: a write no read can see (``seal_copies``, with ``clear`` and no operations): the stamp
        keeps its counts and its checkpoint, and seals ``clear`` on team copies (``StoredStamp.sealed``: a bounded
        number of seals, the older folded into one floor); only its etag moves, which is what refuses a concurrent
        batch If-Match the stamp before it.
        """
        erases = inserts == 0 if erases_checkpoint is None else erases_checkpoint
        # The shared partition's stamp only counts its erasures: every sharing read point-reads it, and no kept read
        # brought up to date from the log (the memory tool's, of the caller's own partition) reads it.
        keeps = 0 if owner == SHARED_OWNER else ERASED_KEPT
        pk = [instance_id, owner]
        known = self._cached(instance_id, owner)
        missing_at: str | None = None  # the etag of a stamp whose checkpoint item proved missing
        for attempt in range(_ATTEMPTS):
            if attempt:
                pause = random.uniform(0, min(_BACKOFF_CAP, 0.002 * 2**attempt))  # jitter, not a secret
                if calls.time_left() < pause + _LAST_TRY:
                    break
                time.sleep(pause)
            if known is None:
                known = self.read(calls, instance_id, owner)
            erase: list[Operation] = []
            if known is None:
                made = StoredStamp.new()
                moved = (made.sealed(clear) if not counts and clear is not None
                         else made.moved(inserts, erases_checkpoint=erases, clear=clear, erased=erased,
                                                   keeps=keeps))
            elif not counts and clear is not None:
                moved, erases = known.sealed(clear), False
            else:
                moved = known.moved(inserts, erases_checkpoint=erases, clear=clear, erased=erased, keeps=keeps)
                if erases and known.checkpointed and known.etag != missing_at:
                    # Second, not last: on the test server (no rollback) a missing item then stops
                    # the batch before the caller's operations are applied.
                    erase = [("delete", (checkpoint_item_id(owner),))]
            if seal is not None:
                moved = moved.partition_sealed(seal)
            stamp_op: Operation = (
                ("create", (moved.item(instance_id, owner),)) if known is None
                else ("replace", (stamp_item_id(owner), moved.item(instance_id, owner)), {"if_match_etag": known.etag})
            )
            if guard is not None:
                guard(known)
            batch = [stamp_op, *erase, *operations(moved.sequence - inserts + 1)]
            if len(batch) - 1 - len(erase) > CALLER_OPERATIONS:
                raise ValueError(f"a stamped batch takes at most {CALLER_OPERATIONS} operations")
            try:
                results = calls.execute_batch(batch, pk)
            except CosmosBatchOperationError as e:
                if e.error_index == 0 and e.status_code in (404, 409, 412):
                    known = None  # another writer moved (or made) the stamp first: read it and go again
                    continue
                if erase and e.error_index == 1:
                    if e.status_code != 404:
                        raise
                    # Flagged but not there (a test-server batch that stopped after the stamp): nothing
                    # to erase, so go again without it; a stamp moved meanwhile answers 412 as usual.
                    missing_at = known.etag if known is not None else None
                    continue
                raise BatchRefused(e.error_index - 1 - len(erase), e.status_code, e) from e
            body = results[0].get("resourceBody")
            if body:
                self._keep(instance_id, owner, body)
            else:  # an answer without the body (no content on write): read the stamp next time
                self._forget(instance_id, owner)
            return results[1 + len(erase):]
        raise _contended()

    def checkpoint(
        self,
        calls: Calls,
        instance_id: str,
        owner: str,
        at: PartitionStamp,
        operations: Callable[[StoredStamp], Sequence[Operation] | None],
    ) -> list[dict[str, Any]] | None:
        """Run ``operations(stamp)`` (the checkpoint's write) in one transactional batch whose first
        operation rewrites the partition's stamp unchanged but ``checkpointed``, If-Match its etag.

        Only while the stamp is ``at``: the If-Match makes that hold at the moment the batch
        commits, so the stamp this process remembers will do (a stale one gets 412, and the stamp
        is read again). ``operations`` is given the stamp the batch is If-Match on (whether the
        partition has a checkpoint) and may answer None to write nothing. Returns the results of
        the caller's operations; None when nothing was written (the stamp is not ``at``, the
        partition has none, or ``operations`` declined). Raises ``BatchRefused`` when one of the
        caller's operations fails.

        The stamp's etag changes, so other processes' next write of the partition gets 412 and
        reads the stamp again (one more round trip each; a checkpoint is written rarely).
        """
        pk = [instance_id, owner]
        known = self._cached(instance_id, owner)
        fresh = False
        for _ in range(_CHECKPOINT_ATTEMPTS):
            if known is None or known.stamp != at:
                if fresh:
                    return None
                known, fresh = self.read(calls, instance_id, owner), True
                if known is None or known.stamp != at:
                    return None
            ops = operations(known)
            if ops is None:
                return None
            stamp_op: Operation = ("replace", (stamp_item_id(owner), known.marked().item(instance_id, owner)),
                                   {"if_match_etag": known.etag})
            try:
                results = calls.execute_batch([stamp_op, *ops], pk)
            except CosmosBatchOperationError as e:
                if e.error_index == 0 and e.status_code in (404, 412):
                    # Moved, or another checkpoint written (counters unchanged): read it and see.
                    known, fresh = self.read(calls, instance_id, owner), True
                    continue
                raise BatchRefused(e.error_index - 1, e.status_code, e) from e
            body = results[0].get("resourceBody")
            if body:
                self._keep(instance_id, owner, body)
            else:
                self._forget(instance_id, owner)
            checks = self._checks()
            if checks is not None:  # this read's check said "no checkpoint": no longer so
                checks.pop((instance_id, owner), None)
            return results[1:]
        return None

    # -- the per-process hint ----------------------------------------------------

    def _checks(self) -> OrderedDict[tuple[str, str], StoredStamp | None] | None:
        """The checks of this thread's open read (``one_read``), by partition; None outside one."""
        checks: OrderedDict[tuple[str, str], StoredStamp | None] | None = getattr(self._local, "checked", None)
        return checks

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


__all__ = ["CALLER_OPERATIONS", "BatchRefused", "Operation", "Stamps"]
