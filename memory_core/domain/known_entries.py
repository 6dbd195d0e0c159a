"""What a snapshot knows of its scope's entries, so an erasure drops sections instead of rendering again.

A snapshot (``snapshots.ScopeSnapshot``) answers reads with its rendered document. After a
forget, a hold or a clear (any write but an entry added) it used to be built again from a full
load, every entry rendered anew (about 85 ms at 10,000 entries on SQLite). Entries never change
once stored and their ids are never used again (``present_entries``), so a snapshot that knows
which entries it was built from, what decides whether each shows, and where each shown one's
section is in its document, can be brought up to date from the ids still stored and the entries
it does not know (``refreshed_snapshots``): visibility is decided again from every stored entry,
and only the entries not shown before are rendered.

``KnownEntries`` is that part of a snapshot. It keeps what a decision reads and no more, so it
costs about what the document does again, not several times it (``size``; docs/performance.md,
"What reads keep in memory"):

- the shown entries as columns (``ShownColumns``): ids, creation times, kinds, authors and agent
  names (those two interned: one string for every entry of one author), and each one's span in
  the document instead of its section's text;
- the newest few shown entries whole (``tail``): the snapshot's newest entry must be a whole
  entry (a read's ``last_entry``, which a checkpoint keeps);
- the entries it knows that do not show (a hold, a clear's watermark, an older replace): the
  facts and the section it showed as of one that showed before (``ShownBefore``), whole those that
  never showed (``unshown``: to be rendered if they come to) and those of the tail.

At 2,000 entries a kept private get counts 547,961 bytes (553,909 measured) for a document of
194,953: 2.8x, where entries held as objects and sections as strings counted 1,979,757 (10x).
"""

from __future__ import annotations

import itertools
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import accumulate
from typing import TypeVar

from memory_core.domain.kept import entries_bytes
from memory_core.domain.models import EntryKind, MemoryEntry, Scope
from memory_core.domain.rendering import TITLES, render_entry

T = TypeVar("T")

SEPARATOR = "\n\n"
"""What comes before each section in a document (``render_scope``)."""


def section_of(entry: MemoryEntry, viewer: str) -> str:
    """The section ``entry`` shows as in a document ``viewer`` reads; "" when it shows none (an empty
    replacement, as ``rendering.render_scope`` leaves out)."""
    return render_entry(entry, viewer) if entry.content_markdown.strip() else ""


def document_of(scope: Scope, sections: Sequence[str]) -> str:
    """The scope's document made of ``sections`` (those that are "" left out), as ``render_scope``."""
    shown = [s for s in sections if s] if "" in sections else sections
    return SEPARATOR.join([TITLES[scope], *shown]) + "\n" if shown else ""


def interned(text: str | None) -> str | None:
    """``text`` as the one string of its value (``sys.intern``), so columns share it."""
    return sys.intern(text) if text is not None else None


_DATETIME_BYTES = sys.getsizeof(datetime(2026, 1, 1))
_COLUMN_BYTES = 5 * 8 + array("i").itemsize
"""A shown entry's slots in its five columns of references and its span."""


@dataclass(frozen=True, slots=True)
class ShownColumns:
    """Shown entries, oldest first, a column per fact: what deciding again whether they show reads
    (``models.Hold.covers_facts``, the newest replace), what a read reports of the newest (its agent
    name), and ``spans``: the characters each one's section takes in the document with the separator
    before it (0: it shows none, an empty replacement)."""

    ids: tuple[str, ...]
    moments: tuple[datetime, ...]
    kinds: tuple[EntryKind, ...]
    authors: tuple[str, ...]
    agents: tuple[str | None, ...]
    spans: array[int]

    @staticmethod
    def of(entries: Sequence[MemoryEntry], sections: Sequence[str]) -> ShownColumns:
        """``entries`` (oldest first) shown as ``sections`` (``section_of`` each)."""
        return ShownColumns(
            tuple([e.id for e in entries]), tuple([e.created_on for e in entries]), tuple([e.kind for e in entries]),
            tuple([sys.intern(e.author_upn) for e in entries]), tuple([interned(e.agent_name) for e in entries]),
            array("i", [len(s) + 2 if s else 0 for s in sections]),
        )

    @staticmethod
    def joined(parts: Sequence[ShownColumns]) -> ShownColumns:
        """``parts`` one after the other."""
        if len(parts) == 1:
            return parts[0]
        spans = array("i")
        for part in parts:
            spans += part.spans
        return ShownColumns(_chained([p.ids for p in parts]), _chained([p.moments for p in parts]),
                            _chained([p.kinds for p in parts]), _chained([p.authors for p in parts]),
                            _chained([p.agents for p in parts]), spans)

    def without(self, cut: Sequence[int]) -> ShownColumns:
        """These columns less the entries at the positions ``cut`` (ascending)."""
        kept = _kept_ranges(len(self.ids), cut)
        spans = array("i")
        for start, end in kept:
            spans += self.spans[start:end]
        return ShownColumns(_ranged(self.ids, kept), _ranged(self.moments, kept), _ranged(self.kinds, kept),
                            _ranged(self.authors, kept), _ranged(self.agents, kept), spans)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def size(self) -> int:
        """The bytes held (``kept``'s estimate): each id's text and creation time, the slots of the
        columns; kinds, authors and agent names are shared."""
        return sum(map(sys.getsizeof, self.ids)) + len(self.ids) * (_DATETIME_BYTES + _COLUMN_BYTES)


