"""The memory tools, over real HTTP with the official mcp client, on both backends."""

from __future__ import annotations

import json
import logging
import uuid

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.auth import KeyAuthenticator
from memory_core.domain.service import MemoryService
from memory_core.mcp.backend import InProcessBackend
from memory_core.mcp.tools import INSTRUCTIONS, build_server
from memory_core.wire.custody import SearchResponse
from memory_core.wire.memory import MemoryResponse
from tests.mcp.client import AGENT_A, AGENT_B, call, initialize, mcp_headers, mcp_session, text
from tests.mcp.conftest import DEFAULT_INSTANCE, FRONT_KEY, McpTarget
from tests.support.local_server import RunningServer

pytestmark = pytest.mark.anyio


def _upn() -> str:
    return f"user-{uuid.uuid4().hex[:10]}@contoso.com"


# -- discovery ---------------------------------------------------------------


async def test_lists_exactly_the_memory_tools(mcp_target: McpTarget) -> None:
    """tools/list answers get_memory, append_memory, clear_memory, search_memory and memory, and nothing else."""
    async with mcp_session(mcp_target.url, mcp_headers(mcp_target.key)) as session:
        tools = (await session.list_tools()).tools
    assert sorted(t.name for t in tools) == ["append_memory", "clear_memory", "get_memory", "memory", "search_memory"]


async def test_get_memory_takes_an_optional_scope_defaulting_to_combined(mcp_target: McpTarget) -> None:
    """get_memory takes scope (user, agent or combined, default combined, described as in the seed), an
    optional memory_sharing policy override and a max_chars budget whose default the description states."""
    async with mcp_session(mcp_target.url, mcp_headers(mcp_target.key)) as session:
        tool = next(t for t in (await session.list_tools()).tools if t.name == "get_memory")
    schema = tool.input_schema
    assert list(schema["properties"]) == ["scope", "memory_sharing", "max_chars"]
    assert schema["properties"]["max_chars"]["default"] == 16000
    assert schema["properties"]["max_chars"]["minimum"] == 0
    assert schema["properties"]["max_chars"]["type"] == "integer"  # taken strictly (a JSON integer only)
    assert "default 16000" in (tool.description or "") and "larger max_chars" in (tool.description or "")
    assert schema["properties"]["scope"]["enum"] == ["user", "agent", "combined"]
    assert schema["properties"]["scope"]["default"] == "combined"
    assert schema["properties"]["scope"]["description"] == (
        '"combined" returns user + agent memory; "user" returns cross-agent memory; "agent" returns this agent only.'
    )
    assert "required" not in schema
    assert tool.output_schema is None


async def test_append_memory_takes_scope_memory_and_an_optional_reason(mcp_target: McpTarget) -> None:
    """append_memory requires scope (user|agent) and memory (string); reason and share are optional."""
    async with mcp_session(mcp_target.url, mcp_headers(mcp_target.key)) as session:
        tool = next(t for t in (await session.list_tools()).tools if t.name == "append_memory")
    props = tool.input_schema["properties"]
    assert list(props) == ["scope", "memory", "reason", "share"]
    assert props["share"]["enum"] == ["private", "team"] and props["share"]["default"] == "private"
    assert props["scope"]["enum"] == ["user", "agent"]
    assert props["scope"]["description"] == '"user" = across all agents; "agent" = this agent only'
    assert props["memory"]["type"] == "string"
    assert props["memory"]["description"] == "Markdown text to append"
    assert props["reason"]["default"] is None
    assert props["reason"]["description"] == "Optional provenance note"
    assert tool.input_schema["required"] == ["scope", "memory"]


async def test_clear_memory_takes_scope_and_confirm_defaulting_to_false(mcp_target: McpTarget) -> None:
    """clear_memory requires scope (user|agent); confirm is a boolean defaulting to false."""
    async with mcp_session(mcp_target.url, mcp_headers(mcp_target.key)) as session:
        tool = next(t for t in (await session.list_tools()).tools if t.name == "clear_memory")
    props = tool.input_schema["properties"]
    assert list(props) == ["scope", "confirm"]
    assert props["scope"]["enum"] == ["user", "agent"]
    assert props["confirm"] == {
        "default": False,
        "description": "Must be true. Use only when the user explicitly asks to forget/reset memory.",
        "title": "Confirm",
        "type": "boolean",
    }
    assert tool.input_schema["required"] == ["scope"]


