"""The memory tool's kept entries (``domain.file_entries``) on every store: a command that changed
nothing reads no memory, and nothing kept ever shows a file another process changed, a hidden
entry, or another user's memory.

Each test reads through one ``MemoryService`` (the process that keeps) and writes through
another over a second store object on the same data (another process).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.errors import Unavailable
from memory_core.domain.file_entries import _key
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.snapshots import StampedLoad
from memory_core.domain.stamped_answers import StampedAnswers
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import PendingDeletion

INSTANCE = "files-kept"
AGENT = AgentContext("/instances/i/agents/travel", "Travel")


@pytest.fixture(params=["sqlite", "cosmos"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], MemoryStore]]:
    """A factory of store objects over the same data: each one another process's."""
    made: list[Any] = []
    if request.param == "sqlite":
        def another() -> MemoryStore:
            made.append(SqliteMemoryStore(tmp_path / "files.sqlite3"))
            return made[-1]
    else:
        from tests.adapters.cosmos_support import cosmos_store

        account = request.getfixturevalue("cosmos_account")

        def another() -> MemoryStore:
            made.append(cosmos_store(account))
            return made[-1]
    yield another
    for store in made:
        store.close()


def _caller() -> Caller:
    return Caller(upn=f"files-{uuid.uuid4().hex[:10]}@contoso.com")


def _run(service: MemoryService, caller: Caller, agent: AgentContext | None = None, **command: object) -> str:
    return MemoryFiles(service).execute(caller, INSTANCE, agent, command).text


def _kept(service: MemoryService) -> StampedAnswers[Any]:
    assert service.file_entries is not None
    return service.file_entries


def test_a_command_that_changed_nothing_reads_no_memory_again(stores: Callable[[], MemoryStore]) -> None:
    reader, caller = MemoryService(stores()), _caller()
    _run(reader, caller, command="create", path="/memories/prefs.md", file_text="aisle seats\n")
    _run(reader, caller, command="view", path="/memories")
    builds = _kept(reader).builds
    for _ in range(3):
        assert "aisle seats" in _run(reader, caller, command="view", path="/memories/prefs.md")
    assert _kept(reader).builds == builds


def test_another_processs_appends_are_added_to_what_was_kept(stores: Callable[[], MemoryStore]) -> None:
    reader, writer, caller = MemoryService(stores()), MemoryService(stores()), _caller()
    _run(reader, caller, command="create", path="/memories/prefs.md", file_text="aisle seats\n")
    _run(reader, caller, command="view", path="/memories")
    builds = _kept(reader).builds
    appended = writer.append(caller, INSTANCE, Scope.USER, None, "- prefers trains to planes")

    listing = _run(reader, caller, command="view", path="/memories")
    assert f"/memories/appended/{appended.entry_id}.md" in listing and "/memories/prefs.md" in listing
    assert "prefers trains" in _run(reader, caller, command="view", path=f"/memories/appended/{appended.entry_id}.md")
    assert (_kept(reader).builds, _kept(reader).grown) == (builds, 1)


def test_a_file_another_process_edited_shows_its_new_text(stores: Callable[[], MemoryStore]) -> None:
    reader, writer, caller = MemoryService(stores()), MemoryService(stores(), deletion_mode=DeletionMode.IMMEDIATE), _caller()
    _run(reader, caller, command="create", path="/memories/prefs.md", file_text="aisle seats\n")
    assert "aisle seats" in _run(reader, caller, command="view", path="/memories/prefs.md")
    _run(writer, caller, command="str_replace", path="/memories/prefs.md", old_str="aisle", new_str="window")
    assert "window seats" in _run(reader, caller, command="view", path="/memories/prefs.md")
    _run(writer, caller, command="rename", old_path="/memories/prefs.md", new_path="/memories/seats.md")
    listing = _run(reader, caller, command="view", path="/memories")
    assert "/memories/seats.md" in listing and "/memories/prefs.md" not in listing