def _chained(columns: Sequence[tuple[T, ...]]) -> tuple[T, ...]:
    if len(columns) == 2:
        return columns[0] + columns[1]  # the usual case (a read after each append): one copy, in C
    out: list[T] = []
    for column in columns:
        out += column
    return tuple(out)


def _kept_ranges(length: int, cut: Sequence[int]) -> list[tuple[int, int]]:
    ranges, start = [], 0
    for at in cut:
        if at > start:
            ranges.append((start, at))
        start = at + 1
    if start < length:
        ranges.append((start, length))
    return ranges


def _ranged(column: tuple[T, ...], ranges: Sequence[tuple[int, int]]) -> tuple[T, ...]:
    if len(ranges) == 1:
        return column[ranges[0][0]:ranges[0][1]]
    out: list[T] = []
    for start, end in ranges:
        out += column[start:end]
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ShownBefore:
    """Known entries that showed once and no longer do (a hold, a pending clear), a column per fact
    as in ``ShownColumns``, with the section each showed as (it shows the same if it comes back:
    neither an entry nor its section for one viewer ever changes)."""

    ids: tuple[str, ...] = ()
    moments: tuple[datetime, ...] = ()
    kinds: tuple[EntryKind, ...] = ()
    authors: tuple[str, ...] = ()
    agents: tuple[str | None, ...] = ()
    sections: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.ids)

    def taken(self, positions: Sequence[int]) -> ShownBefore:
        """Those at ``positions`` (ascending)."""
        if len(positions) == len(self.ids):
            return self
        return ShownBefore(*(tuple([column[at] for at in positions])  # type: ignore[arg-type]
                             for column in (self.ids, self.moments, self.kinds, self.authors, self.agents,
                                            self.sections)))

    @property
    def size(self) -> int:
        """The bytes held (``kept``'s estimate)."""
        return (sum(map(sys.getsizeof, self.ids)) + sum(map(sys.getsizeof, self.sections))
                + len(self.ids) * (_DATETIME_BYTES + 6 * 8))


TAIL = 8
"""How many of the newest shown entries a ``KnownEntries`` keeps whole: after erasures of as many of
the newest, the snapshot's newest entry is still whole (with none left, it is built again)."""

_MOST_PARTS = 32
"""How many appended parts a ``KnownEntries`` holds before it joins them into one: a read after an
append adds a part instead of copying every column (about 0.4 ms at 10,000 entries), and joining
every so many appends keeps flattening them cheap."""


