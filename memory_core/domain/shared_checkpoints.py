"""A sharing read on a process that keeps nothing yet, from the checkpoints of both partitions it merges.

A team or legacy read merges the caller's visible entries with the shared partition's
(``shared_snapshots``); a process that keeps no merged read built it from both partitions read
in full: about 90 ms at 10,000 entries on SQLite, every item of both partitions on Cosmos DB.
With a store that keeps checkpoints (``checkpoints.ReadCheckpoints``) each partition keeps its
own part of such reads (``partition_sections.PartitionSections``: its visible entries as rendered
sections, in order), and a first read becomes, per partition: the checkpoint, one query for what
was added since, and the part grown by it. The merge for the viewer and policy is then text work
only.

Why per partition: a store erases a partition's checkpoints in the transaction of any write to it
that is not an entry added (``checkpoints``' promises), so a part never outlives text a custody
rule erased from its partition. A checkpoint of the merged read, stored in either partition,
would outlive erasures in the other. And the domain trusts nothing it has not checked on the
read: a part is used only through ``added_entries.added_since``, which answers None unless the stamp
read now shows nothing but entries added since the part's; the part is then read in full.

The shared partition's part is one per set of profiles, for every viewer (its sections are the
same for every viewer they are shown to); which of its entries a read shows (the policy's shares,
never the viewer's own copies) is decided at the merge, as ``SharingPolicy.shows_shared`` decides.
A part is kept once it holds ``CHECKPOINT_MIN_SECTIONS`` entries, and again once a read grew it by
``CHECKPOINT_REFRESH_SECTIONS``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter

from memory_core.domain.added_entries import added_since
from memory_core.domain.budget import NewestFirst
from memory_core.domain.budgeted_read import KeptRead, kept_read_of
from memory_core.domain.checkpoints import (
    CHECKPOINT_MIN_SECTIONS,
    CHECKPOINT_REFRESH_SECTIONS,
    Checkpointing,
    ReadCheckpoints,
    StoredCheckpoint,
    read_key,
)
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.kept import entries_bytes
from memory_core.domain.listings import POSITION_TIME_CHARS, Listing, Position, scope_rank
from memory_core.domain.models import MemoryEntry, ProfileKey, Scope
from memory_core.domain.partition_sections import ANY_OTHER, PartitionSections, ScopeSections
from memory_core.domain.rendering import TITLES
from memory_core.domain.shared_snapshots import SharedSnapshots
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.snapshots import ChangeStamps, ScopeSnapshot, Snapshots
from memory_core.domain.stored_pages import StoredPage

SECTIONS_READ = "\x00sections"
"""What a part's checkpoint is named under besides its profiles (``checkpoints.read_key``'s viewer
line): no UPN starts with it, so a part's name never is a private read's."""

DECODED_FOR_GROWTH = 1_000
"""The most entries a budgeted sharing read from the parts may show and still decode them all, so that
its kept answer can grow after appends (``MergedNewestFirst.read_so_far``): about 2.5 ms of decoding,
where a budget of 16,000 characters (the MCP default) shows a few hundred entries."""

_POSITION = itemgetter(0)  # a (position, ...) pair's place in the merge order


@dataclass(frozen=True, slots=True)
class SharedParts:
    """Both parts of a sharing read: the caller's partition's, then the shared partition's."""

    own: PartitionSections
    shared: PartitionSections

    @property
    def sequences(self) -> tuple[int, int]:
        """The partitions' entry sequences as read: what growing the merged read starts after."""
        return self.own.sequence, self.shared.sequence


