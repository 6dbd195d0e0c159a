"""A budgeted read as a use case: where the entries come from, the fill, and the view it answers.

``MemoryService.get_within`` checks the caller and resolves the keys; this module
does the rest (the rule itself is in ``memory_core.domain.budget``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from memory_core.domain.added_entries import added_since, appended_across
from memory_core.domain.budget import (
    BudgetReport,
    ListedEntries,
    NewestFirst,
    ScopeBudget,
    ScopeFill,
    StoredEntries,
    fill_combined,
    fill_scope,
    newest_agent_name,
    page_size_for,
)
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.kept import entries_bytes, text_bytes
from memory_core.domain.models import SHARED_OWNER, MemoryEntry, ProfileKey, Scope, ScopeState
from memory_core.domain.rendering import render_combined
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.snapshots import (
    ChangeStamps,
    PartitionStamp,
    Snapshots,
    snapshot_view,
)
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import MemoryView
from memory_core.domain.visibility import visible_scopes


def read_within(
    store: MemoryStore,
    caller: Caller,
    scope: Scope,
    keys: Sequence[ProfileKey],
    agent: AgentContext | None,
    max_chars: int,
    policy: SharingPolicy,
) -> MemoryView:
    """The view of ``scope`` (``keys``: its one key, or user then agent for combined) within ``max_chars``."""
    states, sources = newest_first(store, caller.upn, keys, policy, page_size_for(max_chars))
    return _view_within(caller, scope, keys, agent, max_chars, states, sources)


def _view_within(
    caller: Caller,
    scope: Scope,
    keys: Sequence[ProfileKey],
    agent: AgentContext | None,
    max_chars: int,
    states: Sequence[ScopeState],
    sources: Sequence[NewestFirst],
) -> MemoryView:
    """The budget's fill of ``sources`` (each key's visible entries, newest first) as the read's view."""
    fills: tuple[ScopeFill, ...]
    if scope is Scope.COMBINED:
        fills = fill_combined(sources[0], sources[1], max_chars, caller.upn)
        content = render_combined(fills[0].document(), fills[1].document())
    else:
        fills = (fill_scope(scope, sources[0], max_chars, caller.upn),)
        content = fills[0].document()
    report = BudgetReport(max_chars, len(content), tuple(f.report(s) for f, s in zip(fills, sources, strict=True)))
    profiles = [state.profile for state in states if state.profile]
    newest = [e.created_on for e in (source.newest_visible() for source in sources) if e is not None]
    moments = [p.updated_on for p in profiles] + newest
    agent_name = None
    if keys[-1].scope is Scope.AGENT:
        agent_profile = states[-1].profile
        agent_name = (newest_agent_name(fills[-1], sources[-1])
                      or (agent_profile.agent_name if agent_profile else None)
                      or (agent.name if agent else None))
    first = states[0].profile if scope is not Scope.COMBINED else None
    return MemoryView(
        scope=scope,
        upn=caller.upn,
        name=(first.name if first else None) or caller.name,
        user_name=(first.user_name if first else None) or caller.user_name,
        agent_object_id=keys[-1].agent_object_id,
        agent_name=agent_name,
        content_markdown=content,
        created_on=min(p.created_on for p in profiles) if profiles else None,
        updated_on=max(moments) if moments else None,
        budget=report,
    )


# -- a private budgeted read kept, and grown by the entries appended since ------------------------


class _BeyondKept(Exception):
    """The fill asked for an entry older than those a kept read holds: the read is built again."""


