"""A memory-tool command's old versions are retired even when it stops after its commit (``domain.file_retirements``).

A command commits the file index naming a file's new version, then retires the old one: forgets it when its text was
removed, drops it when the new version keeps it. A crash between the two left the old version stored with no name for
good: its removed text showed in every read and came back as ``/memories/appended/<id>.md`` (an audit's ``kill -9``
on the Cosmos test server, in both deletion modes). Here the crash is raised right after the commit; the sweep that
runs once the journal has settled must retire the version as the command would have, and only then.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain.errors import Conflict, Unavailable
from memory_core.domain.file_retirements import KIND
from memory_core.domain.identity import Caller
from memory_core.domain.journals import SETTLE
from memory_core.domain.memory_file_commits import FileCommits
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import Scope
from memory_core.domain.records import deletions_partition
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock

INSTANCE = "retirements"
REMOVED = "PRIVATE-DIAGNOSIS"


class Crash(Exception):
    """The process dying right after the index's commit."""


def _setup(store: MemoryStore, mode: DeletionMode) -> tuple[MemoryService, MemoryFiles, Caller, TickingClock]:
    clock = TickingClock(datetime(2026, 12, 6, 12, 0, tzinfo=UTC), timedelta(microseconds=1))
    service = MemoryService(store, deletion_mode=mode, clock=clock)
    files = MemoryFiles(service)
    caller = Caller(upn=f"retire-{uuid.uuid4().hex[:10]}@contoso.com")
    files.execute(caller, INSTANCE, None, {"command": "create", "path": "/memories/health.md",
                                           "file_text": f"- diet: vegetarian\n- {REMOVED}\n"})
    return service, files, caller, clock


def _crash_after_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(*args: Any, **kwargs: Any) -> Any:
        raise Crash("killed after the commit")

    monkeypatch.setattr(MemoryFiles, "_finish", crash)


def _journal(store: MemoryStore, caller: Caller) -> list[Any]:
    return [r for r in store.query_records(deletions_partition(INSTANCE), KIND) if r.data["upn"] == caller.upn]


def _read(service: MemoryService, caller: Caller) -> str:
    return service.get(caller, INSTANCE, Scope.USER, None).content_markdown


@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
def test_text_a_crashed_edit_removed_is_forgotten_by_the_sweep(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, mode: DeletionMode
) -> None:
    """str_replace removes a line and crashes after its commit: the file reads without it at once, the old version
    (with it) is stored with no name; a sweep before the journal settles leaves it to the command, and the sweep
    after forgets it: erased (immediate) or held for an operator (approval), out of every read and listing."""
    service, files, caller, clock = _setup(store, mode)
    with monkeypatch.context() as patch:
        _crash_after_commit(patch)
        with pytest.raises(Crash):
            files.execute(caller, INSTANCE, None, {"command": "str_replace", "path": "/memories/health.md",
                                                   "old_str": f"- {REMOVED}\n", "new_str": ""})
    assert REMOVED in _read(service, caller) and len(_journal(store, caller)) == 1  # the fault, before the sweep
    service.custody.sweep(instance_id=INSTANCE)
    assert REMOVED in _read(service, caller)  # an edit under way finishes itself
    clock.now += SETTLE + timedelta(seconds=1)
    service.custody.sweep(instance_id=INSTANCE)
    assert REMOVED not in _read(service, caller) and _journal(store, caller) == []
    listing = files.execute(caller, INSTANCE, None, {"command": "view", "path": "/memories"}).text
    assert "appended" not in listing and "health.md" in listing
    assert files.execute(caller, INSTANCE, None, {"command": "view", "path": "/memories/health.md"}).text.count(
        "vegetarian") == 1
    stored = "".join(e.content_markdown for s in store.load_partition(INSTANCE, caller.upn) for e in s.entries)
    assert (REMOVED in stored) is (mode is DeletionMode.OPERATOR_APPROVAL)  # held, not erased, until approved
    pending = service.custody.page(INSTANCE, None, limit=10, upn=caller.upn).items
    assert [r.kind.value for r in pending] == (["forget"] if mode is DeletionMode.OPERATOR_APPROVAL else [])


