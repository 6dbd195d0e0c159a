"""Wire models of GET /memory/agents: the agents that keep memory about the caller."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from memory_core.domain.overview import AgentScope


class AgentScopeModel(BaseModel):
    agent_object_id: str
    agent_name: str | None
    entry_count: int
    updated_on: datetime | None

    @classmethod
    def from_scope(cls, scope: AgentScope) -> AgentScopeModel:
        return cls(agent_object_id=scope.agent_object_id, agent_name=scope.agent_name,
                   entry_count=scope.entry_count, updated_on=scope.updated_on)


class AgentScopesResponse(BaseModel):
    upn: str
    agents: list[AgentScopeModel]
    notice: str | None = None
