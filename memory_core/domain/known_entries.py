"""What a snapshot knows of its scope's entries, so an erasure drops sections instead of rendering again.

A snapshot (``snapshots.ScopeSnapshot``) answers reads with its rendered document. After a
forget, a hold or a clear (any write but an entry added) it used to be built again from a full
load, every entry rendered anew (about 85 ms at 10,000 entries on SQLite). Entries never change
once stored and their ids are never used again (``present_entries``), so a snapshot that keeps
the entries it was built from, and the section it rendered for each visible one, can be brought
up to date from the ids still stored and the entries it does not know
(``refreshed_snapshots``): visibility is decided again from every stored entry, and only the
entries not shown before are rendered.

``KnownEntries`` is that part of a snapshot. It holds the entries as objects (about
``kept.ENTRY_BYTES`` each besides their text) and each section's text besides the document, so a
snapshot that has it costs several times its document (``size``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory_core.domain.kept import entries_bytes, text_bytes
from memory_core.domain.models import MemoryEntry, Scope
from memory_core.domain.rendering import TITLES, render_entry


def section_of(entry: MemoryEntry, viewer: str) -> str:
    """The section ``entry`` shows as in a document ``viewer`` reads; "" when it shows none (an empty
    replacement, as ``rendering.render_scope`` leaves out)."""
    return render_entry(entry, viewer) if entry.content_markdown.strip() else ""


def document_of(scope: Scope, sections: Sequence[str]) -> str:
    """The scope's document made of ``sections`` (those that are "" left out), as ``render_scope``."""
    shown = [s for s in sections if s] if "" in sections else sections
    return "\n\n".join([TITLES[scope], *shown]) + "\n" if shown else ""


_MOST_PARTS = 32
"""How many appended parts a ``KnownEntries`` holds before it joins them into one: a read after an
append adds a part instead of copying every entry (about 0.4 ms at 10,000 entries), and joining
every so many appends keeps flattening them cheap."""


@dataclass(frozen=True, slots=True)
class KnownEntries:
    """The entries a snapshot was built or grown from, and what it shows of them.

    ``entries``: every entry of the scope its loads answered, hidden ones included (a refresh need
    not read them again), in no particular order; ``visible``: those the document shows, oldest
    first; ``sections``: each visible entry's section (``section_of``); ``size``: the bytes held
    besides the document (``kept``'s estimate). Held as parts, one per append since they were last
    joined, so growing them costs what was appended.
    """

    entry_parts: tuple[tuple[MemoryEntry, ...], ...]
    visible_parts: tuple[tuple[MemoryEntry, ...], ...]
    section_parts: tuple[tuple[str, ...], ...]
    size: int
    shown: int
    """How many sections the document shows (entries with an empty text show none)."""
    newest: MemoryEntry | None
    """The newest visible entry."""

    @staticmethod
    def of(
        entries: Sequence[MemoryEntry], visible: Sequence[MemoryEntry], sections: Sequence[str], size: int | None = None
    ) -> KnownEntries:
        """``sections``: ``section_of`` each of ``visible``, in order; ``size``: what ``size`` counts for
        them, when the caller knows it (counted when not)."""
        if size is None:
            size = entries_bytes(entries) + sum(text_bytes(s) for s in sections)
        sections = tuple(sections)
        return KnownEntries((tuple(entries),), (tuple(visible),), (sections,), size,
                            len(sections) - sections.count(""), visible[-1] if visible else None)

    @property
    def entries(self) -> tuple[MemoryEntry, ...]:
        return _joined(self.entry_parts)

    @property
    def visible(self) -> tuple[MemoryEntry, ...]:
        return _joined(self.visible_parts)

    @property
    def sections(self) -> tuple[str, ...]:
        return _joined(self.section_parts)

    def followed_by(
        self, added: Sequence[MemoryEntry], shown: Sequence[MemoryEntry], sections: Sequence[str]
    ) -> KnownEntries:
        """These entries and ``added`` (entries stored since), of which ``shown`` (with ``sections``)
        follow the visible ones."""
        if not added:
            return self
        grown = KnownEntries((*self.entry_parts, tuple(added)), (*self.visible_parts, tuple(shown)),
                             (*self.section_parts, tuple(sections)),
                             self.size + entries_bytes(added) + sum(text_bytes(s) for s in sections),
                             self.shown + sum(1 for s in sections if s), shown[-1] if shown else self.newest)
        if len(grown.entry_parts) <= _MOST_PARTS:
            return grown
        return KnownEntries((grown.entries,), (grown.visible,), (grown.sections,), grown.size, grown.shown,
                            grown.newest)


def _joined(parts: tuple[tuple[Any, ...], ...]) -> tuple[Any, ...]:
    return parts[0] if len(parts) == 1 else tuple(itertools.chain.from_iterable(parts))


__all__ = ["KnownEntries", "document_of", "section_of"]