def test_a_version_a_crashed_insert_kept_whole_is_dropped_by_the_sweep(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """insert keeps the old text in the new version; crashed after its commit, the old version showed as a second
    copy of the file's text. The sweep drops it, with no deletion request (nothing is lost)."""
    service, files, caller, clock = _setup(store, DeletionMode.OPERATOR_APPROVAL)
    with monkeypatch.context() as patch:
        _crash_after_commit(patch)
        with pytest.raises(Crash):
            files.execute(caller, INSTANCE, None, {"command": "insert", "path": "/memories/health.md",
                                                   "insert_line": 0, "insert_text": "- allergy: none\n"})
    assert _read(service, caller).count("vegetarian") == 2
    clock.now += SETTLE + timedelta(seconds=1)
    service.custody.sweep(instance_id=INSTANCE)
    assert _read(service, caller).count("vegetarian") == 1 and "allergy" in _read(service, caller)
    assert service.custody.page(INSTANCE, None, limit=10, upn=caller.upn).items == []
    assert _journal(store, caller) == []


def test_a_command_stopped_before_its_commit_retires_nothing(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal is written before the commit: a command stopped between them (the store down at the index's
    write) leaves the file as it was, and the sweep must not forget its only version."""
    service, files, caller, clock = _setup(store, DeletionMode.IMMEDIATE)

    def down() -> None:
        raise Crash("killed before the commit")

    stopped = MemoryFiles(service, on_commit=down)
    with pytest.raises(Crash):
        stopped.execute(caller, INSTANCE, None, {"command": "str_replace", "path": "/memories/health.md",
                                                 "old_str": f"- {REMOVED}\n", "new_str": ""})
    clock.now += SETTLE + timedelta(seconds=1)
    service.custody.sweep(instance_id=INSTANCE)
    assert REMOVED in files.execute(caller, INSTANCE, None, {"command": "view", "path": "/memories/health.md"}).text
    assert _journal(store, caller) == []


def test_a_finished_command_leaves_no_journal(store: MemoryStore) -> None:
    service, files, caller, _ = _setup(store, DeletionMode.IMMEDIATE)
    files.execute(caller, INSTANCE, None, {"command": "str_replace", "path": "/memories/health.md",
                                           "old_str": f"- {REMOVED}\n", "new_str": ""})
    files.execute(caller, INSTANCE, None, {"command": "delete", "path": "/memories/health.md"})
    assert _journal(store, caller) == [] and REMOVED not in _read(service, caller)


@pytest.mark.parametrize("applied", [True, False])
def test_an_outage_at_the_index_write_loses_no_text_whether_or_not_it_applied(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, applied: bool
) -> None:
    """The index's write answers 503 after it applied (a timeout that lost only the answer), or without applying.
    Applied: the command goes on as committed, and the file reads its new version (withdrawing the versions the
    index names, then retiring the old one, lost the file's whole text). Not applied: what it stored is withdrawn and
    its journal ended, and the file reads as before. Either way nothing is left for the sweep to take."""
    service, files, caller, clock = _setup(store, DeletionMode.IMMEDIATE)
    real = FileCommits._save_index

    def lost_answer(self: FileCommits, *args: Any) -> str | None:
        if applied:
            real(self, *args)
        raise Unavailable("the store did not answer in time")

    with monkeypatch.context() as patch:
        patch.setattr(FileCommits, "_save_index", lost_answer)
        command = {"command": "insert", "path": "/memories/health.md", "insert_line": 0, "insert_text": "- new\n"}
        if applied:
            files.execute(caller, INSTANCE, None, command)
        else:
            with pytest.raises(Unavailable):
                files.execute(caller, INSTANCE, None, command)
    clock.now += SETTLE + timedelta(seconds=1)
    service.custody.sweep(instance_id=INSTANCE)
    shown = files.execute(caller, INSTANCE, None, {"command": "view", "path": "/memories/health.md"}).text
    assert "vegetarian" in shown and REMOVED in shown and ("- new" in shown) is applied
    assert _read(service, caller).count("vegetarian") == 1 and _journal(store, caller) == []


def test_two_sweeps_at_once_retire_a_version_once(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The timer's sweep and an operator's run together: a second replay starting while the first retires the
    crashed edit's old version finds the journal claimed and files no second request (it filed two)."""
    service, files, caller, clock = _setup(store, DeletionMode.OPERATOR_APPROVAL)
    with monkeypatch.context() as patch:
        _crash_after_commit(patch)
        with pytest.raises(Crash):
            files.execute(caller, INSTANCE, None, {"command": "str_replace", "path": "/memories/health.md",
                                                   "old_str": f"- {REMOVED}\n", "new_str": ""})
    clock.now += SETTLE + timedelta(seconds=1)
    stale = store.query_records(deletions_partition(INSTANCE), KIND)  # what a second sweep read before the claim
    real_forget = service.forget
    second: list[int] = []

    def forget_while_another_sweep_runs(*args: Any, **kwargs: Any) -> Any:
        second.append(service.file_retirements.replay(INSTANCE))
        with monkeypatch.context() as patch:
            patch.setattr(store, "query_records", lambda *a, **k: stale)
            second.append(service.file_retirements.replay(INSTANCE))
        return real_forget(*args, **kwargs)

    monkeypatch.setattr(service.file_retirements, "_forget", forget_while_another_sweep_runs)
    assert service.file_retirements.replay(INSTANCE) == 1
    assert second == [0, 0]
    requests = service.custody.page(INSTANCE, None, limit=10, upn=caller.upn).items
    assert [r.kind.value for r in requests] == ["forget"] and _journal(store, caller) == []


def test_a_claim_made_late_in_a_long_sweep_is_not_taken_by_another(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two crashed edits; the sweep spends three minutes on the first. Its claim of the second is stamped when it is
    made, so a second sweep starting meanwhile finds it freshly claimed and leaves it (stamped with the time the first
    sweep began, it looked settled, and both swept it)."""
    service, files, caller, clock = _setup(store, DeletionMode.OPERATOR_APPROVAL)
    other = Caller(upn=f"retire-{uuid.uuid4().hex[:10]}@contoso.com")
    files.execute(other, INSTANCE, None, {"command": "create", "path": "/memories/health.md",
                                          "file_text": f"- diet: vegan\n- {REMOVED}\n"})
    with monkeypatch.context() as patch:
        _crash_after_commit(patch)
        for who in (caller, other):
            with pytest.raises(Crash):
                files.execute(who, INSTANCE, None, {"command": "str_replace", "path": "/memories/health.md",
                                                    "old_str": f"- {REMOVED}\n", "new_str": ""})
    clock.now += SETTLE + timedelta(seconds=1)
    real_forget = service.forget
    second: list[int] = []

    def slow_then_raced(who: Caller, *args: Any, **kwargs: Any) -> Any:
        if who.upn == caller.upn:
            clock.now += timedelta(minutes=3)  # the first record takes long
        else:
            second.append(service.file_retirements.replay(INSTANCE))
        return real_forget(who, *args, **kwargs)

    monkeypatch.setattr(service.file_retirements, "_forget", slow_then_raced)
    assert service.file_retirements.replay(INSTANCE) == 2 and second == [0]
    for who in (caller, other):
        assert len(service.custody.page(INSTANCE, None, limit=10, upn=who.upn).items) == 1


def test_an_outage_before_the_index_write_withdraws_what_was_stored(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal's write fails after the new version was stored, while another command moves the index: nothing
    of this command was published, so its version is withdrawn (no leftover under appended/) and the file reads as
    before (taken for an outage at the index's write, with the index moved, it was left unknown and kept)."""
    service, files, caller, _ = _setup(store, DeletionMode.IMMEDIATE)

    real_begin = service.file_retirements.begin

    def down(*args: Any, **kwargs: Any) -> Any:
        if args[3]:  # this command's journal (the other command retires nothing)
            other = MemoryFiles(service, writers=None)  # inside this command's turn: it races, not waits
            other.execute(caller, INSTANCE, None, {"command": "create", "path": "/memories/other.md",
                                                   "file_text": "- another command's file\n"})
            raise Unavailable("the store is down")
        return real_begin(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(service.file_retirements, "begin", down)
        with pytest.raises(Unavailable):
            files.execute(caller, INSTANCE, None, {"command": "insert", "path": "/memories/health.md",
                                                   "insert_line": 0, "insert_text": "- new\n"})
    listing = files.execute(caller, INSTANCE, None, {"command": "view", "path": "/memories"}).text
    assert "appended" not in listing and "- new" not in _read(service, caller)


def test_an_index_write_still_in_flight_after_its_outage_can_no_longer_land(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index's write times out before it reaches the store and lands later (a client's timeout): the command,
    having found the index as it read it, withdraws its version only after writing the index again on that etag,
    so the late write is refused and cannot publish a withdrawn version."""
    _, files, caller, _ = _setup(store, DeletionMode.IMMEDIATE)
    real = FileCommits._save_index
    in_flight: list[tuple[Any, ...]] = []

    def timed_out(self: FileCommits, *args: Any) -> str | None:
        in_flight.append((self, *args))
        raise Unavailable("the store did not answer in time")

    with monkeypatch.context() as patch:
        patch.setattr(FileCommits, "_save_index", timed_out)
        with pytest.raises(Unavailable):
            files.execute(caller, INSTANCE, None, {"command": "insert", "path": "/memories/health.md",
                                                   "insert_line": 0, "insert_text": "- new\n"})
    with pytest.raises(Conflict):
        real(*in_flight[0])  # the write, landing late
    shown = files.execute(caller, INSTANCE, None, {"command": "view", "path": "/memories/health.md"}).text
    assert "vegetarian" in shown and "- new" not in shown
