"""Wire models of GET /memory/agents: the agents that keep memory about the caller, a page at a time."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from memory_core.domain.overview import AGENTS_PAGE, MAX_AGENTS_PAGE, AgentScope
from memory_core.domain.paging import MAX_TOKEN_CHARS, Page


class AgentsQuery(BaseModel):
    """Paging of the agent list (keyset pages in a stable order of the agent's id, ``overview.agent_scopes``)."""

    model_config = ConfigDict(extra="ignore")

    limit: int = Field(default=AGENTS_PAGE, ge=1, le=MAX_AGENTS_PAGE,
                       description=f"Agents per page (1-{MAX_AGENTS_PAGE}, default {AGENTS_PAGE})")
    continuation: Annotated[str, StringConstraints(max_length=MAX_TOKEN_CHARS)] | None = Field(
        default=None, description="The previous page's continuation; omit it for the first page"
    )


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
    """A page of the caller's agent scopes, in a stable order of the agent's id (not by time: sort them to show
    the most recently updated first)."""

    upn: str
    agents: list[AgentScopeModel]
    continuation: str | None = Field(
        default=None, description="Set when more agents follow: pass it as ?continuation= for the next page")
    notice: str | None = None

    @classmethod
    def from_page(cls, upn: str, page: Page[AgentScope]) -> AgentScopesResponse:
        return cls(upn=upn, agents=[AgentScopeModel.from_scope(s) for s in page.items],
                   continuation=page.continuation)