class KeptWindow(NewestFirst):
    """The newest of a scope's visible entries as a kept read holds them: the first ``len(entries)``
    of ``total``, which is exact, as is ``oldest``; and the newest visible entry, with content or
    without (``NewestFirst.newest_visible``). Immutable once made."""

    def __init__(
        self, entries: Sequence[MemoryEntry], total: int, oldest: datetime | None, held_bytes: int | None = None,
        newest: MemoryEntry | None = None,
    ) -> None:
        """``held_bytes``: what ``entries`` hold (``kept.entries_bytes``), when the caller has counted it.
        ``newest``: the newest visible entry when it has no content (else the first of ``entries``)."""
        self._entries = tuple(entries)
        self._total = total
        self._oldest = oldest
        self._newest = newest if newest is not None else (self._entries[0] if self._entries else None)
        self.held_bytes = entries_bytes(self._entries) if held_bytes is None else held_bytes

    @staticmethod
    def of(source: NewestFirst, limit: int) -> KeptWindow:
        """What ``source`` has read so far (at most ``limit`` entries), with its count."""
        return KeptWindow(source.read_so_far()[:limit], source.total(), source.oldest(),
                          newest=source.newest_visible())

    def newest_visible(self) -> MemoryEntry | None:
        return self._newest

    def at(self, index: int) -> MemoryEntry | None:
        if index < len(self._entries):
            return self._entries[index]
        if index >= self._total:
            return None
        raise _BeyondKept

    def total(self) -> int:
        return self._total

    def oldest(self) -> datetime | None:
        return self._oldest

    def read_so_far(self) -> Sequence[MemoryEntry]:
        return self._entries

    def grown(
        self, added: ScopeState, limit: int, shared: ScopeState | None = None,
        policy: SharingPolicy = SharingPolicy.PRIVATE, viewer: str = "",
    ) -> KeptWindow | None:
        """This window with the visible entries of ``added`` (entries stored since) in front, or None
        when the read must be built again (``added_entries.appended_across``); entries it holds already
        (stored while it was being read) are not added twice.

        A sharing read also takes ``shared``: the entries stored since in the instance's shared
        partition, of which it shows those ``policy`` shows ``viewer``.
        """
        held = {e.id for e in self._entries}

        def new(state: ScopeState) -> ScopeState:
            return ScopeState(state.key, state.profile, [e for e in state.entries if e.id not in held], state.holds)

        # Added entries must sort after the newest visible one, with content or not: one sorting before
        # an empty replace (a writer whose clock ran behind) is hidden by it, so the read is built again.
        visible = appended_across(new(added), new(shared) if shared is not None else None,
                                  self._newest, policy, viewer)
        if visible is None:
            return None
        newest = visible[-1] if visible else self._newest
        shown = [e for e in visible if e.content_markdown.strip()]
        if not shown:
            return self if newest is self._newest else KeptWindow(
                self._entries, self._total, self._oldest, self.held_bytes, newest)
        newest_first = [*reversed(shown), *self._entries]
        held_bytes = self.held_bytes + entries_bytes(shown) - entries_bytes(newest_first[limit:])
        oldest = self._oldest if self._total else (shown[0].created_on if shown else None)
        grown = KeptWindow(newest_first[:limit], self._total + len(shown), oldest, held_bytes, newest)
        # The sections rendered for this window are the same text one place further down: keep them
        # (a kept read is one caller's, so one viewer's), and only the added entries are rendered.
        rendered = getattr(self, "_sections", {})
        grown._sections = {index + len(shown): text for index, text in rendered.items()
                           if index + len(shown) < len(newest_first)}
        return grown


@dataclass(frozen=True)
class KeptRead:
    """A budgeted read's view, with what it read from each scope and the entry sequences it read after
    (``shared_sequence``: the instance's shared partition's, for a sharing read)."""

    view: MemoryView
    windows: tuple[KeptWindow, ...]
    sequence: int
    shared_sequence: int | None = None

    @property
    def size(self) -> int:
        """Bytes held (``kept``'s estimate): the view's text, the entries, and the sections rendered from
        them, counted as the view's text again (the fill renders about a budget's worth)."""
        return 2 * text_bytes(self.view.content_markdown) + sum(w.held_bytes for w in self.windows)


def kept_read(
    store: MemoryStore, stamps: ChangeStamps, caller: Caller, scope: Scope, keys: Sequence[ProfileKey],
    agent: AgentContext | None, max_chars: int, policy: SharingPolicy = SharingPolicy.PRIVATE,
) -> KeptRead:
    """``read_within`` on a stamped store (``stamps``: the same store), with what a later
    ``grown_read`` needs.

    The partitions' entry sequences are read first, so every entry the read finds after them
    is also found by the next ``grown_read``, which leaves out those already held.
    """
    instance_id = keys[0].instance_id
    sequence = stamps.entry_sequence(instance_id, keys[0].upn)
    shared_sequence = stamps.entry_sequence(instance_id, SHARED_OWNER) if policy.shares_read() else None
    states, sources = newest_first(store, caller.upn, keys, policy, page_size_for(max_chars))
    return kept_read_of(caller, scope, keys, agent, max_chars, states, sources, (sequence, shared_sequence))


