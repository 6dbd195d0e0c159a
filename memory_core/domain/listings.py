"""The ordered listings entries pages are cut from, kept per process and grown after appends.

A search a store cannot answer from its own index ranks the same listing (``MemoryReads.search``),
so a search of an unchanged memory reads no entry again. A private listing and a private get's snapshot are
kept from whichever of them loaded the memory in full (``keep_loaded``, ``SnapshotCache.keep_loaded``).

An entries page (``GET .../memory/entries``, the console's list) is a slice of the scope's
visible entries in listing order: user scope before agent scope, then time, then id.
Building that order reads every entry of the scope, so a private read with no current
listing reads its page from the store instead (``stored_pages``) and builds a listing only
when that page held the whole scope. ``Listings`` keeps it while the
partition's stamp is unchanged, as ``StampedAnswers`` does for any answer, and when only
entries were added since (appends, from any process) it reads just those and inserts
them, so the first page after an append no longer reads the whole memory. A listing under
a sharing policy (the caller's entries merged with the shared ones the policy shows) is kept
under both partitions' stamps and grows from appends to either.

The same rules as a snapshot's extension decide when that is safe; otherwise the
listing is built again from the store:

- a replace among the added entries restarts its scope's document: rebuild;
- an added entry that sorts at or before the newest entry listed in its scope (a writer
  whose clock ran behind) could fall before a replace: rebuild;
- anything but added entries (a clear, a hold, a forget, a profile change) fails the
  stamp's ``only_added_since`` check: rebuild.

The profile and holds read with the added entries are the ones the listing was built
under (nothing but inserts happened), so they decide whether each added entry shows.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from memory_core.domain.added_entries import added_since, appended_across
from memory_core.domain.errors import InvalidInput
from memory_core.domain.kept import KeptAnswers, entries_bytes
from memory_core.domain.models import SHARED_OWNER, MemoryEntry, ProfileKey, Scope, ScopeState
from memory_core.domain.shared_snapshots import added_across, load_across
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.snapshots import ChangeStamps, PartitionStamp, StampedLoad
from memory_core.domain.stamped_answers import StampedAnswers
from memory_core.domain.visibility import merged_entries
from memory_core.domain.visible_loads import load_unhidden

Position = tuple[str, str, str]


def scope_rank(scope: Scope) -> str:
    """The first part of a position: user scope ("0") lists before agent scope ("1")."""
    return "0" if scope is Scope.USER else "1"


POSITION_TIME_CHARS = len("2026-01-01T00:00:00.000000+00:00")
"""How long every ``position_time`` is."""


def position_time(moment: datetime) -> str:
    """The second part of a position: the time in UTC, ISO 8601 with microseconds (fixed width,
    ``POSITION_TIME_CHARS``, so text order is time order)."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def entry_position(entry: MemoryEntry) -> Position:
    """An entry's place in a listing: user scope before agent scope, then time, then id."""
    return scope_rank(entry.key.scope), position_time(entry.created_on), entry.id


def listing_position(decoded: Sequence[str] | None) -> tuple[Position, datetime] | None:
    """The position a continuation token carries (``paging.decode_token``'s answer), and its time;
    None for none.

    Only positions an entry can have are taken, so a page read from a listing and one read from
    the store (``stored_pages``) agree on every token. Raises ``InvalidInput``
    (``invalid_continuation``) for anything else: another length, an unknown rank, a time not in
    the form ``position_time`` writes.
    """
    if decoded is None:
        return None
    try:
        rank, at, entry_id = decoded
        moment = datetime.fromisoformat(at)
        if rank not in ("0", "1") or moment.tzinfo is None or position_time(moment) != at:
            raise ValueError(at)
    except (ValueError, TypeError, OverflowError):  # OverflowError: a time at the edge of the calendar
        raise InvalidInput("continuation is not a token this listing answered; start again without it",
                           code="invalid_continuation") from None
    return (rank, at, entry_id), moment


@dataclass(frozen=True, slots=True)
class Listing:
    """Visible entries in listing order, each one's position, and the entry sequences they were read at
    (the caller's partition's; for a sharing read, then the shared partition's)."""

    positions: tuple[Position, ...]
    entries: tuple[MemoryEntry, ...]
    sequences: tuple[int, ...] = ()
    size: int = 0
    """Bytes held (``kept``'s estimate), counted as entries are listed."""

    @staticmethod
    def of(visible: Sequence[MemoryEntry], sequences: tuple[int, ...] = ()) -> Listing:
        ordered = sorted(((entry_position(e), e) for e in visible), key=lambda pair: pair[0])
        return Listing(tuple(p for p, _ in ordered), tuple(e for _, e in ordered), sequences, entries_bytes(visible))

    def grown(
        self, added: Sequence[ScopeState], sequences: tuple[int, ...], shared: Sequence[ScopeState] | None = None,
        policy: SharingPolicy = SharingPolicy.PRIVATE, viewer: str = "",
    ) -> Listing | None:
        """This listing with the visible entries of ``added`` inserted, or None when it must be rebuilt.

        A sharing read's listing also takes ``shared``: per scope, the entries stored since in the shared
        partition, of which it lists those ``policy`` shows ``viewer``.
        """
        positions, entries, size = list(self.positions), list(self.entries), self.size
        offered: Sequence[ScopeState | None] = shared if shared is not None else [None] * len(added)
        for state, offered_state in zip(added, offered, strict=True):
            shown = appended_across(state, offered_state, self._newest_in(state.key.scope), policy, viewer)
            if shown is None:
                return None
            size += entries_bytes(shown)
            for entry in shown:
                position = entry_position(entry)
                at = bisect.bisect_right(positions, position)
                positions.insert(at, position)
                entries.insert(at, entry)
        return Listing(tuple(positions), tuple(entries), sequences, size)

    def _newest_in(self, scope: Scope) -> MemoryEntry | None:
        end = bisect.bisect_left(self.positions, ("1",)) if scope is Scope.USER else len(self.positions)
        if end == 0:
            return None
        last = self.entries[end - 1]
        return last if last.key.scope is scope else None


