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
  now (the rule of ``ScopeState.visible_entries``, on the facts the snapshot keeps), so nothing
  erased or hidden can show;
- each shown entry keeps the section it had (an entry never changes, and neither does its
  section for one viewer): it is cut from the document where the snapshot knows it is, and only
  entries not shown before are rendered.

When what decides visibility did not change (no hold or watermark moved, no replace erased or
added: a forget, a dropped version; the rule of ``file_entries.visibility_kept``), the erased
entries are cut out of the document and the columns, not found again from every entry. The
store's work is its listing of every entry id (a few ms at 10,000 entries on SQLite), still
proportional to the memory, but nothing is rendered again. A snapshot without ``known``
(restored from a checkpoint), or one whose newest shown entries were all erased (it keeps only
the newest ``known_entries.TAIL`` whole), is built again, as before.
"""

from __future__ import annotations

import bisect
import itertools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, cast

from memory_core.domain.budget import entry_window
from memory_core.domain.errors import Unavailable
from memory_core.domain.file_entries import visibility_kept
from memory_core.domain.known_entries import (
    SEPARATOR,
    TAIL,
    KnownEntries,
    ShownBefore,
    ShownColumns,
    document_of,
    interned,
    section_of,
    section_starts,
)
from memory_core.domain.models import EntryKind, HeldFacts, MemoryEntry, ProfileKey, ScopeState
from memory_core.domain.present_entries import PresentEntries
from memory_core.domain.snapshots import ScopeSnapshot, Snapshots


def refreshed_snapshots(
    store: PresentEntries, keys: Sequence[ProfileKey], viewer: str, stale: Snapshots
) -> Snapshots | None:
    """``stale`` (the snapshots of the read of ``keys`` by ``viewer``) as the store holds them now;
    None when one of them does not know its entries (or no longer would know its newest), or the
    store gave up the read because other writers kept erasing during it (the caller builds the read
    then)."""
    knowns = [s.known for s in stale.scopes]
    if any(k is None for k in knowns):
        return None
    known_ids: set[str] = set()
    for known in knowns:
        known_ids |= known.ids  # type: ignore[union-attr]
    try:
        loaded = store.load_present(keys, known_ids, stale.sequence)
    except Unavailable:
        return None
    gone = known_ids.difference(loaded.present)
    scopes = []
    for snapshot, now in zip(stale.scopes, loaded.load.states, strict=True):
        refreshed = _refreshed(snapshot, now, gone, viewer)
        if refreshed is None:
            return None
        scopes.append(refreshed)
    return Snapshots(loaded.load.stamp, loaded.load.sequence, tuple(scopes))


def _refreshed(snapshot: ScopeSnapshot, now: ScopeState, gone: set[str], viewer: str) -> ScopeSnapshot | None:
    """``snapshot`` as of ``now`` (the profile and holds now, and the entries stored that it does not
    know), when ``gone`` are the ids of the entries it knows that are no longer stored; None when its
    newest would not be whole."""
    known = snapshot.known
    assert known is not None
    shown = known.shown
    if len(known.shown_parts) > 1:  # joined once, here, for all that follows
        snapshot = replace(snapshot, known=replace(known, shown_parts=(shown,)))
        known = snapshot.known
        assert known is not None
    cut = _positions(shown.ids, gone)
    dropped = [shown.kinds[at] for at in cut] + [kind for i, kind in known.hidden_kinds(gone)]
    new = sorted(now.entries, key=_sort_key)
    if visibility_kept(snapshot.state, now, dropped, new, snapshot.last_entry):
        # What showed still shows but for the erased entries, and what was added follows it: cut the
        # erased ones out of the document and the columns, and render the rest.
        return _cut(snapshot, now, cut, gone, new, viewer)
    return _decided_again(snapshot, now, gone, new, viewer)


_FEW = 16
"""Up to how many erased entries are found by their ids (a scan in C each) rather than by one walk."""


def _positions(ids: tuple[str, ...], gone: set[str]) -> list[int]:
    """The positions in ``ids`` of the ids in ``gone``, ascending."""
    if gone.isdisjoint(ids):
        return []
    if len(gone) > _FEW:
        return [at for at, i in enumerate(ids) if i in gone]
    found = []
    for i in gone:
        try:
            found.append(ids.index(i))
        except ValueError:
            continue
    return sorted(found)


def _cut(
    snapshot: ScopeSnapshot, now: ScopeState, cut: Sequence[int], gone: set[str],
    new: list[MemoryEntry], viewer: str,
) -> ScopeSnapshot | None:
    """``snapshot`` less the shown entries at positions ``cut`` and the hidden ones ``gone``, followed
    by ``new``; None when none of its newest shown entries is left whole."""
    known = snapshot.known
    assert known is not None
    document = snapshot.document
    less = known.less(cut, gone)
    (shown,) = less.shown_parts
    if cut:
        starts = section_starts(known.shown, now.key.scope)
        pieces, start = [], 0
        for at in cut:
            pieces.append(document[start:starts[at]])
            start = starts[at + 1]
        pieces.append(document[start:])
        document = "".join(pieces) if shown.spans.count(0) < len(shown) else ""
        if len(shown) and not less.tail:
            return None  # its newest shown entries were all erased: none is left whole
    refreshed = ScopeSnapshot.knowing(now, document, less)
    if not new:
        return refreshed
    added = ScopeState(now.key, now.profile, new, now.holds)
    return refreshed.followed_by(added, added.visible_entries(), viewer)


Source = int | str | MemoryEntry
"""Where an entry's section comes from: its place in the shown columns (its span in the document), the
section it showed as, or the whole entry (rendered if it shows)."""


@dataclass(frozen=True, slots=True)
class _Rows:
    """Entries as columns in ``(created_on, id)`` order, and each one's ``Source``."""

    ids: Sequence[str]
    moments: Sequence[datetime]
    kinds: Sequence[EntryKind]
    authors: Sequence[str]
    agents: Sequence[str | None]
    sources: Sequence[Source]

    @staticmethod
    def of(entries: Sequence[MemoryEntry]) -> _Rows:
        return _Rows([e.id for e in entries], [e.created_on for e in entries], [e.kind for e in entries],
                     [e.author_upn for e in entries], [e.agent_name for e in entries], entries)

    def __len__(self) -> int:
        return len(self.ids)

    def _columns(self) -> tuple[Sequence[Any], ...]:
        return (self.ids, self.moments, self.kinds, self.authors, self.agents, self.sources)

    def sliced(self, start: int, end: int | None = None) -> _Rows:
        return _Rows(*(column[start:end] for column in self._columns()))

    def taken(self, positions: Sequence[int]) -> _Rows:
        """Those at ``positions`` (ascending)."""
        if len(positions) == len(self):
            return self
        return _Rows(*([column[at] for at in positions] for column in self._columns()))

    def less(self, gone: set[str]) -> _Rows:
        """Those whose ids are not in ``gone``."""
        if gone.isdisjoint(self.ids):
            return self
        return self.taken([at for at, i in enumerate(self.ids) if i not in gone])

    @staticmethod
    def joined(groups: Sequence[_Rows]) -> _Rows:
        """``groups`` (each in order) as one, in order: one after the other when they follow each other,
        else sorted."""
        groups = [g for g in groups if len(g)]
        if len(groups) <= 1:
            return groups[0] if groups else _Rows((), (), (), (), (), ())
        joined = _Rows(*(_chained(parts) for parts in zip(*(g._columns() for g in groups), strict=True)))
        ordered = all((a.moments[-1], a.ids[-1]) < (b.moments[0], b.ids[0]) for a, b in itertools.pairwise(groups))
        if ordered:
            return joined
        order = sorted(range(len(joined)), key=list(zip(joined.moments, joined.ids, strict=True)).__getitem__)
        return _Rows(*([column[at] for at in order] for column in joined._columns()))


