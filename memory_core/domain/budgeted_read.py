"""A budgeted read as a use case: where the entries come from, the fill, and the view it answers.

``MemoryService.get_within`` checks the caller and resolves the keys; this module
does the rest (the rule itself is in ``memory_core.domain.budget``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

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
from memory_core.domain.models import ProfileKey, Scope, ScopeState
from memory_core.domain.rendering import render_combined
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.snapshots import Snapshots, snapshot_view
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
    fills: tuple[ScopeFill, ...]
    if scope is Scope.COMBINED:
        fills = fill_combined(sources[0], sources[1], max_chars, caller.upn)
        content = render_combined(fills[0].document(), fills[1].document())
    else:
        fills = (fill_scope(scope, sources[0], max_chars, caller.upn),)
        content = fills[0].document()
    report = BudgetReport(max_chars, len(content), tuple(f.report(s) for f, s in zip(fills, sources, strict=True)))
    profiles = [state.profile for state in states if state.profile]
    newest = [e.created_on for e in (source.at(0) for source in sources) if e is not None]
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
    store: MemoryStore, viewer: str, keys: Sequence[ProfileKey], policy: SharingPolicy, page_size: int
) -> tuple[list[ScopeState], list[NewestFirst]]:
    """Each key's state (without entries) and its visible entries newest first.

    Private reads page through the store; reads that merge shared entries, or meet
    a hold a window cannot express, read the scopes in full.
    """
    if not policy.shares_read():
        states = store.load_heads(keys)
        stored = [StoredEntries.of(store, state, page_size) for state in states]
        if all(source is not None for source in stored):
            return states, [s for s in stored if s is not None]
    visible = visible_scopes(store, viewer, keys, policy)
    return [state for state, _ in visible], [ListedEntries(entries) for _, entries in visible]
