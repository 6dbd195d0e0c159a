"""GET /memory/agents: the agents that hold memory about the caller (the console's agent list)."""

from __future__ import annotations

from memory_core.domain.modes import OFF_READ_NOTICE
from memory_core.domain.overview import agent_scopes
from memory_core.edge import Access, Call, EndpointSpec, endpoint
from memory_core.wire.agents import AgentScopeModel, AgentScopesResponse


@endpoint(EndpointSpec(summary="The agents holding memory about the caller, most recently updated first",
                       tag="memory", access=Access.USER, response=AgentScopesResponse, errors=(400, 401),
                       memory_off=lambda call: AgentScopesResponse(upn=call.caller.upn, agents=[],
                                                                   notice=OFF_READ_NOTICE)))
def list_agents(call: Call) -> AgentScopesResponse:
    scopes = agent_scopes(call.runtime.store, call.instance_id, call.caller.upn)
    return AgentScopesResponse(upn=call.caller.upn, agents=[AgentScopeModel.from_scope(s) for s in scopes])
