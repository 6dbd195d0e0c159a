"""The new versions of a memory-tool command that stopped before its commit are withdrawn by the sweep
(``domain.file_audits``).

A command stored each new version as an entry before any journal existed, then wrote the file index naming it. A
process killed between the two left the unacknowledged text stored for good with no file naming it: shown under
``/memories/appended/<id>.md`` and in every read, beside the unchanged old file, and a retry by the model applied the
edit a second time (an audit's SIGKILL of the server between the two SQLite writes). Here the kill is simulated by a
command that stops where it is and cleans up nothing; the sweep that runs once the journal has settled must withdraw
what the command stored and never published, once, in either deletion mode, and keep what it committed.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain import custody_fence
from memory_core.domain.audit import AuditAction, AuditEvent
from memory_core.domain.errors import Unavailable
from memory_core.domain.file_audits import HORIZON, KIND, WITHDRAWN_BY_SWEEP, FileAudits
from memory_core.domain.file_retirements import FileRetirements
from memory_core.domain.identity import Caller
from memory_core.domain.journals import SETTLE
from memory_core.domain.memory_file_commits import FileCommits
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import Scope
from memory_core.domain.records import RecordKind, deletions_partition
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock

INSTANCE = "withdrawals"
UNACKED = "UNACKED-EDIT"
MODES = [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL]
# Commands that store a new version of /memories/notes.md (or a new file), as the model would send them.
COMMANDS: list[dict[str, Any]] = [
    {"command": "str_replace", "path": "/memories/notes.md", "old_str": "alpha", "new_str": UNACKED},
    {"command": "insert", "path": "/memories/notes.md", "insert_line": 0, "insert_text": f"- {UNACKED}\n"},
    {"command": "create", "path": "/memories/new.md", "file_text": f"- {UNACKED}\n"},
]
IDS = ["str_replace", "insert", "create"]


class Killed(BaseException):
    """The process dying where the command stands: nothing after it runs."""


def _setup(store: MemoryStore, mode: DeletionMode) -> tuple[MemoryService, MemoryFiles, Caller, TickingClock]:
    clock = TickingClock(datetime(2026, 12, 7, 12, 0, tzinfo=UTC), timedelta(microseconds=1))
    service = MemoryService(store, deletion_mode=mode, clock=clock)
    files = MemoryFiles(service)
    caller = Caller(upn=f"withdraw-{uuid.uuid4().hex[:10]}@contoso.com")
    files.execute(caller, INSTANCE, None, {"command": "create", "path": "/memories/notes.md",
                                           "file_text": "- diet: alpha\n"})
    return service, files, caller, clock


@contextlib.contextmanager
def _no_cleanup(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A killed process withdraws nothing and ends no journal: the command's own cleanup does not run."""
    with monkeypatch.context() as patch:
        patch.setattr(FileCommits, "_withdraw", lambda *args, **kwargs: None)
        patch.setattr(FileCommits, "_end", lambda *args, **kwargs: None)
        patch.setattr(FileRetirements, "end", lambda *args, **kwargs: None)
        yield


