"""A private read's snapshot brought up to date after an erasure, from the ids still stored.

After a forget, a hold placed or lifted, a clear (pending, approved and swept, or immediate) or
a superseded file version dropped, a kept snapshot (``snapshots.ScopeSnapshot``) no longer
matches the store, and it used to be built again: every entry loaded and rendered. A snapshot
that knows its entries (``known_entries.KnownEntries``) is instead brought up to date the way
the memory tool's kept entries are (``present_entries``):

- the store answers, from one consistent view, the stamp, profiles and holds, the ids of every
  entry stored, and in full only the entries the snapshot does not know;
- the entries now stored are the known ones whose ids are still there, plus those it answered;
  which of them show is decided again from all of them, under the profiles and holds as they are
  now (``ScopeState.visible_entries``), so nothing erased or hidden can show;
- each shown entry keeps the section it had (an entry never changes, and neither does its
  section for one viewer); only entries not shown before are rendered.

When what decides visibility did not change (no hold or watermark moved, no replace erased or
added: a forget, a dropped version; the rule of ``file_entries.carried_visible``), the erased
entries are cut out of those shown before, not found again from every entry. The store's work is its listing of
every entry id (a few ms at 10,000 entries on SQLite), still proportional to the memory, but
nothing is rendered again. A snapshot without ``known`` (restored from a checkpoint) is built
again, as before.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from memory_core.domain.budget import entry_window
from memory_core.domain.errors import Unavailable
from memory_core.domain.file_entries import visibility_kept
from memory_core.domain.kept import entries_bytes, text_bytes
from memory_core.domain.known_entries import section_of
from memory_core.domain.models import MemoryEntry, ProfileKey, ScopeState
from memory_core.domain.present_entries import PresentEntries, refreshed_states
from memory_core.domain.snapshots import ScopeSnapshot, Snapshots


def refreshed_snapshots(
    store: PresentEntries, keys: Sequence[ProfileKey], viewer: str, stale: Snapshots
) -> Snapshots | None:
    """``stale`` (the snapshots of the read of ``keys`` by ``viewer``) as the store holds them now;
    None when one of them does not know its entries, or the store gave up the read because other
    writers kept erasing during it (the caller builds the read then)."""
    if any(s.known is None for s in stale.scopes):
        return None
    kept = {index: ScopeState(key, s.state.profile, list(s.known.entries), s.state.holds)  # type: ignore[union-attr]
            for index, (key, s) in enumerate(zip(keys, stale.scopes, strict=True))}
    try:
        loaded = store.load_present(keys, {e.id for s in kept.values() for e in s.entries}, stale.sequence)
    except Unavailable:
        return None
    states, dropped = refreshed_states(kept, loaded)
    scopes = tuple(
        _refreshed(snapshot, kept[index], states[index], dropped[index], loaded.load.states[index].entries, viewer)
        for index, snapshot in enumerate(stale.scopes)
    )
    return Snapshots(loaded.load.stamp, loaded.load.sequence, scopes)


def _refreshed(
    snapshot: ScopeSnapshot, before: ScopeState, after: ScopeState,
    dropped: Sequence[MemoryEntry], added: Sequence[MemoryEntry], viewer: str,
) -> ScopeSnapshot:
    """``snapshot`` (of ``before``) as of ``after``: ``before`` less ``dropped`` plus ``added``, under
    the profile and holds now."""
    known = snapshot.known
    assert known is not None
    new = sorted(added, key=_sort_key)
    if visibility_kept(before, after, dropped, new, known.newest):
        # What showed still shows but for the erased entries, and what was added follows it: cut the
        # erased ones out (found by their place in time, not by walking every entry) and render the rest.
        visible, sections, size = known.visible, known.sections, known.size - entries_bytes(dropped)
        cut = set()
        for gone in dropped:
            at = bisect.bisect_left(visible, gone.sort_key, key=_sort_key)
            if at < len(visible) and visible[at].id == gone.id:
                cut.add(at)
                size -= text_bytes(sections[at])
        if len(cut) == 1:
            (at,) = cut
            visible, sections = visible[:at] + visible[at + 1:], sections[:at] + sections[at + 1:]
        elif cut:
            visible = tuple(e for n, e in enumerate(visible) if n not in cut)
            sections = tuple(t for n, t in enumerate(sections) if n not in cut)
        shown = ScopeState(after.key, after.profile, new, after.holds).visible_entries() if new else []
        rendered = [section_of(e, viewer) for e in shown]
        size += entries_bytes(added) + sum(text_bytes(r) for r in rendered)
        return ScopeSnapshot.showing(after, (*visible, *shown), (*sections, *rendered), after.entries, size)
    had = dict(zip((e.id for e in known.visible), known.sections, strict=True))
    window = entry_window(after)
    if window is not None and window.after is not None:
        # A watermark (a clear, pending or done) hides everything up to it: decide only for what follows.
        moment = window.after
        after_watermark = replace(after, entries=[e for e in after.entries if e.created_on > moment])
        visible_now = after_watermark.visible_entries()
    else:
        visible_now = after.visible_entries()
    sections_now = [had[e.id] if e.id in had else section_of(e, viewer) for e in visible_now]
    return ScopeSnapshot.showing(after, visible_now, sections_now, after.entries)


def _sort_key(entry: MemoryEntry) -> tuple[datetime, str]:
    return entry.sort_key


__all__ = ["refreshed_snapshots"]