class SharedCheckpoints:
    """Where a sharing read of a process that keeps none starts: each partition's part, restored from
    its checkpoint or read in full (and then kept). Thread-safe (stateless besides its counts)."""

    def __init__(self, store: ChangeStamps, checkpoints: ReadCheckpoints,
                 min_sections: int = CHECKPOINT_MIN_SECTIONS,
                 refresh_sections: int = CHECKPOINT_REFRESH_SECTIONS) -> None:
        """``store`` and ``checkpoints``: the same store, seen as each."""
        self._store = store
        self._checkpoints = checkpoints
        self._min_sections = min_sections
        self._refresh_sections = refresh_sections
        self._keeper = Checkpointing(checkpoints)  # its counts: the parts kept and refused
        self.restores = 0
        self.builds = 0

    @property
    def kept(self) -> int:
        """Parts the store kept, for tests and benchmarks."""
        return self._keeper.kept

    @property
    def refused(self) -> int:
        """Parts the store refused (the partition moved on, too large, unavailable)."""
        return self._keeper.refused

    def parts(self, keys: Sequence[ProfileKey], viewer: str) -> SharedParts:
        """Both parts of a sharing read of ``keys`` (the viewer's partition) by ``viewer``, as of this call."""
        return SharedParts(self._part(keys, viewer), self._part([k.shared() for k in keys], ANY_OTHER))

    def snapshots(self, keys: Sequence[ProfileKey], viewer: str, policy: SharingPolicy) -> SharedSnapshots:
        """What ``shared_snapshots.shared_snapshots`` answers, from the parts."""
        return merged_snapshots(self.parts(keys, viewer), viewer, policy)

    def kept_read(
        self, caller: Caller, scope: Scope, keys: Sequence[ProfileKey], agent: AgentContext | None,
        max_chars: int, policy: SharingPolicy,
    ) -> KeptRead:
        """What ``budgeted_read.kept_read`` answers for a sharing read, from the parts."""
        parts = self.parts(keys, caller.upn)
        sources = [MergedNewestFirst(own, offered, caller.upn, policy)
                   for own, offered in zip(parts.own.scopes, parts.shared.scopes, strict=True)]
        return kept_read_of(caller, scope, keys, agent, max_chars, parts.own.heads, sources, parts.sequences)

    def first_page(self, keys: Sequence[ProfileKey], viewer: str, policy: SharingPolicy, limit: int) -> tuple[
            StoredPage, SharedParts]:
        """The first ``limit`` entries of a sharing read's listing (``listings``' order: user scope, then
        agent scope, each oldest first), from the parts (only those entries are decoded), and the parts."""
        parts = self.parts(keys, viewer)
        found: list[MemoryEntry] = []
        for own, offered in zip(parts.own.scopes, parts.shared.scopes, strict=True):
            for sections, row in itertools.islice(shown_in_order(own, offered, viewer, policy), limit + 1 - len(found)):
                found.append(sections.entries[row])
        return StoredPage(found[:limit], len(found) > limit), parts

    def listing(self, keys: Sequence[ProfileKey], viewer: str, policy: SharingPolicy) -> tuple[Listing, SharedParts]:
        """The whole listing of a sharing read (what ``listings.Listings.across`` builds from both partitions
        read in full), from the parts: every entry it shows is decoded, but neither partition is read in
        full where its checkpoint is current. Read at ``parts.sequences`` and the parts' stamps."""
        parts = self.parts(keys, viewer)
        positions: list[Position] = []
        entries: list[MemoryEntry] = []
        for key, own, offered in zip(keys, parts.own.scopes, parts.shared.scopes, strict=True):
            rank = scope_rank(key.scope)
            # Already in listing order (keys: user scope first), each position held as text: none is formatted.
            for sections, row in shown_in_order(own, offered, viewer, policy):
                at = sections.positions[row]
                positions.append((rank, at[:POSITION_TIME_CHARS], at[POSITION_TIME_CHARS:]))
                entries.append(sections.entries[row])
        return Listing(tuple(positions), tuple(entries), parts.sequences, entries_bytes(entries)), parts

    def _part(self, keys: Sequence[ProfileKey], viewer: str) -> PartitionSections:
        name = read_key(keys, f"{SECTIONS_READ}\n{viewer}")
        stored = self._checkpoints.read_checkpoint(keys[0].instance_id, keys[0].upn, name)
        kept = PartitionSections.decode(keys, stored.stamp, stored.payload) if stored is not None else None
        if kept is not None:
            added = added_since(self._store, keys, kept.sequence, kept.stamp)
            grown = kept.grown(added, viewer) if added is not None else None
            if grown is not None:
                self.restores += 1
                if grown.count - kept.count >= self._refresh_sections:
                    self._keep(keys, name, grown)
                return grown
        built = PartitionSections.of(self._store.load_since(keys, None), viewer)
        self.builds += 1
        if built.count >= self._min_sections:
            self._keep(keys, name, built)
        return built

    def _keep(self, keys: Sequence[ProfileKey], name: str, part: PartitionSections) -> None:
        self._keeper.keep_stored(keys, name, StoredCheckpoint(part.stamp, part.encode(keys)))