def labelled_kept_read(
    store: MemoryStore, stamps: ChangeStamps, caller: Caller, scope: Scope, keys: Sequence[ProfileKey],
    agent: AgentContext | None, max_chars: int,
) -> tuple[KeptRead, PartitionStamp]:
    """A private ``kept_read`` with the stamp to keep it under, both from its first read
    (``ChangeStamps.load_stamped_heads``: the heads, the stamp and the entry sequence of one view), so
    no stamp is read before it: the read reads its entries after that view, so the label is no later
    than anything it holds, and every entry stored after the sequence is found by the next ``grown_read``.
    """
    heads = stamps.load_stamped_heads(keys)
    states, sources = newest_first(store, caller.upn, keys, SharingPolicy.PRIVATE, page_size_for(max_chars),
                                   heads=heads.states)
    read = kept_read_of(caller, scope, keys, agent, max_chars, states, sources, (heads.sequence, None))
    return read, heads.stamp


def kept_read_of(
    caller: Caller, scope: Scope, keys: Sequence[ProfileKey], agent: AgentContext | None, max_chars: int,
    states: Sequence[ScopeState], sources: Sequence[NewestFirst], sequences: tuple[int, int | None],
) -> KeptRead:
    """``kept_read``'s answer from ``sources`` (each key's visible entries, newest first) and ``states``
    (each key's profile and holds), read at or after the entry ``sequences`` (the caller's partition's,
    then the shared one's for a sharing read): a later ``grown_read`` reads what was stored after them,
    leaving out what the sources held already."""
    limit = page_size_for(max_chars)
    view = _view_within(caller, scope, keys, agent, max_chars, states, sources)
    return KeptRead(view, tuple(KeptWindow.of(source, limit) for source in sources), sequences[0], sequences[1])


def grown_read(
    store: ChangeStamps, kept: KeptRead, kept_at: Sequence[PartitionStamp], caller: Caller, scope: Scope,
    keys: Sequence[ProfileKey], agent: AgentContext | None, max_chars: int,
    policy: SharingPolicy = SharingPolicy.PRIVATE,
) -> KeptRead | None:
    """``kept`` brought up to date from the entries stored since it was read, or None to build it again.

    ``kept_at``: the stamps it was kept under (the caller's partition, then for a sharing read the
    shared one). Only when nothing but entries were added to them since (checked on what is read
    here). The fill is computed again from the grown windows: it never needs more than they hold,
    except in a combined read whose other scope gives back room; then None.
    """
    loaded = added_since(store, keys, kept.sequence, kept_at[0])
    if loaded is None:
        return None
    shared = None
    if kept.shared_sequence is not None:
        shared = added_since(store, [k.shared() for k in keys], kept.shared_sequence, kept_at[1])
        if shared is None:
            return None
    limit = page_size_for(max_chars)
    windows = []
    for index, (window, added) in enumerate(zip(kept.windows, loaded.states, strict=True)):
        grown = window.grown(added, limit, shared.states[index] if shared else None, policy, caller.upn)
        if grown is None:
            return None
        windows.append(grown)
    try:
        view = _view_within(caller, scope, keys, agent, max_chars, loaded.states, windows)
    except _BeyondKept:
        return None
    return KeptRead(view, tuple(windows), loaded.sequence, shared.sequence if shared else None)


def within_snapshots(
    caller: Caller, scope: Scope, snapshots: Snapshots | None, agent: AgentContext | None, max_chars: int
) -> MemoryView | None:
    """``read_within``'s answer taken from current ``snapshots``, when the whole memory fits ``max_chars``.

    None when there are no snapshots or the memory does not fit (the budget's fill must choose
    what to leave out: ``read_within`` does). When everything fits the fill shows every entry,
    so the answer is the full read with a report that leaves nothing out.
    """
    if snapshots is None:
        return None
    view = snapshot_view(caller, scope, snapshots, agent)
    if len(view.content_markdown) > max_chars:
        return None
    report = BudgetReport(max_chars, len(view.content_markdown),
                          tuple(ScopeBudget(s.state.key.scope, s.sections, 0) for s in snapshots.scopes))
    return replace(view, budget=report)


def newest_first(
    store: MemoryStore, viewer: str, keys: Sequence[ProfileKey], policy: SharingPolicy, page_size: int,
    heads: Sequence[ScopeState] | None = None,
) -> tuple[list[ScopeState], list[NewestFirst]]:
    """Each key's state (without entries) and its visible entries newest first.

    Private reads page through the store (from ``heads``, the keys' ``load_heads`` when the caller
    has read them); reads that merge shared entries, or meet a hold a window cannot express, read
    the scopes in full.
    """
    if not policy.shares_read():
        states = list(heads) if heads is not None else store.load_heads(keys)
        stored = [StoredEntries.of(store, state, page_size) for state in states]
        if all(source is not None for source in stored):
            return states, [s for s in stored if s is not None]
    visible = visible_scopes(store, viewer, keys, policy)
    return [state for state, _ in visible], [ListedEntries(entries) for _, entries in visible]
