"""An operator's scan for text no reader sees in memory already stored.

Writes that carry Unicode tag characters outside an emoji flag, variation selectors that vary
no character, zero-width characters in a row or bidirectional overrides are refused at the door
(``hidden_text``), but entries stored before that rule are still served to every model that
reads them. The scan finds them: it walks the instance's partitions in the store's order, a
page of owners at a time, and names each visible entry whose content or a field stored beside it
holds such a character, with the field and the first such character, never the text. An
operator then asks for their deletion under custody (``CustodyService.request_forget_of``), or
asks the person to.

What it reads: every partition that holds a profile, including the shared one, where only
legacy entries are looked at (a team copy is found in its author's partition). Entries a
pending deletion already hides are not listed: no model is served them, and the request
that hides them is the operator's to decide.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from memory_core.domain.errors import InvalidInput
from memory_core.domain.listings import Position, entry_position, listing_position
from memory_core.domain.models import SHARED_OWNER, MemoryEntry, Share
from memory_core.domain.new_entries import hidden_in
from memory_core.domain.paging import check_page_size, decode_token, encode_token
from memory_core.domain.store import MemoryStore
from memory_core.domain.stored_pages import stored_page

LISTING = "hidden_text_scan"
MAX_OWNERS_PER_PAGE = 100
DEFAULT_OWNERS_PER_PAGE = 20
# A page reads about this many entries at most, however large the memories: it ends at the next owner
# once they are read, or inside a memory larger than what is left of them (see ``scan_page``). A page
# that keeps timing out would stop the scan for good; one of bounded size does not.
ENTRIES_PER_PAGE = 10_000


@dataclass(frozen=True, slots=True)
class HiddenTextFinding:
    """One stored entry that holds text no reader sees: in ``field``, first at ``character``."""

    entry: MemoryEntry
    field: str
    character: str


@dataclass(frozen=True, slots=True)
class HiddenTextScanPage:
    """What one page of the scan read and found; ``continuation`` is None after the last owner."""

    findings: list[HiddenTextFinding]
    owners_scanned: int
    entries_scanned: int
    continuation: str | None


def finding_in(entry: MemoryEntry) -> HiddenTextFinding | None:
    """The entry's first field holding text no reader sees, or None: its content and the fields the door
    screens beside it (``new_entries.hidden_in``), by the names a write gives them."""
    found = hidden_in(entry.content_markdown, entry)
    return HiddenTextFinding(entry, *found) if found else None


def scan_page(store: MemoryStore, instance_id: str, limit: int, continuation: str | None) -> HiddenTextScanPage:
    """Scan up to ``limit`` owners' partitions of the instance, from where ``continuation`` left off, reading
    about ``ENTRIES_PER_PAGE`` entries at most.

    An owner whose partition fits in what is left of the page's entries is read whole (one bounded query);
    a larger one is read a scope at a time in listing order (``stored_pages``), and the page may end inside
    it: its continuation then names the scope and the last entry read. ``owners_scanned`` counts the owners
    the page finished. Raises ``InvalidInput`` for a ``limit`` outside 1-``MAX_OWNERS_PER_PAGE``
    (``invalid_limit``) and for a continuation this listing did not make (``invalid_continuation``).
    """
    check_page_size(limit, MAX_OWNERS_PER_PAGE)
    tally = _Tally(store, instance_id)
    last, inside = _resume_point(decode_token(LISTING, continuation))
    finished = 0
    if last is not None and inside is not None:  # the last page ended inside this owner's memory
        stop = tally.large_owner(last, inside)
        if stop is not None:
            return tally.page(0, stop)
        finished = 1
    # One owner more than the page reads tells whether another page follows (a last page is never empty).
    owners = store.partition_owners(instance_id, limit - finished + 1, after=last)
    read = 0
    for owner in owners[:limit - finished]:
        if tally.read >= ENTRIES_PER_PAGE:
            break
        states = store.load_partition_within(instance_id, owner, ENTRIES_PER_PAGE - tally.read)
        if states is None:
            stop = tally.large_owner(owner, None)
            if stop is not None:
                return tally.page(finished + read, stop)
        else:
            for state in states:
                tally.take(owner, state.visible_entries())
        read += 1
        last = owner
    more = len(owners) > read
    return tally.page(finished + read, [last] if more and last is not None else None)


_Inside = tuple[str, "tuple[Position, datetime] | None"]
"""A place inside an owner's memory: a scope's profile id, and the position after which its entries go on."""


def _resume_point(position: list[str] | None) -> tuple[str | None, _Inside | None]:
    """Where a continuation goes on: after an owner (``[owner]``), or inside one, at a scope (``[owner,
    profile_id]``) or after an entry of it (``[owner, profile_id, *listings.entry_position]``)."""
    if position is None:
        return None, None
    if len(position) == 1:
        return position[0], None
    if len(position) == 2:
        return position[0], (position[1], None)
    if len(position) == 5:
        return position[0], (position[1], listing_position(position[2:]))
    raise InvalidInput("continuation is not a token this listing answered; start again without it",
                       code="invalid_continuation")


class _Tally:
    """What one page has read and found so far."""

    def __init__(self, store: MemoryStore, instance_id: str) -> None:
        self._store = store
        self._instance_id = instance_id
        self.findings: list[HiddenTextFinding] = []
        self.read = 0
        """Visible entries read, toward ``ENTRIES_PER_PAGE`` (team copies in the shared partition too)."""
        self.scanned = 0
        """Entries looked at: in the shared partition, legacy entries only (a team copy is its author's)."""

    def take(self, owner: str, entries: Iterable[MemoryEntry]) -> None:
        for entry in entries:
            self.read += 1
            if owner == SHARED_OWNER and entry.share is not Share.LEGACY:
                continue
            self.scanned += 1
            finding = finding_in(entry)
            if finding is not None:
                self.findings.append(finding)

    def large_owner(self, owner: str, inside: _Inside | None) -> list[str] | None:
        """Read ``owner``'s memory a scope at a time, from ``inside`` (None: its start), until the page's
        entries are read: the continuation's position then, None once the whole memory is read."""
        for key in self._store.partition_keys(self._instance_id, owner):
            after = None
            if inside is not None:
                if key.profile_id < inside[0]:
                    continue
                if key.profile_id == inside[0]:
                    after = inside[1]
            while True:
                if self.read >= ENTRIES_PER_PAGE:
                    return [owner, key.profile_id, *after[0]] if after is not None else [owner, key.profile_id]
                page = stored_page(self._store, [key], after, ENTRIES_PER_PAGE - self.read)
                if page is None:  # a hold no window expresses (an author's shared copies): the scope whole
                    (state,) = self._store.load([key])
                    self.take(owner, [e for e in state.visible_entries() if after is None or
                                      entry_position(e) > after[0]])
                    break
                self.take(owner, page.entries)
                if not page.more:
                    break
                last = page.entries[-1]
                after = entry_position(last), last.created_on
        return None

    def page(self, owners: int, continuation: list[str] | None) -> HiddenTextScanPage:
        return HiddenTextScanPage(self.findings, owners, self.scanned,
                                  encode_token(LISTING, continuation) if continuation is not None else None)
