"""The bounds of the memory tool's namespace on every store: the directories the service shows are no model's file
names, the file index holds the names of files, not of every agent a user ever called, and a user's file bound counts
every agent's files."""

from __future__ import annotations

import uuid

import pytest

from memory_core.domain import memory_file_commits
from memory_core.domain.errors import InvalidInput, SecretDetected
from memory_core.domain.file_index import INDEX_ID, INDEX_KIND
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import Scope
from memory_core.domain.records import Partition, Record
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from memory_core.secrets import SecretScanner

INSTANCE = "files-bounds"
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


def test_a_directory_rename_whose_moved_paths_form_a_secret_moves_nothing(store: MemoryStore) -> None:
    """Renaming "trip" (holding "ODNN7EXAMPLE.md" and an empty "ODNN7EXAMPLE/") to "AKIAIOSF" would store an AWS access
    key id in the joined path of each; create refuses such a path. The rename is refused as a create is, before
    anything is stored: the index record is the one before it, byte for byte, on every store."""
    service, caller = MemoryService(store, scanner=SecretScanner()), _caller()
    _run(service, caller, command="create", path="/memories/trip/ODNN7EXAMPLE.md", file_text="a note")
    _run(service, caller, command="create", path="/memories/trip/b.md", file_text="another")
    _run(service, caller, command="create", path="/memories/walk/ODNN7EXAMPLE/c.md", file_text="gone")
    _run(service, caller, command="delete", path="/memories/walk/ODNN7EXAMPLE/c.md")
    partition = Partition(INSTANCE, caller.upn)
    before = store.get_record(partition, INDEX_KIND, INDEX_ID)
    assert before is not None

    for old in ("/memories/trip", "/memories/walk"):
        with pytest.raises(SecretDetected) as refused:
            _run(service, caller, command="rename", old_path=old, new_path="/memories/AKIAIOSF")
        assert refused.value.message.startswith("new_path looks like it contains a secret")

    after = store.get_record(partition, INDEX_KIND, INDEX_ID)
    assert after is not None and (after.etag, after.data) == (before.etag, before.data)
    assert "AKIAIOSF" not in _run(service, caller, command="view", path="/memories")


@pytest.mark.parametrize("command", [
    {"command": "create", "path": "/memories/my\u00a0notes.md", "file_text": "x"},
    {"command": "create", "path": "/memories/trip\u3000plans/notes.md", "file_text": "x"},
    {"command": "rename", "old_path": "/memories/note.md", "new_path": "/memories/my\u202fnote.md"},
    {"command": "rename", "old_path": "/memories/note.md", "new_path": "/memories/trip\u2007plans/note.md"},
], ids=["create", "create-directory", "rename", "rename-directory"])
def test_a_blank_other_than_the_ascii_space_in_a_new_name_is_refused_and_stores_nothing(
        store: MemoryStore, command: dict[str, object]) -> None:
    """"my\u00a0notes.md" lists as "my notes.md". Every command that brings a name into being, a file's or a
    directory's, refuses it, naming the code point, and leaves the index as it was."""
    service, caller = MemoryService(store), _caller()
    _run(service, caller, command="create", path="/memories/note.md", file_text="a note")
    before = store.get_record(Partition(INSTANCE, caller.upn), INDEX_KIND, INDEX_ID)
    assert before is not None
    blank = next(c for c in str(command.get("new_path", command.get("path"))) if c.isspace())

    with pytest.raises(InvalidInput) as refused:
        _run(service, caller, **command)

    assert type(refused.value) is InvalidInput and refused.value.code == "invalid_path"  # 400 at the edge
    assert f"(U+{ord(blank):04X})" in refused.value.message
    after = store.get_record(Partition(INSTANCE, caller.upn), INDEX_KIND, INDEX_ID)
    assert after is not None and after.data == before.data


def _agent_trees(store: MemoryStore, caller: Caller) -> dict[str, object]:
    record = store.get_record(Partition(INSTANCE, caller.upn), INDEX_KIND, INDEX_ID)
    assert record is not None
    return dict(record.data.get("agents") or {})


