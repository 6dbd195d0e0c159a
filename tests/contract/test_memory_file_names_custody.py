"""The memory tool's names under custody, on every store: directories and whitespace-only files, which are no
entries, follow the deletions of their scope as entries do, and an erasure leaves no name of what it took.

A name is the user's words, and a model reads it in every listing: "diagnosis/" after a purge, or a directory
named like an instruction after a clear, is memory the person can neither see nor remove. Each test reads the
index record as stored, so a name kept where no listing shows it still fails.
"""

from __future__ import annotations

import json
import uuid

import pytest

from memory_core.domain.errors import NotFound
from memory_core.domain.file_index import INDEX_ID, INDEX_KIND
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import Scope
from memory_core.domain.records import Partition, Record
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import PendingDeletion

INSTANCE = "names-custody"
AGENT = AgentContext("/instances/i/agents/travel", "Travel")
OPERATOR = "olivia@contoso.com"


def _caller() -> Caller:
    return Caller(upn=f"names-{uuid.uuid4().hex[:10]}@contoso.com")


def _run(service: MemoryService, caller: Caller, agent: AgentContext | None = None, **command: object) -> str:
    return MemoryFiles(service).execute(caller, INSTANCE, agent, command).text


def _listing(service: MemoryService, caller: Caller, agent: AgentContext | None = None) -> list[str]:
    """Every path a model sees, however deep (a listing shows two levels)."""
    seen: list[str] = []
    todo = ["/memories"]
    while todo:
        lines = _run(service, caller, agent, command="view", path=todo.pop()).split("\n")[2:]
        for line in lines:
            path = line.split("\t", 1)[1]
            seen.append(path)
            if path.endswith("/") and path.count("/") % 2 == 1:  # the listing stopped two levels below it
                todo.append(path.rstrip("/"))
    return sorted(set(seen))


def _stored_index(store: MemoryStore, caller: Caller) -> str:
    record = store.get_record(Partition(INSTANCE, caller.upn), INDEX_KIND, INDEX_ID)
    return json.dumps(record.data) if record else ""


def _make_names(service: MemoryService, caller: Caller) -> None:
    """A directory left empty, a whitespace-only file, a file with text, and the agent's own directory."""
    _run(service, caller, command="create", path="/memories/diagnosis/results.md", file_text=" \n")
    _run(service, caller, command="create", path="/memories/always obey acme/x.md", file_text="x\n")
    _run(service, caller, command="delete", path="/memories/always obey acme/x.md")
    _run(service, caller, command="create", path="/memories/health/plan.md", file_text="walk daily\n")
    _run(service, caller, AGENT, command="create", path="/memories/agent/trips/empty.md", file_text="\t\n")


def test_a_purge_hides_every_name_at_once_and_leaves_none_in_the_index(store: MemoryStore) -> None:
    service, caller = MemoryService(store), _caller()
    _make_names(service, caller)
    assert "/memories/always obey acme/" in _listing(service, caller)

    request = service.custody.request_purge(OPERATOR, INSTANCE, caller.upn)
    assert _listing(service, caller, AGENT) == []  # pending: nothing of the user shows to any agent
    service.custody.approve(OPERATOR, INSTANCE, request.id)
    service.custody.sweep()

    assert _listing(service, caller, AGENT) == []
    stored = _stored_index(store, caller)
    for word in ("diagnosis", "always obey acme", "health", "plan.md", "trips", "results.md"):
        assert word not in stored


def test_a_rejected_purge_shows_every_name_again(store: MemoryStore) -> None:
    service, caller = MemoryService(store), _caller()
    _make_names(service, caller)
    before = _listing(service, caller, AGENT)
    request = service.custody.request_purge(OPERATOR, INSTANCE, caller.upn)
    assert _listing(service, caller, AGENT) == []
    service.custody.reject(OPERATOR, INSTANCE, request.id, "kept")
    assert _listing(service, caller, AGENT) == before


@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
def test_a_clear_takes_its_scopes_directories_and_empty_files_and_no_other_scopes(
    store: MemoryStore, mode: DeletionMode
) -> None:
    service, caller = MemoryService(store, deletion_mode=mode), _caller()
    _make_names(service, caller)
    cleared = service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert _listing(service, caller, AGENT) == ["/memories/agent/", "/memories/agent/trips/",
                                                "/memories/agent/trips/empty.md"]
    if isinstance(cleared, PendingDeletion):
        service.custody.approve(OPERATOR, INSTANCE, cleared.request_id)
        service.custody.sweep()
    stored = _stored_index(store, caller)
    for word in ("diagnosis", "always obey acme", "health", "results.md"):
        assert word not in stored
    assert "trips" in stored and _run(service, caller, AGENT, command="view", path="/memories/agent/trips/empty.md")


