"""Immediate erasures stopped half way are finished by the next sweep, on every store (``domain.erasures``).

Under ``MEMORY_DELETION_MODE=immediate`` a clear, an import-replace or a forget erases in several writes. An outage
(the store answering 503) is injected after the first of them; the call fails, and what it covered must neither show
nor stay stored once the sweep has run: no entry under the watermark, no file name, and the event in the trail.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain.audit import AuditAction
from memory_core.domain.erasures import KIND
from memory_core.domain.errors import Unavailable
from memory_core.domain.file_index import INDEX_ID, INDEX_KIND
from memory_core.domain.identity import Caller
from memory_core.domain.journals import SETTLE
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import Scope
from memory_core.domain.records import Partition, Record, deletions_partition
from memory_core.domain.service import DeletionMode, ImportMode, MemoryService
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock

INSTANCE = "erasures"
SECRET = "diagnosis: ORIGINAL-PRIVATE-TEXT"


def _setup(store: MemoryStore) -> tuple[MemoryService, Caller, TickingClock]:
    clock = TickingClock(datetime(2026, 12, 6, 12, 0, tzinfo=UTC), timedelta(microseconds=1))
    service = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE, clock=clock)
    caller = Caller(upn=f"erasures-{uuid.uuid4().hex[:10]}@contoso.com")
    MemoryFiles(service).execute(caller, INSTANCE, None, {"command": "create", "path": "/memories/medical/notes.md",
                                                          "file_text": SECRET + "\n"})
    for n in range(3):
        service.append(caller, INSTANCE, Scope.USER, None, f"- fact {n}")
    return service, caller, clock


def _outage_at(monkeypatch: pytest.MonkeyPatch, store: MemoryStore, method: str, call: int = 1) -> None:
    """The store answers 503 to the ``call``-th call of ``method`` (then serves again)."""
    real = getattr(store, method)
    calls = [0]

    def failing(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == call:
            raise Unavailable("the store is down")
        return real(*args, **kwargs)

    monkeypatch.setattr(store, method, failing)


def _stored(store: MemoryStore, caller: Caller) -> str:
    entries = "\n".join(e.content_markdown for s in store.load_partition(INSTANCE, caller.upn) for e in s.entries)
    index = store.get_record(Partition(INSTANCE, caller.upn), INDEX_KIND, INDEX_ID)
    return entries + (json.dumps(index.data) if index else "")


def _journal(store: MemoryStore, caller: Caller) -> list[Any]:
    return [r for r in store.query_records(deletions_partition(INSTANCE), KIND) if r.data["upn"] == caller.upn]


def _sweep_later(service: MemoryService, clock: TickingClock) -> None:
    clock.now += SETTLE + timedelta(seconds=1)
    service.custody.sweep(instance_id=INSTANCE)


def test_a_clear_stopped_after_its_watermark_is_finished_by_the_sweep(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, caller, clock = _setup(store)
    _outage_at(monkeypatch, store, "delete_entries")
    with pytest.raises(Unavailable):
        service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert service.get(caller, INSTANCE, Scope.USER, None).content_markdown == ""  # hidden at once
    assert SECRET in _stored(store, caller) and len(_journal(store, caller)) == 1
    _sweep_later(service, clock)
    assert "ORIGINAL-PRIVATE-TEXT" not in _stored(store, caller) and "medical" not in _stored(store, caller)
    assert "fact" not in _stored(store, caller) and _journal(store, caller) == []
    (event,) = [e for e in service.audit_trail(INSTANCE, caller.upn) if e.action is AuditAction.CLEAR]
    assert event.detail == "erased 4 entries (finished by the sweep after an interruption)"


def test_a_clear_stopped_after_erasing_its_entries_leaves_no_file_name(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outage comes after the entries are erased (at the team copies): the sweep finds nothing under the
    watermark still stored, and the file's path, the user's words, must not outlive its text."""
    service, caller, clock = _setup(store)
    _outage_at(monkeypatch, store, "delete_entries", call=2)
    with pytest.raises(Unavailable):
        service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    _sweep_later(service, clock)
    assert "ORIGINAL-PRIVATE-TEXT" not in _stored(store, caller) and "medical" not in _stored(store, caller)
    assert _journal(store, caller) == []