@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
def test_a_file_forgotten_by_another_process_is_gone_at_once(
    stores: Callable[[], MemoryStore], mode: DeletionMode
) -> None:
    reader, writer, caller = MemoryService(stores(), deletion_mode=mode), MemoryService(stores(), deletion_mode=mode), _caller()
    appended = writer.append(caller, INSTANCE, Scope.USER, None, "- the locker code is in the blue notebook")
    path = f"/memories/appended/{appended.entry_id}.md"
    assert "blue notebook" in _run(reader, caller, command="view", path=path)
    assert appended.entry_id is not None
    writer.forget(caller, INSTANCE, appended.entry_id)  # under approval: hidden until an operator decides
    assert path not in _run(reader, caller, command="view", path="/memories")
    assert "does not exist" in _run_error(reader, caller, command="view", path=path)


def test_a_clear_hides_the_files_and_its_rejection_brings_them_back(stores: Callable[[], MemoryStore]) -> None:
    reader, writer, caller = MemoryService(stores()), MemoryService(stores()), _caller()
    _run(reader, caller, command="create", path="/memories/prefs.md", file_text="aisle seats\n")
    assert "/memories/prefs.md" in _run(reader, caller, command="view", path="/memories")
    pending = writer.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert isinstance(pending, PendingDeletion)
    assert "/memories/prefs.md" not in _run(reader, caller, command="view", path="/memories")
    writer.custody.reject("operator@contoso.com", INSTANCE, pending.request_id, "kept")
    assert "aisle seats" in _run(reader, caller, command="view", path="/memories/prefs.md")


def test_what_is_kept_for_one_user_or_agent_is_never_shown_to_another(stores: Callable[[], MemoryStore]) -> None:
    service, alex, sam = MemoryService(stores()), _caller(), _caller()
    _run(service, alex, command="create", path="/memories/prefs.md", file_text="Alex: aisle seats\n")
    _run(service, sam, command="create", path="/memories/prefs.md", file_text="Sam: window seats\n")
    _run(service, alex, AGENT, command="create", path="/memories/agent/trip.md", file_text="Alex's trip to Porto\n")
    for _ in range(2):  # the second round is answered from what the first kept
        assert "Alex: aisle" in _run(service, alex, command="view", path="/memories/prefs.md")
        assert "Sam: window" in _run(service, sam, command="view", path="/memories/prefs.md")
        assert "/memories/agent/trip.md" in _run(service, alex, AGENT, command="view", path="/memories")
        assert "agent" not in _run(service, alex, command="view", path="/memories")
        assert "agent" not in _run(service, sam, AGENT, command="view", path="/memories")


class _BusyStore:
    """A store whose every read with a stamp gives up, as a store does while other writers keep
    changing more than entries (a stand-in: forcing that race on a real store is not repeatable)."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def load_since(self, keys: list[ProfileKey], after: int | None) -> StampedLoad:
        raise Unavailable("this memory is being changed by other writers while it is read; retry")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_store_too_busy_for_a_stamped_read_still_answers_and_keeps_nothing(stores: Callable[[], MemoryStore]) -> None:
    caller = _caller()
    appended = MemoryService(stores()).append(caller, INSTANCE, Scope.USER, None, "- prefers trains")
    busy = MemoryService(_BusyStore(stores()))  # type: ignore[arg-type]
    assert "prefers trains" in _run(busy, caller, command="view", path=f"/memories/appended/{appended.entry_id}.md")
    assert _kept(busy).builds == 0


def _run_error(service: MemoryService, caller: Caller, **command: object) -> str:
    from memory_core.domain.errors import MemoryCoreError

    with pytest.raises(MemoryCoreError) as refused:
        _run(service, caller, **command)
    return str(refused.value)


@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
def test_an_edit_lets_go_of_the_entries_it_made_stale(stores: Callable[[], MemoryStore], mode: DeletionMode) -> None:
    service, caller = MemoryService(stores(), deletion_mode=mode), _caller()
    _run(service, caller, command="create", path="/memories/prefs.md", file_text="aisle seats\n")
    _run(service, caller, command="view", path="/memories/prefs.md")
    key = _key({False: ProfileKey(INSTANCE, caller.upn, Scope.USER)})
    assert _kept(service)._kept(key) is not None
    _run(service, caller, command="str_replace", path="/memories/prefs.md", old_str="aisle", new_str="window")
    assert _kept(service)._kept(key) is None  # the old version was erased or held: what was kept is stale
    builds = _kept(service).builds
    assert "window seats" in _run(service, caller, command="view", path="/memories/prefs.md")
    assert _kept(service).builds == builds + 1