def _killed_before_commit(service: MemoryService, caller: Caller, command: dict[str, Any],
                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``command``, killed after its versions are stored and before the index's write."""
    def kill() -> None:
        raise Killed("killed before the index's write")

    with _no_cleanup(monkeypatch), pytest.raises(Killed):
        MemoryFiles(service, on_commit=kill).execute(caller, INSTANCE, None, command)


def _withdrawn(service: MemoryService, caller: Caller) -> list[AuditEvent]:
    return [e for e in service.audit.read(INSTANCE, caller.upn)
            if e.action is AuditAction.MEMORY_FILE and str(e.detail).startswith("withdrawn")]


def _journal(store: MemoryStore, caller: Caller) -> list[Any]:
    return [r for r in store.query_records(deletions_partition(INSTANCE), KIND) if r.data["upn"] == caller.upn]


def _read(service: MemoryService, caller: Caller) -> str:
    return service.get(caller, INSTANCE, Scope.USER, None).content_markdown


def _listing(files: MemoryFiles, caller: Caller) -> str:
    return files.execute(caller, INSTANCE, None, {"command": "view", "path": "/memories"}).text


def _settled_sweep(service: MemoryService, clock: TickingClock) -> None:
    clock.now += SETTLE + timedelta(seconds=1)
    service.custody.sweep(instance_id=INSTANCE)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_a_version_stored_by_a_command_killed_before_its_commit_is_withdrawn_by_the_sweep_once(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, command: dict[str, Any], mode: DeletionMode
) -> None:
    """The orphan shows until the journal settles (a command under way finishes itself); the sweep after it erases
    it in either mode (no user deleted anything), audited ``withdrawn`` once, and a second sweep does nothing."""
    service, files, caller, clock = _setup(store, mode)
    _killed_before_commit(service, caller, command, monkeypatch)
    assert UNACKED in _read(service, caller) and "appended/" in _listing(files, caller)  # the fault, until settled
    service.custody.sweep(instance_id=INSTANCE)
    assert UNACKED in _read(service, caller) and len(_journal(store, caller)) == 1
    _settled_sweep(service, clock)
    assert UNACKED not in _read(service, caller) and "appended/" not in _listing(files, caller)
    assert "alpha" in files.execute(caller, INSTANCE, None, {"command": "view", "path": "/memories/notes.md"}).text
    (event,) = _withdrawn(service, caller)
    assert event.detail == WITHDRAWN_BY_SWEEP and event.content_sha256 and _journal(store, caller) == []
    # Under approval too: nothing for an operator to decide (no user deleted anything).
    assert store.query_records(deletions_partition(INSTANCE), RecordKind.DELETION_REQUEST, {"upn": caller.upn}) == []
    _settled_sweep(service, clock)
    assert len(_withdrawn(service, caller)) == 1


def test_a_retry_by_the_model_is_kept_and_the_killed_attempt_withdrawn(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model, told nothing, sends the edit again: it applies to the unchanged file. The user's next command does
    not replay journals it does not name (the sweep does): once settled, only the retry's text is left."""
    service, files, caller, clock = _setup(store, DeletionMode.IMMEDIATE)
    _killed_before_commit(service, caller, COMMANDS[0], monkeypatch)
    files.execute(caller, INSTANCE, None, COMMANDS[0])
    assert _read(service, caller).count(UNACKED) == 2  # the duplicate
    _settled_sweep(service, clock)
    assert _read(service, caller).count(UNACKED) == 1 and "appended/" not in _listing(files, caller)
    assert len(_withdrawn(service, caller)) == 1


def test_a_command_killed_before_its_first_version_leaves_nothing_to_withdraw(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Journaled and killed before the append: nothing is withdrawn or audited. The journal stays while its version
    may still be stored (a command slower than the settle time), and is erased once ``HORIZON`` has passed."""
    service, files, caller, clock = _setup(store, DeletionMode.IMMEDIATE)

    def kill(*args: Any, **kwargs: Any) -> None:
        raise Killed("killed before the first version")

    with _no_cleanup(monkeypatch), monkeypatch.context() as patch, pytest.raises(Killed):
        patch.setattr(MemoryService, "append", kill)
        files.execute(caller, INSTANCE, None, COMMANDS[0])
    assert len(_journal(store, caller)) == 1
    _settled_sweep(service, clock)
    assert len(_journal(store, caller)) == 1 and _withdrawn(service, caller) == []
    clock.now += HORIZON
    _settled_sweep(service, clock)
    assert _journal(store, caller) == [] and _withdrawn(service, caller) == []
    assert "alpha" in _read(service, caller)


@pytest.mark.parametrize("mode", MODES)
def test_a_command_slower_than_the_settle_before_its_first_version_then_killed_has_it_withdrawn(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, mode: DeletionMode
) -> None:
    """The sweep runs while the command stalls between its journal and its append (nothing stored yet): the journal
    is kept, so once the command has stored its version and died before its index write, the next settled sweep
    withdraws it, audited once. (Until 2026-12-07 the journal was erased then and the version showed for good.)"""
    service, files, caller, clock = _setup(store, mode)
    real_append = MemoryService.append

    def stalled_append(self: MemoryService, *args: Any, **kwargs: Any) -> Any:
        _settled_sweep(service, clock)  # the command stalls longer than the settle time before its append
        assert len(_journal(store, caller)) == 1  # kept: the version it names may yet be stored
        return real_append(self, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(MemoryService, "append", stalled_append)
        _killed_before_commit(service, caller, COMMANDS[0], monkeypatch)
    assert UNACKED in _read(service, caller)
    _settled_sweep(service, clock)
    assert UNACKED not in _read(service, caller) and "appended/" not in _listing(files, caller)
    assert len(_withdrawn(service, caller)) == 1 and _journal(store, caller) == []
    _settled_sweep(service, clock)
    assert len(_withdrawn(service, caller)) == 1


def test_a_slow_command_withdrawing_its_version_inside_the_sweeps_fence_is_audited_once(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep finds the version stored, then stands its fence; the command, its index write refused by the
    fence, withdraws the version itself (audited) before the sweep's drop: the sweep reads it again and audits
    nothing more."""
    service, _files, caller, clock = _setup(store, DeletionMode.IMMEDIATE)
    _killed_before_commit(service, caller, COMMANDS[0], monkeypatch)
    (record,) = _journal(store, caller)
    real_fence = custody_fence.fence

    @contextlib.contextmanager
    def fence_then_command_withdraws(*args: Any, **kwargs: Any) -> Iterator[None]:
        with real_fence(*args, **kwargs):
            FileCommits(service)._withdraw(caller, INSTANCE, None, [(False, e) for e, _ in record.data["versions"]])
            yield

    monkeypatch.setattr(custody_fence, "fence", fence_then_command_withdraws)
    _settled_sweep(service, clock)
    (event,) = _withdrawn(service, caller)
    assert event.detail != WITHDRAWN_BY_SWEEP and event.content_sha256  # the command's own, with its hash
    assert UNACKED not in _read(service, caller) and _journal(store, caller) == []


@pytest.mark.parametrize("mode", MODES)
def test_an_index_write_landing_just_before_the_sweeps_fence_is_a_commit(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, mode: DeletionMode
) -> None:
    """The command's index write is in flight when its process dies; the sweep reads the index before it lands and
    finds the version stored, and it lands just before the fence stands. Read again inside the fence, the index
    names the journal: the command committed, so its version is kept and its events written, once."""
    service, files, caller, clock = _setup(store, mode)
    real_save = FileCommits._save_index
    in_flight: list[Any] = []

    def stopped_mid_write(self: FileCommits, *args: Any) -> str | None:
        in_flight.append(lambda: real_save(self, *args))
        raise Killed("killed with its index write in flight")

    with _no_cleanup(monkeypatch), monkeypatch.context() as patch, pytest.raises(Killed):
        patch.setattr(FileCommits, "_save_index", stopped_mid_write)
        files.execute(caller, INSTANCE, None, COMMANDS[0])
    real_fence = custody_fence.fence

    @contextlib.contextmanager
    def write_lands_first(*args: Any, **kwargs: Any) -> Iterator[None]:
        in_flight.pop()()  # the write lands between the sweep's reads and its fence
        with real_fence(*args, **kwargs):
            yield

    with monkeypatch.context() as patch:
        patch.setattr(custody_fence, "fence", write_lands_first)
        _settled_sweep(service, clock)
    assert in_flight == [] and _withdrawn(service, caller) == [] and _journal(store, caller) == []
    assert UNACKED in files.execute(caller, INSTANCE, None, {"command": "view", "path": "/memories/notes.md"}).text
    _settled_sweep(service, clock)
    events = [e for e in service.audit.read(INSTANCE, caller.upn)
              if e.action is AuditAction.MEMORY_FILE and str(e.detail).startswith("str_replace")]
    assert len(events) == 1 and _withdrawn(service, caller) == []


@pytest.mark.parametrize("mode", MODES)
def test_a_command_killed_after_its_commit_keeps_its_versions(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, mode: DeletionMode
) -> None:
    """The index names the journal: the command committed, and the sweep audits it and withdraws nothing."""
    service, files, caller, clock = _setup(store, mode)

    def kill(*args: Any, **kwargs: Any) -> None:
        raise Killed("killed after the index's write")

    with _no_cleanup(monkeypatch), monkeypatch.context() as patch, pytest.raises(Killed):
        patch.setattr(FileAudits, "finish", kill)
        files.execute(caller, INSTANCE, None, COMMANDS[0])
    _settled_sweep(service, clock)
    assert UNACKED in files.execute(caller, INSTANCE, None, {"command": "view", "path": "/memories/notes.md"}).text
    assert _withdrawn(service, caller) == [] and _journal(store, caller) == []


def test_an_orphan_the_model_named_since_is_kept(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model moved ``appended/<id>.md`` to a name of its own before the sweep: the index names the version, and a
    version the index names is never withdrawn."""
    service, files, caller, clock = _setup(store, DeletionMode.IMMEDIATE)
    _killed_before_commit(service, caller, COMMANDS[2], monkeypatch)
    appended = next(line.split()[-1] for line in _listing(files, caller).splitlines()
                    if "appended/" in line and line.endswith(".md"))
    files.execute(caller, INSTANCE, None, {"command": "rename", "old_path": appended, "new_path": "/memories/kept.md"})
    _settled_sweep(service, clock)
    assert UNACKED in files.execute(caller, INSTANCE, None, {"command": "view", "path": "/memories/kept.md"}).text
    assert _withdrawn(service, caller) == [] and _journal(store, caller) == []


def test_a_command_still_under_way_when_the_sweep_withdraws_is_refused_its_commit(store: MemoryStore) -> None:
    """A command slower than the settle time: the sweep withdraws its version inside a deletion's fence, whose write
    refuses the command's index write, so no file names an erased version; the command reads again and commits a
    version of its own."""
    service, files, caller, clock = _setup(store, DeletionMode.IMMEDIATE)
    swept: list[bool] = []

    def slow() -> None:
        if not swept:
            swept.append(True)
            _settled_sweep(service, clock)

    MemoryFiles(service, on_commit=slow).execute(caller, INSTANCE, None, COMMANDS[0])
    assert len(_withdrawn(service, caller)) == 1
    assert _read(service, caller).count(UNACKED) == 1 and "appended/" not in _listing(files, caller)
    assert UNACKED in files.execute(caller, INSTANCE, None, {"command": "view", "path": "/memories/notes.md"}).text


def test_a_version_left_by_an_outage_of_unknown_outcome_is_withdrawn_once_settled(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index's write fails while another command moves the index: whether it applied cannot be told, so the
    command keeps its version and journals (withdrawing an applied version loses the file). The sweep reads off the
    index that it never committed and withdraws the version (before, it showed under appended/ for good)."""
    service, files, caller, clock = _setup(store, DeletionMode.IMMEDIATE)

    real = FileCommits._save_index
    failed: list[bool] = []

    def moved_then_down(self: FileCommits, *args: Any) -> str | None:
        if failed:  # the other command's write
            return real(self, *args)
        failed.append(True)
        other = MemoryFiles(service, writers=None)  # inside this command's turn: it races, not waits
        other.execute(caller, INSTANCE, None, {"command": "create", "path": "/memories/other.md",
                                               "file_text": "- another command's file\n"})
        raise Unavailable("the store did not answer in time")

    with monkeypatch.context() as patch, pytest.raises(Unavailable):
        patch.setattr(FileCommits, "_save_index", moved_then_down)
        files.execute(caller, INSTANCE, None, COMMANDS[0])
    assert "appended/" in _listing(files, caller) and len(_journal(store, caller)) == 1  # unknown: kept
    _settled_sweep(service, clock)
    assert UNACKED not in _read(service, caller) and "appended/" not in _listing(files, caller)
    assert "other.md" in _listing(files, caller) and len(_withdrawn(service, caller)) == 1


def test_a_journal_kept_for_a_version_still_to_come_fences_and_audits_what_it_handled_once(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that stored one of its two versions before it died: the sweep withdraws the stored one and keeps the
    journal for the other (it may yet be stored), naming only that one, so the sweeps until then stand no fence over
    the user's files again and audit nothing twice (a review found each sweep of the day standing the fence anew,
    and writing another "kept" event for a version a deletion hid). Past ``HORIZON`` the journal goes."""
    service, _files, caller, clock = _setup(store, DeletionMode.IMMEDIATE)
    _killed_before_commit(service, caller, COMMANDS[0], monkeypatch)
    (record,) = _journal(store, caller)
    still_to_come = ["never-stored", None]
    store.put_record(record.__class__(record.partition, record.kind, record.id,
                                      {**record.data, "versions": [*record.data["versions"], still_to_come]}))
    fences: list[str] = []
    real_fence = custody_fence.fence

    @contextlib.contextmanager
    def counted_fence(*args: Any, **kwargs: Any) -> Iterator[None]:
        fences.append("stood")
        with real_fence(*args, **kwargs):
            yield

    monkeypatch.setattr(custody_fence, "fence", counted_fence)
    _settled_sweep(service, clock)
    assert UNACKED not in _read(service, caller) and len(_withdrawn(service, caller)) == 1 and len(fences) == 1
    (kept,) = _journal(store, caller)
    assert kept.data["versions"] == [still_to_come]
    _settled_sweep(service, clock)
    assert len(fences) == 1 and len(_withdrawn(service, caller)) == 1 and len(_journal(store, caller)) == 1
    clock.now += HORIZON
    _settled_sweep(service, clock)
    assert _journal(store, caller) == [] and len(fences) == 1
