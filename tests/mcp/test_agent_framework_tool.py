"""Microsoft Agent Framework's own MCP client (``MCPStreamableHTTPTool``) against ``serve``, inside an Agent run.

The model is scripted (no network, no LLM): it asks for ``append_memory``, then
``get_memory``, then answers. The framework itself connects (2026-07-28
``server/discover``), lists the tools, invokes them over HTTP and feeds the
results back, exactly as with a real model. Before the capabilities were made
honest, ``connect()`` never returned (the framework opened ``subscriptions/listen``
and the server's stream never ended); every step here is bounded in time.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from agent_framework import (
    Agent,
    AgentResponse,
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    MCPStdioTool,
    MCPStreamableHTTPTool,
    Message,
)

from memory_core.mcp.server import TOOL_NAMES
from tests.mcp.client import AGENT_A, mcp_headers
from tests.mcp.conftest import McpTarget

pytestmark = pytest.mark.anyio

TIME_LIMIT = 60


class ToolCallingChatClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """A chat client with no model: each turn answers the next scripted message, and records what it was sent.

    It has the framework's function-invocation layer, as every real chat client
    does, so the framework runs the tool calls it answers.
    """

    def __init__(self, turns: Sequence[Message]) -> None:
        super().__init__()
        self.turns = list(turns)
        self.requests: list[list[Message]] = []
        self.tool_names: list[list[str]] = []

    async def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse:
        assert not stream, "the test runs without streaming"
        self.requests.append(list(messages))
        self.tool_names.append([getattr(t, "name", "") for t in options.get("tools") or []])
        return ChatResponse(messages=[self.turns.pop(0)])


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> Message:
    return Message(role="assistant", contents=[Content.from_function_call(call_id, name, arguments=arguments)])


def _results(messages: Sequence[Message]) -> dict[str, Any]:
    """call id -> function result, from what the model was sent."""
    found: dict[str, Any] = {}
    for message in messages:
        for content in message.contents:
            if content.type == "function_result":
                found[content.call_id] = content.result
    return found


async def _run_travel_agent(tool: MCPStdioTool | MCPStreamableHTTPTool, model: ToolCallingChatClient,
                            time_limit: float) -> AgentResponse[Any]:
    """Connect ``tool`` (asserting it connects and offers exactly this server's tools), then run a travel assistant
    with it and ``model`` on one user message, "Remember that I prefer aisle seats."; ``time_limit`` seconds for
    all of it. The tool is closed again before this returns."""
    async with asyncio.timeout(time_limit):
        async with tool:
            assert tool.is_connected
            assert {f.name for f in tool.functions} == set(TOOL_NAMES)
            agent = Agent(client=model, instructions="You are a travel assistant.", tools=[tool])
            return await agent.run("Remember that I prefer aisle seats.")


async def test_agent_run_appends_then_reads_memory_through_the_mcp_tool(mcp_target: McpTarget, instance_id: str) -> None:
    """An Agent run with MCPStreamableHTTPTool: the scripted model's append_memory and get_memory really run."""
    fact = f"- prefers aisle seats ({uuid.uuid4().hex[:6]})"
    model = ToolCallingChatClient(
        [
            _call("call-1", "append_memory", {"scope": "agent", "memory": fact, "reason": "user said so"}),
            _call("call-2", "get_memory", {"scope": "combined"}),
            Message(role="assistant", contents=["Noted: aisle seats."]),
        ]
    )
    headers = mcp_headers(mcp_target.key, agent=AGENT_A, agent_name="Benefits Assistant", instance=instance_id)
    tool = MCPStreamableHTTPTool("memory", mcp_target.url, static_headers=headers, request_timeout=20)
    response = await _run_travel_agent(tool, model, TIME_LIMIT)

    assert response.text == "Noted: aisle seats."
    assert len(model.requests) == 3
    assert "append_memory" in model.tool_names[0] and "get_memory" in model.tool_names[0]
    results = _results(model.requests[2])
    appended, got = str(results["call-1"]), str(results["call-2"])
    assert fact in appended and json.loads(appended)["agent_object_id"] == AGENT_A  # the structured JSON answer
    assert fact in got and "Benefits Assistant" in got  # read back through the same tool, with its provenance
    with mcp_target.store.client() as rest:
        stored = rest.get(f"/instances/{instance_id}/memory", params={"scope": "agent", "agentObjectId": AGENT_A})
    assert fact in stored.json()["content_markdown"]


async def test_tool_connects_and_closes_promptly(mcp_target: McpTarget, instance_id: str) -> None:
    """connect() returns and the tool closes within seconds, ten times over (no listen stream is left open)."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with asyncio.timeout(TIME_LIMIT):
        for _ in range(10):
            async with MCPStreamableHTTPTool("memory", mcp_target.url,
                                             static_headers=mcp_headers(mcp_target.key, instance=instance_id)) as tool:
                assert tool.is_connected
    assert loop.time() - started < 30