@dataclass(frozen=True, slots=True)
class KnownEntries:
    """The entries a snapshot was built or grown from, and how its document shows them.

    ``shown_parts``: the shown entries (``ShownColumns``), oldest first, as parts, one per append
    since they were last joined, so growing them costs what was appended; ``shown_before`` and
    ``unshown``: every other entry of the scope its loads answered (a refresh need not read them
    again), those that showed once with their sections, the others whole, each in ``(created_on, id)``
    order;
    ``tail``: the newest shown entries whole (at most ``TAIL``, the newest last); ``size``: the
    bytes held besides the document (``kept``'s estimate).
    """

    shown_parts: tuple[ShownColumns, ...]
    shown_before: ShownBefore
    unshown: tuple[MemoryEntry, ...]
    tail: tuple[MemoryEntry, ...]
    size: int

    @staticmethod
    def of(shown: ShownColumns, shown_before: ShownBefore, unshown: Sequence[MemoryEntry],
           tail: Sequence[MemoryEntry]) -> KnownEntries:
        """These entries, ``tail`` the newest of ``shown`` (of which the last ``TAIL`` are kept), sized."""
        tail = tuple(tail[-TAIL:])
        return KnownEntries((shown,), shown_before, tuple(unshown), tail,
                            shown.size + shown_before.size + entries_bytes(unshown) + entries_bytes(tail))

    @staticmethod
    def built(entries: Sequence[MemoryEntry], visible: Sequence[MemoryEntry], sections: Sequence[str]) -> KnownEntries:
        """What a snapshot built from ``entries`` (every entry of the scope loaded) knows when it shows
        ``visible`` (oldest first) as ``sections`` (``section_of`` each)."""
        if len(entries) == len(visible):
            unshown: list[MemoryEntry] = []
        else:
            shown = {e.id for e in visible}
            unshown = in_order([e for e in entries if e.id not in shown])
        return KnownEntries.of(ShownColumns.of(visible, sections), _NONE_BEFORE, unshown, visible)

    @property
    def shown(self) -> ShownColumns:
        """The shown entries' columns, as one."""
        return ShownColumns.joined(self.shown_parts)

    @property
    def ids(self) -> set[str]:
        """The ids of every entry known."""
        ids: set[str] = set()
        for part in self.shown_parts:
            ids.update(part.ids)
        ids.update(self.shown_before.ids)
        ids.update(e.id for e in self.unshown)
        return ids

    def hidden_kinds(self, ids: set[str]) -> list[tuple[str, EntryKind]]:
        """The id and kind of every known entry not shown whose id is in ``ids``."""
        found = [] if ids.isdisjoint(self.shown_before.ids) else [
            (i, kind) for i, kind in zip(self.shown_before.ids, self.shown_before.kinds, strict=True) if i in ids]
        return found + [(e.id, e.kind) for e in self.unshown if e.id in ids] if ids else found

    def less(self, cut: Sequence[int], gone: set[str]) -> KnownEntries:
        """These entries less the shown ones at positions ``cut`` (ascending) and the others whose ids
        are in ``gone``, as one part (sized by what was taken out, not counted again)."""
        shown = self.shown
        before = self.shown_before
        if not gone.isdisjoint(before.ids):
            before = before.taken([at for at, i in enumerate(before.ids) if i not in gone])
        unshown = tuple(e for e in self.unshown if e.id not in gone) if gone else self.unshown
        tail = tuple(e for e in self.tail if e.id not in gone) if cut else self.tail
        size = (self.size - sum(sys.getsizeof(shown.ids[at]) for at in cut)
                - len(cut) * (_DATETIME_BYTES + _COLUMN_BYTES)
                - (self.shown_before.size - before.size if before is not self.shown_before else 0)
                - entries_bytes(e for e in self.unshown if e.id in gone)
                - entries_bytes(self.tail) + entries_bytes(tail))
        return KnownEntries((shown.without(cut) if cut else shown,), before, unshown, tail, size)

    def followed_by(
        self, added: Sequence[MemoryEntry], shown: Sequence[MemoryEntry], sections: Sequence[str]
    ) -> KnownEntries:
        """These entries and ``added`` (entries stored since), of which ``shown`` (with ``sections``)
        follow the shown ones."""
        if not added:
            return self
        size = self.size
        parts = self.shown_parts
        tail = self.tail
        if shown:
            part = ShownColumns.of(shown, sections)
            parts = (*parts, part)
            tail = (*tail, *shown)[-TAIL:]
            size += part.size + entries_bytes(tail) - entries_bytes(self.tail)
        unshown = self.unshown
        if len(shown) < len(added):
            visible = {e.id for e in shown}
            more = [e for e in added if e.id not in visible]
            unshown = tuple(in_order([*unshown, *more]))
            size += entries_bytes(more)
        if len(parts) > _MOST_PARTS:
            parts = (ShownColumns.joined(parts),)
        return KnownEntries(parts, self.shown_before, unshown, tail, size)


_NONE_BEFORE = ShownBefore()


def in_order(entries: list[MemoryEntry]) -> list[MemoryEntry]:
    """``entries`` in ``(created_on, id)`` order (sorted only when they are not)."""
    if all(a.sort_key < b.sort_key for a, b in itertools.pairwise(entries)):
        return entries
    return sorted(entries, key=lambda e: e.sort_key)


def section_starts(shown: ShownColumns, scope: Scope) -> list[int]:
    """Where each shown entry's span starts in the document of ``scope`` that shows them (its separator
    first), and where the last ends."""
    return list(accumulate(shown.spans, initial=len(TITLES[scope])))


def newest_agent(shown: ShownColumns) -> str | None:
    """The agent name of the newest shown entry that has one (``views.newest_agent_name``)."""
    return next((a for a in reversed(shown.agents) if a), None)


__all__ = [
    "SEPARATOR",
    "TAIL",
    "KnownEntries",
    "ShownBefore",
    "ShownColumns",
    "document_of",
    "in_order",
    "interned",
    "newest_agent",
    "section_of",
    "section_starts",
]