def _chained(parts: Sequence[Sequence[Any]]) -> list[Any]:
    out: list[Any] = []
    for part in parts:
        out += part
    return out


def _decided_again(
    snapshot: ScopeSnapshot, now: ScopeState, gone: set[str], new: list[MemoryEntry], viewer: str,
) -> ScopeSnapshot | None:
    """Which of the entries known and still stored, and ``new``, show now, decided again from all of them;
    None when the newest that shows is not kept whole."""
    known = snapshot.known
    assert known is not None
    shown, before = known.shown, known.shown_before
    document = snapshot.document
    starts = section_starts(shown, now.key.scope)

    def section(source: Source) -> str:
        if isinstance(source, int):
            return document[starts[source] + len(SEPARATOR):starts[source + 1]] if shown.spans[source] else ""
        return source if isinstance(source, str) else section_of(source, viewer)

    # Three groups, each in order and still stored: the shown entries but the newest (the tail, kept whole),
    # those shown before, and the whole ones (never shown, the tail, and ``new``).
    untailed = len(shown) - len(known.tail)
    groups = [
        _Rows(shown.ids[:untailed], shown.moments[:untailed], shown.kinds[:untailed], shown.authors[:untailed],
              shown.agents[:untailed], range(untailed)).less(gone),
        _Rows(before.ids, before.moments, before.kinds, before.authors, before.agents, before.sections
              ).less(gone),
    ]
    whole = _in_order([[e for e in known.unshown if e.id not in gone] if gone else list(known.unshown),
                       [e for e in known.tail if e.id not in gone], new])
    # A watermark (a clear, pending or done) hides everything up to it: only what follows is decided (and
    # only that of the whole entries is made columns).
    window = entry_window(now)
    after = window.after if window is not None else None
    settled = [g.sliced(0, bisect.bisect_right(g.moments, after) if after is not None else 0) for g in groups]
    settled_whole = bisect.bisect_right(whole, after, key=_created_on) if after is not None else 0
    rows = _Rows.joined([*(g.sliced(len(kept)) for g, kept in zip(groups, settled, strict=True)),
                         _Rows.of(whole[settled_whole:])])
    visible = _visible(rows, now)

    sections = [section(rows.sources[at]) for at in visible]
    columns = ShownColumns(tuple([rows.ids[at] for at in visible]), tuple([rows.moments[at] for at in visible]),
                           tuple([rows.kinds[at] for at in visible]),
                           tuple([sys.intern(rows.authors[at]) for at in visible]),
                           tuple([interned(rows.agents[at]) for at in visible]), ShownColumns.of((), sections).spans)
    tail: list[MemoryEntry] = []
    for at in reversed(visible[-TAIL:]):
        entry = rows.sources[at]
        if not isinstance(entry, MemoryEntry):
            break
        tail.append(entry)
    if visible and not tail:
        return None  # its newest shown entry is not kept whole
    showing = set(visible)
    hidden = rows.taken([at for at in range(len(rows)) if at not in showing])
    hidden_whole = [at for at, source in enumerate(hidden.sources) if isinstance(source, MemoryEntry)]
    hidden_rest = [at for at, source in enumerate(hidden.sources) if not isinstance(source, MemoryEntry)]
    shown_before = _Rows.joined([settled[0], settled[1], hidden.taken(hidden_rest)])
    unshown = whole[:settled_whole] + [cast(MemoryEntry, hidden.sources[at]) for at in hidden_whole]
    return ScopeSnapshot.knowing(now, document_of(now.key.scope, sections), KnownEntries.of(
        columns,
        ShownBefore(tuple(shown_before.ids), tuple(shown_before.moments), tuple(shown_before.kinds),
                    tuple(shown_before.authors), tuple(shown_before.agents),
                    _sections(shown_before.sources, section, document, starts)),
        unshown, tail[::-1]))


