"""A committed memory-tool command is audited exactly once, even when it stops right after its commit
(``domain.file_audits``).

A command wrote its ``memory_file`` events one by one after the index's commit: a process killed between the two left
the change (a rename, most visibly: it retires no version, so no other journal named it) with no event in the trail,
for good (an audit's ``kill -9`` on the Cosmos test server, 3 of 11 kills). Here the crash is raised right after the
commit; the events must be written by the sweep once the journal has settled, or by the user's next command before
it commits, and never twice.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain.audit import AuditAction, AuditEvent
from memory_core.domain.file_audits import KIND, FileAudit, FileAudits
from memory_core.domain.identity import Caller
from memory_core.domain.journals import SETTLE
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.records import deletions_partition
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock

INSTANCE = "file-audits"

# A command, and how many paths it changes in the files ``_setup`` makes (a directory's rename or delete: each file).
COMMANDS: list[tuple[dict[str, Any], int]] = [
    ({"command": "create", "path": "/memories/new.md", "file_text": "- new\n"}, 1),
    ({"command": "str_replace", "path": "/memories/d/a.md", "old_str": "alpha", "new_str": "omega"}, 1),
    ({"command": "insert", "path": "/memories/d/a.md", "insert_line": 0, "insert_text": "- first\n"}, 1),
    ({"command": "delete", "path": "/memories/d/a.md"}, 1),
    ({"command": "rename", "old_path": "/memories/d/a.md", "new_path": "/memories/d/z.md"}, 1),
    ({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"}, 2),
    ({"command": "delete", "path": "/memories/d"}, 2),
]
IDS = ["create", "str_replace", "insert", "delete", "rename", "rename-directory", "delete-directory"]


class Crash(Exception):
    """The process dying right after the index's commit."""


def _setup(store: MemoryStore) -> tuple[MemoryService, MemoryFiles, Caller, TickingClock]:
    clock = TickingClock(datetime(2026, 12, 7, 12, 0, tzinfo=UTC), timedelta(microseconds=1))
    service = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE, clock=clock)
    files = MemoryFiles(service)
    caller = Caller(upn=f"audits-{uuid.uuid4().hex[:10]}@contoso.com")
    for name, text in (("a", "- alpha\n"), ("b", "- beta\n")):
        files.execute(caller, INSTANCE, None, {"command": "create", "path": f"/memories/d/{name}.md",
                                               "file_text": text})
    return service, files, caller, clock


def _crashed(files: MemoryFiles, caller: Caller, command: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Run ``command``, killed right after its commit: before any of its events is written."""
    def crash(*args: Any, **kwargs: Any) -> None:
        raise Crash("killed after the commit")

    with monkeypatch.context() as patch:
        patch.setattr(FileAudits, "finish", crash)
        with pytest.raises(Crash):
            files.execute(caller, INSTANCE, None, command)


def _events(service: MemoryService, caller: Caller) -> list[AuditEvent]:
    """The commands' events (not those of an old version's retirement, ``superseded: ...``)."""
    return [e for e in service.audit.read(INSTANCE, caller.upn)
            if e.action is AuditAction.MEMORY_FILE and "path-sha256:" in str(e.detail)]


def _journal(store: MemoryStore, caller: Caller) -> list[Any]:
    return [r for r in store.query_records(deletions_partition(INSTANCE), KIND) if r.data["upn"] == caller.upn]


@pytest.mark.parametrize(("command", "paths"), COMMANDS, ids=IDS)
def test_a_command_killed_after_its_commit_is_audited_by_the_sweep_once(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, command: dict[str, Any], paths: int
) -> None:
    """The change is committed with no event (the fault); a sweep before the journal settles leaves it to the
    command, the sweep after writes one event per changed path, naming the command, and a second sweep none."""
    service, files, caller, clock = _setup(store)
    before = len(_events(service, caller))
    _crashed(files, caller, command, monkeypatch)
    assert len(_events(service, caller)) == before and len(_journal(store, caller)) == 1
    service.custody.sweep(instance_id=INSTANCE)
    assert len(_events(service, caller)) == before  # a command under way finishes itself
    clock.now += SETTLE + timedelta(seconds=1)
    service.custody.sweep(instance_id=INSTANCE)
    written = _events(service, caller)[before:]
    assert len(written) == paths and _journal(store, caller) == []
    assert all(str(e.detail).startswith(f"{command['command']} path-sha256:") for e in written)
    service.custody.sweep(instance_id=INSTANCE)
    assert _events(service, caller)[before:] == written


def test_the_users_next_command_writes_a_crashed_commands_events_first(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next command would commit an index that no longer names the crashed command's journal (read by the sweep
    as a command that never committed): it writes those events before its own, and the sweep then writes none."""
    service, files, caller, clock = _setup(store)
    before = len(_events(service, caller))
    _crashed(files, caller, {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"}, monkeypatch)
    files.execute(caller, INSTANCE, None, {"command": "create", "path": "/memories/f.md", "file_text": "- f\n"})
    details = [str(e.detail).split(" ")[0] for e in _events(service, caller)[before:]]
    assert details == ["rename", "rename", "create"] and _journal(store, caller) == []
    clock.now += SETTLE + timedelta(seconds=1)
    service.custody.sweep(instance_id=INSTANCE)
    assert len(_events(service, caller)) == before + 3


def test_a_command_stopped_before_its_commit_is_not_audited(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its journal is written before the index's write: stopped between them, the index does not name it, and the
    sweep erases it without writing an event for a change that never happened."""
    service, _, caller, clock = _setup(store)
    before = len(_events(service, caller))

    def down() -> None:
        raise Crash("killed before the commit")

    with pytest.raises(Crash):
        MemoryFiles(service, on_commit=down).execute(
            caller, INSTANCE, None, {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"})
    clock.now += SETTLE + timedelta(seconds=1)
    service.custody.sweep(instance_id=INSTANCE)
    assert len(_events(service, caller)) == before and _journal(store, caller) == []


@pytest.mark.parametrize(("command", "paths"), COMMANDS, ids=IDS)
def test_a_finished_command_writes_each_event_once_and_leaves_no_journal(
    store: MemoryStore, command: dict[str, Any], paths: int
) -> None:
    service, files, caller, _ = _setup(store)
    before = len(_events(service, caller))
    files.execute(caller, INSTANCE, None, command)
    assert len(_events(service, caller)) == before + paths and _journal(store, caller) == []


def test_a_journal_finished_twice_at_once_stores_each_event_once(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command, its user's next command and the sweep may all write one journal's events (each after reading
    it before another erased it): every event's id is made from the journal's, so a second write is the same event."""
    service, files, caller, _ = _setup(store)
    before = len(_events(service, caller))
    _crashed(files, caller, {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"}, monkeypatch)
    (record,) = _journal(store, caller)
    service.file_audits.finish(FileAudit.from_record(record))
    service.file_audits.finish(FileAudit.from_record(record))  # read before the first erased it
    written = _events(service, caller)[before:]
    assert len(written) == 2 and len({(e.time, e.detail) for e in written}) == 2
