"""The ordered listings entries pages are cut from, kept per process and grown after appends.

An entries page (``GET .../memory/entries``, the console's list) is a slice of the scope's
visible entries in listing order: user scope before agent scope, then time, then id.
Building that order reads every entry of the scope. ``Listings`` keeps it while the
partition's stamp is unchanged, as ``StampedAnswers`` does for any answer, and when only
entries were added since (appends, from any process) it reads just those and inserts
them, so the first page after an append no longer reads the whole memory.

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
from datetime import UTC

from memory_core.domain.models import SHARED_OWNER, MemoryEntry, ProfileKey, Scope, ScopeState
from memory_core.domain.snapshots import ChangeStamps, PartitionStamp, StampedAnswers, added_since, appended_after

Position = tuple[str, str, str]

_ENTRY_OVERHEAD_CHARS = 200
"""Allowance per listed entry besides its text (ids, dates, the tuple): a rough size, for eviction only."""


def entry_position(entry: MemoryEntry) -> Position:
    """An entry's place in a listing: user scope before agent scope, then time, then id."""
    rank = "0" if entry.key.scope is Scope.USER else "1"
    return rank, entry.created_on.astimezone(UTC).isoformat(timespec="microseconds"), entry.id


@dataclass(frozen=True, slots=True)
class Listing:
    """Visible entries in listing order, each one's position, and the entry sequence they were read at."""

    positions: tuple[Position, ...]
    entries: tuple[MemoryEntry, ...]
    sequence: int = 0

    @staticmethod
    def of(visible: Sequence[MemoryEntry], sequence: int = 0) -> Listing:
        ordered = sorted(((entry_position(e), e) for e in visible), key=lambda pair: pair[0])
        return Listing(tuple(p for p, _ in ordered), tuple(e for _, e in ordered), sequence)

    def grown(self, added: Sequence[ScopeState], sequence: int) -> Listing | None:
        """This listing with the visible entries of ``added`` inserted, or None when it must be rebuilt."""
        positions, entries = list(self.positions), list(self.entries)
        for state in added:
            shown = appended_after(state, self._newest_in(state.key.scope))
            if shown is None:
                return None
            for entry in shown:
                position = entry_position(entry)
                at = bisect.bisect_right(positions, position)
                positions.insert(at, position)
                entries.insert(at, entry)
        return Listing(tuple(positions), tuple(entries), sequence)

    def _newest_in(self, scope: Scope) -> MemoryEntry | None:
        end = bisect.bisect_left(self.positions, ("1",)) if scope is Scope.USER else len(self.positions)
        if end == 0:
            return None
        last = self.entries[end - 1]
        return last if last.key.scope is scope else None

    @property
    def size(self) -> int:
        return sum(len(e.content_markdown) + _ENTRY_OVERHEAD_CHARS for e in self.entries)


class Listings:
    """Listings of one stamped store, per (key, partition), kept current by stamp. Thread-safe."""

    def __init__(self, store: ChangeStamps) -> None:
        self._store = store
        self._answers: StampedAnswers[Listing] = StampedAnswers(store, lambda listing: listing.size)

    @property
    def builds(self) -> int:
        """Listings built from a full read of their scope (not grown), for tests and benchmarks."""
        return self._answers.builds

    def listing(self, key: Hashable, keys: Sequence[ProfileKey]) -> Listing:
        """The visible entries of ``keys`` (one partition, private policy) in listing order, as of this call."""
        instance_id, upn = keys[0].instance_id, keys[0].upn

        def build() -> Listing:
            loaded = self._store.load_since(keys, None)
            return Listing.of([e for state in loaded.states for e in state.visible_entries()], loaded.sequence)

        def grow(kept: Listing, kept_at: PartitionStamp) -> Listing | None:
            loaded = added_since(self._store, keys, kept.sequence, kept_at)
            return kept.grown(loaded.states, loaded.sequence) if loaded is not None else None

        return self._answers.answer(key, instance_id, upn, build, grow=grow)

    def across(self, key: Hashable, keys: Sequence[ProfileKey], build: Callable[[], Listing]) -> Listing:
        """A sharing read's listing (``keys`` merged with the instance's shared entries): ``build()``'s,
        kept while neither the caller's partition nor the shared one has changed."""
        return self._answers.answer_across(key, keys[0].instance_id, (keys[0].upn, SHARED_OWNER), build)
