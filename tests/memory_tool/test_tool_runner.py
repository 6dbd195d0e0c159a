"""Through the real anthropic package's tool runner, with no network.

A local stand-in for the Messages API (tests/memory_tool/messages_stand_in.py) scripts
the assistant's ``tool_use`` turns; ``Anthropic(base_url=...)`` points the SDK at it.
The SDK's own ``client.beta.messages.tool_runner`` then calls ``MemoryCoreMemoryTool``
(and ``AsyncMemoryCoreMemoryTool`` with ``AsyncAnthropic``), which calls memory-core over
real HTTP (``python -m memory_core serve``). The test reads back the tool definition and
the tool_result blocks the SDK sent, and the memory memory-core stored.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic import Anthropic, AsyncAnthropic

from memory_core.integrations.anthropic import (
    AsyncMemoryCoreMemoryTool,
    MemoryCoreMemoryTool,
)
from tests.memory_tool.messages_stand_in import messages_stand_in
from tests.support.local_server import USER_KEY, RunningServer

UPN = "runner@contoso.com"


def _use(n: int, **command: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{n}", "name": "memory", "input": command}


TURNS = [
    [_use(1, command="view", path="/memories")],
    [_use(2, command="create", path="/memories/user.md", file_text="Name: Sam\nPrefers metric units\n"),
     _use(3, command="str_replace", path="/memories/user.md", old_str="Sam", new_str="Samantha")],
    [_use(4, command="view", path="/memories/nowhere.md"),
     _use(5, command="delete", path="/memories/user.md")],
    [{"type": "text", "text": "Noted."}],
]


def _check(stand_in: Any, server: RunningServer, instance_id: str, final: Any) -> None:
    assert final.content[0].text == "Noted."
    assert {"type": "memory_20250818", "name": "memory"} in stand_in.requests[0]["tools"]
    results, text = _texts(stand_in)
    assert text["toolu_1"] == ("Here're the files and directories up to 2 levels deep in /memories, "
                               "excluding hidden items:\n4K\t/memories")
    assert text["toolu_2"] == "File created successfully at: /memories/user.md"
    assert text["toolu_3"].startswith("The memory file has been edited.")
    assert results["toolu_4"]["is_error"] is True
    assert text["toolu_4"] == "The path /memories/nowhere.md does not exist. Please provide a valid path."
    # sqlite_server keeps MEMORY_DELETION_MODE=operator_approval: the model is told the deletion is pending.
    assert "the deletion is pending operator approval" in text["toolu_5"] and not results["toolu_5"].get("is_error")
    with server.client(UPN) as http:
        document = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()
    assert "Samantha" not in document["content_markdown"]  # hidden at once, pending approval
    with server.client(UPN) as http:
        audit = http.get(f"/instances/{instance_id}/memory/audit").json()
    assert any(e["action"] == "forget_requested" for e in audit["events"])


def _run_sync(server: RunningServer, instance_id: str, turns: list[list[dict[str, Any]]],
              prompt: str) -> tuple[Any, Any]:
    """The SDK's sync tool runner through ``turns`` with memory-core as its memory tool: (stand-in, final message)."""
    tool = MemoryCoreMemoryTool(server.api, instance_id, api_key=USER_KEY, user_identity={"upn": UPN})
    with messages_stand_in(turns) as stand_in:
        client = Anthropic(api_key="stand-in", base_url=stand_in.url, max_retries=0)
        runner = client.beta.messages.tool_runner(
            model="claude-sonnet-4-5", max_tokens=1024, tools=[tool],
            messages=[{"role": "user", "content": prompt}],
        )
        final = runner.until_done()
    tool.close()
    return stand_in, final