def test_an_import_replace_stopped_after_its_entry_is_finished_by_the_sweep(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, caller, clock = _setup(store)
    _outage_at(monkeypatch, store, "delete_entries")
    with pytest.raises(Unavailable):
        service.import_markdown(caller, INSTANCE, Scope.USER, None, "- the new memory", ImportMode.REPLACE)
    assert service.get(caller, INSTANCE, Scope.USER, None).content_markdown.endswith("- the new memory\n")
    _sweep_later(service, clock)
    assert "ORIGINAL-PRIVATE-TEXT" not in _stored(store, caller) and "fact" not in _stored(store, caller)
    assert "- the new memory" in _stored(store, caller) and _journal(store, caller) == []


def test_a_forget_stopped_after_the_entry_is_erased_loses_neither_its_path_nor_its_event(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    service, caller, clock = _setup(store)
    (entry,) = [e for e in service.entries(caller, INSTANCE, Scope.USER, None) if "ORIGINAL" in e.content_markdown]
    # The file index is read to stand the fence, to lift it, then to take the path out: the third read fails.
    _outage_at(monkeypatch, store, "get_record", call=3)
    with pytest.raises(Unavailable):
        service.forget(caller, INSTANCE, entry.id)
    assert "ORIGINAL-PRIVATE-TEXT" not in _stored(store, caller)  # the entry is erased first
    assert "medical/notes.md" in _stored(store, caller)  # the path outlives the text until the sweep
    _sweep_later(service, clock)
    assert "medical" not in _stored(store, caller) and _journal(store, caller) == []
    (event,) = [e for e in service.audit_trail(INSTANCE, caller.upn) if e.action is AuditAction.FORGET]
    assert event.entry_id == entry.id and event.content_sha256 == entry.content_sha256


def test_an_erasure_under_way_is_left_to_finish_itself(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    service, caller, clock = _setup(store)
    _outage_at(monkeypatch, store, "delete_entries")
    with pytest.raises(Unavailable):
        service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    service.custody.sweep(instance_id=INSTANCE)  # within SETTLE of its start
    assert len(_journal(store, caller)) == 1 and SECRET in _stored(store, caller)
    _sweep_later(service, clock)
    assert _journal(store, caller) == []


def test_a_finished_erasure_leaves_no_journal(store: MemoryStore) -> None:
    service, caller, _ = _setup(store)
    service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert _journal(store, caller) == [] and "ORIGINAL-PRIVATE-TEXT" not in _stored(store, caller)
    (event,) = [e for e in service.audit_trail(INSTANCE, caller.upn) if e.action is AuditAction.CLEAR]
    assert event.detail == "erased 4 entries"


def test_a_replace_stopped_before_its_new_content_was_stored_erases_nothing(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal is written before the replacing entry: an outage between them leaves the old memory as it was,
    and the sweep must not erase it (the replacement was never stored)."""
    service, caller, clock = _setup(store)
    _outage_at(monkeypatch, store, "append_with_records")
    with pytest.raises(Unavailable):
        service.import_markdown(caller, INSTANCE, Scope.USER, None, "- the new memory", ImportMode.REPLACE)
    _sweep_later(service, clock)
    assert SECRET in service.get(caller, INSTANCE, Scope.USER, None).content_markdown
    assert "- fact 2" in _stored(store, caller) and _journal(store, caller) == []


def test_a_journal_that_cannot_be_read_holds_up_no_other(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A record of another layout (a field missing) is logged and left; the interrupted clear beside it is finished,
    and so are the approved requests (a KeyError stopped the whole sweep)."""
    service, caller, clock = _setup(store)
    store.put_record(Record(deletions_partition(INSTANCE), KIND, "unreadable", {"upn": caller.upn}))
    _outage_at(monkeypatch, store, "delete_entries")
    with pytest.raises(Unavailable):
        service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    with caplog.at_level(logging.WARNING, logger="memory_core.journals"):
        _sweep_later(service, clock)
    assert "ORIGINAL-PRIVATE-TEXT" not in _stored(store, caller)
    assert [r.id for r in _journal(store, caller)] == ["unreadable"] and "unreadable" in caplog.text


def test_two_sweeps_at_once_finish_an_erasure_once(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second sweep that read the journal before the first claimed it finds it claimed: one clear event (two
    sweeps at once audited the erasure twice)."""
    service, caller, clock = _setup(store)
    _outage_at(monkeypatch, store, "delete_entries")
    with pytest.raises(Unavailable):
        service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    clock.now += SETTLE + timedelta(seconds=1)
    stale = store.query_records(deletions_partition(INSTANCE), KIND)
    erasures = service.custody.erasures
    real_finish = erasures.finish

    def finish_while_another_sweep_runs(erasure: Any, *, replayed: bool = False) -> int:
        with monkeypatch.context() as patch:
            patch.setattr(store, "query_records", lambda *a, **k: stale)
            assert erasures.replay(INSTANCE) == 0
        return real_finish(erasure, replayed=replayed)

    monkeypatch.setattr(erasures, "finish", finish_while_another_sweep_runs)
    assert erasures.replay(INSTANCE) == 1
    assert [e.action for e in service.audit_trail(INSTANCE, caller.upn)].count(AuditAction.CLEAR) == 1