def _sections(
    sources: Sequence[Source], section: Callable[[Source], str], document: str, starts: Sequence[int]
) -> tuple[str, ...]:
    """The section of each of ``sources``: cut from ``document`` at once when they are a run of shown
    entries (whose spans start at ``starts``), as a pending clear hides them."""
    if isinstance(sources, range) and sources.step == 1:
        skip = len(SEPARATOR)
        return tuple([document[start + skip:end] for start, end in zip(starts[sources.start:sources.stop],
                                                                         starts[sources.start + 1:sources.stop + 1],
                                                                         strict=True)])
    return tuple([section(source) for source in sources])


def _visible(rows: _Rows, now: ScopeState) -> list[int]:
    """The positions of ``rows`` that show under ``now``'s profile and holds: ``ScopeState.visible_entries``'s
    rule, on the facts it reads."""
    watermark = now.profile.cleared_on if now.profile else None
    held = HeldFacts.of(now.key.profile_id, now.holds)
    moments, ids, authors = rows.moments, rows.ids, rows.authors
    visible = [
        at for at in range(len(rows))
        if (watermark is None or moments[at] > watermark)
        and not held.covers_facts(authors[at], moments[at], ids[at])
    ]
    # A replace starts the document anew: nothing before the newest one shows.
    for index in range(len(visible) - 1, -1, -1):
        if rows.kinds[visible[index]] is EntryKind.REPLACE:
            return visible[index:]
    return visible


def _in_order(groups: Sequence[list[MemoryEntry]]) -> list[MemoryEntry]:
    """``groups`` (each in ``(created_on, id)`` order) as one list in that order: one after the other when
    they follow each other, else sorted."""
    groups = [g for g in groups if g]
    joined: list[MemoryEntry] = _chained(groups)
    if all(a[-1].sort_key < b[0].sort_key for a, b in itertools.pairwise(groups)):
        return joined
    return sorted(joined, key=_sort_key)


def _created_on(entry: MemoryEntry) -> datetime:
    return entry.created_on


def _sort_key(entry: MemoryEntry) -> tuple[datetime, str]:
    return entry.sort_key


__all__ = ["refreshed_snapshots"]
