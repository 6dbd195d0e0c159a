"""A full load that leaves out the entries a clear's or a hold's watermark hides (``load_unhidden``).

A scope cleared under operator approval stays stored, whole, until an operator decides: a hold
hides every entry created up to the request. A read built then (a fresh process, or any process
whose snapshot cannot be brought up to date) used to load and walk every one of those entries to
show none of them (about 70 ms at 10,000 entries on SQLite, for a get, a budgeted get and an
entries page alike). What a read shows never depends on an entry such a watermark hides
(``ScopeState.visible_entries`` drops them before it looks for the newest replace), so a store
that reads the profiles and holds first can skip them (``UnhiddenLoads``; SQLite, in the same read
transaction).

A store that cannot do it in one read is not asked to: on Cosmos DB it would be a query of the
profiles and holds before the query of every item, one round trip more on every full load (a
process's first read of a memory without a checkpoint, every memory under 256 entries), to save
reading hidden entries only while a clear is pending. Such a store loads in full, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memory_core.domain.models import ProfileKey
from memory_core.domain.snapshots import ChangeStamps, StampedLoad


@runtime_checkable
class UnhiddenLoads(Protocol):
    """A store that loads a read in full less what a watermark hides, from one consistent view."""

    def load_unhidden(self, keys: Sequence[ProfileKey]) -> StampedLoad:
        """As ``load_since(keys, None)`` (one partition), less the entries a profile's clear watermark or
        the watermark of a hold on the whole profile hides, decided by the profiles and holds of the same
        view: every entry a read of the answer can show is in it, under the same profiles and holds, and
        ``stamp`` and ``sequence`` label it as ``load_since``'s do. Raises what ``load_since`` raises."""
        ...


def load_unhidden(store: ChangeStamps, keys: Sequence[ProfileKey]) -> StampedLoad:
    """``store.load_unhidden(keys)`` when the store has it (``UnhiddenLoads``), else ``load_since(keys, None)``."""
    return store.load_unhidden(keys) if isinstance(store, UnhiddenLoads) else store.load_since(keys, None)
