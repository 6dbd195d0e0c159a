"""Rendered snapshots of a read, kept per process and checked against the store on every read.

A get used to load and render every entry of the scope, so its cost grew with
the memory (about 200 ms at 10,000 entries). A store that stamps its partitions
(``ChangeStamps``) lets a read cost one small query instead:

- every write to a partition (entry, profile, hold) moves its stamp; the stamp
  is kept by the store itself (SQLite: triggers), so every process and every
  write path moves it, and a snapshot is only answered while the stamp it was
  built at is still current;
- when only entries were added since (an append), the snapshot is extended
  with just those entries instead of being rebuilt;
- anything else (a clear, a hold placed or lifted, a forget, a replace, a
  profile change) brings it up to date from the entry ids still stored when it
  knows its entries (``refreshed_snapshots``), and rebuilds it from the store
  when it does not (one restored from a checkpoint).

Nothing is trusted that the store has not confirmed on this read, so a
snapshot can never show memory that a write, clear, hold or import has
changed, and it is keyed by the viewer, so it never shows one user another's
view.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memory_core.domain.added_entries import added_since, appended_after
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.kept import KeptAnswers, text_bytes
from memory_core.domain.known_entries import KnownEntries, document_of, newest_agent, section_of
from memory_core.domain.models import MemoryEntry, ProfileKey, Scope, ScopeState
from memory_core.domain.rendering import TITLES, render_combined
from memory_core.domain.views import MemoryView, ScopeRead, combined_view, newest_agent_name, read_view

if TYPE_CHECKING:
    from memory_core.domain.checkpoints import Checkpointing


@dataclass(frozen=True, slots=True)
class PartitionStamp:
    """How many writes a partition has seen (``changes``), and how many of them added an entry."""

    changes: int
    inserts: int

    def only_added_since(self, earlier: PartitionStamp) -> bool:
        """True when every write between ``earlier`` and this stamp added an entry and did nothing else."""
        return self.changes - self.inserts == earlier.changes - earlier.inserts and self.inserts >= earlier.inserts


@dataclass(frozen=True, slots=True)
class StampedLoad:
    """What ``ChangeStamps.load_since`` read, all from one consistent view of the partition."""

    stamp: PartitionStamp
    sequence: int
    states: list[ScopeState]
    erasure_mark: int | None = None
    """Where the partition's log of erased entries stood in this view (``erased_entries.ErasedEntries``),
    for a store that keeps one; None otherwise."""


@runtime_checkable
class ChangeStamps(Protocol):
    """A store that stamps each owner partition on every write, whatever process writes it."""

    def partition_stamp(self, instance_id: str, upn: str) -> PartitionStamp:
        """The partition's current stamp (one small read)."""
        ...

    def entry_sequence(self, instance_id: str, upn: str) -> int:
        """A sequence at least that of every entry stored in the partition so far (one small read).

        Every entry stored afterwards has a higher one, so ``load_since`` with it finds them all.
        """
        ...

    def load_since(self, keys: Sequence[ProfileKey], after: int | None) -> StampedLoad:
        """As ``load``, with the partition's stamp and entry sequence read in the same transaction.

        ``after`` None loads every entry; otherwise only entries stored after sequence ``after``.
        ``sequence`` is the highest entry sequence of the partition at that moment.
        """
        ...

    def load_stamped_heads(self, keys: Sequence[ProfileKey]) -> StampedLoad:
        """As ``load_heads`` (profiles and holds, no entries), with the partition's stamp and entry
        sequence from the same consistent view of it (one query on Cosmos DB, one read transaction on SQLite).

        A read that starts from the heads labels itself with that stamp instead of reading the stamp
        first (``StampedAnswers.answer``'s ``labelled``): the label is read no later than anything the
        read reads after it, as a stamp read first would be.
        """
        ...


@runtime_checkable
class ReadSpans(Protocol):
    """A store that lets one service read reuse what an earlier call of the same read found (Cosmos DB:
    the stamp a ``partition_stamp`` read, taken by the read's next ``load_since`` instead of a second
    round trip), and never lets a later read reuse it. Reads open one span each (``read_spans``)."""

    def one_read(self) -> AbstractContextManager[None]:
        """The span of one service read on this thread: what a call inside it leaves for the next is
        dropped when it ends, and nothing from outside it is taken. A span opened inside another is
        part of the outer one."""
        ...


