"""Differential test: memory-core answers Claude's memory commands as the SDK's reference backend does.

The same scripted sequence (tests/memory_tool/script.py) goes to the anthropic SDK's
``BetaLocalFilesystemMemoryTool`` on a temporary folder and to memory-core through
``MemoryCoreMemoryTool`` and its async twin (real HTTP to ``python -m memory_core serve``),
on SQLite and on Cosmos DB, with deletions immediate and under operator approval.
Answers are compared text for text; the only differences allowed are the ones the
script names: strict paths, and (under approval) removals that await an operator.
The MCP route is in tests/mcp/test_memory_tool.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.integrations.anthropic import (
    AsyncMemoryCoreMemoryTool,
    MemoryCoreMemoryTool,
)
from tests.memory_tool.script import (
    SCRIPT,
    Answer,
    mismatches,
    reference_answers,
    sendable,
)
from tests.support.local_server import USER_KEY, RunningServer


def _tool(server: RunningServer, instance_id: str) -> MemoryCoreMemoryTool:
    return MemoryCoreMemoryTool(server.api, instance_id, api_key=USER_KEY, user_identity={"upn": "alex@contoso.com"})


def test_memory_core_memory_tool_answers_as_the_reference(
    mode_server: tuple[RunningServer, bool], instance_id: str, tmp_path: Path
) -> None:
    from anthropic.lib.tools import ToolError

    server, approval = mode_server
    tool = _tool(server, instance_id)
    ours: list[Answer] = []
    for command in SCRIPT:
        try:
            ours.append((False, str(tool.call(sendable(command)))))
        except ToolError as error:
            ours.append((True, str(error.content)))
    tool.close()
    assert mismatches(reference_answers(str(tmp_path / "reference")), ours, approval=approval) == []


@pytest.mark.anyio
async def test_async_twin_answers_as_the_reference(
    immediate_server: RunningServer, instance_id: str, tmp_path: Path
) -> None:
    from anthropic.lib.tools import ToolError

    tool = AsyncMemoryCoreMemoryTool(
        immediate_server.api, instance_id, api_key=USER_KEY, user_identity={"upn": "alex@contoso.com"}
    )
    ours: list[Answer] = []
    for command in SCRIPT:
        try:
            ours.append((False, str(await tool.call(sendable(command)))))
        except ToolError as error:
            ours.append((True, str(error.content)))
    await tool.aclose()
    assert mismatches(reference_answers(str(tmp_path / "reference")), ours, approval=False) == []