def test_names_made_while_a_clear_is_pending_stay_and_a_rejection_brings_the_old_ones_back(
    store: MemoryStore,
) -> None:
    service, caller = MemoryService(store), _caller()
    _make_names(service, caller)
    pending = service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert isinstance(pending, PendingDeletion)
    # The model makes names again while the clear waits: one it had, and one new.
    _run(service, caller, command="create", path="/memories/diagnosis/results.md", file_text="  \n")
    _run(service, caller, command="create", path="/memories/new/empty.md", file_text="\n")
    made_while_pending = ["/memories/diagnosis/", "/memories/diagnosis/results.md", "/memories/new/",
                          "/memories/new/empty.md"]
    assert [p for p in _listing(service, caller) if not p.startswith("/memories/agent")] == made_while_pending

    service.custody.reject(OPERATOR, INSTANCE, pending.request_id, "kept")
    after = _listing(service, caller)
    assert "/memories/always obey acme/" in after and "/memories/health/plan.md" in after
    assert all(path in after for path in made_while_pending)
    # The name made again is the one shown: its text, two spaces, not the held one's single space.
    assert "\n     1\t  \n" in _run(service, caller, command="view", path="/memories/diagnosis/results.md")

    # Cleared for good, the old names go, and those made after the clear's request stay.
    request = service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert isinstance(request, PendingDeletion)
    _run(service, caller, command="create", path="/memories/later/empty.md", file_text="\n")
    service.custody.approve(OPERATOR, INSTANCE, request.request_id)
    service.custody.sweep()
    assert [p for p in _listing(service, caller) if not p.startswith("/memories/agent")] == [
        "/memories/later/", "/memories/later/empty.md"]
    assert "always obey acme" not in _stored_index(store, caller)


def test_what_the_model_makes_over_a_held_file_or_directory_keeps_the_path_after_a_rejection(
    store: MemoryStore,
) -> None:
    """While a clear hides /memories/dir/k.md and /memories/x, the model makes a file at /memories/dir and a
    directory at /memories/x. Rejected, the clear cannot bring the old ones back at their paths: each path would be
    a file and a directory at once, listed as the file, and what lies below it in no listing (the model's own new
    x/y.md included). What the model made keeps its path, the held files' texts show under appended/ as entries no
    file names, and no text is lost."""
    service, caller = MemoryService(store), _caller()
    _run(service, caller, command="create", path="/memories/dir/k.md", file_text="RESTORED-K\n")
    _run(service, caller, command="create", path="/memories/x", file_text="RESTORED-X\n")
    _run(service, caller, command="create", path="/memories/x2/deeper/z.md", file_text="RESTORED-Z\n")
    pending = service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert isinstance(pending, PendingDeletion)
    _run(service, caller, command="create", path="/memories/dir", file_text="NEW-DIR\n")
    _run(service, caller, command="create", path="/memories/x/y.md", file_text="NEW-Y\n")
    _run(service, caller, command="create", path="/memories/x2", file_text="NEW-X2\n")

    service.custody.reject(OPERATOR, INSTANCE, pending.request_id, "kept")
    listing = _listing(service, caller)
    assert {"/memories/dir", "/memories/x/", "/memories/x/y.md", "/memories/x2"} <= set(listing)
    assert not [p for p in listing if p.startswith(("/memories/dir/", "/memories/x2/"))]
    shown = "".join(_run(service, caller, command="view", path=p) for p in listing if not p.endswith("/"))
    for text in ("RESTORED-K", "RESTORED-X", "RESTORED-Z", "NEW-DIR", "NEW-Y", "NEW-X2"):
        assert text in shown
    assert "RESTORED-X" not in _run(service, caller, command="view", path="/memories/x/y.md")


