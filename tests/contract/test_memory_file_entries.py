"""The memory tool's kept entries (``domain.file_entries``) on every store: a command that changed
nothing reads no memory, and nothing kept ever shows a file another process changed, a hidden
entry, or another user's memory.

Each test reads through one ``MemoryService`` (the process that keeps) and writes through
another over a second store object on the same data (another process).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.errors import MemoryCoreError, Unavailable
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.snapshots import StampedLoad
from memory_core.domain.stamped_answers import StampedAnswers
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import PendingDeletion
from tests.support.random_walk import RandomWalk

INSTANCE = "files-kept"
AGENT = AgentContext("/instances/i/agents/travel", "Travel")


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

    with pytest.raises(MemoryCoreError) as refused:
        _run(service, caller, **command)
    return str(refused.value)


def _seen(service: MemoryService, caller: Caller, agent: AgentContext | None) -> tuple[object, ...]:
    """Everything a command starts from: the files, the directories and the scopes' states."""
    snapshot = MemoryFiles(service)._snapshot(caller, INSTANCE, agent)
    return dict(snapshot.namespace.files), set(snapshot.namespace.dirs), snapshot.entries.states


def _fresh(stores: Callable[[], MemoryStore], caller: Caller, agent: AgentContext | None) -> tuple[object, ...]:
    """What a process with nothing kept starts from (its first command loads the memory in full)."""
    service = MemoryService(stores())
    seen = _seen(service, caller, agent)
    assert (_kept(service).builds, _kept(service).refreshed) == (1, 0)
    return seen


@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
@pytest.mark.parametrize("edit", [
    {"command": "str_replace", "path": "/memories/prefs.md", "old_str": "aisle", "new_str": "window"},
    {"command": "insert", "path": "/memories/prefs.md", "insert_line": 1, "insert_text": "no red-eyes"},
    {"command": "rename", "old_path": "/memories/prefs.md", "new_path": "/memories/seats.md"},
    {"command": "delete", "path": "/memories/prefs.md"},
    {"command": "str_replace", "path": "/memories/agent/trip.md", "old_str": "May", "new_str": "June"},
], ids=lambda edit: f"{edit['command']}-{edit.get('path', '')}")
def test_the_command_after_an_edit_brings_the_kept_entries_up_to_date_without_loading_them_again(
    stores: Callable[[], MemoryStore], mode: DeletionMode, edit: dict[str, object]
) -> None:
    service, caller = MemoryService(stores(), deletion_mode=mode), _caller()
    for n in range(3):
        service.append(caller, INSTANCE, Scope.USER, None, f"- appended fact {n}")
    _run(service, caller, AGENT, command="create", path="/memories/prefs.md", file_text="aisle seats\n")
    _run(service, caller, AGENT, command="create", path="/memories/agent/trip.md", file_text="Porto in May\n")
    _run(service, caller, AGENT, command="view", path="/memories")
    builds, refreshed = _kept(service).builds, _kept(service).refreshed
    _run(service, caller, AGENT, **edit)
    assert _seen(service, caller, AGENT) == _fresh(stores, caller, AGENT)
    assert _kept(service).builds == builds
    # a rename within a scope stores no version and retires none: only the index changes
    assert _kept(service).refreshed == refreshed + (0 if edit["command"] == "rename" else 1)


def _forget_appended(writer: MemoryService, caller: Caller, ids: list[str]) -> None:
    writer.forget(caller, INSTANCE, ids[0])


def _forget_file(writer: MemoryService, caller: Caller, ids: list[str]) -> None:
    _run(writer, caller, AGENT, command="delete", path="/memories/prefs.md")


def _drop_version(writer: MemoryService, caller: Caller, ids: list[str]) -> None:
    writer.drop_version(caller, ProfileKey(INSTANCE, caller.upn, Scope.USER), ids[1], "superseded (a test)")


def _clear_user_scope(writer: MemoryService, caller: Caller, ids: list[str]) -> None:
    writer.clear(caller, INSTANCE, Scope.USER, None, confirm=True)


def _clear_agent_scope(writer: MemoryService, caller: Caller, ids: list[str]) -> None:
    writer.clear(caller, INSTANCE, Scope.AGENT, AGENT, confirm=True)


def _append_and_forget(writer: MemoryService, caller: Caller, ids: list[str]) -> None:
    fresh = writer.append(caller, INSTANCE, Scope.USER, None, "- stored while another entry was forgotten")
    writer.forget(caller, INSTANCE, ids[2])
    writer.append(caller, INSTANCE, Scope.AGENT, AGENT, "- the agent's note after it")
    assert fresh.entry_id is not None


def _forget_rejected(writer: MemoryService, caller: Caller, ids: list[str]) -> None:
    pending = writer.forget(caller, INSTANCE, ids[0])
    if isinstance(pending, PendingDeletion):
        writer.custody.reject("operator@contoso.com", INSTANCE, pending.request_id, "kept")


def _forget_approved_and_swept(writer: MemoryService, caller: Caller, ids: list[str]) -> None:
    pending = writer.forget(caller, INSTANCE, ids[0])
    if isinstance(pending, PendingDeletion):
        writer.custody.approve("operator@contoso.com", INSTANCE, pending.request_id)
        writer.custody.sweep()


