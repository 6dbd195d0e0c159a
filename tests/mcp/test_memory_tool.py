"""The MCP tool ``memory``: Claude's memory tool for any MCP host, with the official mcp client over HTTP.

Its input schema is the memory_20250818 command schema, and it answers the scripted
command sequence (tests/memory_tool/script.py) as the SDK's reference backend does,
on both MCP backends (in process, and through a CoreAPI), with deletions immediate
and under operator approval (the differences named by the script).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from anthropic.types.beta import BetaMemoryTool20250818Command
from pydantic import TypeAdapter

from memory_core.wire.memory_files import command_input_schema
from tests.mcp.client import mcp_headers, mcp_session
from tests.mcp.conftest import McpTarget
from tests.memory_tool.script import (
    SCRIPT,
    Answer,
    mismatches,
    reference_answers,
    sendable,
)
from tests.support.local_server import USER_KEY, RunningServer

pytestmark = pytest.mark.anyio


async def _run_script(url: str, headers: dict[str, str]) -> list[Answer]:
    answers: list[Answer] = []
    async with mcp_session(url, headers) as session:
        for command in SCRIPT:
            result = await session.call_tool("memory", sendable(command))
            assert len(result.content) == 1
            answers.append((bool(result.is_error), result.content[0].text))  # type: ignore[union-attr]
    return answers


async def test_memory_tool_answers_as_the_reference(mcp_target: McpTarget, instance_id: str, tmp_path: Path) -> None:
    """Immediate deletion: every answer is the reference's text, except strict paths (named in the script)."""
    headers = mcp_headers(mcp_target.key, "mcp-files@contoso.com", instance=instance_id)
    ours = await _run_script(mcp_target.url, headers)
    assert mismatches(reference_answers(str(tmp_path)), ours, approval=False) == []


async def test_under_approval_removals_say_they_are_pending(
    approval_server: RunningServer, instance_id: str, tmp_path: Path
) -> None:
    """Operator approval: replacements that remove text and deletes answer that the deletion is pending."""
    headers = mcp_headers(USER_KEY, "mcp-files@contoso.com", instance=instance_id)
    ours = await _run_script(f"{approval_server.api}/mcp", headers)
    assert mismatches(reference_answers(str(tmp_path)), ours, approval=True) == []
    with approval_server.client("mcp-files@contoso.com") as rest:
        listing = rest.post(f"/instances/{instance_id}/memory/files/view", json={"command": "view", "path": "/memories"})
    assert "archive" not in listing.json()["result"]  # hidden at once, though not yet erased


async def test_input_schema_is_the_memory_20250818_command_schema(mcp_target: McpTarget) -> None:
    """tools/list publishes one object schema whose variants are the SDK's six commands, field for field."""
    async with mcp_session(mcp_target.url, mcp_headers(mcp_target.key)) as session:
        tool = next(t for t in (await session.list_tools()).tools if t.name == "memory")
    schema = tool.input_schema
    assert schema == command_input_schema()
    assert schema["type"] == "object" and schema["required"] == ["command"]
    sdk = TypeAdapter(BetaMemoryTool20250818Command).json_schema()
    sdk_variants = {name: definition for name, definition in sdk["$defs"].items()}
    ours = {variant["properties"]["command"]["const"]: variant for variant in schema["oneOf"]}
    assert len(sdk_variants) == len(ours) == 6
    for definition in sdk_variants.values():
        name = definition["properties"]["command"]["const"]
        assert set(ours[name]["properties"]) == set(definition["properties"]), name
        assert sorted(ours[name]["required"]) == sorted(definition["required"]), name
        for field, prop in definition["properties"].items():
            assert _types(ours[name]["properties"][field]) == _types(prop), (name, field)


def _types(prop: dict[str, Any]) -> Any:
    if "anyOf" in prop:
        return sorted(str(_types(p)) for p in prop["anyOf"])
    return (prop.get("type"), prop.get("const"), prop.get("items", {}).get("type"))


async def test_invalid_arguments_are_a_tool_error(mcp_target: McpTarget, instance_id: str) -> None:
    """A command missing a field it needs is a tool error naming the field, never a crash."""
    headers = mcp_headers(mcp_target.key, "mcp-files@contoso.com", instance=instance_id)
    async with mcp_session(mcp_target.url, headers) as session:
        result = await session.call_tool("memory", {"command": "create", "path": "/memories/x.md"})
    assert result.is_error
    assert "file_text" in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize(("arguments", "where"), [
    ({"command": "insert", "path": "/memories/x.md", "insert_line": "1", "insert_text": "y"}, "insert_line"),
    ({"command": "insert", "path": "/memories/x.md", "insert_line": True, "insert_text": "y"}, "insert_line"),
    ({"command": "view", "path": "/memories/x.md", "view_range": [1, "2"]}, "view_range.1"),
    ({"command": "view", "path": "/memories/x.md", "view_range": [True, 2]}, "view_range.0"),
])
async def test_a_line_number_that_is_not_an_integer_is_a_tool_error(
    mcp_target: McpTarget, instance_id: str, arguments: dict[str, Any], where: str
) -> None:
    """insert_line and view_range take JSON integers only: a string or a boolean is a tool error naming the
    argument, and the file is not touched."""
    headers = mcp_headers(mcp_target.key, "mcp-files@contoso.com", instance=instance_id)
    async with mcp_session(mcp_target.url, headers) as session:
        created = await session.call_tool("memory", {"command": "create", "path": "/memories/x.md", "file_text": "a\nb\n"})
        result = await session.call_tool("memory", arguments)
        view = await session.call_tool("memory", {"command": "view", "path": "/memories/x.md"})
    assert not created.is_error and result.is_error
    assert result.content[0].text == f"invalid arguments: {where}: Input should be a valid integer"  # type: ignore[union-attr]
    assert "y" not in view.content[0].text  # type: ignore[union-attr]


async def test_files_and_appends_are_one_memory(mcp_target: McpTarget, instance_id: str) -> None:
    """What Claude writes is in get_memory and search; what an agent appends shows in view."""
    headers = mcp_headers(mcp_target.key, "one-memory@contoso.com", instance=instance_id)
    async with mcp_session(mcp_target.url, headers) as session:
        await session.call_tool("memory", {"command": "create", "path": "/memories/prefs.md",
                                           "file_text": "prefers aisle seats\n"})
        appended = await session.call_tool("append_memory", {"scope": "user", "memory": "- likes window views"})
        got = await session.call_tool("get_memory", {"scope": "user"})
        found = await session.call_tool("search_memory", {"query": "aisle", "scope": "user"})
        listing = await session.call_tool("memory", {"command": "view", "path": "/memories"})
        entry_id = appended.structured_content["entry_id"]  # type: ignore[index]
        shown = await session.call_tool("memory", {"command": "view", "path": f"/memories/appended/{entry_id}.md"})
    assert "prefers aisle seats" in got.content[0].text  # type: ignore[union-attr]
    assert "memory file /memories/prefs.md" in got.content[0].text  # type: ignore[union-attr]
    assert "aisle" in found.content[0].text  # type: ignore[union-attr]
    assert f"/memories/appended/{entry_id}.md" in listing.content[0].text  # type: ignore[union-attr]
    assert "- likes window views" in shown.content[0].text  # type: ignore[union-attr]
