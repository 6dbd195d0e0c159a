"""What a person or an operator sees at a glance: a user's agent scopes, a deletion request's size.

These are read-only summaries over the store, used by the console's endpoints;
they never change memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory_core.domain.deletion import DeletionKind, DeletionRequest, DeletionStatus
from memory_core.domain.models import Scope
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import agent_name_of, updated_on_of


@dataclass(frozen=True, slots=True)
class AgentScope:
    """One agent's memory about a user: who the agent is and how much is visible now."""

    agent_object_id: str
    agent_name: str | None
    entry_count: int
    updated_on: datetime | None


def agent_scopes(store: MemoryStore, instance_id: str, upn: str) -> list[AgentScope]:
    """Every agent scope the user has in the instance, most recently updated first.

    A scope whose entries are all cleared or held still appears, with ``entry_count`` 0,
    so a person can see that an agent once held memory about them.
    """
    scopes = [
        AgentScope(
            agent_object_id=state.key.agent_object_id or "",
            agent_name=agent_name_of(state, None),
            entry_count=len(state.visible_entries()),
            updated_on=updated_on_of(state),
        )
        for state in store.load_partition(instance_id, upn)
        if state.key.scope is Scope.AGENT and state.key.agent_object_id
    ]
    return sorted(scopes, key=lambda s: (s.updated_on is None, -(s.updated_on.timestamp() if s.updated_on else 0.0),
                                         s.agent_object_id))


def request_entry_count(store: MemoryStore, request: DeletionRequest) -> int | None:
    """How many of the user's own entries the request erases (or erased); None when unknowable.

    Executed requests answer their recorded count. Pending and approved requests count the
    entries their hold hides now; a rejected request no longer hides anything and answers None.
    """
    if request.status is DeletionStatus.EXECUTED:
        return request.erased_entries
    if request.status is DeletionStatus.REJECTED:
        return None
    if request.kind is DeletionKind.FORGET:
        return 1
    if request.plan is not None:
        return sum(1 for p in request.plan if p.owner is None)
    count = 0
    for state in store.load_partition(request.instance_id, request.upn):
        holds = [h for h in state.holds if h.request_id == request.id]
        count += sum(1 for e in state.entries if any(h.covers(e) for h in holds))
    return count
