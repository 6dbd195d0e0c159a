"""A memory-tool edit racing a deletion, on every store: what the deletion covered does not outlive it.

An edit reads a file, stores a new version that keeps the old text, then commits the file index. A clear, an
import-replace, a forget or a purge stands a fence in that index while it chooses what it covers and writes it
(``domain.custody_fence``), so an edit either committed before (and the deletion covers its version too) or reads
again after (and finds the file gone). Each test forces one interleaving with real threads and events.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain import memory_file_service
from memory_core.domain.audit import AuditAction
from memory_core.domain.custody_fence import LEASE, fence, fenced_until, forget_fence
from memory_core.domain.errors import NotFound, Unavailable
from memory_core.domain.file_index import INDEX_ID, INDEX_KIND
from memory_core.domain.identity import Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import Scope
from memory_core.domain.records import Partition
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import PendingDeletion

INSTANCE = "edits-custody"
OPERATOR = "olivia@contoso.com"
SECRET = "ORIGINAL-PRIVATE-TEXT"
WAIT = 10


def _caller() -> Caller:
    return Caller(upn=f"edits-{uuid.uuid4().hex[:10]}@contoso.com")


def _stored_text(store: MemoryStore, caller: Caller) -> str:
    """Every entry stored in the caller's partition, hidden or not."""
    return "\n".join(e.content_markdown for state in store.load_partition(INSTANCE, caller.upn) for e in state.entries)


