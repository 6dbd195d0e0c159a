"""The stdio client configurations README.md and docs/mcp.md show, run as written.

A client starts ``python -m memory_core mcp`` in a directory of its own choosing (Claude Code:
the user's project) with only the environment it is configured with. Each documented form is
run from two project directories outside the checkout by the official client's ``stdio_client``,
which, as Claude Desktop does, passes a default environment (HOME, PATH, …) plus the configured
one. Only what names this machine is replaced: the checkout's path, the interpreter, the file (or HOME,
under which the user's own file is kept).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.support.local_server import PROJECT_ROOT
from tests.support.stdio_server import TIME_LIMIT

pytestmark = pytest.mark.anyio

CHECKOUT_PLACEHOLDER = "/path/to/memory-core"
PAGES = (PROJECT_ROOT / "README.md", PROJECT_ROOT / "docs" / "mcp.md")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _blocks(language: str) -> list[tuple[str, str]]:
    """(page, text) of every fenced ``language`` block of the pages."""
    return [(page.name, block) for page in PAGES
            for block in re.findall(rf"```{language}\n(.*?)```", page.read_text(encoding="utf-8"), re.S)]


def _forms() -> list[tuple[str, str, list[str], dict[str, str]]]:
    """(where, command, args, env) of every documented client configuration that starts ``mcp``."""
    forms = []
    for page, block in _blocks("json"):
        if '"mcpServers"' in block:
            for name, server in json.loads(block)["mcpServers"].items():
                forms.append((f"{page} {name}", server["command"], server["args"], server.get("env", {})))
    for page, block in _blocks("bash"):
        if block.startswith("claude mcp add"):
            words = shlex.split(block.replace("\\\n", " "))
            split = words.index("--")
            options = words[:split]
            env = dict(options[i + 1].split("=", 1) for i, word in enumerate(options) if word in ("--env", "-e"))
            forms.append((f"{page} claude mcp add", words[split + 1], words[split + 2:], env))
    return forms


FORMS = _forms()


def test_the_pages_show_the_forms_they_should() -> None:
    """Claude Desktop's JSON in both pages, and the Claude Code command in docs/mcp.md."""
    assert sorted(where for where, *_ in FORMS) == ["README.md memory", "mcp.md claude mcp add", "mcp.md memory"]


@pytest.mark.parametrize(("where", "command", "args", "env"), FORMS, ids=[where for where, *_ in FORMS])
async def test_a_documented_form_serves_one_memory_from_any_project_directory(
        tmp_path: Path, where: str, command: str, args: list[str], env: dict[str, str]) -> None:
    """Started in a project directory outside the checkout, the form serves; a second project sees what the
    first wrote (one store: the user's own file, or an absolute MEMORY_SQLITE_PATH), and no project gets a store of
    its own."""
    assert (command, args) == ("python", ["-m", "memory_core", "mcp"])
    assert env.get("PYTHONPATH") == CHECKOUT_PLACEHOLDER, "the client starts the process outside the checkout"
    home = tmp_path / "home"
    if "MEMORY_SQLITE_PATH" in env:
        assert os.path.isabs(os.path.expandvars(env["MEMORY_SQLITE_PATH"])), "a relative store lands in each project"
        env = {**env, "MEMORY_SQLITE_PATH": str(home / "memory.sqlite3")}
        store = home / "memory.sqlite3"
    else:  # the user's own file (tests/mcp/test_stdio_store.py), under the HOME the client passes
        store = home / ".local" / "share" / "memory-core" / "memory.db"
    env = {**env, "PYTHONPATH": str(PROJECT_ROOT), "HOME": str(home)}
    projects = [tmp_path / "project-a", tmp_path / "project-b"]

    async def session(project: Path, fact: str | None) -> str:
        project.mkdir(exist_ok=True)
        parameters = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=project)
        async with asyncio.timeout(TIME_LIMIT):
            async with stdio_client(parameters) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                if fact:
                    await client.call_tool("append_memory", {"scope": "user", "memory": fact})
                result = await client.call_tool("get_memory", {"scope": "user"})
        return result.content[0].text  # type: ignore[union-attr]

    await session(projects[0], "- prefers tea")
    assert "- prefers tea" in await session(projects[1], None)
    assert not any((project / ".data").exists() for project in projects)
    assert store.is_file()
