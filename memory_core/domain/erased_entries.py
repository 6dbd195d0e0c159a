"""Kept entries brought up to date from a log of the partition's erasures (``ErasedEntries``).

``present_entries`` brings a kept read up to date after an erasure by listing every entry id still
stored: at 60,000 entries about 110 ms on SQLite, and the domain then filters every kept entry by that
list. A store that logs the ids it erases, in the same transaction as each erasure, can answer instead
which ids were erased since a kept read: a command then reads the log's few rows and the entries stored
since, not one row per entry. The log is bounded, so a store says when it no longer covers the kept
read (answering None), and the caller falls back to ``present_entries``: never to less than it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar, runtime_checkable

from memory_core.domain.models import MemoryEntry, ProfileKey, ScopeState
from memory_core.domain.present_entries import merged, without
from memory_core.domain.snapshots import StampedLoad

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class ErasedLoad:
    """What ``ErasedEntries.load_erased`` read, all from one consistent view of the partition.

    ``load.states``: the profiles and holds of the keys now, with only the entries stored since the kept
    read; ``erased``: the ids of every entry of the partition erased since the kept read (entries of
    other profiles, and entries stored and erased since, may be among them); ``load.erasure_mark``: where
    the log stands in this view, for the next call.
    """

    load: StampedLoad
    erased: frozenset[str]


@runtime_checkable
class ErasedEntries(Protocol):
    """A store that logs the entries it erases, per partition, for kept reads to drop the erased ones
    without listing every entry still stored (``domain.file_entries``)."""

    def load_erased(
        self, keys: Sequence[ProfileKey], known: Collection[str], mark: int, after: int
    ) -> ErasedLoad | None:
        """The stamp, profiles and holds of ``keys`` (one partition), the entries of the keys stored since an
        earlier read and not in ``known``, and the ids of the partition's entries erased since the log stood
        at ``mark``: one consistent view, as ``load_since``.

        ``known``, ``mark`` and ``after``: the entry ids, ``erasure_mark`` and ``sequence`` of that earlier
        read of the keys (as ``load_since`` or this call answered them). None when the log no longer reaches
        back to ``mark``: the answer could miss an erasure, and the caller reads what is still stored
        (``PresentEntries``). Raises what ``load_since`` raises.
        """
        ...


def states_less_erased(
    kept: Mapping[S, ScopeState], loaded: ErasedLoad, kept_entries: Mapping[S, Mapping[str, MemoryEntry]]
) -> tuple[dict[S, ScopeState], dict[S, list[MemoryEntry]]]:
    """``kept`` (states of the keys ``loaded`` was read for, in the same order; ``kept_entries``: each one's
    entries by id) as ``loaded`` shows them now: the kept entries not erased, the entries stored since, its
    profiles and holds; and, per scope, the kept entries erased.

    A scope none of whose kept entries was erased is not walked, nor one that lost a few (``without``).
    Entries are in ``(created_on, id)`` order.
    """
    states: dict[S, ScopeState] = {}
    dropped: dict[S, list[MemoryEntry]] = {}
    for (scope, state), new in zip(kept.items(), loaded.load.states, strict=True):
        by_id = kept_entries[scope]
        gone = [by_id[i] for i in loaded.erased if i in by_id]
        entries = state.entries
        dropped[scope] = []
        if gone:
            entries, dropped[scope] = without(state.entries, gone, held=True)
        entries = merged(entries, new.entries) if new.entries else list(entries)
        states[scope] = replace(state, profile=new.profile, entries=entries, holds=new.holds)
    return states, dropped