def shown_offers(offered: ScopeSections, viewer: str, policy: SharingPolicy) -> set[int]:
    """The offers of the shared partition's ``offered`` whose entries a read by ``viewer`` under ``policy``
    shows: shares the policy reads, by anyone but the viewer (``SharingPolicy.shows_shared``)."""
    shares = {s.value for s in policy.shares_read()}
    return {i for i, (author, share) in enumerate(offered.offers) if share in shares and author != viewer}


def merged_snapshots(parts: SharedParts, viewer: str, policy: SharingPolicy) -> SharedSnapshots:
    """The snapshots of a sharing read by ``viewer`` under ``policy``, merged from ``parts``."""
    scopes = []
    for head, own, offered in zip(parts.own.heads, parts.own.scopes, parts.shared.scopes, strict=True):
        offers = shown_offers(offered, viewer, policy)
        every = len(offers) == len(offered.offers)  # the usual case: nothing of the shared part to filter out
        shown = range(len(offered)) if every else [i for i, o in enumerate(offered.offer_of) if o in offers]
        theirs = zip(offered.positions, offered.texts, strict=True) if every else \
            ((offered.positions[i], offered.texts[i]) for i in shown)
        # Two sorted runs of (position, text): one merge (a stable sort keeps the caller's first on a tie).
        merged = sorted([*zip(own.positions, own.texts, strict=True), *theirs], key=_POSITION)
        texts = [text for _, text in merged if text is not None]
        document = "\n\n".join([TITLES[head.key.scope], *texts]) + "\n" if texts else ""
        newest = [e for e in (own.newest(), *(offered.latest[o] for o in offers if o in offered.latest))
                  if e is not None]
        last = max(newest, key=lambda e: e.sort_key, default=None)
        scopes.append(ScopeSnapshot.of(head, document, last, _newest_agent(own, offered, shown), len(texts)))
    return SharedSnapshots(Snapshots(parts.own.stamp, parts.own.sequence, tuple(scopes)), parts.sequences)


def _newest_agent(own: ScopeSections, offered: ScopeSections, shown: Sequence[int]) -> str | None:
    """The agent name of the newest entry shown that has one (of the shared part's on a tie of positions,
    as the merge orders them)."""
    # any() first: a user scope's entries carry no agent name, and it answers without a walk in Python.
    mine = next((i for i in range(len(own) - 1, -1, -1) if own.agents[i]), None) if any(own.agents) else None
    theirs = next((i for i in reversed(shown) if offered.agents[i]), None) if any(offered.agents) else None
    if theirs is not None and (mine is None or offered.positions[theirs] >= own.positions[mine]):
        return offered.agents[theirs]
    return own.agents[mine] if mine is not None else None


