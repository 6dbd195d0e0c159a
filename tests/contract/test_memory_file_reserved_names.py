"""The memory tool's namespace on every store: the directories the service shows are no model's file names, and
the file index holds the names of files, not of every agent a user ever called."""

from __future__ import annotations

import uuid

import pytest

from memory_core.domain.errors import InvalidInput
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import Scope
from memory_core.domain.service import MemoryService
from memory_core.domain.store import MemoryStore

INSTANCE = "files-reserved"
AGENT = AgentContext("/instances/i/agents/travel", "Travel")


def _caller() -> Caller:
    return Caller(upn=f"files-{uuid.uuid4().hex[:10]}@contoso.com")


def _run(service: MemoryService, caller: Caller, agent: AgentContext | None = None, **command: object) -> str:
    return MemoryFiles(service).execute(caller, INSTANCE, agent, command).text


def _refused(service: MemoryService, caller: Caller, agent: AgentContext | None = None, **command: object) -> str:
    with pytest.raises(InvalidInput) as refused:
        _run(service, caller, agent, **command)
    assert refused.value.code == "reserved_path"
    return str(refused.value)


@pytest.mark.parametrize("path", ["/memories/appended", "/memories/appended/", "/memories/agent/appended"])
def test_no_file_can_be_named_as_the_directory_of_appended_entries(store: MemoryStore, path: str) -> None:
    """A file at /memories/appended would stand where the appended entries' directory stands and win in view: every
    entry written through MCP or REST would vanish from the model's sight. create and rename refuse the name."""
    service, caller = MemoryService(store), _caller()
    _run(service, caller, AGENT, command="create", path="/memories/note.md", file_text="a note")
    user_entry = service.append(caller, INSTANCE, Scope.USER, None, "- prefers aisle seats").entry_id
    agent_entry = service.append(caller, INSTANCE, Scope.AGENT, AGENT, "- books trains").entry_id

    created = _refused(service, caller, AGENT, command="create", path=path, file_text="a note")
    renamed = _refused(service, caller, AGENT, command="rename", old_path="/memories/note.md", new_path=path)

    # Below the directory, a name is the model's as any other.
    _run(service, caller, AGENT, command="create", path=f"{path.rstrip('/')}/mine.md", file_text="mine")
    for message in (created, renamed):
        assert message.startswith(f"The path {path} is reserved") and "Please provide a different path." in message
    listing = _run(service, caller, AGENT, command="view", path="/memories")
    assert f"/memories/appended/{user_entry}.md" in listing
    assert "\t/memories/note.md" in listing
    assert f"/memories/agent/appended/{agent_entry}.md" in _run(service, caller, AGENT, command="view",
                                                                path="/memories/agent")


@pytest.mark.parametrize("path", ["/memories/agent", "/memories/agent/"])
def test_no_file_can_be_named_as_the_agents_mount(store: MemoryStore, path: str) -> None:
    """With no agent file yet, /memories/agent is free, and a file made there was stored at the agent tree's root
    (an empty name): answered "created" and never readable. create and rename refuse the name."""
    service, caller = MemoryService(store), _caller()
    _run(service, caller, AGENT, command="create", path="/memories/note.md", file_text="a note")

    created = _refused(service, caller, AGENT, command="create", path=path, file_text="TEXT THE MODEL WROTE")
    renamed = _refused(service, caller, AGENT, command="rename", old_path="/memories/note.md", new_path=path)

    for message in (created, renamed):
        assert message == (f"The path {path} is reserved: it is the directory of the calling agent's own memory. "
                           "Please provide a different path.")
    assert "TEXT THE MODEL WROTE" not in _run(service, caller, AGENT, command="view", path="/memories")
    _run(service, caller, AGENT, command="create", path="/memories/agent/plan.md", file_text="the agent's plan")
    assert "the agent's plan" in _run(service, caller, AGENT, command="view", path="/memories/agent/plan.md")