def _texts(stand_in: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """The tool_result blocks the SDK sent, by tool_use id, and the text of each."""
    results = {r["tool_use_id"]: r for r in stand_in.tool_results()}
    return results, {k: r["content"] if isinstance(r["content"], str) else r["content"][0]["text"]
                     for k, r in results.items()}


def test_sync_tool_runner_drives_memory_core(sqlite_server: RunningServer, instance_id: str) -> None:
    stand_in, final = _run_sync(sqlite_server, instance_id, TURNS,
                                "Remember that I am Samantha and prefer metric units.")
    _check(stand_in, sqlite_server, instance_id, final)


@pytest.mark.anyio
async def test_async_tool_runner_drives_memory_core(sqlite_server: RunningServer, instance_id: str) -> None:
    tool = AsyncMemoryCoreMemoryTool(sqlite_server.api, instance_id, api_key=USER_KEY, user_identity={"upn": UPN})
    with messages_stand_in(TURNS) as stand_in:
        client = AsyncAnthropic(api_key="stand-in", base_url=stand_in.url, max_retries=0)
        runner = client.beta.messages.tool_runner(
            model="claude-sonnet-4-5", max_tokens=1024, tools=[tool],
            messages=[{"role": "user", "content": "Remember that I am Samantha and prefer metric units."}],
        )
        final = await runner.until_done()
    await tool.aclose()
    _check(stand_in, sqlite_server, instance_id, final)


def test_a_name_with_an_invisible_character_comes_back_to_the_model_as_an_error(sqlite_server: RunningServer,
                                                                                instance_id: str) -> None:
    """A model asked to write "notes\u200b.md" (a zero-width space: the name reads as notes.md) is told why it was
    refused, as a tool error, and writes the visible name next; nothing holds the invisible one."""
    turns = [
        [_use(1, command="create", path="/memories/notes\u200b.md", file_text="likes trains\n")],
        [_use(2, command="create", path="/memories/notes.md", file_text="likes trains\n"),
         _use(3, command="view", path="/memories")],
        [{"type": "text", "text": "Noted."}],
    ]
    stand_in, _ = _run_sync(sqlite_server, instance_id, turns, "Remember that I like trains.")
    results, text = _texts(stand_in)
    assert results["toolu_1"]["is_error"] is True
    assert text["toolu_1"] == ("Path names cannot contain invisible formatting characters (U+200B); "
                               "name the file with visible characters only")
    assert text["toolu_2"] == "File created successfully at: /memories/notes.md"
    assert text["toolu_3"].endswith("\n4K\t/memories\n13B\t/memories/notes.md")


EXTRA_PROPERTY_TURNS = [
    [_use(1, command="create", path="/memories/notes.md", file_text="likes trains\n", reason="the user said so"),
     _use(2, command="view", path="/memories/notes.md", view_range=[1, 1], note="check it")],
    [{"type": "text", "text": "Noted."}],
]


def _check_extra_properties_ignored(stand_in: Any) -> None:
    results, text = _texts(stand_in)
    assert not any(result.get("is_error") for result in results.values()), text
    assert text["toolu_1"] == "File created successfully at: /memories/notes.md"
    assert text["toolu_2"].endswith("\n     1\tlikes trains")


def test_a_property_the_command_does_not_define_is_ignored_as_the_reference_ignores_it(
        sqlite_server: RunningServer, instance_id: str) -> None:
    """Claude's tool_use input may carry a property the command does not define; the SDK keeps it on the command.
    The reference backend and the MCP tool ignore it, and so does MemoryCoreMemoryTool: only the command's own
    fields are sent (the REST routes refuse a body with any other)."""
    stand_in, _ = _run_sync(sqlite_server, instance_id, EXTRA_PROPERTY_TURNS, "Remember that I like trains.")
    _check_extra_properties_ignored(stand_in)


@pytest.mark.anyio
async def test_the_async_tool_ignores_a_property_the_command_does_not_define(
        sqlite_server: RunningServer, instance_id: str) -> None:
    tool = AsyncMemoryCoreMemoryTool(sqlite_server.api, instance_id, api_key=USER_KEY, user_identity={"upn": UPN})
    with messages_stand_in(EXTRA_PROPERTY_TURNS) as stand_in:
        client = AsyncAnthropic(api_key="stand-in", base_url=stand_in.url, max_retries=0)
        runner = client.beta.messages.tool_runner(
            model="claude-sonnet-4-5", max_tokens=1024, tools=[tool],
            messages=[{"role": "user", "content": "Remember that I like trains."}],
        )
        await runner.until_done()
    await tool.aclose()
    _check_extra_properties_ignored(stand_in)