@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
@pytest.mark.parametrize("erase", [
    _forget_appended, _forget_file, _drop_version, _clear_user_scope, _clear_agent_scope, _append_and_forget,
    _forget_rejected, _forget_approved_and_swept,
], ids=lambda erase: erase.__name__.strip("_"))
def test_what_another_process_erased_or_held_is_never_shown_from_what_was_kept(
    stores: Callable[[], MemoryStore], mode: DeletionMode, erase: Callable[[MemoryService, Caller, list[str]], None]
) -> None:
    reader, writer = MemoryService(stores(), deletion_mode=mode), MemoryService(stores(), deletion_mode=mode)
    caller = _caller()
    ids = [str(writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n}").entry_id) for n in range(3)]
    writer.append(caller, INSTANCE, Scope.AGENT, AGENT, "- the agent's own note")
    _run(writer, caller, AGENT, command="create", path="/memories/prefs.md", file_text="aisle seats\n")
    _run(reader, caller, AGENT, command="view", path="/memories")
    before = _seen(reader, caller, AGENT)
    builds = _kept(reader).builds

    erase(writer, caller, ids)

    after = _seen(reader, caller, AGENT)
    assert after == _fresh(stores, caller, AGENT)
    assert _kept(reader).builds == builds  # brought up to date, not loaded again
    if erase is not _forget_rejected or mode is DeletionMode.IMMEDIATE:
        assert after != before
    # and the next command after it, with nothing written in between, is answered from what was kept
    refreshed = _kept(reader).refreshed
    assert _seen(reader, caller, AGENT) == after
    assert (_kept(reader).builds, _kept(reader).refreshed) == (builds, refreshed)


def _between_the_stamp_and_the_ids(store: MemoryStore, write: Callable[[], None]) -> None:
    """Make ``store``'s next ``load_present`` run ``write`` (once) after it has read the partition's
    stamp and before it reads which entries are stored: a writer erasing in the middle of the read."""
    done: list[bool] = []

    def once() -> None:
        if not done:
            done.append(True)
            write()

    if isinstance(store, SqliteMemoryStore):
        profiles = store._profiles  # the read transaction has read the stamp when it reads the profiles

        def profiles_then_write(keys: Any) -> Any:
            found = profiles(keys)
            once()
            return found

        store._profiles = profiles_then_write  # type: ignore[method-assign]
    else:
        stamps = store._reads._stamps  # type: ignore[attr-defined]
        current = stamps.current

        def current_then_write(*args: Any) -> Any:
            found = current(*args)
            once()
            return found

        stamps.current = current_then_write


@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
def test_a_writer_erasing_between_the_stamp_and_the_ids_read_never_leaves_a_memory_that_never_was(
    stores: Callable[[], MemoryStore], mode: DeletionMode
) -> None:
    store = stores()
    reader, writer = MemoryService(store, deletion_mode=mode), MemoryService(stores(), deletion_mode=mode)
    caller = _caller()
    ids = [str(writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n}").entry_id) for n in range(3)]
    _run(reader, caller, command="view", path="/memories")
    writer.forget(caller, INSTANCE, ids[0])  # the stamp moves: the next command refreshes
    middle = _fresh(stores, caller, None)

    def erase_and_append() -> None:
        writer.append(caller, INSTANCE, Scope.USER, None, "- stored during the read")
        writer.forget(caller, INSTANCE, ids[1])

    _between_the_stamp_and_the_ids(store, erase_and_append)
    during = _seen(reader, caller, None)
    end = _fresh(stores, caller, None)
    assert end != middle  # the writer did write during the read
    assert during in (middle, end)  # one state the memory was in, never a mix of two
    assert _seen(reader, caller, None) == end
    assert _kept(reader).builds == 1


class _NoPresence:
    """A store without ``load_present`` or ``load_erased`` (an older adapter): kept entries are loaded again after
    an erasure."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name in ("load_present", "load_erased"):
            raise AttributeError(name)
        return getattr(self._store, name)


def test_a_store_that_cannot_list_its_entries_loads_them_again_after_an_erasure(
    stores: Callable[[], MemoryStore]
) -> None:
    reader = MemoryService(_NoPresence(stores()))  # type: ignore[arg-type]
    writer, caller = MemoryService(stores(), deletion_mode=DeletionMode.IMMEDIATE), _caller()
    appended = writer.append(caller, INSTANCE, Scope.USER, None, "- prefers trains")
    _run(reader, caller, command="view", path="/memories")
    writer.forget(caller, INSTANCE, str(appended.entry_id))
    assert _seen(reader, caller, None) == _fresh(stores, caller, None)
    assert (_kept(reader).builds, _kept(reader).refreshed) == (2, 0)


@pytest.mark.parametrize(("mode", "seed"), [(DeletionMode.IMMEDIATE, 6), (DeletionMode.OPERATOR_APPROVAL, 7)])
def test_after_any_walk_of_custody_steps_what_was_kept_is_what_a_fresh_load_finds(
    stores: Callable[[], MemoryStore], mode: DeletionMode, seed: int, request: pytest.FixtureRequest
) -> None:
    """Two processes take random steps on one memory (seeded, so a failure replays); after every step
    the keeping process's memory tool starts from exactly the files, directories and visible entries a
    process with nothing kept loads, and it never loaded the memory in full again."""
    walk = RandomWalk(seed, INSTANCE)
    keeper, other = MemoryService(stores(), deletion_mode=mode), MemoryService(stores(), deletion_mode=mode)
    caller = _caller()
    steps = 120 if "sqlite" in request.node.callspec.id else 80
    for step in range(steps):
        walk.any_step(walk.choice([keeper, keeper, other]), caller, AGENT, step)
        assert _seen(keeper, caller, AGENT) == _fresh(stores, caller, AGENT), f"seed {seed}, step {step}"
    assert _kept(keeper).builds == 1 and _kept(keeper).refreshed > 5  # brought up to date, never reloaded
