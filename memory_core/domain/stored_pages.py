"""Entries pages read from the store a page at a time, for a process that keeps no listing.

An entries page is a slice of the scope's visible entries in listing order
(``listings.entry_position``: user scope before agent scope, then time, then id).
Cutting it from a ``Listing`` costs a read of every entry of the scope when no
current listing is kept (a process just started; any process after a write that
was not an append). A private read answers instead with bounded store queries:

- the profiles and holds (``load_heads``), which give each scope's window: the clear
  and hold watermarks and the entries held one by one (``budget.entry_window``);
- per scope it reaches, the newest visible replace, which starts the document
  (``newest_entries`` of kind replace);
- the page itself: ``oldest_entries`` of the window strictly after the token's
  position, one entry more than the page so the answer knows whether more follow.

So a page reads about ``limit`` entries whatever the memory holds, and answers the
entries, and the token, that a listing built at the same moment would: a walk may mix
pages cut from a listing and pages read here. Held ids past ``QUERY_EXCLUDES`` are
not sent with the queries (a query's size is bounded on Cosmos DB) but filtered here,
reading on until the page is full; the work then grows by the held entries met.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from memory_core.domain.budget import entry_window
from memory_core.domain.listings import Position, scope_rank
from memory_core.domain.models import EntryKind, MemoryEntry, ProfileKey
from memory_core.domain.store import EntryWindow, MemoryStore, PageCursor

QUERY_EXCLUDES = 500
"""Held ids a window's query carries at most; the rest are filtered from what it answers."""
_REPLACES_PER_QUERY = 8


@dataclass(frozen=True, slots=True)
class StoredPage:
    """Up to one page of visible entries in listing order, and whether any visible entry follows."""

    entries: list[MemoryEntry]
    more: bool


def stored_page(
    store: MemoryStore, keys: Sequence[ProfileKey], after: tuple[Position, datetime] | None, limit: int,
    *, query_excludes: int = QUERY_EXCLUDES,
) -> StoredPage | None:
    """The ``limit`` visible entries of ``keys`` (one partition; user then agent for combined) that
    follow ``after`` (a token's position and its time, ``listings.listing_position``) in listing order.

    None when a hold cannot be expressed as a window (one limited to an author's copies, which
    only the shared partition holds): the caller then reads the scope in full.
    """
    windows = [entry_window(head) for head in store.load_heads(keys)]
    found: list[MemoryEntry] = []
    for key, window in zip(keys, windows, strict=True):
        if window is None:
            return None
        rank = scope_rank(key.scope)
        position = after[0] if after is not None else None
        if position is not None and position[0] > rank:
            continue  # the token is past this scope
        scope_after = (after[1], position[2]) if after is not None and position is not None \
            and position[0] == rank else None
        found += _visible_oldest(store, window, limit + 1 - len(found), scope_after, query_excludes)
        if len(found) > limit:
            break
    return StoredPage(found[:limit], len(found) > limit)


def _visible_oldest(
    store: MemoryStore, window: EntryWindow, wanted: int, after: tuple[datetime, str] | None, query_excludes: int,
) -> list[MemoryEntry]:
    """Up to ``wanted`` visible entries of ``window``'s scope after ``after``, oldest first."""
    held = window.excluded_ids
    queried = replace(window, excluded_ids=frozenset(sorted(held)[:query_excludes]))
    start = _newest_visible_replace(store, queried, held)
    if start is not None:
        queried = replace(queried, start=start.sort_key)  # a replace starts the document anew
    shown: list[MemoryEntry] = []
    while len(shown) < wanted:
        asked = wanted - len(shown)
        batch = store.oldest_entries(queried, asked, after=after)
        shown += [e for e in batch if e.id not in held]
        if len(batch) < asked:
            break
        after = batch[-1].sort_key
    return shown


def _newest_visible_replace(store: MemoryStore, window: EntryWindow, held: frozenset[str]) -> MemoryEntry | None:
    """The newest replace of ``window`` not held (``ScopeState.visible_entries``' rule), or None."""
    cursor: PageCursor | None = None
    while True:
        batch = store.newest_entries(window, _REPLACES_PER_QUERY, cursor=cursor, kind=EntryKind.REPLACE)
        for entry in batch:
            if entry.id not in held:
                return entry
        if len(batch) < _REPLACES_PER_QUERY:
            return None
        last = batch[-1].created_on
        seen = {e.id for e in batch if e.created_on == last}
        if cursor is not None and cursor.created_on == last:
            seen |= cursor.seen_ids
        cursor = PageCursor(last, frozenset(seen))


__all__ = ["QUERY_EXCLUDES", "StoredPage", "stored_page"]