def _in_a_thread(work: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["answer"] = work()
        except Exception as error:  # the test asserts on it
            out["answer"] = error

    thread = threading.Thread(target=target)
    thread.start()
    return thread, out


def _execute(service: MemoryService, caller: Caller, files: MemoryFiles | None = None, **command: object) -> Any:
    return (files or MemoryFiles(service)).execute(caller, INSTANCE, None, command)


@pytest.mark.parametrize("mode", list(DeletionMode))
def test_an_edit_that_read_a_file_before_a_clear_does_not_carry_its_text_past_the_clear(
    store: MemoryStore, mode: DeletionMode
) -> None:
    """The insert reads the file, then stores its version only after the clear has chosen its watermark (and, when
    immediate, before the clear erases what the watermark hides): unfenced, that version kept the text."""
    service, caller = MemoryService(store, deletion_mode=mode), _caller()
    _execute(service, caller, command="create", path="/memories/diary.md", file_text=SECRET + "\n")
    read, cleared, inserted = threading.Event(), threading.Event(), threading.Event()
    append, erase = service.append, service.custody.erasures.finish

    def append_after_the_clear(*args: Any, **kwargs: Any) -> Any:
        read.set()
        cleared.wait(WAIT)
        return append(*args, **kwargs)

    def erase_after_the_insert(*args: Any, **kwargs: Any) -> Any:
        cleared.set()
        inserted.wait(WAIT)
        return erase(*args, **kwargs)

    service.append = append_after_the_clear  # type: ignore[method-assign]
    service.custody.erasures.finish = erase_after_the_insert  # type: ignore[method-assign]
    thread, out = _in_a_thread(lambda: _execute(service, caller, command="insert", path="/memories/diary.md",
                                                insert_line=1, insert_text="a line added meanwhile"))
    assert read.wait(WAIT)
    service.append = append  # type: ignore[method-assign]
    clearing, cleared_out = _in_a_thread(lambda: service.clear(caller, INSTANCE, Scope.USER, None, confirm=True))
    if mode is DeletionMode.OPERATOR_APPROVAL:
        clearing.join(WAIT)
        cleared.set()
    thread.join(WAIT)
    inserted.set()
    clearing.join(WAIT)
    assert isinstance(out["answer"], NotFound), out  # it read again after the clear: the file is gone
    outcome = cleared_out["answer"]
    if mode is DeletionMode.OPERATOR_APPROVAL:
        assert isinstance(outcome, PendingDeletion)
        assert SECRET not in service.get(caller, INSTANCE, Scope.USER, None).content_markdown
        service.custody.approve(OPERATOR, INSTANCE, outcome.request_id)
        service.custody.sweep(instance_id=INSTANCE)
    assert SECRET not in service.get(caller, INSTANCE, Scope.USER, None).content_markdown
    assert SECRET not in _stored_text(store, caller)


@pytest.mark.parametrize("mode", list(DeletionMode))
def test_an_edit_committing_while_its_file_is_forgotten_reads_again_and_finds_it_gone(
    store: MemoryStore, mode: DeletionMode
) -> None:
    """The forget lands between the insert's new version and its commit: the commit fails on the fence, and the
    insert, read again, finds the entry forgotten (pending or done). Unfenced, it committed, erased the held entry at
    once, and the approved request erased nothing."""
    service, caller = MemoryService(store, deletion_mode=mode), _caller()
    entry_id = service.append(caller, INSTANCE, Scope.USER, None, "home address: " + SECRET).entry_id
    assert entry_id is not None
    at_commit, go = threading.Event(), threading.Event()

    def pause_once() -> None:
        if not at_commit.is_set():
            at_commit.set()
            go.wait(WAIT)

    slow = MemoryFiles(service, on_commit=pause_once)
    thread, out = _in_a_thread(lambda: _execute(service, caller, slow, command="insert", insert_line=0,
                                                path=f"/memories/appended/{entry_id}.md", insert_text="a note"))
    assert at_commit.wait(WAIT)
    outcome = service.forget(caller, INSTANCE, entry_id)
    go.set()
    thread.join(WAIT)
    assert isinstance(out["answer"], NotFound), out
    assert SECRET not in service.get(caller, INSTANCE, Scope.USER, None).content_markdown
    if isinstance(outcome, PendingDeletion):
        service.custody.approve(OPERATOR, INSTANCE, outcome.request_id)
        (done,) = service.custody.sweep(instance_id=INSTANCE).executed
        assert done.erased_entries == 1
    assert SECRET not in _stored_text(store, caller)


def test_a_version_superseded_after_a_forget_held_it_is_left_for_the_operator(store: MemoryStore) -> None:
    """The insert committed first (its new version keeps the text: the user forgot a version just superseded); the
    old version, held by then, is not erased by the edit but by the approved request."""
    service, caller = MemoryService(store, deletion_mode=DeletionMode.OPERATOR_APPROVAL), _caller()
    entry_id = service.append(caller, INSTANCE, Scope.USER, None, "home address: " + SECRET).entry_id
    assert entry_id is not None
    retiring, go = threading.Event(), threading.Event()
    files = MemoryFiles(service)
    finish = files._finish

    def finish_after_the_forget(*args: Any, **kwargs: Any) -> Any:
        retiring.set()
        go.wait(WAIT)
        return finish(*args, **kwargs)

    files._finish = finish_after_the_forget  # type: ignore[method-assign]
    thread, out = _in_a_thread(lambda: _execute(service, caller, files, command="insert", insert_line=0,
                                                path=f"/memories/appended/{entry_id}.md", insert_text="a note"))
    assert retiring.wait(WAIT)
    outcome = service.forget(caller, INSTANCE, entry_id)
    assert isinstance(outcome, PendingDeletion)
    go.set()
    thread.join(WAIT)
    assert not isinstance(out["answer"], Exception), out
    assert SECRET in service.get(caller, INSTANCE, Scope.USER, None).content_markdown  # the new version
    kept = [e for e in service.audit_trail(INSTANCE, caller.upn)
            if e.action is AuditAction.MEMORY_FILE and "kept: a deletion hid it first" in (e.detail or "")]
    assert [e.entry_id for e in kept] == [entry_id]
    service.custody.approve(OPERATOR, INSTANCE, outcome.request_id)
    (done,) = service.custody.sweep(instance_id=INSTANCE).executed
    assert done.erased_entries == 1 and store.get_entry(INSTANCE, caller.upn, entry_id) is None


def test_a_deletion_lifts_its_fence_and_a_first_deletion_makes_an_index_naming_nothing(store: MemoryStore) -> None:
    service, caller = MemoryService(store), _caller()
    entry_id = service.append(caller, INSTANCE, Scope.USER, None, "- likes trains").entry_id
    assert entry_id is not None
    service.forget(caller, INSTANCE, entry_id)
    record = store.get_record(Partition(INSTANCE, caller.upn), INDEX_KIND, INDEX_ID)
    assert record is not None and fenced_until(record.data, service.now()) is None
    assert record.data.get("fences") == {} and not record.data.get("user")
    assert _execute(service, caller, command="view", path="/memories").text.startswith("Here're the files")
    _execute(service, caller, command="create", path="/memories/a.md", file_text="- likes boats\n")
    committed = store.get_record(Partition(INSTANCE, caller.upn), INDEX_KIND, INDEX_ID)
    assert committed is not None and "fences" not in committed.data


def test_a_fence_a_crashed_deletion_left_holds_edits_back_until_its_lease_ends(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The edit waits (a pretend sleep moves the service's clock), then goes on once the lease is over.

    The wait's real-time bound is lifted: reaching the lease takes about 300 reads of the index, which on the
    Cosmos test server under a loaded machine took longer than ``FENCE_WAIT`` (the next test covers that bound)."""
    monkeypatch.setattr(memory_file_service, "FENCE_WAIT", 600.0)
    now = [datetime(2026, 12, 6, 12, 0, tzinfo=UTC)]

    def clock() -> datetime:
        now[0] += timedelta(microseconds=1)
        return now[0]

    def sleep(seconds: float) -> None:
        now[0] += timedelta(seconds=seconds)

    service, caller = MemoryService(store, clock=clock), _caller()
    _execute(service, caller, command="create", path="/memories/a.md", file_text="- likes trains\n")
    crashed = fence(store, INSTANCE, caller.upn, clock=clock)
    crashed.__enter__()  # never left while the edit runs: the deletion crashed inside it (kept, or it is closed)
    stood = now[0]
    answer = _execute(service, caller, MemoryFiles(service, sleep=sleep), command="insert", path="/memories/a.md",
                      insert_line=1, insert_text="- likes boats")
    assert "has been edited" in answer.text
    assert now[0] - stood >= LEASE
    del crashed


def test_an_edit_answers_unavailable_while_a_fence_stands_past_its_wait(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_file_service, "FENCE_WAIT", 0.2)
    service, caller = MemoryService(store), _caller()
    _execute(service, caller, command="create", path="/memories/a.md", file_text="- likes trains\n")
    with fence(store, INSTANCE, caller.upn, clock=service.now), pytest.raises(Unavailable):
        _execute(service, caller, command="insert", path="/memories/a.md", insert_line=1, insert_text="- boats")
    assert _execute(service, caller, command="view", path="/memories/a.md").text.count("likes") == 1


def test_an_edit_waits_while_a_clear_is_being_recorded_and_then_finds_the_file_gone(store: MemoryStore) -> None:
    """The clear has chosen its watermark and not written it yet: an edit that read now would store its version
    after the watermark, and commit before the fence is lifted."""
    service, caller = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE), _caller()
    _execute(service, caller, command="create", path="/memories/diary.md", file_text=SECRET + "\n")
    choosing, go = threading.Event(), threading.Event()
    clears = service._scope_clears
    advance = clears._advance_watermark

    def advance_later(*args: Any, **kwargs: Any) -> None:
        choosing.set()
        go.wait(WAIT)
        advance(*args, **kwargs)

    clears._advance_watermark = advance_later  # type: ignore[method-assign]
    clearing, _ = _in_a_thread(lambda: service.clear(caller, INSTANCE, Scope.USER, None, confirm=True))
    assert choosing.wait(WAIT)
    editing, out = _in_a_thread(lambda: _execute(service, caller, command="insert", path="/memories/diary.md",
                                                 insert_line=1, insert_text="a line added meanwhile"))
    editing.join(0.3)
    assert editing.is_alive() and not out  # held back by the fence
    go.set()
    clearing.join(WAIT)
    editing.join(WAIT)
    assert isinstance(out["answer"], NotFound), out
    assert SECRET not in service.get(caller, INSTANCE, Scope.USER, None).content_markdown
    assert SECRET not in _stored_text(store, caller)


def test_a_view_reads_while_a_fence_stands_and_an_unknown_forget_stands_none(store: MemoryStore) -> None:
    service, caller = MemoryService(store), _caller()
    _execute(service, caller, command="create", path="/memories/a.md", file_text="- likes trains\n")
    with fence(store, INSTANCE, caller.upn, clock=service.now):
        assert "likes trains" in _execute(service, caller, command="view", path="/memories/a.md").text
    before = store.get_record(Partition(INSTANCE, caller.upn), INDEX_KIND, INDEX_ID)
    with pytest.raises(NotFound):
        service.forget(caller, INSTANCE, "no-such-entry")
    after = store.get_record(Partition(INSTANCE, caller.upn), INDEX_KIND, INDEX_ID)
    assert before is not None and after is not None and after.etag == before.etag


def test_a_directorys_delete_stands_a_fence_per_batch_of_forgets(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other commands wait while a fence stands: a directory of 45 files is forgotten under three fences, each
    lifted after its batch, not under one for the whole delete nor one per file. Each claims its files' forget
    fences (``forget_fence``), so a forget of one of them elsewhere waits its turn."""
    service, caller = MemoryService(store), _caller()
    files = MemoryFiles(service)
    for n in range(45):
        files.execute(caller, INSTANCE, None, {"command": "create", "path": f"/memories/d/{n}.md", "file_text": f"{n}\n"})
    entry_ids = {entry.id for entry in service.entries(caller, INSTANCE, Scope.USER, None)}
    stood: list[set[str]] = []
    real = service.custody.fence

    def counted(instance_id: str, upn: str, **kwargs: Any) -> Any:
        stood.append(set(kwargs.get("claims", ())))
        return real(instance_id, upn, **kwargs)

    monkeypatch.setattr(service.custody, "fence", counted)
    answer = files.execute(caller, INSTANCE, None, {"command": "delete", "path": "/memories/d"})
    assert len(answer.pending_request_ids) == 45
    assert len(stood) == -(-45 // memory_file_service.FORGETS_PER_FENCE) == 3
    assert [len(claims) for claims in stood] == [20, 20, 5]
    assert set().union(*stood) == {forget_fence(entry_id) for entry_id in entry_ids}
    record = store.get_record(Partition(INSTANCE, caller.upn), INDEX_KIND, INDEX_ID)
    assert record is not None and fenced_until(record.data, service.now()) is None
