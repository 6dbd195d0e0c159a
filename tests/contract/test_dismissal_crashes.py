"""An operator's dismissal of a request this release cannot read, across a crash between its writes, on every store:
the next sweep finishes it.

Each test stops a dismissal between two of its writes (a ``Crash`` raised from a wrapped store call), sometimes
with the request stored again, rewritten or erased by another hand meanwhile, then runs a sweep as a restarted
process would, and checks that every dismissed request has its ``deletion_dismissed`` event once, in doubt
(``SWEPT``) when the sweep cannot tell the dismissal erased it, and that the journal is closed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from memory_core.domain.audit import AuditAction
from memory_core.domain.dismissals import KIND as DISMISSAL_KIND
from memory_core.domain.dismissals import SWEPT, record_sha256
from memory_core.domain.journals import SETTLE
from memory_core.domain.records import Record, RecordKind, deletions_partition
from memory_core.domain.service import MemoryService
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock
from tests.support.custody_crashes import (
    INSTANCE,
    LATER_ID,
    Crash,
    crash_once,
    custody_service,
    later_request,
)
from tests.support.later_release import LATER, put_unreadable_request


def _dismissed_events(service: MemoryService) -> list[Any]:
    return [e for e in service.audit.read(INSTANCE, LATER) if e.action is AuditAction.DELETION_DISMISSED]


def _dismissal_journals(store: MemoryStore) -> list[Record]:
    return store.query_records(deletions_partition(INSTANCE), DISMISSAL_KIND)


def test_a_dismissal_stopped_after_its_erasure_is_audited_once_by_the_sweep(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process stops after the record is erased, as it writes the ``deletion_dismissed`` event: a retried
    dismissal hears 404, so the erasure had no event (before, only a log line). The sweep after the journal settled
    writes it, naming the record, its digest and the operator, once however often it runs; the journal was marked
    ``erased`` right after the erasure, so the event claims the dismissal, with no doubt (``SWEPT``)."""
    clock = TickingClock()
    service = custody_service(store, clock)
    record = later_request(store)
    crash_once(monkeypatch, store, "create_record", lambda record, *a, **k: record.kind == RecordKind.AUDIT
                and record.data.get("action") == AuditAction.DELETION_DISMISSED.value)
    with pytest.raises(Crash):
        service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    monkeypatch.undo()
    assert service.custody.page(INSTANCE, None, limit=10).unreadable == []  # erased
    service.custody.sweep(instance_id=INSTANCE)
    assert _dismissed_events(service) == []  # under way: left to finish itself
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    service.custody.sweep(instance_id=INSTANCE)
    (event,) = _dismissed_events(service)
    assert (event.actor, event.request_id, event.content_sha256) == ("op", LATER_ID, record_sha256(record))
    assert event.detail is not None and record.id in event.detail and SWEPT not in event.detail
    assert _dismissal_journals(store) == []