def shown_in_order(own: ScopeSections, offered: ScopeSections, viewer: str, policy: SharingPolicy, *,
                   newest_first: bool = False, with_text: bool = False) -> Iterator[tuple[ScopeSections, int]]:
    """What a sharing read by ``viewer`` under ``policy`` shows of one scope, oldest first (or newest
    first), each as the sections it is of and its row's index there; only entries that render a
    section when ``with_text``. Lazy: a read that takes a page walks about a page of rows."""
    offers = shown_offers(offered, viewer, policy)

    def rows(sections: ScopeSections, shown: Callable[[int], bool]) -> Iterator[tuple[ScopeSections, int]]:
        indices = range(len(sections) - 1, -1, -1) if newest_first else range(len(sections))
        return ((sections, i) for i in indices if shown(i))

    def text(sections: ScopeSections, i: int) -> bool:
        return not with_text or sections.texts[i] is not None

    return heapq.merge(rows(own, lambda i: text(own, i)),
                       rows(offered, lambda i: offered.offer_of[i] in offers and text(offered, i)),
                       key=lambda item: item[0].positions[item[1]], reverse=newest_first)


class MergedNewestFirst(NewestFirst):
    """A sharing read's visible entries of one scope with content, newest first (``budget.NewestFirst``),
    from the parts: each entry decoded when the fill reaches it, its section the one the part holds."""

    def __init__(self, own: ScopeSections, offered: ScopeSections, viewer: str, policy: SharingPolicy) -> None:
        self._order = shown_in_order(own, offered, viewer, policy, newest_first=True, with_text=True)
        self._picked: list[tuple[ScopeSections, int]] = []
        self._fetched: list[MemoryEntry] = []
        offers = shown_offers(offered, viewer, policy)
        self._total = sum(1 for t in own.texts if t is not None) + \
            sum(1 for t, o in zip(offered.texts, offered.offer_of, strict=True) if t is not None and o in offers)
        oldest = next(shown_in_order(own, offered, viewer, policy, with_text=True), None)
        self._oldest = oldest[0].entries[oldest[1]].created_on if oldest is not None else None
        self._parts = (own, offered, viewer, policy)

    def _pick(self, index: int) -> tuple[ScopeSections, int] | None:
        while len(self._picked) <= index < self._total:
            self._picked.append(next(self._order))
        return self._picked[index] if index < self._total else None

    def at(self, index: int) -> MemoryEntry | None:
        while len(self._fetched) <= index < self._total:  # the fill walks from the newest
            picked = self._pick(len(self._fetched))
            assert picked is not None  # below the total
            self._fetched.append(picked[0].entries[picked[1]])
        return self._fetched[index] if index < self._total else None

    def section(self, index: int, viewer: str | None) -> str | None:
        # The part rendered it for this viewer (own entries) or for any viewer it is shown to (others').
        picked = self._pick(index)
        return picked[0].texts[picked[1]] if picked is not None else None

    def total(self) -> int:
        return self._total

    def oldest(self) -> datetime | None:
        return self._oldest

    def read_so_far(self) -> Sequence[MemoryEntry]:
        # Every entry the fill picked is at hand in the parts, though a fill that showed them all never
        # asked for one (``section`` needs no entry). Up to ``DECODED_FOR_GROWTH`` are decoded, so a kept
        # window holds what the fill showed and growing it never asks for one it lacks (which builds the
        # read again). Past that, decoding them all costs more than building the read again from the
        # parts (at 10,000 + 10,000 entries, a budget that shows all: 126 ms against 32), so the window
        # keeps what the fill decoded, and a read after an append is built again, as for a large budget.
        if self._picked and len(self._picked) <= DECODED_FOR_GROWTH:
            self.at(len(self._picked) - 1)
        return self._fetched

    def newest_visible(self) -> MemoryEntry | None:
        own, offered, viewer, policy = self._parts
        newest = next(shown_in_order(own, offered, viewer, policy, newest_first=True), None)
        return newest[0].entries[newest[1]] if newest is not None else None


__all__ = ["DECODED_FOR_GROWTH", "SECTIONS_READ", "MergedNewestFirst", "SharedCheckpoints", "SharedParts", "merged_snapshots", "shown_in_order",
           "shown_offers"]