def read_spans(store: object) -> Callable[[], AbstractContextManager[None]]:
    """What opens the span of one service read on ``store`` (``ReadSpans``); nothing to open on a store
    without them. Every read that checks a stamp and may then load runs inside one. Ask once per store
    and keep the answer: the Protocol check costs more than a kept read (about 7 us against 10)."""
    return store.one_read if isinstance(store, ReadSpans) else nullcontext


@dataclass(frozen=True, slots=True)
class ScopeSnapshot:
    """One scope as a viewer reads it: state (profile, holds), rendered document, newest visible entry.

    A private read's snapshot also knows the entries it was built from (``known``: what decides
    whether each shows, and where each shown one is in the document), so it can be brought up to
    date after an erasure without rendering again (``refreshed_snapshots``); one restored from a
    checkpoint, or a sharing read's, keeps only the document and the newest entry.
    """

    state: ScopeState
    document: str
    last_entry: MemoryEntry | None
    entry_agent_name: str | None
    sections: int = 0
    """How many entries the document shows (what a budgeted read that fits reports as shown)."""
    known: KnownEntries | None = None

    @staticmethod
    def build(state: ScopeState, viewer: str, visible: Sequence[MemoryEntry] | None = None) -> ScopeSnapshot:
        """The snapshot of ``state`` as ``viewer`` reads it; ``visible``: the entries it shows, oldest first,
        when not ``state``'s own visible entries (a sharing read's merge, which keeps no ``known``)."""
        if visible is not None:
            sections = _sections(visible, viewer)
            document = "\n\n".join([TITLES[state.key.scope], *sections]) + "\n" if sections else ""
            return ScopeSnapshot.of(state, document, visible[-1] if visible else None, newest_agent_name(visible),
                                    len(sections))
        shown = state.visible_entries()
        rendered = [section_of(e, viewer) for e in shown]
        return ScopeSnapshot.knowing(state, document_of(state.key.scope, rendered),
                                     KnownEntries.built(state.entries, shown, rendered))

    @staticmethod
    def knowing(state: ScopeState, document: str, known: KnownEntries) -> ScopeSnapshot:
        """The snapshot whose ``document`` shows what ``known`` says (one shown part), under ``state``'s
        profile and holds."""
        (shown,) = known.shown_parts
        return ScopeSnapshot.of(state, document, known.tail[-1] if known.tail else None, newest_agent(shown),
                                len(shown) - shown.spans.count(0), known)

    @staticmethod
    def of(
        state: ScopeState, document: str, last_entry: MemoryEntry | None, entry_agent_name: str | None,
        sections: int, known: KnownEntries | None = None,
    ) -> ScopeSnapshot:
        """``state`` keeps only the profile and holds."""
        return ScopeSnapshot(ScopeState(state.key, state.profile, [], state.holds), document, last_entry,
                             entry_agent_name, sections, known)

    def as_read(self) -> ScopeRead:
        return ScopeRead(self.state.key, self.state.profile, self.last_entry, self.document, self.entry_agent_name)

    def extended(self, added: ScopeState, viewer: str) -> ScopeSnapshot | None:
        """This snapshot with ``added``'s entries appended, or None when they need a rebuild.

        A rebuild is needed when an added entry is a replace (it restarts the document) or
        sorts before the newest visible entry (a write whose clock ran behind).
        """
        shown = appended_after(added, self.last_entry)
        return self.followed_by(added, shown, viewer) if shown is not None else None

    def followed_by(self, added: ScopeState, shown: Sequence[MemoryEntry], viewer: str) -> ScopeSnapshot:
        """This snapshot with ``shown`` (entries that sort after its newest, oldest first) at the end of
        its document, under ``added``'s profile and holds; what it knows grows by ``added``'s entries."""
        rendered = [section_of(e, viewer) for e in shown]
        known = self.known.followed_by(added.entries, shown, rendered) if self.known is not None else None
        sections = [s for s in rendered if s]
        if not shown:
            return ScopeSnapshot.of(added, self.document, self.last_entry, self.entry_agent_name, self.sections, known)
        if not sections:
            document = self.document
        elif self.document:
            document = self.document + "\n" + "\n\n".join(sections) + "\n"
        else:
            document = "\n\n".join([TITLES[added.key.scope], *sections]) + "\n"
        return ScopeSnapshot.of(added, document, shown[-1], newest_agent_name(shown, self.entry_agent_name),
                                self.sections + len(sections), known)


_SNAPSHOT_BYTES = 1024
"""What a scope's snapshot holds besides its document: the profile, holds, newest entry and the objects."""