def test_a_journal_an_earlier_build_left_between_its_erasure_and_its_mark_is_audited_as_not_known_to_be_its(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dismissal of an earlier build erased the record, then stopped as it marked the journal ``erased`` (its
    erasure and its mark were two writes; now they are one unit, ``MemoryStore.delete_record_and_put``): the sweep
    finds the record gone and an unmarked journal, which it cannot tell from an erasure by another hand; it writes
    the event once, saying so (``SWEPT``)."""
    clock = TickingClock()
    service = custody_service(store, clock)
    record = later_request(store)
    _crash_before_the_erasure(service, store, monkeypatch)
    assert store.delete_record(record.partition, RecordKind.DELETION_REQUEST, record.id, etag=record.etag)
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    service.custody.sweep(instance_id=INSTANCE)
    (event,) = _dismissed_events(service)
    assert event.content_sha256 == record_sha256(record)
    assert event.detail is not None and SWEPT in event.detail
    assert _dismissal_journals(store) == []


def _crash_after_the_erasure(service: MemoryService, store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dismissal that erases the request record and stops as it writes its event."""
    crash_once(monkeypatch, store, "create_record", lambda record, *a, **k: record.kind == RecordKind.AUDIT
                and record.data.get("action") == AuditAction.DELETION_DISMISSED.value)
    with pytest.raises(Crash):
        service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    monkeypatch.undo()


def _stored_again(store: MemoryStore) -> Record:
    """The request stored again by a later release, under the same key, as it now stands (another status)."""
    put_unreadable_request(store, INSTANCE, status="done", request_id=LATER_ID)
    (record,) = store.query_records(deletions_partition(INSTANCE), RecordKind.DELETION_REQUEST, {"id": LATER_ID})
    return record


def test_a_dismissal_of_a_request_stored_again_finishes_the_journal_of_the_version_a_crash_erased(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dismissal erases the request and stops before its event; a later release stores the request again (under the
    same key, a new etag) and the operator dismisses that version. The first dismissal did erase its version (its
    journal is marked so): the second finishes that journal, and the trail holds both events, each with its
    version's digest and neither in doubt (before, the second dismissal erased the first's journal as one of a
    version no one erased, and the first erasure was never audited)."""
    clock = TickingClock()
    service = custody_service(store, clock)
    first = later_request(store)
    _crash_after_the_erasure(service, store, monkeypatch)
    second = _stored_again(store)
    assert second.id == first.id and record_sha256(second) != record_sha256(first)
    service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    assert _dismissal_journals(store) == []
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    events = _dismissed_events(service)
    assert len(events) == 2
    assert {e.content_sha256 for e in events} == {record_sha256(first), record_sha256(second)}
    assert all(e.detail is not None and SWEPT not in e.detail for e in events)


def test_a_journal_of_an_erasure_whose_request_was_stored_again_is_audited_by_the_sweep(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dismissal erases the request and stops before its event; a later release stores the request again, and no
    one dismisses it. The record is stored under the journal's key, but the journal is marked ``erased``: the sweep
    writes the first dismissal's event once (before, it dropped the journal as one a rewrite won), and the request
    stored again stays listed."""
    clock = TickingClock()
    service = custody_service(store, clock)
    first = later_request(store)
    _crash_after_the_erasure(service, store, monkeypatch)
    _stored_again(store)
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    service.custody.sweep(instance_id=INSTANCE)
    (event,) = _dismissed_events(service)
    assert event.content_sha256 == record_sha256(first) and event.detail is not None and SWEPT not in event.detail
    assert _dismissal_journals(store) == []
    assert [(u.id, u.status) for u in service.custody.page(INSTANCE, None, limit=10).unreadable] == [(LATER_ID, "done")]


def test_a_dismissal_stopped_before_its_erasure_leaves_the_request_and_writes_no_event(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process stops after the journal is written, as it erases the record: the request stays stored as it was
    (listed, dismissible), and the sweep drops the journal with no event. A dismissal after it is audited once."""
    clock = TickingClock()
    service = custody_service(store, clock)
    record = later_request(store)
    crash_once(monkeypatch, store, "delete_record_and_put", lambda *a, **k: True)
    with pytest.raises(Crash):
        service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    monkeypatch.undo()
    assert _dismissal_journals(store) != []
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    service.custody.sweep(instance_id=INSTANCE)
    assert _dismissal_journals(store) == []
    stored = store.get_record(deletions_partition(INSTANCE), RecordKind.DELETION_REQUEST, record.id)
    assert stored is not None and (stored.data, stored.etag) == (record.data, record.etag)
    assert [u.id for u in service.custody.page(INSTANCE, None, limit=10).unreadable] == [LATER_ID]
    assert _dismissed_events(service) == []

    service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    assert len(_dismissed_events(service)) == 1


def test_a_dismissal_retried_at_once_after_a_crash_before_its_erasure_is_audited_once(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retry, before the sweep dropped the first attempt's journal, takes that journal over (one per version of
    the record): the record is erased and audited once, and the sweep afterwards writes no second event."""
    clock = TickingClock()
    service = custody_service(store, clock)
    later_request(store)
    crash_once(monkeypatch, store, "delete_record_and_put", lambda *a, **k: True)
    with pytest.raises(Crash):
        service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    monkeypatch.undo()
    service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    assert len(_dismissed_events(service)) == 1
    assert _dismissal_journals(store) == []


def test_a_dismissal_replayed_after_its_event_was_written_writes_none_again(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process stops after the event, as it erases its journal: the sweep finishes the journal (the record is
    gone) and finds the event written: it erases the journal and leaves the event as the dismissal wrote it."""
    clock = TickingClock()
    service = custody_service(store, clock)
    later_request(store)
    crash_once(monkeypatch, store, "delete_record", lambda partition, kind, *a, **k: kind == DISMISSAL_KIND)
    with pytest.raises(Crash):
        service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    monkeypatch.undo()
    (written,) = _dismissed_events(service)
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    service.custody.sweep(instance_id=INSTANCE)
    assert _dismissed_events(service) == [written]
    assert _dismissal_journals(store) == []


def _crash_before_the_erasure(service: MemoryService, store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dismissal that stops after its journal, as it erases the request record: the record stays as stored."""
    crash_once(monkeypatch, store, "delete_record_and_put", lambda *a, **k: True)
    with pytest.raises(Crash):
        service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    monkeypatch.undo()


def test_a_dismissal_of_a_rewritten_request_closes_the_journal_of_the_version_a_crash_left_and_is_audited_once(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dismissal stops before its erasure; a later release rewrites the request (still unreadable here) and the
    operator dismisses that version. The first journal named a version no one erased: the second dismissal closes it
    before it begins its own, so the trail holds one event, with the rewritten version's digest (before, the sweep
    finished the old journal too, as the record was gone, and the trail told of two dismissals)."""
    clock = TickingClock()
    service = custody_service(store, clock)
    record = later_request(store)
    _crash_before_the_erasure(service, store, monkeypatch)
    rewritten = store.put_record(replace(record, data={**record.data, "status": "done"}))
    assert rewritten.etag != record.etag
    service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID)
    assert _dismissal_journals(store) == []  # the old version's closed by the dismissal itself
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    (event,) = _dismissed_events(service)
    assert event.content_sha256 == record_sha256(rewritten) != record_sha256(record)
    assert event.detail is not None and SWEPT not in event.detail


def test_a_journal_whose_request_was_rewritten_is_dropped_by_the_sweep_with_no_event(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dismissal stops before its erasure and the request is rewritten (stored under another etag): the rewrite
    won; the sweep drops the journal, writes nothing, and the request stays listed as rewritten."""
    clock = TickingClock()
    service = custody_service(store, clock)
    record = later_request(store)
    _crash_before_the_erasure(service, store, monkeypatch)
    store.put_record(replace(record, data={**record.data, "status": "done"}))
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    assert _dismissal_journals(store) == []
    assert _dismissed_events(service) == []
    assert [u.status for u in service.custody.page(INSTANCE, None, limit=10).unreadable] == ["done"]


def test_a_journal_whose_request_another_hand_erased_is_audited_as_not_known_to_be_this_dismissals(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dismissal stops before its erasure; the record is then erased by another hand (a later release deciding it,
    an expiry), which wrote no event here. The sweep cannot tell who erased it: it writes the event once, saying so
    (``SWEPT``), rather than claiming a dismissal (before, it did)."""
    clock = TickingClock()
    service = custody_service(store, clock)
    record = later_request(store)
    _crash_before_the_erasure(service, store, monkeypatch)
    assert store.delete_record(record.partition, RecordKind.DELETION_REQUEST, record.id)
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    service.custody.sweep(instance_id=INSTANCE)
    (event,) = _dismissed_events(service)
    assert event.detail is not None and SWEPT in event.detail
    assert _dismissal_journals(store) == []


def test_a_journal_whose_request_was_erased_and_told_by_another_hand_is_dropped_with_no_event(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above, but the hand that erased the request told it in the trail (a later event naming the request, as a
    later release executing it writes): the sweep drops the journal and writes no dismissal."""
    clock = TickingClock()
    service = custody_service(store, clock)
    record = later_request(store)
    _crash_before_the_erasure(service, store, monkeypatch)
    assert store.delete_record(record.partition, RecordKind.DELETION_REQUEST, record.id)
    service.audit.record(AuditAction.DELETION_EXECUTED, actor="sweep", instance_id=INSTANCE, upn=LATER,
                         request_id=LATER_ID)
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)
    assert _dismissed_events(service) == []
    assert _dismissal_journals(store) == []
