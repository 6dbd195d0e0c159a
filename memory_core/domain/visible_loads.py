"""A full load that leaves out the entries a clear's or a hold's watermark hides (``load_unhidden``).

A scope cleared under operator approval stays stored, whole, until an operator decides: a hold
hides every entry created up to the request. A read built then (a fresh process, or any process
after the clear moved the stamp) used to load and walk every one of those entries to show none
of them (about 70 ms at 10,000 entries on SQLite, for a get, a budgeted get and an entries page
alike). What a read shows never depends on an entry such a watermark hides (``ScopeState.
visible_entries`` drops them before it looks for the newest replace), so the load can skip them:
the profiles and holds first, then only the entries after each profile's watermark.

The parts are separate reads, so they are made one consistent view by the partition's stamp:
read before and after them, and only answered when unchanged. Every write that can change a
read moves the stamp in the same transaction as the write (``snapshots.ChangeStamps``) and a
stamp never moves back, so an unchanged stamp means no write came between the parts. Otherwise,
and whenever no watermark hides anything, it is ``load_since(keys, None)``, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Protocol, runtime_checkable

from memory_core.domain.budget import entry_window
from memory_core.domain.models import MemoryEntry, ProfileKey, ScopeState
from memory_core.domain.snapshots import ChangeStamps, StampedLoad
from memory_core.domain.store import EntryWindow

_ALL = 2**31 - 1
"""The limit of a window's read that wants every entry in it."""


@runtime_checkable
class WindowedStamps(ChangeStamps, Protocol):
    """A store that stamps its partitions (``ChangeStamps``) and reads a profile's entries in a window
    (``MemoryStore``'s ``load_heads`` and ``oldest_entries``): what ``load_unhidden`` needs."""

    def load_heads(self, keys: Sequence[ProfileKey]) -> list[ScopeState]: ...

    def oldest_entries(
        self, window: EntryWindow, limit: int, *, after: tuple[datetime, str] | None = None
    ) -> list[MemoryEntry]: ...


def load_unhidden(store: ChangeStamps, keys: Sequence[ProfileKey]) -> StampedLoad:
    """As ``store.load_since(keys, None)`` (one partition), less the entries a watermark hides: a
    profile's clear watermark, or the watermark of a hold on the whole profile. Every entry a read
    of the answer can show is in it, under the same profiles and holds; ``sequence`` and ``stamp``
    label it as ``load_since``'s do.

    When a watermark hides entries it costs two stamp reads, the profiles and holds, the partition's
    sequence and one read per key of the entries after its watermark; when none does, one read of
    the profiles and holds more than ``load_since``. Raises what the store's reads raise.
    """
    if not isinstance(store, WindowedStamps):
        return store.load_since(keys, None)
    instance_id, upn = keys[0].instance_id, keys[0].upn
    before = store.partition_stamp(instance_id, upn)
    heads = store.load_heads(keys)
    windows = [entry_window(head) for head in heads]
    if before.changes < 1 or all(w is not None and w.after is None for w in windows) \
            or any(w is None for w in windows):
        # Nothing to skip, a hold limited to an author's copies (only the shared partition has those),
        # or a partition without a stamp: the one-query load.
        return store.load_since(keys, None)
    sequence = store.entry_sequence(instance_id, upn)
    entries = [store.oldest_entries(EntryWindow(head.key, after=w.after if w is not None else None), _ALL)
               for head, w in zip(heads, windows, strict=True)]
    if store.partition_stamp(instance_id, upn) != before:
        return store.load_since(keys, None)  # a write came between the parts
    states = [replace(head, entries=found) for head, found in zip(heads, entries, strict=True)]
    return StampedLoad(before, sequence, states)
