"""An operator's dismissal slower than the sweep's settle time, and the sweep finishing its journal meanwhile, on
every store: in every interleaving the trail holds one ``deletion_dismissed`` event, written once and never
rewritten, and no journal is left (``domain.dismissals``).

Each test stops the dismissal, or the sweep, on its own thread just before a named store call (``Stop``) and runs the
other through, or to a stop of its own, then lets the first go on: the interleaving is the same every run, and no
sleep decides it. Before 2026-12-07 the sweep could write its ``SWEPT`` event for a journal whose dismissal was
still running, and the dismissal then wrote its own over it (or the other way round): one record id, two writes
in two wordings.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from memory_core.domain.audit import AuditAction
from memory_core.domain.dismissals import KIND as DISMISSAL_KIND
from memory_core.domain.dismissals import SWEPT, Dismissed
from memory_core.domain.journals import SETTLE
from memory_core.domain.records import Record, RecordKind, deletions_partition
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock
from tests.support.later_release import put_unreadable_request

INSTANCE = "dismissal-races"
LATER, LATER_ID = "later@contoso.com", "from-a-later-release"  # ``put_unreadable_request``'s user and request
WAIT = 60.0  # seconds a stopped thread, or the test, waits for the other before failing (never reached when right)

Pick = Callable[..., bool]


def _is_event(record: Record, *_: Any, **__: Any) -> bool:
    return record.kind == RecordKind.AUDIT and record.data.get("action") == AuditAction.DELETION_DISMISSED.value


def _is_request(_partition: Any, kind: str, *_: Any, **__: Any) -> bool:
    return kind == RecordKind.DELETION_REQUEST


def _is_journal(_partition: Any, kind: str, *_: Any, **__: Any) -> bool:
    return kind == DISMISSAL_KIND


def _is_unit(*_: Any, **__: Any) -> bool:
    return True  # the dismissal's only ``delete_record_and_put``: the request's erasure and its journal's mark


def _is_journal_begun(record: Record, *_: Any, **__: Any) -> bool:
    return record.kind == DISMISSAL_KIND and "claimed_on" not in record.data


#: Where the dismissal stops: the store call it is about to make (its erasure and its mark are one call).
DISMISSAL_STOPS: dict[str, tuple[str, Pick]] = {
    "before its journal": ("put_record", _is_journal_begun),
    "before its erasure": ("delete_record_and_put", _is_unit),
    "before its event": ("create_record", _is_event),
    "before closing its journal": ("delete_record", _is_journal),
}

#: Where the sweep stops, finishing the journal of a dismissal stopped before its erasure.
SWEEP_STOPS: dict[str, tuple[str, Pick]] = {
    "before its claim": ("put_record", lambda r, *a, **k: r.kind == DISMISSAL_KIND and "claimed_on" in r.data),
    "before reading the request": ("get_record", _is_request),
    "before dropping the journal": ("delete_record", _is_journal),  # it read the request as still stored
}


class Stop:
    """The first call of ``store.<method>`` that ``pick`` picks, made on the thread named ``thread``, waits before it
    runs until ``release``; ``wait`` returns once it is waiting."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, store: MemoryStore, thread: str, stop: tuple[str, Pick]
                 ) -> None:
        method, pick = stop
        self._reached, self._go = threading.Event(), threading.Event()
        real, armed = getattr(store, method), [True]

        def stopped(*args: Any, **kwargs: Any) -> Any:
            if armed[0] and threading.current_thread().name == thread and pick(*args, **kwargs):
                armed[0] = False
                self._reached.set()
                if not self._go.wait(WAIT):
                    raise TimeoutError(f"{thread} was never released at {method}")
            return real(*args, **kwargs)

        monkeypatch.setattr(store, method, stopped)

    def wait(self) -> None:
        assert self._reached.wait(WAIT), "the stop was never reached"

    def release(self) -> None:
        self._go.set()