def _of_load(loaded: StampedLoad) -> Listing:
    """The listing of a private full load: its visible entries, read at its sequence."""
    return Listing.of([e for state in loaded.states for e in state.visible_entries()], (loaded.sequence,))


class Listings:
    """Listings of one stamped store, per (key, partition), kept current by stamp. Thread-safe."""

    def __init__(self, store: ChangeStamps, kept: KeptAnswers | None = None,
                 loaded: Callable[[Sequence[ProfileKey], StampedLoad], None] | None = None) -> None:
        """``kept``: where the listings are held (a bound shared with the process's other kept answers).
        ``loaded``: told of every full load a private listing is built from (the keys and what was loaded), so
        its owner can keep what else it answers from the same load (``MemoryReads``: the snapshot a get answers
        from); ``keep_loaded`` is the reverse."""
        self._store = store
        self._answers: StampedAnswers[Listing] = StampedAnswers(store, lambda listing: listing.size, kept)
        self._loaded = loaded

    @property
    def builds(self) -> int:
        """Listings built (not grown), for tests and benchmarks: from a full read of their scope, or kept
        from a sharing read's first page that held the whole scope (``keep_across``)."""
        return self._answers.builds

    def listing(self, key: Hashable, keys: Sequence[ProfileKey]) -> Listing:
        """The visible entries of ``keys`` (one partition, private policy) in listing order, as of this call."""

        def build() -> Listing:
            loaded = load_unhidden(self._store, keys)  # what a clear's watermark hides is not read
            if self._loaded is not None:
                self._loaded(keys, loaded)
            return _of_load(loaded)

        return self._answers.answer(key, keys[0].instance_id, keys[0].upn, build, grow=self._grower(keys))

    def keep_loaded(self, key: Hashable, loaded: StampedLoad) -> None:
        """Keep the listing of ``key`` (one partition, private policy) built from ``loaded``: a full load of its
        keys (as ``listing`` reads one: every entry a read can show, under the same profiles and holds) made
        for another read of this process (a get's snapshot), so the next search or entries page reads no entry.

        Kept under ``loaded.stamp`` and ``loaded.sequence``: answered only while the stamp is that one, grown
        from the entries stored after that sequence, so nothing written since shows stale. A listing kept at
        that stamp already is left as it is."""
        if self._answers.stamps_of(key) == (loaded.stamp,):
            return
        self._answers.keep(key, (loaded.stamp,), _of_load(loaded))

    def kept(self, key: Hashable, keys: Sequence[ProfileKey]) -> Listing | None:
        """As ``listing``, but None instead of building one: a private read's kept listing, current or
        grown by what was appended since. Reads nothing when none is kept."""
        return self._answers.peek(key, keys[0].instance_id, keys[0].upn, grow=self._grower(keys))

    def _grower(self, keys: Sequence[ProfileKey]) -> Callable[[Listing, PartitionStamp], Listing | None]:
        def grow(kept: Listing, kept_at: PartitionStamp) -> Listing | None:
            loaded = added_since(self._store, keys, kept.sequences[0], kept_at)
            return kept.grown(loaded.states, (loaded.sequence,)) if loaded is not None else None

        return grow

    def across(self, key: Hashable, keys: Sequence[ProfileKey], viewer: str, policy: SharingPolicy) -> Listing:
        """A sharing read's listing: the visible entries of ``keys`` (the viewer's partition) merged with
        those of the instance's shared entries that ``policy`` shows ``viewer``. Kept while neither
        partition changes, grown when only entries were added to them
        (``shared_snapshots.added_across``), else built again."""

        def build() -> Listing:
            loaded = load_across(self._store, keys)
            return Listing.of([e for own, offered in zip(loaded.own.states, loaded.shared.states, strict=True)
                               for e in merged_entries(own, offered, policy, viewer)], loaded.sequences)

        return self._answers.answer_across(key, keys[0].instance_id, (keys[0].upn, SHARED_OWNER), build,
                                           grow=self._across_grower(keys, viewer, policy))

    def kept_across(self, key: Hashable, keys: Sequence[ProfileKey], viewer: str, policy: SharingPolicy) -> Listing | None:
        """As ``across``, but None instead of building one (``kept`` for a sharing read). Reads nothing when
        none is kept."""
        return self._answers.peek_across(key, keys[0].instance_id, (keys[0].upn, SHARED_OWNER),
                                         grow=self._across_grower(keys, viewer, policy))

    def keep_across(self, key: Hashable, listing: Listing, stamps: tuple[PartitionStamp, PartitionStamp]) -> None:
        """Keep ``listing``, a sharing read's listing read exactly at ``stamps`` (the viewer's partition's,
        then the shared one's) and at ``listing.sequences``: ``across`` and ``kept_across`` answer it, or
        grow it, while those partitions change by appends only."""
        self._answers.keep(key, stamps, listing)

    def _across_grower(
        self, keys: Sequence[ProfileKey], viewer: str, policy: SharingPolicy,
    ) -> Callable[[Listing, tuple[PartitionStamp, ...]], Listing | None]:
        def grow(kept: Listing, kept_at: tuple[PartitionStamp, ...]) -> Listing | None:
            sequences = kept.sequences
            loaded = added_across(self._store, keys, (sequences[0], sequences[1]), kept_at)
            if loaded is None:
                return None
            return kept.grown(loaded.own.states, loaded.sequences, loaded.shared.states, policy, viewer)

        return grow