def test_the_file_index_keeps_no_tree_for_an_agent_that_holds_nothing(store: MemoryStore) -> None:
    """Every command under an agent wrote that agent's tree, empty or not, and nothing took one out: about a thousand
    agents with long ids filled the index's 1 MiB, and a user with no file left could make none. An agent's tree is
    kept while it names something."""
    service, caller = MemoryService(store), _caller()
    _run(service, caller, command="create", path="/memories/f.md", file_text="x")
    for number in range(3):
        agent = AgentContext(f"/instances/i/agents/{number}-" + "a" * 500, "Long")
        _run(service, caller, agent, command="str_replace", path="/memories/f.md", old_str="x", new_str="x")
    _run(service, caller, AGENT, command="create", path="/memories/agent/trip/plan.md", file_text="the plan")
    assert list(_agent_trees(store, caller)) == [AGENT.object_id]

    _run(service, caller, AGENT, command="delete", path="/memories/agent/trip")

    assert _agent_trees(store, caller) == {}
    assert "/memories/agent" not in _run(service, caller, command="view", path="/memories")


def test_an_erasure_that_empties_an_agents_tree_takes_the_tree_out(store: MemoryStore) -> None:
    service, caller = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE), _caller()
    _run(service, caller, AGENT, command="create", path="/memories/agent/plan.md", file_text="the plan")
    tree: dict[str, dict[str, dict[str, str]]] = _agent_trees(store, caller)[AGENT.object_id]  # type: ignore[assignment]
    entry = tree["files"]["plan.md"]["entry_id"]

    service.forget(caller, INSTANCE, entry)

    assert _agent_trees(store, caller) == {}


def test_an_index_stored_with_empty_agent_trees_reads_and_sheds_them_on_the_next_write(store: MemoryStore) -> None:
    """Indexes written before hold an empty tree per agent: they read as before, and the next command's write, or
    the next erasure's, drops them."""
    service, caller = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE), _caller()
    _run(service, caller, command="create", path="/memories/f.md", file_text="x")
    partition = Partition(INSTANCE, caller.upn)
    record = store.get_record(partition, INDEX_KIND, INDEX_ID)
    assert record is not None
    empty: dict[str, dict[str, str]] = {"files": {}, "dirs": {}}
    legacy = {**record.data, "agents": {"agents/old-1": empty, "agents/old-2": {"files": {}, "dirs": []}}}
    store.put_record(Record(partition, INDEX_KIND, INDEX_ID, legacy, record.etag))

    assert "x" in _run(service, caller, command="view", path="/memories/f.md")
    _run(service, caller, command="create", path="/memories/g.md", file_text="y")

    assert _agent_trees(store, caller) == {}


def test_a_users_file_bound_counts_every_agents_files(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """"A user has at most 2000 files": the bound counted the user's files and the calling agent's only, so each agent
    added 2000 more. Every tree of the index counts; a command that adds no file still goes through at the bound."""
    monkeypatch.setattr(memory_file_commits, "MAX_FILES", 3)
    service, caller = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE), _caller()
    other = AgentContext("/instances/i/agents/mail", "Mail")
    _run(service, caller, AGENT, command="create", path="/memories/agent/a.md", file_text="a")
    _run(service, caller, AGENT, command="create", path="/memories/agent/b.md", file_text="b")
    _run(service, caller, other, command="create", path="/memories/agent/c.md", file_text="c")

    for agent, path in ((None, "/memories/d.md"), (other, "/memories/agent/d.md"), (AGENT, "/memories/agent/d.md")):
        with pytest.raises(InvalidInput) as refused:
            _run(service, caller, agent, command="create", path=path, file_text="d")
        assert refused.value.code == "too_many_files"

    _run(service, caller, other, command="str_replace", path="/memories/agent/c.md", old_str="c", new_str="cc")
    _run(service, caller, other, command="rename", old_path="/memories/agent/c.md", new_path="/memories/c.md")
    _run(service, caller, command="delete", path="/memories/c.md")
    _run(service, caller, command="create", path="/memories/d.md", file_text="d")