class Running:
    """``work`` on a thread of its own named ``name``; ``join`` answers what it returned, or raises what it raised."""

    def __init__(self, name: str, work: Callable[[], object]) -> None:
        self._outcome: list[object] = []
        self._error: list[BaseException] = []

        def run() -> None:
            try:
                self._outcome.append(work())
            except BaseException as error:  # handed to the test's thread by join
                self._error.append(error)

        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()

    def join(self) -> object:
        self._thread.join(WAIT)
        assert not self._thread.is_alive(), f"{self._thread.name} never finished"
        if self._error:
            raise self._error[0]
        return self._outcome[0]


class Crash(Exception):
    pass


def _event_writes(monkeypatch: pytest.MonkeyPatch, store: MemoryStore) -> list[Record]:
    """Every write of a ``deletion_dismissed`` event through ``store`` that stored it, from any thread, as written."""
    written: list[Record] = []
    for method in ("put_record", "create_record"):
        real = getattr(store, method)

        def write(record: Record, *args: Any, real: Any = real, **kwargs: Any) -> Any:
            stored = real(record, *args, **kwargs)
            if _is_event(record):
                written.append(record)
            return stored

        monkeypatch.setattr(store, method, write)
    return written


def _setup(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> tuple[TickingClock, MemoryService, list[Record]]:
    clock = TickingClock()
    service = MemoryService(store, clock=clock, deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    put_unreadable_request(store, INSTANCE, status="done", request_id=LATER_ID)
    return clock, service, _event_writes(monkeypatch, store)


def _dismiss(service: MemoryService) -> Running:
    return Running("dismissal", lambda: service.custody.dismiss_unreadable("op", INSTANCE, LATER_ID))


def _settled_sweep(clock: TickingClock, service: MemoryService) -> None:
    clock.now += SETTLE
    service.custody.sweep(instance_id=INSTANCE)


def _assert_told_once(service: MemoryService, store: MemoryStore, written: list[Record], *, swept: bool) -> None:
    """One event, written once, stored as written, in the sweep's doubting words exactly when ``swept``; no journal."""
    assert len(written) == 1, [r.data["detail"] for r in written]
    (event,) = [e for e in service.audit.read(INSTANCE, LATER) if e.action is AuditAction.DELETION_DISMISSED]
    assert event.detail == written[0].data["detail"]
    assert event.detail is not None and (SWEPT in event.detail) is swept
    assert (event.actor, event.request_id) == ("op", LATER_ID)
    assert store.query_records(deletions_partition(INSTANCE), DISMISSAL_KIND) == []
    assert store.query_records(deletions_partition(INSTANCE), RecordKind.DELETION_REQUEST) == []


@pytest.mark.parametrize("stop", ["before its erasure", "before its event", "before closing its journal"])
def test_a_sweep_run_while_a_slow_dismissal_is_stopped_leaves_one_event(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, stop: str
) -> None:
    """The dismissal stops at ``stop``, past the settle time; a whole sweep runs (before the erasure it drops the
    journal: the request is stored; after it, it finishes the marked journal as the dismissal's); the dismissal
    goes on, answers the record dismissed, and a later sweep finds nothing more to write. The event is the
    dismissal's in every case, never the sweep's doubting ``SWEPT``: the erasure and the mark are one unit."""
    clock, service, written = _setup(store, monkeypatch)
    stopped = Stop(monkeypatch, store, "dismissal", DISMISSAL_STOPS[stop])
    dismissal = _dismiss(service)
    stopped.wait()
    _settled_sweep(clock, service)
    stopped.release()
    dismissed = dismissal.join()
    assert isinstance(dismissed, Dismissed) and dismissed.request_id == LATER_ID
    _settled_sweep(clock, service)
    _assert_told_once(service, store, written, swept=False)


def _crashing(monkeypatch: pytest.MonkeyPatch, store: MemoryStore, stop: tuple[str, Pick]) -> None:
    """The dismissal's first call that ``stop`` picks raises ``Crash`` before it reaches the store."""
    method, pick = stop
    real, armed = getattr(store, method), [True]

    def crashing(*args: Any, **kwargs: Any) -> Any:
        if armed[0] and threading.current_thread().name == "dismissal" and pick(*args, **kwargs):
            armed[0] = False
            raise Crash(method)
        return real(*args, **kwargs)

    monkeypatch.setattr(store, method, crashing)


@pytest.mark.parametrize("end", ["runs to its end", "crashes before its event", "crashes before closing its journal"])
@pytest.mark.parametrize("stop", list(SWEEP_STOPS))
def test_a_slow_dismissal_finishing_while_the_sweep_is_stopped_on_its_journal_leaves_one_event(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, stop: str, end: str
) -> None:
    """The dismissal stops before its erasure, past the settle time; a sweep takes up its unmarked journal and stops
    at ``stop``; the dismissal erases the request and marks its journal in one unit, then runs to its end or
    crashes; then the sweep goes on, and later sweeps finish what is left. One event, the dismissal's. Before,
    the sweep stopped before dropping the journal (it had read the request still stored) dropped it though marked
    since, and a dismissal that crashed before its event left none."""
    clock, service, written = _setup(store, monkeypatch)
    if end != "runs to its end":
        _crashing(monkeypatch, store, DISMISSAL_STOPS[end.removeprefix("crashes ")])
    dismissal_stopped = Stop(monkeypatch, store, "dismissal", DISMISSAL_STOPS["before its erasure"])
    sweep_stopped = Stop(monkeypatch, store, "sweep", SWEEP_STOPS[stop])
    dismissal = _dismiss(service)
    dismissal_stopped.wait()
    clock.now += SETTLE
    sweep = Running("sweep", lambda: service.custody.sweep(instance_id=INSTANCE))
    sweep_stopped.wait()
    dismissal_stopped.release()
    if end == "runs to its end":
        assert isinstance(dismissal.join(), Dismissed)
    else:
        with pytest.raises(Crash):
            dismissal.join()
    sweep_stopped.release()
    sweep.join()
    _settled_sweep(clock, service)
    _settled_sweep(clock, service)
    _assert_told_once(service, store, written, swept=False)


@pytest.mark.parametrize(("crash", "swept"), [
    *((crash, False) for crash in DISMISSAL_STOPS),
    *((crash, True) for crash in list(DISMISSAL_STOPS)[1:]),  # a sweep drops only a journal stored
])
def test_a_dismissal_crashing_at_any_store_call_is_audited_once_exactly_when_it_erased_the_request(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, crash: str, swept: bool
) -> None:
    """The dismissal crashes at ``crash`` (the call raises before it reaches the store), alone or after a sweep past
    the settle time dropped its journal while it was stopped before its erasure. Later sweeps leave either the
    request stored, no event and no journal (it crashed before its erasure), or the request gone and its event
    once, the dismissal's (after): a crash after the erasure never loses the event. Before, a crash between the
    erasure and storing again the journal a sweep dropped left no journal and no event."""
    clock, service, written = _setup(store, monkeypatch)
    _crashing(monkeypatch, store, DISMISSAL_STOPS[crash])
    if swept:
        stopped = Stop(monkeypatch, store, "dismissal", DISMISSAL_STOPS["before its erasure"])
        dismissal = _dismiss(service)
        stopped.wait()
        _settled_sweep(clock, service)
        assert store.query_records(deletions_partition(INSTANCE), DISMISSAL_KIND) == []  # dropped: request stands
        stopped.release()
    else:
        dismissal = _dismiss(service)
    with pytest.raises(Crash):
        dismissal.join()
    _settled_sweep(clock, service)
    _settled_sweep(clock, service)
    if crash in ("before its journal", "before its erasure"):
        assert written == [] and store.query_records(deletions_partition(INSTANCE), DISMISSAL_KIND) == []
        assert len(store.query_records(deletions_partition(INSTANCE), RecordKind.DELETION_REQUEST)) == 1
    else:
        _assert_told_once(service, store, written, swept=False)