async def test_append_declares_the_memory_response_as_output(mcp_target: McpTarget) -> None:
    """append_memory publishes the MemoryResponse fields as its output schema."""
    async with mcp_session(mcp_target.url, mcp_headers(mcp_target.key)) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools["append_memory"].output_schema["properties"]) == set(MemoryResponse.model_fields)


async def test_clear_declares_no_output_schema(mcp_target: McpTarget) -> None:
    """clear_memory declares no output schema: it answers the emptied scope or a pending deletion."""
    async with mcp_session(mcp_target.url, mcp_headers(mcp_target.key)) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    assert tools["clear_memory"].output_schema is None


async def test_annotations_tell_clients_which_tools_read_and_which_destroy(mcp_target: McpTarget) -> None:
    """get and search are read-only; clear is destructive (and idempotent); append writes without destroying."""
    async with mcp_session(mcp_target.url, mcp_headers(mcp_target.key)) as session:
        hints = {t.name: t.annotations for t in (await session.list_tools()).tools}
    assert hints["get_memory"].read_only_hint is True and hints["search_memory"].read_only_hint is True
    assert hints["clear_memory"].destructive_hint is True and hints["clear_memory"].read_only_hint is False
    assert hints["append_memory"].read_only_hint is False and hints["append_memory"].destructive_hint is False
    assert all(h.open_world_hint is False for h in hints.values())


async def test_descriptions_say_when_to_use_each_tool(mcp_target: McpTarget) -> None:
    """Each description tells the model when to call the tool, not only what it does."""
    async with mcp_session(mcp_target.url, mcp_headers(mcp_target.key)) as session:
        described = {t.name: t.description or "" for t in (await session.list_tools()).tools}
    assert "start of a conversation" in described["get_memory"]
    assert "Do not save secrets" in described["append_memory"]
    assert "only when the user explicitly asks" in described["clear_memory"]
    assert "one fact" in described["search_memory"] and "search_memory" in described["get_memory"]


async def test_search_declares_its_hits_as_output_and_answers_them_structured(
    mcp_target: McpTarget, instance_id: str
) -> None:
    """search_memory publishes SearchResponse as its outputSchema, and its structuredContent matches it."""
    headers = mcp_headers(mcp_target.key, upn=_upn(), instance=instance_id)
    async with mcp_session(mcp_target.url, headers) as session:
        tool = next(t for t in (await session.list_tools()).tools if t.name == "search_memory")
        await session.call_tool("append_memory", {"scope": "user", "memory": "- allergic to peanuts"})
        result = await session.call_tool("search_memory", {"query": "peanuts", "scope": "user"})
    assert set(tool.output_schema["properties"]) == {"query", "hits", "notice"}
    assert tool.output_schema["required"] == ["query", "hits"]
    assert not result.is_error
    found = SearchResponse.model_validate(result.structured_content)
    assert found.query == "peanuts" and "peanuts" in found.hits[0].entry.content_markdown
    assert json.loads(text(result)) == result.structured_content


async def test_instructions_carry_the_recommended_memory_policy(mcp_target: McpTarget) -> None:
    """initialize answers the seed's memory policy as the server's instructions."""
    instructions = (await initialize(mcp_target.url, mcp_headers(mcp_target.key))).instructions
    assert instructions == INSTRUCTIONS
    assert instructions.startswith("Use memory to personalize future conversations.")


# -- the tools ---------------------------------------------------------------


async def test_appended_user_memory_is_read_back_as_markdown(mcp_target: McpTarget, instance_id: str) -> None:
    """append_memory(scope=user) then get_memory(scope=user) returns the user document as markdown text."""
    headers = mcp_headers(mcp_target.key, _upn(), instance=instance_id)
    appended = await call(mcp_target.url, headers, "append_memory", {"scope": "user", "memory": "- Prefers tea."})
    read = await call(mcp_target.url, headers, "get_memory", {"scope": "user"})
    assert not appended.is_error and not read.is_error
    assert text(read).startswith("# User memory\n")
    assert "- Prefers tea." in text(read)
    assert read.structured_content is None