def _sections(entries: Sequence[MemoryEntry], viewer: str) -> list[str]:
    # An empty replacement (import replace of "") leaves nothing to show (as render_scope).
    return [s for s in (section_of(e, viewer) for e in entries) if s]


@dataclass(frozen=True)
class Snapshots:
    """What ``SnapshotCache.read`` answers: ``scopes`` in key order, and their ``combined`` document."""

    stamp: PartitionStamp
    sequence: int
    scopes: tuple[ScopeSnapshot, ...]
    checkpointed: int | None = None
    """How many entries the store's checkpoint of this read shows, when this process knows of one
    (``domain.checkpoints``); None for snapshots kept from another read's load (``SnapshotCache.keep_loaded``), so
    the next read of them leaves one when they are large enough."""

    @property
    def shown(self) -> int:
        """How many entries the documents show."""
        return sum(s.sections for s in self.scopes)

    @functools.cached_property
    def combined(self) -> str:
        """The scopes' documents as one (a combined read), rendered once per snapshot."""
        return render_combined(*(s.document for s in self.scopes))

    @property
    def size(self) -> int:
        """Bytes held: the documents, and the combined one once rendered (``kept``'s estimate)."""
        held = sum(text_bytes(s.document) + (s.known.size if s.known is not None else 0) for s in self.scopes) \
            + _SNAPSHOT_BYTES * len(self.scopes)
        return held + text_bytes(self.combined) if "combined" in self.__dict__ else held


