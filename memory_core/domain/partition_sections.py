"""One partition's visible entries as a sharing read merges them: rendered sections in order, and
the entries behind them, kept as a checkpoint's payload (``shared_checkpoints``).

A sharing read shows, per scope, the caller's visible entries and those of the instance's shared
partition its policy shows the caller, in one order (``visibility.merged_entries``). A checkpoint
of the merged document could not be erased with what it shows: it would hold text of two
partitions, and a store erases a partition's checkpoints only on that partition's writes. So each
partition keeps its own part: per scope, every visible entry's position (time and id: the merge
order), who offered it under which share (what the policy and the viewer decide on), its agent
name and its section as rendered, each a column (``ScopeSections``). Merging two such parts for a viewer is a merge of two sorted
runs and a join of text: no entry is parsed or rendered.

The shared partition's part serves every viewer: an entry a sharing read shows is another's,
so its section is the same for every viewer it is shown to (``rendering.entry_heading``'s
"shared by" heading). The entries themselves are decoded only when a read needs them (a
budgeted read's newest entries, a merged read's newest), and they follow the header in the
payload so the header decodes without them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memory_core.domain.added_entries import appended_after
from memory_core.domain.listings import position_time
from memory_core.domain.models import EntryKind, MemoryEntry, ProfileKey, ScopeState, Share
from memory_core.domain.rendering import render_entry
from memory_core.domain.snapshots import PartitionStamp, StampedLoad

FORMAT = 3
"""The payload's layout. A checkpoint of another layout (format 1 held a list per row; 2 rendered headings with the
line breaks of a reason and another author's heading lines as written) is ignored: the part is read in full and
kept again in this one."""

ANY_OTHER = "\x00"
"""The viewer the shared partition's sections are rendered for: no entry's author, so every entry
is rendered as another's, as a sharing read shows it."""


_HEADER = json.JSONDecoder()

ENTRIES_PER_LINE = 256
"""Entries per line of a payload's entries part: a read decodes only the lines of the entries it uses."""


class EncodedEntries:
    """The entries part of a payload: per scope, lines of up to ``ENTRIES_PER_LINE`` ``entry_row`` lists,
    each decoded on first use (a merged read decodes none, a budgeted read or a first page one or two)."""

    def __init__(self, text: str, start: int = 0) -> None:
        """``text[start:]``: the entries' lines (kept as the payload they follow: nothing is copied until used)."""
        self._text = text
        self._start = start
        self._lines: list[str] | None = None
        self._decoded: dict[int, list[list[Any]]] = {}

    def row(self, line: int, offset: int) -> list[Any]:
        """The ``offset``-th entry of line ``line`` (counted over every scope's lines)."""
        if line not in self._decoded:
            if self._lines is None:
                self._lines = self._text[self._start:].split("\n")  # JSON escapes every newline inside a line
            self._decoded[line] = json.loads(self._lines[line])
        return self._decoded[line][offset]