async def test_append_answers_the_memory_response_as_json(mcp_target: McpTarget, instance_id: str) -> None:
    """append_memory answers JSON text equal to its structured content: the MemoryResponse of the write."""
    upn = _upn()
    headers = mcp_headers(mcp_target.key, upn, instance=instance_id)
    result = await call(mcp_target.url, headers, "append_memory", {"scope": "user", "memory": "- JSON please."})
    body = json.loads(text(result))
    assert body == result.structured_content
    assert set(body) == set(MemoryResponse.model_fields)
    assert body["scope"] == "user" and body["upn"] == upn
    assert "- JSON please." in body["content_markdown"]
    assert body["entry_id"]


async def test_agent_memory_uses_the_agent_from_the_headers(mcp_target: McpTarget, instance_id: str) -> None:
    """scope=agent writes to the agent named by X-AGENT-OBJECT-ID, labelled with X-AGENT-NAME."""
    headers = mcp_headers(mcp_target.key, _upn(), agent=AGENT_A, agent_name="Benefits Assistant", instance=instance_id)
    result = await call(mcp_target.url, headers, "append_memory", {"scope": "agent", "memory": "- HSA details."})
    read = await call(mcp_target.url, headers, "get_memory", {"scope": "agent"})
    assert result.structured_content["agent_object_id"] == AGENT_A
    assert result.structured_content["agent_name"] == "Benefits Assistant"
    assert text(read).startswith("# Agent memory\n")
    assert "agent: Benefits Assistant" in text(read)
    assert "- HSA details." in text(read)


async def test_get_memory_defaults_to_combined_user_then_agent(mcp_target: McpTarget, instance_id: str) -> None:
    """get_memory without arguments returns user memory, then this agent's memory."""
    headers = mcp_headers(mcp_target.key, _upn(), agent=AGENT_A, instance=instance_id)
    await call(mcp_target.url, headers, "append_memory", {"scope": "agent", "memory": "- agent fact"})
    await call(mcp_target.url, headers, "append_memory", {"scope": "user", "memory": "- user fact"})
    combined = text(await call(mcp_target.url, headers, "get_memory"))
    assert combined.index("# User memory") < combined.index("- user fact") < combined.index("# Agent memory")
    assert combined.index("# Agent memory") < combined.index("- agent fact")


async def test_combined_without_agent_header_reads_user_memory(mcp_target: McpTarget, instance_id: str) -> None:
    """get_memory() with no X-AGENT-OBJECT-ID (a client without agents) answers the user memory alone."""
    headers = mcp_headers(mcp_target.key, _upn(), instance=instance_id)
    await call(mcp_target.url, headers, "append_memory", {"scope": "user", "memory": "- for every client"})
    combined = await call(mcp_target.url, headers, "get_memory")
    user = await call(mcp_target.url, headers, "get_memory", {"scope": "user"})
    assert not combined.is_error
    assert text(combined) == text(user)
    assert "- for every client" in text(combined)


async def test_get_memory_of_a_new_user_is_empty_text(mcp_target: McpTarget, instance_id: str) -> None:
    """Reading memory that does not exist answers an empty text, not an error."""
    result = await call(mcp_target.url, mcp_headers(mcp_target.key, _upn(), instance=instance_id), "get_memory",
                        {"scope": "user"})
    assert not result.is_error
    assert text(result) == ""


async def test_append_records_the_reason_and_the_session(mcp_target: McpTarget, instance_id: str) -> None:
    """reason and the X-SESSION-ID header show in the entry's provenance heading."""
    headers = mcp_headers(mcp_target.key, _upn(), instance=instance_id, X_SESSION_ID="session-42")
    await call(mcp_target.url, headers, "append_memory", {"scope": "user", "memory": "- fact", "reason": "stated"})
    document = text(await call(mcp_target.url, headers, "get_memory", {"scope": "user"}))
    assert "reason: stated" in document
    assert "session: session-42" in document


async def test_clear_with_confirm_empties_the_scope(mcp_target: McpTarget, instance_id: str) -> None:
    """clear_memory(confirm=true) answers JSON with empty content, and the scope reads back empty."""
    headers = mcp_headers(mcp_target.key, _upn(), instance=instance_id)
    await call(mcp_target.url, headers, "append_memory", {"scope": "user", "memory": "- to forget"})
    cleared = await call(mcp_target.url, headers, "clear_memory", {"scope": "user", "confirm": True})
    read = await call(mcp_target.url, headers, "get_memory", {"scope": "user"})
    assert not cleared.is_error
    assert json.loads(text(cleared)) == cleared.structured_content
    assert cleared.structured_content["content_markdown"] == ""
    assert cleared.structured_content["created_on"] is not None
    assert text(read) == ""