class SnapshotCache:
    """Per-process snapshots of the reads of one store, one per (profiles read, viewer), held in
    ``kept`` (a bound shared with the process's other kept answers). Thread-safe.

    With ``checkpoints`` (a store that keeps checkpoints, ``domain.checkpoints``) a read this
    process has no snapshot of starts from the store's checkpoint of it, and large reads leave one.
    With ``refresh`` (``refreshed_snapshots``) a kept snapshot that anything but appends made stale
    is brought up to date from it when it can be; ``load``: how a read is loaded in full
    (``load_since(keys, None)`` when not given; ``visible_loads.load_unhidden``). ``loaded``: told of every
    such full load (the keys and what was loaded), so its owner can keep what else it answers from the same
    load (``MemoryReads``: the listing searches and entries pages are cut from); ``keep_loaded`` is the reverse.
    """

    def __init__(self, store: ChangeStamps, kept: KeptAnswers | None = None,
                 checkpoints: Checkpointing | None = None,
                 refresh: Callable[[Sequence[ProfileKey], str, Snapshots], Snapshots | None] | None = None,
                 load: Callable[[Sequence[ProfileKey]], StampedLoad] | None = None,
                 loaded: Callable[[Sequence[ProfileKey], StampedLoad], None] | None = None) -> None:
        self._store = store
        self._answers = kept if kept is not None else KeptAnswers()
        self._checkpoints = checkpoints
        self._refresh = refresh
        self._load = load if load is not None else (lambda keys: store.load_since(keys, None))
        self._loaded = loaded
        self._space = object()  # this cache's keys in ``kept``: never equal to another owner's
        self.rebuilds = 0
        self.extensions = 0
        self.restores = 0
        self.refreshes = 0

    def read(self, keys: Sequence[ProfileKey], viewer: str) -> Snapshots:
        """The snapshots of ``keys`` (one partition, the viewer's own) as of this read, in key order."""
        slot = (tuple(keys), viewer)
        current = self.peek(keys, viewer)
        if current is not None:
            checkpointed = self._checkpointed(keys, viewer, current)
            if checkpointed is not current:  # peek kept ``current``: keep what knows its checkpoint
                self._keep(slot, checkpointed)
            return checkpointed
        current = self._refreshed(keys, viewer, slot) or self._restored(keys, viewer) or self._built(keys, viewer)
        current = self._checkpointed(keys, viewer, current)
        self._keep(slot, current)
        return current

    def _refreshed(self, keys: Sequence[ProfileKey], viewer: str, slot: Hashable) -> Snapshots | None:
        """The kept snapshot of the read brought up to date whatever was written since; None without one
        (or without ``refresh``, or when it cannot be)."""
        stale: Snapshots | None = self._answers.get((self._space, slot))
        if stale is None or self._refresh is None:
            return None
        refreshed = self._refresh(keys, viewer, stale)
        if refreshed is not None:
            self.refreshes += 1
        return refreshed

    def _built(self, keys: Sequence[ProfileKey], viewer: str) -> Snapshots:
        """The read loaded from the store in full (less what a watermark hides, with ``load_unhidden``)."""
        loaded = self._load(keys)
        self.rebuilds += 1
        if self._loaded is not None:
            self._loaded(keys, loaded)
        return _of_load(loaded, viewer)

    def keep_loaded(self, keys: Sequence[ProfileKey], viewer: str, loaded: StampedLoad) -> None:
        """Keep the snapshots of ``keys`` as ``viewer`` reads them, built from ``loaded``: a full load of them
        (as ``load`` answers one: every entry a read can show, under the same profiles and holds) made for
        another read of this process (a search's listing), so the next read of them reads no entry.

        Kept under ``loaded.stamp``, as ``read`` keeps what it builds: the next read answers them only while the
        stamp is that one, so nothing written since shows stale. A snapshot kept at that stamp already is left
        as it is. Leaves no checkpoint (a search should not pay a checkpoint's write) and knows of the one the
        snapshot it replaces knew (None when there was none), so the next ``read`` of them leaves one when a read
        it built itself would: not at every get after a search (a review found "edit, search, get" writing one
        each time).
        """
        slot = (tuple(keys), viewer)
        kept: Snapshots | None = self._answers.get((self._space, slot))
        if kept is None or kept.stamp != loaded.stamp:
            self._keep(slot, replace(_of_load(loaded, viewer), checkpointed=kept.checkpointed if kept else None))

    def _restored(self, keys: Sequence[ProfileKey], viewer: str) -> Snapshots | None:
        """The read from the store's checkpoint, extended with what was added since; None without one."""
        stored = self._checkpoints.stored(keys, viewer) if self._checkpoints is not None else None
        if stored is None:
            return None
        restored = self._extend(keys, viewer, stored)
        if restored is None:
            return None  # not only entries were added since it was kept (its store erases it then)
        self.restores += 1
        return restored

    def _checkpointed(self, keys: Sequence[ProfileKey], viewer: str, current: Snapshots) -> Snapshots:
        """``current``, marked as checkpointed when it was due for a checkpoint and the store kept one."""
        if self._checkpoints is None or not self._checkpoints.due(current):
            return current
        return replace(current, checkpointed=current.shown) if self._checkpoints.keep(keys, viewer, current) \
            else current

    def peek(self, keys: Sequence[ProfileKey], viewer: str) -> Snapshots | None:
        """As ``read``, but None instead of loading ``keys`` in full when no snapshot can be kept current.

        Costs one stamp read, plus the entries added since when only entries were added.
        A budgeted read uses it: its own store work is bounded, a rebuild is not.
        """
        slot = (tuple(keys), viewer)
        cached: Snapshots | None = self._answers.get((self._space, slot))
        if cached is None:
            return None
        stamp = self._store.partition_stamp(keys[0].instance_id, keys[0].upn)
        if stamp == cached.stamp:
            self._keep(slot, cached)
            return cached
        if stamp.only_added_since(cached.stamp):
            extended = self._extend(keys, viewer, cached)
            if extended is not None:
                self._keep(slot, extended)
                return extended
        return None

    def _extend(self, keys: Sequence[ProfileKey], viewer: str, cached: Snapshots) -> Snapshots | None:
        loaded = added_since(self._store, keys, cached.sequence, cached.stamp)
        if loaded is None:
            return None  # something else changed between the stamp check and this read
        scopes = []
        for snapshot, added in zip(cached.scopes, loaded.states, strict=True):
            grown = snapshot.extended(added, viewer)
            if grown is None:
                return None
            scopes.append(grown)
        self.extensions += 1
        return Snapshots(loaded.stamp, loaded.sequence, tuple(scopes), cached.checkpointed)

    def _keep(self, slot: tuple[tuple[ProfileKey, ...], str], cached: Snapshots) -> None:
        self._answers.put((self._space, slot), cached, cached.size)


def _of_load(loaded: StampedLoad, viewer: str) -> Snapshots:
    """The snapshots of a full load, as ``viewer`` reads them."""
    return Snapshots(loaded.stamp, loaded.sequence, tuple(ScopeSnapshot.build(s, viewer) for s in loaded.states))


def snapshot_view(caller: Caller, scope: Scope, snapshots: Snapshots, agent: AgentContext | None) -> MemoryView:
    """What a read of ``scope`` answers, from the snapshots of its keys (user then agent for combined)."""
    reads = [s.as_read() for s in snapshots.scopes]
    if scope is not Scope.COMBINED:
        return read_view(caller, reads[0], agent)
    return combined_view(caller, reads[0], reads[1], agent, snapshots.combined)
