"""MCP get_memory's budget, over real HTTP with the official mcp client, on both backends."""

from __future__ import annotations

import re

import pytest

from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.rendering import format_time
from memory_core.mcp.tools import DEFAULT_MAX_CHARS
from tests.mcp.client import AGENT_A, call, mcp_headers, text
from tests.mcp.conftest import McpTarget
from tests.support.seeding import CORRECTION, memory_with_correction, seeded_server

pytestmark = pytest.mark.anyio
UPN = "alex@contoso.com"
NOTE = re.compile(r"\n\n(\[memory-core: this read was limited to (\d+) characters.*\])$", re.S)


async def test_default_budget_brings_the_newest_correction_of_10000_entries(
    mcp_target: McpTarget, instance_id: str, request: pytest.FixtureRequest
) -> None:
    """get_memory with no arguments answers at most the default budget of memory, newest first: the correction
    that is the newest of 10,000 entries is there, and the closing note counts the entries left out exactly."""
    user = memory_with_correction(ProfileKey(instance_id, UPN, Scope.USER))
    headers = mcp_headers(mcp_target.key, UPN, agent=AGENT_A, instance=instance_id)
    with seeded_server(mcp_target.store, request, user):
        result = await call(mcp_target.url, headers, "get_memory")
    assert not result.is_error
    answer = text(result)
    note = NOTE.search(answer)
    assert note is not None and int(note.group(2)) == DEFAULT_MAX_CHARS
    memory = answer[: note.start()] + "\n"
    assert len(memory) <= DEFAULT_MAX_CHARS and memory.rstrip("\n").endswith(CORRECTION)
    shown = memory.count("## Appended ")
    assert f"{10_000 - shown} older entries were left out" in note.group(1)
    assert format_time(user[0].created_on) in note.group(1) and format_time(user[-shown - 1].created_on) in note.group(1)
    assert "search_memory" in note.group(1) and "max_chars" in note.group(1)


async def test_a_smaller_and_a_zero_budget(mcp_target: McpTarget, instance_id: str) -> None:
    """max_chars=0 answers only the note; a small budget keeps the newest whole entries."""
    headers = mcp_headers(mcp_target.key, UPN, instance=instance_id)
    for n in range(20):
        await call(mcp_target.url, headers, "append_memory", {"scope": "user", "memory": f"- fact {n}"})
    zero = text(await call(mcp_target.url, headers, "get_memory", {"scope": "user", "max_chars": 0}))
    assert zero.startswith("[memory-core: this read was limited to 0 characters") and "20 older entries" in zero
    small = text(await call(mcp_target.url, headers, "get_memory", {"scope": "user", "max_chars": 300}))
    memory = small.split("\n\n[memory-core:")[0]
    assert len(memory) < 300 and "- fact 19" in memory and "- fact 0\n" not in memory
    everything = text(await call(mcp_target.url, headers, "get_memory", {"scope": "user", "max_chars": 100_000}))
    assert "[memory-core:" not in everything and everything.count("- fact ") == 20


async def test_a_negative_budget_is_a_tool_error(mcp_target: McpTarget, instance_id: str) -> None:
    headers = mcp_headers(mcp_target.key, UPN, instance=instance_id)
    result = await call(mcp_target.url, headers, "get_memory", {"max_chars": -5})
    assert result.is_error and "max_chars" in text(result)