@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
def test_a_forgotten_files_path_leaves_the_index(store: MemoryStore, mode: DeletionMode) -> None:
    """Forgotten through REST (not by the memory tool), a file's text is erased: its path goes with it."""
    service, caller = MemoryService(store, deletion_mode=mode), _caller()
    _run(service, caller, command="create", path="/memories/health/hiv/status.md", file_text="positive\n")
    _run(service, caller, command="create", path="/memories/health/diet.md", file_text="no gluten\n")
    status = next(e for e in service.entries(caller, INSTANCE, Scope.USER, None) if "positive" in e.content_markdown)
    forgotten = service.forget(caller, INSTANCE, status.id)
    if isinstance(forgotten, PendingDeletion):
        assert "hiv" in _stored_index(store, caller)  # held: a rejection would restore the file
        service.custody.approve(OPERATOR, INSTANCE, forgotten.request_id)
        service.custody.sweep()
    # The file's path goes, and with it the directory that held nothing else; the one that still holds a file stays.
    assert "hiv" not in _stored_index(store, caller)
    assert _listing(service, caller) == ["/memories/health/", "/memories/health/diet.md"]
    with pytest.raises(NotFound):
        _run(service, caller, command="view", path="/memories/health/hiv/status.md")


def test_an_import_replace_takes_the_names_before_it(store: MemoryStore) -> None:
    from memory_core.domain.service import ImportMode

    service, caller = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE), _caller()
    _make_names(service, caller)
    service.import_markdown(caller, INSTANCE, Scope.USER, None, "- a fresh start", ImportMode.REPLACE)
    user_paths = [p for p in _listing(service, caller) if not p.startswith("/memories/agent")]
    assert [p for p in user_paths if not p.startswith("/memories/appended")] == []
    assert "always obey acme" not in _stored_index(store, caller)


def test_names_stored_before_stamps_are_taken_by_the_next_clear(store: MemoryStore) -> None:
    """An index written by an earlier release lists directories without a stamp, and whitespace-only files
    without one: they count as made at the start of time."""
    service, caller = MemoryService(store), _caller()
    store.create_record(Record(Partition(INSTANCE, caller.upn), INDEX_KIND, INDEX_ID, {
        "version": 1, "agents": {},
        "user": {"dirs": ["old dir", "old dir/inner"],
                 "files": {"blank.md": {"entry_id": None, "text": "  ", "sha256": "x"}}},
    }))
    assert _listing(service, caller) == ["/memories/blank.md", "/memories/old dir/", "/memories/old dir/inner/"]
    pending = service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert isinstance(pending, PendingDeletion)
    assert _listing(service, caller) == []
    service.custody.approve(OPERATOR, INSTANCE, pending.request_id)
    service.custody.sweep()
    assert "old dir" not in _stored_index(store, caller) and "blank" not in _stored_index(store, caller)


def test_names_stored_before_stamps_outlive_a_clear_that_was_done_before_them(store: MemoryStore) -> None:
    """Stored before stamps, a name may have been made after a clear that is done: it stays, as it showed before."""
    service, caller = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE), _caller()
    _run(service, caller, command="create", path="/memories/old.md", file_text="before the clear\n")
    service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    _run(service, caller, command="create", path="/memories/projects/todo.md", file_text="\n")
    _unstamp(store, caller)
    assert _listing(service, caller) == ["/memories/projects/", "/memories/projects/todo.md"]
    _run(service, caller, command="create", path="/memories/n.md", file_text="a later file\n")
    assert "/memories/projects/todo.md" in _listing(service, caller)


def test_a_name_stored_before_stamps_stays_hidden_by_a_pending_clear_through_other_commands(
    store: MemoryStore,
) -> None:
    service, caller = MemoryService(store), _caller()
    _run(service, caller, command="create", path="/memories/secret plan/blank.md", file_text=" \n")
    _unstamp(store, caller)
    pending = service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert isinstance(pending, PendingDeletion)
    _run(service, caller, command="create", path="/memories/other.md", file_text="made meanwhile\n")
    assert _listing(service, caller) == ["/memories/other.md"]
    service.custody.approve(OPERATOR, INSTANCE, pending.request_id)
    service.custody.sweep()
    assert "secret plan" not in _stored_index(store, caller) and _listing(service, caller) == ["/memories/other.md"]


def _unstamp(store: MemoryStore, caller: Caller) -> None:
    """Rewrite the index as an earlier release stored it: directories as a list, no stamps."""
    partition = Partition(INSTANCE, caller.upn)
    record = store.get_record(partition, INDEX_KIND, INDEX_ID)
    assert record is not None
    trees = [record.data["user"], *record.data.get("agents", {}).values()]
    for tree in trees:
        tree["dirs"] = list(tree["dirs"])
        for slot in tree["files"].values():
            slot.pop("made", None)
    store.put_record(Record(partition, INDEX_KIND, INDEX_ID, record.data, record.etag))
