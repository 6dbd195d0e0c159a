"""A memory-tool delete and a REST forget of one entry exclude each other (``forget_fence``), on every store.

The memory tool's delete of a file (``/memories/appended/<id>.md``, or a file it made) commits the file index without
the file, then forgets the entry the file named; a forget (``DELETE .../memory/entries/{id}``) forgets it directly.
Both stand the entry's exclusive fence and read the entry again inside it, so of the two one is taken (one deletion
request, or one erasure and one ``forget`` event) and the other is answered as its protocol answers a missing entry:
the forget with ``NotFound`` (404), the memory tool with its own text for a missing path. The memory tool's forgets
once stood a fence no forget excluded: both were taken, two requests of which either kept the entry hidden after the
other was rejected, or two ``forget`` events for one erasure.

Each race is set up deterministically: the second call runs inside the first at a chosen moment (``MOMENTS``).

A forget that stands the entry's fence and never finishes (its process crashed, its store call failed) leaves the
entry to the sweep: the memory tool's delete, answered as one after it, keeps its journal of retirements, and the
sweep forgets the entry once that fence's lease is over.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain.audit import AuditAction
from memory_core.domain.custody_fence import LEASE, FenceTaken, fence, fenced_until, forget_fence
from memory_core.domain.errors import NotFound
from memory_core.domain.file_index import INDEX_ID, INDEX_KIND
from memory_core.domain.identity import Caller
from memory_core.domain.journals import SETTLE
from memory_core.domain.memory_file_service import FileAnswer, MemoryFiles
from memory_core.domain.models import Scope
from memory_core.domain.records import Partition
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import Forgotten, PendingDeletion
from tests.support.clock import TickingClock

INSTANCE = "tool-forget-races"

# Which call runs inside which, and when:
# - rest-before-the-commit: the forget, just before the delete writes the file index (the delete's commit then fails
#   on the index the forget's fence moved, and it reads again: the file is gone);
# - rest-after-the-commit: the forget, just after the delete's index write, before the delete's forget;
# - rest-inside-the-tools-fence: the forget, once the delete's forget has read the entry inside its fence;
# - tool-before-the-forgets-fence: the delete, once the forget found the entry visible, before it stands its fence.
MOMENTS = ["rest-before-the-commit", "rest-after-the-commit", "rest-inside-the-tools-fence",
           "tool-before-the-forgets-fence"]
# The moments at which the memory tool's delete is the one taken.
TOOL_TAKES = {"rest-inside-the-tools-fence", "tool-before-the-forgets-fence"}


def _is_index(*args: Any, **_: Any) -> bool:
    return INDEX_KIND in (getattr(args[0], "kind", None), *args[:2])  # get_record(partition, kind, id) or a record


def _answer(call: Callable[[], object]) -> object:
    try:
        return call()
    except NotFound as error:  # what it raised is what the test checks
        return error


def _inside(monkeypatch: pytest.MonkeyPatch, store: MemoryStore, method: str, when: Callable[..., bool],
            interloper: Callable[[], object], *, after: bool) -> list[object]:
    """Run ``interloper`` once, just before (``after``: just after) the first call of ``store.method`` whose
    arguments ``when`` accepts; answers what it answered or raised (one item, once it ran)."""
    real = getattr(store, method)
    ran: list[object] = []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if ran or not when(*args, **kwargs):
            return real(*args, **kwargs)
        ran.append(None)
        if not after:
            ran[0] = _answer(interloper)
            return real(*args, **kwargs)
        answer = real(*args, **kwargs)
        ran[0] = _answer(interloper)
        return answer

    monkeypatch.setattr(store, method, wrapped)
    return ran


def _setup(store: MemoryStore, mode: DeletionMode, committed: list[object], made_by: str,
           clock: TickingClock | None = None) -> tuple[MemoryService, MemoryFiles, Caller, str, str]:
    """A service (on ``clock``), its memory tool (``committed`` gets an item as a command is about to write the
    index), a caller, and the entry to race over with the path the memory tool shows it at."""
    clock = clock or TickingClock(datetime(2026, 12, 7, 12, 0, tzinfo=UTC), timedelta(microseconds=1))
    service = MemoryService(store, deletion_mode=mode, clock=clock)
    caller = Caller(upn=f"tf-{uuid.uuid4().hex[:10]}@contoso.com")
    files = MemoryFiles(service, on_commit=lambda: committed.append(None) if not committed else None)
    if made_by == "append":
        entry_id = str(service.append(caller, INSTANCE, Scope.USER, None, "- forget me").entry_id)
        return service, files, caller, entry_id, f"/memories/appended/{entry_id}.md"
    files.execute(caller, INSTANCE, None, {"command": "create", "path": "/memories/notes.md", "file_text": "- forget me\n"})
    (entry,) = service.entries(caller, INSTANCE, Scope.USER, None)
    committed.clear()
    return service, files, caller, entry.id, "/memories/notes.md"


@pytest.mark.parametrize("made_by", ["append", "memory-tool"])
@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
def test_a_memory_tool_delete_and_a_forget_of_one_entry_take_one(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, mode: DeletionMode, moment: str, made_by: str,
) -> None:
    committed: list[object] = []
    service, files, caller, entry_id, path = _setup(store, mode, committed, made_by)

    def rest() -> object:
        return service.forget(caller, INSTANCE, entry_id)

    def tool() -> object:
        return files.execute(caller, INSTANCE, None, {"command": "delete", "path": path})

    if moment == "rest-before-the-commit":  # the delete's first attempt; it reads again and has nothing to commit
        inner = []
        committed.append(None)
        monkeypatch.setattr(files._commits, "_on_commit", lambda: inner or inner.append(_answer(rest)))
        outer = _answer(tool)
    elif moment == "rest-after-the-commit":
        put = "create_record" if made_by == "append" else "put_record"  # appended files only: the first index write
        inner = _inside(monkeypatch, store, put, lambda *a, **k: bool(committed) and _is_index(*a), rest, after=True)
        outer = _answer(tool)
    elif moment == "rest-inside-the-tools-fence":
        inner = _inside(monkeypatch, store, "get_entry", lambda *a, **k: bool(committed) and entry_id in a, rest,
                        after=True)
        outer = _answer(tool)
    else:
        inner = _inside(monkeypatch, store, "get_record", _is_index, tool, after=False)
        outer = _answer(rest)
    assert inner, "the second call ran"
    monkeypatch.undo()
    tool_answer, rest_answer = (inner[0], outer) if moment == "tool-before-the-forgets-fence" else (outer, inner[0])

    if moment in TOOL_TAKES:
        assert isinstance(tool_answer, FileAnswer), tool_answer
        assert isinstance(rest_answer, NotFound), rest_answer  # 404, as for any entry no longer shown
    else:
        assert isinstance(rest_answer, Forgotten | PendingDeletion), rest_answer
        # The memory tool's own text for a path that is not there: the forget came first.
        assert isinstance(tool_answer, NotFound) and tool_answer.code == "path_not_found", tool_answer
        assert str(tool_answer) == f"The path {path} does not exist"

    events = [e for e in service.audit_trail(INSTANCE, caller.upn) if e.entry_id == entry_id]
    if mode is DeletionMode.IMMEDIATE:
        assert [e.action for e in events if e.action is not AuditAction.MEMORY_FILE].count(AuditAction.FORGET) == 1
        assert service.entries(caller, INSTANCE, Scope.USER, None) == []
        service.custody.sweep(instance_id=INSTANCE)  # finishes nothing more: one erasure, one event
        again = [e for e in service.audit_trail(INSTANCE, caller.upn) if e.entry_id == entry_id]
        assert [e.action for e in again].count(AuditAction.FORGET) == 1
        return
    assert [e.action for e in events].count(AuditAction.FORGET_REQUESTED) == 1
    requests = service.custody.page(INSTANCE, None, limit=100, upn=caller.upn).items
    assert [r.entry_id for r in requests] == [entry_id]  # the operator's listing: one request
    assert isinstance(tool_answer, NotFound) or tool_answer.pending_request_ids == (requests[0].id,)
    service.custody.reject("op", INSTANCE, requests[0].id, "keep it")
    # No other request keeps it hidden once the one taken is rejected, and the sweep has nothing to execute.
    assert [e.id for e in service.entries(caller, INSTANCE, Scope.USER, None)] == [entry_id]
    swept = service.custody.sweep(instance_id=INSTANCE)
    assert swept.executed == [] and swept.left == []
    assert [e.id for e in service.entries(caller, INSTANCE, Scope.USER, None)] == [entry_id]


@pytest.mark.parametrize("made_by", ["append", "memory-tool"])
@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
def test_an_entry_whose_other_forget_never_finishes_is_forgotten_by_the_sweep(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, mode: DeletionMode, made_by: str,
) -> None:
    """A forget stands the entry's fence just after the delete's commit and never lifts it (nor holds or erases
    the entry): the delete leaves the entry to it and is answered as one after it, and once the fence's lease is
    over the sweep forgets the entry as the delete would have (once: one event)."""
    committed: list[object] = []
    clock = TickingClock(datetime(2026, 12, 7, 12, 0, tzinfo=UTC), timedelta(microseconds=1))
    service, files, caller, entry_id, path = _setup(store, mode, committed, made_by, clock)
    crashed = fence(store, INSTANCE, caller.upn, clock=clock, exclusive=forget_fence(entry_id))
    put = "create_record" if made_by == "append" else "put_record"
    ran = _inside(monkeypatch, store, put, lambda *a, **k: bool(committed) and _is_index(*a),
                  crashed.__enter__, after=True)  # never left: the forget's process died inside it
    answer = _answer(lambda: files.execute(caller, INSTANCE, None, {"command": "delete", "path": path}))
    assert ran, "the forget stood its fence"
    monkeypatch.undo()
    assert isinstance(answer, NotFound) and answer.code == "path_not_found", answer

    clock.now += max(LEASE, SETTLE) + timedelta(seconds=1)  # the fence's lease over, the journal settled
    service.custody.sweep(instance_id=INSTANCE)
    shown = [e.id for e in service.entries(caller, INSTANCE, Scope.USER, None)]
    assert entry_id not in shown
    events = [e.action for e in service.audit_trail(INSTANCE, caller.upn) if e.entry_id == entry_id]
    if mode is DeletionMode.IMMEDIATE:
        assert events.count(AuditAction.FORGET) == 1
        assert store.get_entry(INSTANCE, caller.upn, entry_id) is None
    else:
        assert events.count(AuditAction.FORGET_REQUESTED) == 1
        requests = service.custody.page(INSTANCE, None, limit=100, upn=caller.upn).items
        assert [r.entry_id for r in requests] == [entry_id]  # hidden under one pending request
    service.custody.sweep(instance_id=INSTANCE)  # nothing more to finish
    again = [e.action for e in service.audit_trail(INSTANCE, caller.upn) if e.entry_id == entry_id]
    assert again == events
    del crashed


def test_a_batchs_fence_claims_the_free_names_and_hands_back_the_taken(store: MemoryStore) -> None:
    """``claims``: each name is stood as an exclusive fence where none so named stands; the block gets the others,
    and lifting the batch's fence leaves the other deletion's standing."""
    clock = TickingClock(datetime(2026, 12, 7, 12, 0, tzinfo=UTC), timedelta(microseconds=1))
    upn = f"tf-{uuid.uuid4().hex[:10]}@contoso.com"
    with fence(store, INSTANCE, upn, clock=clock, exclusive="forget b"):
        with fence(store, INSTANCE, upn, clock=clock, claims=["forget a", "forget b"]) as taken:
            assert taken == {"forget b"}
            with pytest.raises(FenceTaken):  # "forget a" is the batch's now
                with fence(store, INSTANCE, upn, clock=clock, exclusive="forget a"):
                    pass
        with pytest.raises(FenceTaken):  # still the first deletion's
            with fence(store, INSTANCE, upn, clock=clock, exclusive="forget b"):
                pass
        with fence(store, INSTANCE, upn, clock=clock, exclusive="forget a") as none_taken:  # lifted with the batch
            assert none_taken == frozenset()
    record = store.get_record(Partition(INSTANCE, upn), INDEX_KIND, INDEX_ID)
    assert record is not None and fenced_until(record.data, clock()) is None
