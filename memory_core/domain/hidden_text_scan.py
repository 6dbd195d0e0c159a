"""An operator's scan for text no reader sees in memory already stored.

Writes that carry Unicode tag characters outside an emoji flag, or variation selectors that
vary no character, are refused at the door (``hidden_text``), but entries stored before that
rule are still served to every model that reads them. The scan finds them: it walks the
instance's partitions in the store's order, a page of owners at a time, and names each
visible entry whose content or a field stored beside it holds such a character, with the
field and the first such character, never the text. An operator then asks for their deletion under custody
(``CustodyService.request_forget_of``), or asks the person to.

What it reads: every partition that holds a profile, including the shared one, where only
legacy entries are looked at (a team copy is found in its author's partition). Entries a
pending deletion already hides are not listed: no model is served them, and the request
that hides them is the operator's to decide.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_core.domain.hidden_text import first_hidden
from memory_core.domain.models import SHARED_OWNER, MemoryEntry, Share
from memory_core.domain.new_entries import CONTENT, stored_beside
from memory_core.domain.paging import check_page_size, decode_token, encode_token
from memory_core.domain.store import MemoryStore

LISTING = "hidden_text_scan"
# Each owner's whole partition is read: a page of 100 memories of 10,000 entries is a million entries.
MAX_OWNERS_PER_PAGE = 100
DEFAULT_OWNERS_PER_PAGE = 20
# So a page also ends at the first owner that starts past this many entries: a page of large memories
# answers in about the time of 10,000 entries and one memory, not a million, and a scan that keeps
# timing out on a page still makes progress. A page always reads at least one owner.
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
    screens beside it (``new_entries.stored_beside``), by the names a write gives them."""
    found = first_hidden(((CONTENT, entry.content_markdown), *stored_beside(entry)))
    return HiddenTextFinding(entry, *found) if found else None


def scan_page(store: MemoryStore, instance_id: str, limit: int, continuation: str | None) -> HiddenTextScanPage:
    """Scan up to ``limit`` owners' partitions of the instance, after the one ``continuation`` names, ending
    before an owner once ``ENTRIES_PER_PAGE`` entries are scanned (``owners_scanned`` says how many were).

    Raises ``InvalidInput`` for a ``limit`` outside 1-``MAX_OWNERS_PER_PAGE`` (``invalid_limit``) and for a
    continuation another listing made (``invalid_continuation``).
    """
    check_page_size(limit, MAX_OWNERS_PER_PAGE)
    position = decode_token(LISTING, continuation)
    # One owner more than the page reads tells whether another page follows (a last page is never empty).
    owners = store.partition_owners(instance_id, limit + 1, after=position[0] if position else None)
    findings: list[HiddenTextFinding] = []
    scanned = 0
    read: list[str] = []
    for owner in owners[:limit]:
        if read and scanned >= ENTRIES_PER_PAGE:
            break
        read.append(owner)
        for state in store.load_partition(instance_id, owner):
            for entry in state.visible_entries():
                if owner == SHARED_OWNER and entry.share is not Share.LEGACY:
                    continue
                scanned += 1
                finding = finding_in(entry)
                if finding is not None:
                    findings.append(finding)
    more = len(owners) > len(read)
    return HiddenTextScanPage(findings, len(read), scanned, encode_token(LISTING, [read[-1]]) if more else None)
