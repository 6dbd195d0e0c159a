"""Context budgets: the newest memory that fits in a number of characters, and what was left out.

The fill rule (docs/budgets.md):

- Characters are Unicode code points (``len`` of the markdown). The answer's
  ``content_markdown`` is never longer than the budget.
- Within a scope, whole entries go in newest first. The first entry that does not
  fit ends that scope's fill, so what is left out is always the oldest part of the
  scope: one date range.
- The document keeps its usual shape: the scope's title, then its entries oldest
  first, exactly as an unbudgeted read renders them.
- When not even the newest entry of a scope fits its share, as many of that entry's
  whole lines as fit are shown (its heading first, at least one line of its text),
  followed by a marker line saying how many lines were shown. When not even its first
  line of text fits, that line is cut: as many of its characters as fit, ending between
  two grapheme clusters, and the marker says how many of the line's characters are
  shown. So an entry is never hidden by its own size; only room for less than its
  heading and one character of text shows nothing of the scope. The entries older than
  a cut one are left out, as after any entry that does not fit whole.
- Combined scope: user and agent memory split the budget evenly (one character is
  kept for the blank line between them), and a share one scope leaves unused goes
  to the other.

Cost: for the private sharing policy (the default) a read asks the store for one
newest-first page sized by the budget, plus a count when something is left out,
so its cost does not grow with the memory. Team and legacy reads merge another
partition's entries and read the scope in full (then apply the same rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from memory_core.domain.models import EntryKind, HeldFacts, MemoryEntry, Scope, ScopeState
from memory_core.domain.rendering import TITLES, render_entry
from memory_core.domain.section_cuts import CUT_MARKER, cut_section
from memory_core.domain.store import EntryWindow, MemoryStore, PageCursor

# The shortest section an entry can render to, with its heading
# ("## Appended 2026-01-02 03:04:05 UTC", a blank line, one character) and the
# blank line before it: a budget of N characters holds at most N // 40 entries.
_MIN_SECTION_CHARS = 40
_MAX_PAGE = 1000


@dataclass(frozen=True, slots=True)
class ScopeBudget:
    """What a budgeted read showed and left out of one scope.

    ``omitted_from``/``omitted_to``: creation times of the oldest and newest entry
    left out (None when nothing was). ``cut_entry_id``: the entry shown only in part
    (it counts as shown); ``cut``: how much of it is shown, in its marker line's words.
    """

    scope: Scope
    shown_entries: int
    omitted_entries: int
    omitted_from: datetime | None = None
    omitted_to: datetime | None = None
    cut_entry_id: str | None = None
    cut: str | None = None  # what the cut entry shows, as its marker line says it ("2 of 3 lines shown")


@dataclass(frozen=True, slots=True)
class BudgetReport:
    """The budget a read was given and, per scope, what it showed and left out."""

    max_chars: int
    chars: int
    scopes: tuple[ScopeBudget, ...]

    @property
    def shown_entries(self) -> int:
        return sum(s.shown_entries for s in self.scopes)

    @property
    def omitted_entries(self) -> int:
        return sum(s.omitted_entries for s in self.scopes)

    @property
    def omitted_from(self) -> datetime | None:
        times = [s.omitted_from for s in self.scopes if s.omitted_from is not None]
        return min(times) if times else None

    @property
    def omitted_to(self) -> datetime | None:
        times = [s.omitted_to for s in self.scopes if s.omitted_to is not None]
        return max(times) if times else None


# -- where entries come from, newest first ---------------------------------------


class NewestFirst:
    """The visible entries of one scope, newest first, with their exact count."""

    _sections: dict[int, str]

    def section(self, index: int, viewer: str | None) -> str | None:
        """The ``index``-th newest entry rendered as a section (kept: a combined fill renders a scope twice)."""
        if not hasattr(self, "_sections"):
            self._sections = {}
        if index not in self._sections:
            entry = self.at(index)
            if entry is None:
                return None
            self._sections[index] = render_entry(entry, viewer)
        return self._sections[index]

    def at(self, index: int) -> MemoryEntry | None:
        """The ``index``-th newest visible entry with content, or None past the oldest."""
        raise NotImplementedError

    def total(self) -> int:
        """How many visible entries with content the scope has."""
        raise NotImplementedError

    def oldest(self) -> datetime | None:
        """When the oldest of them was created."""
        raise NotImplementedError

    def read_so_far(self) -> Sequence[MemoryEntry]:
        """The newest entries already at hand (newest first), without reading the store again."""
        raise NotImplementedError

    def newest_visible(self) -> MemoryEntry | None:
        """The newest visible entry, with content or without (an empty replace shows nothing, yet it is
        when the memory last changed, and a later entry sorting before it is hidden by it); None when
        the scope shows none."""
        raise NotImplementedError


class ListedEntries(NewestFirst):
    """Entries already read in full (oldest first), e.g. merged with shared ones."""

    def __init__(self, entries: Sequence[MemoryEntry]) -> None:
        self._newest_first = [e for e in reversed(entries) if e.content_markdown.strip()]
        self._newest = entries[-1] if entries else None

    def newest_visible(self) -> MemoryEntry | None:
        return self._newest

    def at(self, index: int) -> MemoryEntry | None:
        return self._newest_first[index] if index < len(self._newest_first) else None

    def total(self) -> int:
        return len(self._newest_first)

    def oldest(self) -> datetime | None:
        return self._newest_first[-1].created_on if self._newest_first else None

    def read_so_far(self) -> Sequence[MemoryEntry]:
        return self._newest_first


def entry_window(state: ScopeState) -> EntryWindow | None:
    """The entries of ``state``'s profile its clear watermark and holds leave visible, before any replace.

    ``state`` as ``load_heads`` reads it. None when a hold cannot be expressed as a
    window (one limited to an author's copies): the scope must then be read in full.
    """
    held = HeldFacts.of(state.key.profile_id, state.holds)
    if held.by_author:
        return None
    after = state.profile.cleared_on if state.profile else None
    if held.watermark is not None and (after is None or held.watermark > after):
        after = held.watermark
    return EntryWindow(state.key, after=after, excluded_ids=held.entry_ids)


def is_visible(store: MemoryStore, entry: MemoryEntry) -> bool:
    """Whether ``entry`` shows in its scope now (as ``ScopeState.visible_entries`` decides).

    Bounded store work at any memory size: the profile and holds, then the newest
    visible replace (an entry older than it no longer shows). Only a hold limited to
    an author's copies makes it read the scope in full.
    """
    (head,) = store.load_heads([entry.key])
    window = entry_window(head)
    if window is None:
        (state,) = store.load([entry.key])
        return entry.id in {e.id for e in state.visible_entries()}
    if (window.after is not None and entry.created_on <= window.after) or entry.id in window.excluded_ids:
        return False
    newest_replace = store.newest_entries(window, 1, kind=EntryKind.REPLACE)
    return not newest_replace or entry.sort_key >= newest_replace[0].sort_key


def visible_entry(store: MemoryStore, instance_id: str, upn: str, entry_id: str) -> MemoryEntry | None:
    """``upn``'s entry ``entry_id`` if it is stored and shows in its scope now (``is_visible``), else None.

    None alike for an id never stored or erased, and for an entry a clear, a replace or a pending
    deletion hides: the callers that look an entry up by id answer both the same (not found).
    """
    entry = store.get_entry(instance_id, upn, entry_id)
    return entry if entry is not None and is_visible(store, entry) else None


class StoredEntries(NewestFirst):
    """A scope's visible entries read page by page from the store, newest first.

    The window starts from the profile's clear watermark and the holds; the newest
    replace, met on a page or looked up when the count is needed, starts the
    document anew. The count is asked for only when the caller needs it.
    """

    def __init__(self, store: MemoryStore, window: EntryWindow, page_size: int) -> None:
        self._store = store
        self._window = window
        self._page_size = max(1, min(page_size, _MAX_PAGE))
        self._fetched: list[MemoryEntry] = []
        self._cursor: PageCursor | None = None
        self._exhausted = False
        self._start_known = False
        self._count: tuple[int, datetime | None] | None = None
        self._newest: MemoryEntry | None = None

    @classmethod
    def of(cls, store: MemoryStore, state: ScopeState, page_size: int) -> StoredEntries | None:
        """The source for ``state`` (read by ``load_heads``); None when a hold cannot be
        expressed as a window (one limited to an author's copies)."""
        window = entry_window(state)
        return cls(store, window, page_size) if window is not None else None

    def at(self, index: int) -> MemoryEntry | None:
        while index >= len(self._fetched) and not self._exhausted:
            self._next_page()
        return self._fetched[index] if index < len(self._fetched) else None

    def total(self) -> int:
        return self._counted()[0]

    def oldest(self) -> datetime | None:
        return self._counted()[1]

    def read_so_far(self) -> Sequence[MemoryEntry]:
        return self._fetched

    def newest_visible(self) -> MemoryEntry | None:
        if self._cursor is None and not self._exhausted:
            self._next_page()
        return self._newest

    def _next_page(self) -> None:
        page = self._store.newest_entries(self._window, self._page_size, cursor=self._cursor)
        if self._cursor is None and page:
            self._newest = page[0]  # the first page's first: the newest the window shows, with content or not
        if len(page) < self._page_size:
            self._exhausted = True
        if page:
            last = page[-1].created_on
            seen = {e.id for e in page if e.created_on == last}
            if self._cursor is not None and self._cursor.created_on == last:
                seen |= self._cursor.seen_ids
            self._cursor = PageCursor(last, frozenset(seen))
        for entry in page:
            if entry.kind is EntryKind.REPLACE:
                self._start_at(entry)
                if entry.content_markdown.strip():
                    self._fetched.append(entry)
                return
            if entry.content_markdown.strip():
                self._fetched.append(entry)
            else:
                # An empty import under approval renders nothing: neither shown nor counted.
                self._window = replace(self._window, excluded_ids=self._window.excluded_ids | {entry.id})

    def _start_at(self, replace_entry: MemoryEntry) -> None:
        """The document starts at ``replace_entry``; an empty replace itself shows nothing."""
        excluded = self._window.excluded_ids
        if not replace_entry.content_markdown.strip():
            excluded = excluded | {replace_entry.id}
        self._window = replace(self._window, start=replace_entry.sort_key, excluded_ids=excluded)
        self._exhausted = True
        self._start_known = True

    def _counted(self) -> tuple[int, datetime | None]:
        if self._count is None:
            if self._exhausted:
                self._count = (len(self._fetched), self._fetched[-1].created_on if self._fetched else None)
            else:
                if not self._start_known:
                    newest_replace = self._store.newest_entries(self._window, 1, kind=EntryKind.REPLACE)
                    if newest_replace:
                        self._start_at(newest_replace[0])
                        self._exhausted = False  # the pages read so far are all newer than it
                counted = self._store.count_entries(self._window)
                self._count = (counted.count, counted.oldest)
        return self._count


def page_size_for(max_chars: int) -> int:
    """Entries per store page: as many as could fit in ``max_chars``, plus the one that does not."""
    return max_chars // _MIN_SECTION_CHARS + 2


# -- filling ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScopeFill:
    """The sections one scope shows (oldest first), the document's length, and what it left out."""

    scope: Scope
    sections: tuple[str, ...]
    chars: int
    shown: int
    next_left_out: MemoryEntry | None
    cut_entry_id: str | None = None

    @property
    def cut(self) -> str | None:
        """What the cut entry shows, as its marker line says it; None when no entry was cut."""
        if self.cut_entry_id is None:
            return None
        return self.sections[0].rsplit("\n", 1)[1].removeprefix(CUT_MARKER).removesuffix("]")

    def document(self) -> str:
        """The scope's document, shaped as ``render_scope`` shapes it; "" when nothing is shown."""
        if not self.sections:
            return ""
        return "\n\n".join([TITLES[self.scope], *self.sections]) + "\n"

    def report(self, source: NewestFirst) -> ScopeBudget:
        if self.next_left_out is None:
            return ScopeBudget(self.scope, self.shown, 0, cut_entry_id=self.cut_entry_id, cut=self.cut)
        omitted = source.total() - self.shown
        return ScopeBudget(self.scope, self.shown, omitted, source.oldest(), self.next_left_out.created_on,
                           self.cut_entry_id, self.cut)


def fill_scope(scope: Scope, source: NewestFirst, budget: int, viewer: str | None) -> ScopeFill:
    """Whole entries newest first while they fit in ``budget`` characters (see the module's rule)."""
    overhead = len(TITLES[scope]) + 1  # the title, and the document's final newline
    newest_first: list[str] = []
    used = 0
    index = 0
    while True:
        section = source.section(index, viewer)
        if section is None:
            return ScopeFill(scope, tuple(reversed(newest_first)), used, index, None)
        added = len(section) + 2 + (0 if newest_first else overhead)
        if used + added > budget:
            break
        newest_first.append(section)
        used += added
        index += 1
    left_out = source.at(index)
    if newest_first:
        return ScopeFill(scope, tuple(reversed(newest_first)), used, index, left_out)
    partial = cut_section(section, budget - overhead - 2)
    if partial is None or left_out is None:
        return ScopeFill(scope, (), 0, 0, left_out)
    return ScopeFill(scope, (partial,), overhead + 2 + len(partial), 1, source.at(1), left_out.id)


def fill_combined(
    user: NewestFirst, agent: NewestFirst, budget: int, viewer: str | None
) -> tuple[ScopeFill, ScopeFill]:
    """User and agent memory in one budget: an even split, and a share one leaves unused goes to the other."""
    if user.at(0) is None or agent.at(0) is None:
        # At most one scope has anything to show: it gets the whole budget.
        return fill_scope(Scope.USER, user, budget, viewer), fill_scope(Scope.AGENT, agent, budget, viewer)
    room = max(0, budget - 1)  # the blank line between the two documents
    first_user = fill_scope(Scope.USER, user, room // 2, viewer)
    agent_fill = fill_scope(Scope.AGENT, agent, room - first_user.chars, viewer)
    user_fill = fill_scope(Scope.USER, user, room - agent_fill.chars, viewer)
    return user_fill, agent_fill


def newest_agent_name(fill: ScopeFill, source: NewestFirst) -> str | None:
    """The agent name of the newest shown entry that has one."""
    for index in range(fill.shown):
        entry = source.at(index)
        if entry is not None and entry.agent_name:
            return entry.agent_name
    return None


__all__ = [
    "CUT_MARKER", "BudgetReport", "ListedEntries", "NewestFirst", "ScopeBudget", "ScopeFill", "StoredEntries",
    "cut_section", "entry_window", "fill_combined", "fill_scope", "is_visible", "newest_agent_name", "page_size_for",
    "visible_entry",
]