async def test_clear_without_confirm_is_refused_and_keeps_memory(mcp_target: McpTarget, instance_id: str) -> None:
    """clear_memory with confirm omitted is a tool error and deletes nothing."""
    headers = mcp_headers(mcp_target.key, _upn(), instance=instance_id)
    await call(mcp_target.url, headers, "append_memory", {"scope": "user", "memory": "- keep me"})
    refused = await call(mcp_target.url, headers, "clear_memory", {"scope": "user"})
    read = await call(mcp_target.url, headers, "get_memory", {"scope": "user"})
    assert refused.is_error
    assert text(refused) == "clear requires confirm=true"
    assert "- keep me" in text(read)


async def test_clearing_user_memory_keeps_agent_memory(mcp_target: McpTarget, instance_id: str) -> None:
    """clear_memory(scope=user) leaves the agent's memory in place."""
    headers = mcp_headers(mcp_target.key, _upn(), agent=AGENT_A, instance=instance_id)
    await call(mcp_target.url, headers, "append_memory", {"scope": "agent", "memory": "- agent stays"})
    await call(mcp_target.url, headers, "clear_memory", {"scope": "user", "confirm": True})
    assert "- agent stays" in text(await call(mcp_target.url, headers, "get_memory", {"scope": "agent"}))


async def test_two_users_are_kept_apart(mcp_target: McpTarget, instance_id: str) -> None:
    """One user's memory never shows for another user on the same instance and agent."""
    alex = mcp_headers(mcp_target.key, _upn(), agent=AGENT_A, instance=instance_id)
    blair = mcp_headers(mcp_target.key, _upn(), agent=AGENT_A, instance=instance_id)
    await call(mcp_target.url, alex, "append_memory", {"scope": "user", "memory": "- alex-user-secret"})
    await call(mcp_target.url, alex, "append_memory", {"scope": "agent", "memory": "- alex-agent-secret"})
    seen_by_blair = text(await call(mcp_target.url, blair, "get_memory", {"scope": "combined"}))
    assert "alex" not in seen_by_blair


async def test_two_agents_are_kept_apart(mcp_target: McpTarget, instance_id: str) -> None:
    """Agent memory written under one X-AGENT-OBJECT-ID never shows under another; user memory shows under both."""
    upn = _upn()
    agent_a = mcp_headers(mcp_target.key, upn, agent=AGENT_A, instance=instance_id)
    agent_b = mcp_headers(mcp_target.key, upn, agent=AGENT_B, instance=instance_id)
    await call(mcp_target.url, agent_a, "append_memory", {"scope": "agent", "memory": "- secret-to-A"})
    await call(mcp_target.url, agent_a, "append_memory", {"scope": "user", "memory": "- shared-fact"})
    seen_by_b = text(await call(mcp_target.url, agent_b, "get_memory", {"scope": "combined"}))
    assert "secret-to-A" not in seen_by_b
    assert "- shared-fact" in seen_by_b


async def test_arguments_cannot_choose_whose_memory(mcp_target: McpTarget, instance_id: str) -> None:
    """Arguments naming another user, agent or instance are ignored: only the headers decide."""
    victim = mcp_headers(mcp_target.key, "victim@contoso.com", agent=AGENT_B, instance=instance_id)
    attacker_upn = _upn()
    attacker = mcp_headers(mcp_target.key, attacker_upn, agent=AGENT_A, instance=instance_id)
    result = await call(
        mcp_target.url,
        attacker,
        "append_memory",
        {"scope": "agent", "memory": "- planted", "upn": "victim@contoso.com", "agent_object_id": AGENT_B,
         "instance_id": "other", "user_identity": '{"upn": "victim@contoso.com"}'},
    )
    assert result.structured_content["upn"] == attacker_upn
    assert result.structured_content["agent_object_id"] == AGENT_A
    assert "planted" not in text(await call(mcp_target.url, victim, "get_memory", {"scope": "combined"}))


