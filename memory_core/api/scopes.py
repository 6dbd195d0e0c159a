"""GET /memory/agents: the agents that hold memory about the caller (the console's agent list), a page at a time."""

from __future__ import annotations

from memory_core.domain.modes import OFF_READ_NOTICE
from memory_core.domain.overview import agent_scopes
from memory_core.edge import Access, Call, EndpointSpec, endpoint
from memory_core.wire.agents import AgentScopesResponse, AgentsQuery


@endpoint(EndpointSpec(summary="The agents holding memory about the caller, a page at a time in a stable order "
                               "of the agent's id (sort by updated_on for the most recent first)",
                       tag="memory", access=Access.USER, query=AgentsQuery, response=AgentScopesResponse,
                       errors=(400, 401),
                       memory_off=lambda call: AgentScopesResponse(upn=call.caller.upn, agents=[],
                                                                   notice=OFF_READ_NOTICE)))
def list_agents(call: Call) -> AgentScopesResponse:
    query = call.query(AgentsQuery)
    page = agent_scopes(call.runtime.store, call.instance_id, call.caller.upn, limit=query.limit,
                        continuation=query.continuation)
    return AgentScopesResponse.from_page(call.caller.upn, page)
