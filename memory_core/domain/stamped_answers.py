"""Read answers kept while their partitions' stamps stay the same (``StampedAnswers``).

The general form of what ``snapshots.SnapshotCache`` does for full reads, for answers that are
not cheap to build: kept budgeted reads, sharing reads' merged snapshots and entries listings.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from memory_core.domain.kept import KeptAnswers
from memory_core.domain.snapshots import ChangeStamps, PartitionStamp

A = TypeVar("A")


class StampedAnswers(Generic[A]):
    """Read answers kept while the store's stamp of their partition stays the same. Thread-safe.

    For reads whose answer is not cheap to build: a budgeted read of a memory larger
    than its budget (a page of the store and a budget's worth of entries rendered), or
    the ordered listing an entries page is cut from. An answer is reused only after the
    partition's stamp, read on this very call, equals the one read before the answer was
    built, so any write since (from any process) rebuilds it. ``key`` must name everything
    the answer depends on besides the partition (the caller as authenticated, the scope,
    the agent, the budget). Answers are held in ``kept`` (a bound shared with the process's
    other kept answers), sized in bytes by ``size``.
    """

    def __init__(self, store: ChangeStamps, size: Callable[[A], int], kept: KeptAnswers | None = None) -> None:
        self._store = store
        self._size = size
        self._answers = kept if kept is not None else KeptAnswers()
        self._space = object()  # this owner's keys in ``kept``: never equal to another owner's
        self.builds = 0
        self.grown = 0
        self.refreshed = 0

    def answer(
        self, key: Hashable, instance_id: str, upn: str, build: Callable[[], A], stamp: PartitionStamp | None = None,
        *, grow: Callable[[A, PartitionStamp], A | None] | None = None,
        refresh: Callable[[A], A | None] | None = None,
        labelled: Callable[[], tuple[A, PartitionStamp]] | None = None,
    ) -> A:
        """The answer for ``key`` in partition ``(instance_id, upn)``: kept if its stamp is current, else ``build()``.

        ``stamp``: the partition's stamp when this call has just read it (a snapshot's), so it is not read twice.
        ``grow(kept, kept_stamp)``: when only entries were added since the kept answer's stamp, the kept
        answer brought up to date from those entries alone, or None to build instead. It must itself
        confirm, from what it reads, that only inserts happened since ``kept_stamp``.
        ``refresh(kept)``: when anything else was written since (or ``grow`` gave up), the kept answer
        brought up to date whatever the writes were, read at or after this call's stamp, or None to build.
        ``labelled()``: as ``build()``, with the stamp its first store read returned in the same view (read no
        later than anything the build read after it), used instead of ``build`` when no ``stamp`` is given and
        nothing is kept for ``key``: there is nothing to compare, so the stamp is not read first.
        """
        if stamp is None and labelled is not None and self._kept(key) is None:
            value, read_at = labelled()
            self.builds += 1
            self._keep(key, (read_at,), value)
            return value
        if stamp is None:
            stamp = self._store.partition_stamp(instance_id, upn)
        grow_one = (lambda kept, stamps: grow(kept, stamps[0])) if grow is not None else None
        return self._answer(key, (stamp,), build, grow_one, refresh)

    def answer_across(
        self, key: Hashable, instance_id: str, owners: Sequence[str], build: Callable[[], A],
        *, grow: Callable[[A, tuple[PartitionStamp, ...]], A | None] | None = None,
    ) -> A:
        """As ``answer``, for an answer read from several partitions of one instance (a sharing read):
        kept while the stamps of all of ``owners``' partitions are unchanged, grown (``grow``, given the
        kept stamps in ``owners``' order) when only entries were added to them, else ``build()``."""
        stamps = tuple(self._store.partition_stamp(instance_id, owner) for owner in owners)
        return self._answer(key, stamps, build, grow, None)

    def peek(
        self, key: Hashable, instance_id: str, upn: str,
        *, grow: Callable[[A, PartitionStamp], A | None] | None = None,
    ) -> A | None:
        """As ``answer``, but never builds: the kept answer for ``key`` if its stamp is current (or
        ``grow`` brought it up to date), else None. With nothing kept it reads nothing (not even
        the stamp: a read that then answers from the store a page at a time needs none)."""
        grow_one = (lambda kept, stamps: grow(kept, stamps[0])) if grow is not None else None
        return self.peek_across(key, instance_id, (upn,), grow=grow_one)

    def peek_across(
        self, key: Hashable, instance_id: str, owners: Sequence[str],
        *, grow: Callable[[A, tuple[PartitionStamp, ...]], A | None] | None = None,
    ) -> A | None:
        """As ``peek``, for an answer read from several partitions (``answer_across``)."""
        kept = self._kept(key)
        if kept is None or len(kept[0]) != len(owners):
            return None
        stamps = tuple(self._store.partition_stamp(instance_id, owner) for owner in owners)
        if kept[0] == stamps:
            return kept[1]
        if grow is not None and all(now.only_added_since(then) for now, then in zip(stamps, kept[0], strict=True)):
            value = grow(kept[1], kept[0])
            if value is not None:
                self.grown += 1
                self._keep(key, stamps, value)
                return value
        return None

    def _answer(
        self, key: Hashable, stamps: tuple[PartitionStamp, ...], build: Callable[[], A],
        grow: Callable[[A, tuple[PartitionStamp, ...]], A | None] | None,
        refresh: Callable[[A], A | None] | None,
    ) -> A:
        kept = self._kept(key)
        if kept is not None and kept[0] == stamps:
            return kept[1]
        # Whatever is built or grown reads at or after ``stamps``: kept under those older stamps, it
        # is built or grown again at the next call if they differ.
        value = None
        if grow is not None and kept is not None and len(kept[0]) == len(stamps) \
                and all(now.only_added_since(then) for now, then in zip(stamps, kept[0], strict=True)):
            value = grow(kept[1], kept[0])
            if value is not None:
                self.grown += 1
        if value is None and refresh is not None and kept is not None:
            value = refresh(kept[1])
            if value is not None:
                self.refreshed += 1
        if value is None:
            value = build()
            self.builds += 1
        self._keep(key, stamps, value)
        return value

    def stamps_of(self, key: Hashable) -> tuple[PartitionStamp, ...] | None:
        """The stamps the answer kept for ``key`` was kept under (None: none kept); reads nothing."""
        kept = self._kept(key)
        return kept[0] if kept is not None else None

    def _kept(self, key: Hashable) -> tuple[tuple[PartitionStamp, ...], A] | None:
        kept: tuple[tuple[PartitionStamp, ...], A] | None = self._answers.get((self._space, key))
        return kept

    def keep(self, key: Hashable, stamps: tuple[PartitionStamp, ...], value: A) -> None:
        """Keep ``value`` for ``key``: an answer read exactly at ``stamps`` (its partitions' stamps, in the
        order later calls name the partitions), built by the caller (counted in ``builds``)."""
        self.builds += 1
        self._keep(key, stamps, value)

    def _keep(self, key: Hashable, stamps: tuple[PartitionStamp, ...], value: A) -> None:
        self._answers.put((self._space, key), (stamps, value), self._size(value))
