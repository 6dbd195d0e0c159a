"""What a person or an operator sees at a glance: a user's agent scopes, a deletion request's size.

These are read-only summaries over the store, used by the console's endpoints;
they never change memory.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    so a person can see that an agent once held memory about them. Reads the partition's
    profiles, then the agent scopes alone: never the user scope's entries, often most of a
    person's memory (10,000 of them made the console's agent list take 7-8 s on the Cosmos
    DB test server).
    """
    agents = [k for k in store.partition_keys(instance_id, upn) if k.scope is Scope.AGENT and k.agent_object_id]
    scopes = [
        AgentScope(
            agent_object_id=state.key.agent_object_id or "",
            agent_name=agent_name_of(state, None),
            entry_count=len(state.visible_entries()),
            updated_on=updated_on_of(state),
        )
        for state in store.load(agents)
    ]
    return sorted(scopes, key=lambda s: (s.updated_on is None, -(s.updated_on.timestamp() if s.updated_on else 0.0),
                                         s.agent_object_id))


def request_entry_counts(store: MemoryStore, requests: Sequence[DeletionRequest]) -> list[int | None]:
    """How many of the user's own entries each request erases (or erased); None when unknowable.

    Executed requests, and approved ones the sweep has counted, answer their recorded count; a forget
    answers 1. Other pending and approved requests count the entries their hold hides now: each
    person's memory is read once for the page however many requests they have (a person with 300
    pending clears cost 300 reads of their memory, a minute at 3,000 entries). A rejected request no
    longer hides anything and answers None.
    """
    counted: dict[str, int | None] = {}
    uncounted: dict[tuple[str, str], list[DeletionRequest]] = {}
    for request in requests:
        if request.status is DeletionStatus.REJECTED:
            counted[request.id] = None
        elif request.erased_entries is not None:
            counted[request.id] = request.erased_entries
        elif request.kind is DeletionKind.FORGET:
            counted[request.id] = 1
        else:
            uncounted.setdefault((request.instance_id, request.upn), []).append(request)
    for (instance_id, upn), theirs in uncounted.items():
        wanted = {r.id for r in theirs}
        counts = dict.fromkeys(wanted, 0)
        for state in store.load_partition(instance_id, upn):
            for hold in state.holds:  # every state of a partition carries the same holds
                if hold.request_id in wanted:
                    counts[hold.request_id] += sum(1 for e in state.entries if hold.covers(e))
        counted.update(counts)
    return [counted[r.id] for r in requests]
