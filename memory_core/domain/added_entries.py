"""Entries added to a partition since a kept answer was read: loading just them (``added_since``), and whether they
simply follow what that answer shows (``appended_after``, ``appended_across``) or it must be built again.

What every kept read (``snapshots``, ``listings``, ``shared_checkpoints``, ``partition_sections``, ``file_entries``)
grows by after appends, instead of loading the memory in full; the store's stamp (``snapshots.ChangeStamps``) says
whether anything but entries was added.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory_core.domain.models import EntryKind, MemoryEntry, ProfileKey, ScopeState
from memory_core.domain.sharing import SharingPolicy

if TYPE_CHECKING:
    from memory_core.domain.snapshots import ChangeStamps, PartitionStamp, StampedLoad


def appended_after(added: ScopeState, newest: MemoryEntry | None) -> list[MemoryEntry] | None:
    """The visible entries of ``added`` (entries stored since a read), oldest first, when they can
    simply follow that read's ``newest`` entry; None when the read must be built again.

    It must when one of them is a replace (it restarts the document, hiding what came before) or
    sorts at or before ``newest`` (a writer whose clock ran behind: it could fall before a replace).
    ``added``'s profile and holds decide what shows: only entries were added since the read, so
    they are the ones it was built under.
    """
    new = sorted(added.entries, key=lambda e: e.sort_key)
    if any(e.kind is EntryKind.REPLACE for e in new):
        return None
    if new and newest is not None and new[0].sort_key <= newest.sort_key:
        return None
    return ScopeState(added.key, added.profile, new, added.holds).visible_entries() if new else []


def appended_across(
    added: ScopeState, shared: ScopeState | None, newest: MemoryEntry | None, policy: SharingPolicy, viewer: str
) -> list[MemoryEntry] | None:
    """As ``appended_after``, for a read that merges the shared partition (``shared``: the entries
    stored there since, None for a private read): the caller's added entries and the shared ones
    ``policy`` shows ``viewer``, oldest first; None when the read must be built again."""
    shown = appended_after(added, newest)
    if shown is None or shared is None:
        return shown
    others = appended_after(shared, newest)
    if others is None:
        return None
    return sorted([*shown, *(e for e in others if policy.shows_shared(e, viewer))], key=lambda e: e.sort_key)


def added_since(store: ChangeStamps, keys: Sequence[ProfileKey], sequence: int, earlier: PartitionStamp) -> StampedLoad | None:
    """The entries of ``keys`` stored after ``sequence``, when nothing but entries was added to the
    partition since ``earlier`` (checked on this very read); None when anything else changed.

    What a kept answer read at ``earlier`` and ``sequence`` needs to be brought up to date.
    """
    loaded = store.load_since(keys, sequence)
    return loaded if loaded.stamp.only_added_since(earlier) else None