async def test_instance_comes_from_the_header_else_the_default_setting(mcp_target: McpTarget, instance_id: str) -> None:
    """X-INSTANCE-ID picks the instance; without it the MEMORY_DEFAULT_INSTANCE_ID instance is used."""
    upn = _upn()
    await call(mcp_target.url, mcp_headers(mcp_target.key, upn), "append_memory",
               {"scope": "user", "memory": "- default"})
    await call(mcp_target.url, mcp_headers(mcp_target.key, upn, instance=instance_id), "append_memory",
               {"scope": "user", "memory": "- explicit"})
    with mcp_target.store.client(upn) as rest:
        default = rest.get(f"/instances/{DEFAULT_INSTANCE}/memory", params={"scope": "user"}).json()
        explicit = rest.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()
    assert "- default" in default["content_markdown"] and "- explicit" not in default["content_markdown"]
    assert "- explicit" in explicit["content_markdown"] and "- default" not in explicit["content_markdown"]


async def test_memory_written_over_mcp_is_the_coreapi_memory(mcp_target: McpTarget, instance_id: str) -> None:
    """What append_memory writes is what the storing server's REST API reads, for the same user and agent."""
    upn = _upn()
    headers = mcp_headers(mcp_target.key, upn, agent=AGENT_A, instance=instance_id)
    await call(mcp_target.url, headers, "append_memory", {"scope": "agent", "memory": "- via MCP"})
    with mcp_target.store.client(upn) as rest:
        body = rest.get(f"/instances/{instance_id}/memory", params={"scope": "agent", "agentObjectId": AGENT_A}).json()
    assert "- via MCP" in body["content_markdown"]


async def test_coreapi_backend_stores_nothing_itself(front_server: RunningServer, instance_id: str) -> None:
    """With MEMORY_COREAPI_BASE_URL set, the MCP server's own store stays empty."""
    upn = _upn()
    await call(f"{front_server.api}/mcp", mcp_headers(FRONT_KEY, upn, instance=instance_id), "append_memory",
               {"scope": "user", "memory": "- elsewhere"})
    with front_server.client(upn, key=FRONT_KEY) as rest:
        own = rest.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()
    assert own["content_markdown"] == ""


async def test_a_2026_protocol_client_calls_the_tools(mcp_target: McpTarget, instance_id: str) -> None:
    """mcp.Client in auto mode (server/discover, 2026-07-28 single exchanges) lists and calls the tools."""
    headers = mcp_headers(mcp_target.key, _upn(), instance=instance_id)
    async with httpx2.AsyncClient(headers=headers) as http:
        async with Client(streamable_http_client(mcp_target.url, http_client=http), mode="auto") as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            appended = await client.call_tool("append_memory", {"scope": "user", "memory": "- modern"})
            read = await client.call_tool("get_memory", {"scope": "user"})
    assert names == ["append_memory", "clear_memory", "get_memory", "memory", "search_memory"]
    assert not appended.is_error
    assert "- modern" in text(read)


def test_building_the_server_leaves_root_logging_alone() -> None:
    """Building the MCP server (the SDK calls logging.basicConfig) changes neither the root level nor its handlers."""
    root = logging.getLogger()
    before = (root.level, list(root.handlers))
    build_server(InProcessBackend(MemoryService(SqliteMemoryStore(":memory:"))), KeyAuthenticator([], []), None)
    assert (root.level, list(root.handlers)) == before


async def test_search_memory_ranks_the_callers_entries(mcp_target: McpTarget, instance_id: str) -> None:
    """search_memory answers BM25 hits over the caller's own visible entries, best first."""
    upn = _upn()
    headers = mcp_headers(mcp_target.key, upn, instance=instance_id)
    for memory in ("- drinks green tea", "- tea tea tea, always tea", "- flies to Oslo"):
        await call(mcp_target.url, headers, "append_memory", {"scope": "user", "memory": memory})
    other = mcp_headers(mcp_target.key, _upn(), instance=instance_id)
    await call(mcp_target.url, other, "append_memory", {"scope": "user", "memory": "- someone else's tea"})
    result = await call(mcp_target.url, headers, "search_memory", {"query": "tea", "scope": "user"})
    hits = json.loads(text(result))["hits"]
    assert not result.is_error
    assert [h["entry"]["content_markdown"] for h in hits] == ["- tea tea tea, always tea", "- drinks green tea"]