def _lines(count: int) -> int:
    return -(-count // ENTRIES_PER_LINE)


class ScopeEntries:
    """The entries behind a scope's rows, in row order, decoded one by one on first use (``encoded``:
    the first ``count`` of them, as a payload holds them; ``built``: those after). Used by the one read
    that restored or built its part (not thread-safe)."""

    def __init__(self, key: ProfileKey, built: Sequence[MemoryEntry],
                 encoded: tuple[EncodedEntries, int, int] | None = None) -> None:
        """``encoded``: the payload's entries, this scope's first line in them, and how many entries it has."""
        self._key = key
        self._encoded = encoded
        count = encoded[2] if encoded is not None else 0
        self._built: list[MemoryEntry | None] = [None] * count + list(built)

    def __len__(self) -> int:
        return len(self._built)

    def __getitem__(self, index: int) -> MemoryEntry:
        entry = self._built[index]
        if entry is None:
            assert self._encoded is not None  # only the payload's entries are left undecoded
            source, first_line, _ = self._encoded
            row = source.row(first_line + index // ENTRIES_PER_LINE, index % ENTRIES_PER_LINE)
            entry = self._built[index] = entry_of(self._key, row)
        return entry

    def followed_by(self, added: Sequence[MemoryEntry]) -> ScopeEntries:
        """These entries, then ``added``; what is decoded already stays decoded."""
        grown = ScopeEntries(self._key, ())
        grown._encoded = self._encoded
        grown._built = [*self._built, *added]
        return grown


@dataclass(frozen=True, slots=True)
class ScopeSections:
    """A scope's visible entries, oldest first, column by column (a row is an index into every column):
    ``positions``: each entry's place in the merge order, its time in UTC (``listings.position_time``,
    fixed width) then its id, so text order is (time, id) order; ``offer_of``: who offered it under
    which share, as an index into ``offers``; ``agents``: its agent name; ``texts``: its section as
    rendered (None: empty content, visible but rendering nothing). ``latest``: the newest entry of each
    offer (what a merged read's newest is, without decoding the entries); ``entries``: the entries.

    Columns, not a list per row: a payload decodes to five lists whatever the count, and a merge
    reads only the columns it needs."""

    positions: list[str]
    offer_of: list[int]
    agents: list[str | None]
    texts: list[str | None]
    offers: list[tuple[str, str]]
    latest: dict[int, MemoryEntry]
    entries: ScopeEntries

    @staticmethod
    def of(key: ProfileKey, visible: Sequence[MemoryEntry], viewer: str) -> ScopeSections:
        return ScopeSections([], [], [], [], [], {}, ScopeEntries(key, ())).followed_by(visible, viewer)

    def __len__(self) -> int:
        return len(self.positions)

    def newest(self) -> MemoryEntry | None:
        """The newest visible entry."""
        return max(self.latest.values(), key=lambda e: e.sort_key, default=None)

    def followed_by(self, visible: Sequence[MemoryEntry], viewer: str) -> ScopeSections:
        """These sections with ``visible`` (entries that sort after the newest, oldest first) at the end."""
        grown = ScopeSections(list(self.positions), list(self.offer_of), list(self.agents), list(self.texts),
                              list(self.offers), dict(self.latest), self.entries.followed_by(visible))
        for entry in visible:
            offer = (entry.author_upn, entry.share.value)
            try:
                index = grown.offers.index(offer)  # a handful per scope: the team's authors, by share
            except ValueError:
                index = len(grown.offers)
                grown.offers.append(offer)
            grown.positions.append(position(entry))
            grown.offer_of.append(index)
            grown.agents.append(entry.agent_name)
            grown.texts.append(render_entry(entry, viewer) if entry.content_markdown.strip() else None)
            grown.latest[index] = entry
        return grown


def position(entry: MemoryEntry) -> str:
    """``entry``'s place in a sharing read's order as one string: its time in UTC (fixed width) then its id."""
    return position_time(entry.created_on) + entry.id


@dataclass(frozen=True, slots=True)
class PartitionSections:
    """A partition's part of a sharing read of ``keys`` (one scope's sections per key), read in one view
    of the partition at ``stamp`` and ``sequence``; ``heads``: each key's profile and holds then."""

    stamp: PartitionStamp
    sequence: int
    heads: tuple[ScopeState, ...]
    scopes: tuple[ScopeSections, ...]

    @property
    def count(self) -> int:
        """How many visible entries the part holds."""
        return sum(len(s) for s in self.scopes)

    @staticmethod
    def of(loaded: StampedLoad, viewer: str) -> PartitionSections:
        """The part read in full (``load_since`` from nothing), its sections rendered for ``viewer``."""
        scopes = [ScopeSections.of(state.key, state.visible_entries(), viewer) for state in loaded.states]
        return PartitionSections(loaded.stamp, loaded.sequence, tuple(_head(s) for s in loaded.states), tuple(scopes))

    def grown(self, added: StampedLoad, viewer: str) -> PartitionSections | None:
        """This part with the entries stored since (``added``: ``added_since``'s answer) at the end, or None
        when it must be read again (``added_entries.appended_after``'s rule: a replace, or an entry that sorts
        at or before the newest shown)."""
        scopes = []
        for sections, state in zip(self.scopes, added.states, strict=True):
            visible = appended_after(state, sections.newest())
            if visible is None:
                return None
            scopes.append(sections.followed_by(visible, viewer))
        return PartitionSections(added.stamp, added.sequence, tuple(_head(s) for s in added.states), tuple(scopes))

    def encode(self, keys: Sequence[ProfileKey]) -> str:
        """The part as a checkpoint's payload: a header line holding each scope's columns, then the entries,
        ``ENTRIES_PER_LINE`` a line (decoded only when used)."""
        header = json.dumps({
            "format": FORMAT, "profiles": [k.profile_id for k in keys], "sequence": self.sequence,
            "scopes": [{"positions": s.positions, "offer_of": s.offer_of, "agents": s.agents, "texts": s.texts,
                        "offers": s.offers,
                        "latest": [[offer, entry_row(entry)] for offer, entry in s.latest.items()]}
                       for s in self.scopes],
        }, ensure_ascii=False, separators=(",", ":"))
        lines = [json.dumps([entry_row(s.entries[i]) for i in range(start, min(start + ENTRIES_PER_LINE, len(s)))],
                            ensure_ascii=False, separators=(",", ":"))
                 for s in self.scopes for start in range(0, len(s), ENTRIES_PER_LINE)]
        return "\n".join([header, *lines])

    @staticmethod
    def decode(keys: Sequence[ProfileKey], stamp: PartitionStamp, payload: str) -> PartitionSections | None:
        """The part ``payload`` holds for ``keys``, kept at ``stamp``; None when it is of another layout
        (an older ``FORMAT``) or read. Its heads carry no profile or holds: growing it from the store
        supplies them."""
        try:
            # The header is the payload's first JSON value: decoded in place, the entries' lines left as they are.
            data, end = _HEADER.raw_decode(payload)
            if payload[end:end + 1] not in ("", "\n") or not isinstance(data, dict) or data.get("format") != FORMAT or \
                    data.get("profiles") != [k.profile_id for k in keys]:
                return None
            entries = EncodedEntries(payload, end + 1)
            scopes, first_line = [], 0
            for key, scope in zip(keys, data["scopes"], strict=True):
                positions, offer_of, agents, texts = scope["positions"], scope["offer_of"], scope["agents"], scope["texts"]
                if not (isinstance(positions, list) and len(positions) == len(offer_of) == len(agents) == len(texts)):
                    return None
                offers = [(str(author), str(share)) for author, share in scope["offers"]]
                latest = {int(offer): entry_of(key, row) for offer, row in scope["latest"]}
                count = len(positions)
                scopes.append(ScopeSections(positions, offer_of, agents, texts, offers, latest,
                                            ScopeEntries(key, (), (entries, first_line, count))))
                first_line += _lines(count)
            heads = tuple(ScopeState(k, None) for k in keys)
            return PartitionSections(stamp, int(data["sequence"]), heads, tuple(scopes))
        except (ValueError, KeyError, TypeError):
            return None  # not what ``encode`` writes: read the part in full instead


def _head(state: ScopeState) -> ScopeState:
    return ScopeState(state.key, state.profile, [], state.holds)


def entry_row(entry: MemoryEntry) -> list[Any]:
    """``entry`` (its key aside) as a JSON list."""
    return [entry.id, entry.content_markdown, entry.kind.value, entry.created_on.isoformat(), entry.author_upn,
            entry.author_user_id, entry.agent_name, entry.reason, entry.session_id, entry.operation_id,
            list(entry.tags), entry.share.value, entry.content_sha256]


_KINDS = {kind.value: kind for kind in EntryKind}
_SHARES = {share.value: share for share in Share}


def entry_of(key: ProfileKey, row: list[Any]) -> MemoryEntry:
    """The entry of ``key`` that ``entry_row`` wrote as ``row``. Raises ``KeyError`` for a kind or share
    no release writes, ``ValueError`` for a time that is not ISO 8601."""
    (entry_id, content, kind, created_on, author_upn, author_user_id, agent_name, reason, session_id,
     operation_id, tags, share, sha) = row
    # Looked up in a dict, not by calling the enum: a listing built from a part decodes every entry.
    return MemoryEntry(
        id=str(entry_id), key=key, content_markdown=str(content), kind=_KINDS[kind],
        created_on=datetime.fromisoformat(created_on), author_upn=str(author_upn), author_user_id=author_user_id,
        agent_name=agent_name, reason=reason, session_id=session_id, operation_id=operation_id,
        tags=tuple(tags), share=_SHARES[share], content_sha256=str(sha),
    )


__all__ = ["ANY_OTHER", "ENTRIES_PER_LINE", "FORMAT", "EncodedEntries", "PartitionSections", "ScopeEntries", "ScopeSections",
           "entry_of", "entry_row", "position"]
