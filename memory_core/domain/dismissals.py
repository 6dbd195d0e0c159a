"""An operator's way out for a stored deletion request this release cannot read: dismissing it.

Such a request (a later release's layout or kind, or a record damaged in the store: ``deletion.read_request``) is
listed apart, cannot be approved or rejected here, is left by every sweep, and counts as filed for the memory tool's
retirements (``file_retirements``). Dismissing it erases that one record, and nothing else:

- only while it is still unreadable: the record is read, found unreadable and erased If-Match the etag it was read
  at (``MemoryStore.delete_record``), so a record a later release rewrote meanwhile is never erased. One rewritten
  readable is refused (``Conflict`` ``readable_request``: decide it instead); one rewritten still unreadable is
  read and checked again;
- no memory: the holds the request filed (named by its whole stored id, in its user's partition and in the
  team-shared one) are left standing, so what it hid stays hidden, neither shown again nor erased (this release
  cannot tell what a request it cannot read covers); the answer counts them. While any still stands, the dismissal
  is refused (``Conflict`` ``holds_standing``) unless forced: a pending or approved request of a later release
  would otherwise leave its user's memory hidden behind no request anyone can see;
- named: the answer and the event carry the ``kind`` and ``status`` as stored (text only, at most ``LABEL_CHARS``
  characters), so what was dismissed (an approved erasure, say) is told, and whether it was forced;
- audited after the erasure (an event written first would stand for a dismissal that lost a race): a
  ``deletion_dismissed`` event naming the record's id and the SHA-256 of its stored data, in its user's trail when
  the record names a user, else in the instance's deletions trail;
- journaled (``domain.journals``): before the erasure a ``dismissal`` record in the instance's deletions partition
  names the record's key, its digest, the operator and the time (and what the event says: the request's id, its
  user, the holds left, why it is unreadable; no memory text). The erasure and the journal's mark ``erased`` are
  one atomic unit (``MemoryStore.delete_record_and_put``: the journal written whole, marked, so one a sweep dropped
  meanwhile stands again): the record is never gone while its journal is missing or unmarked. Then the event is
  written, dated by the journal and named by it, and created only while none of its id is stored (one record, as its
  first writer wrote it, however many finish the journal at once), then the journal is erased. The sweep
  (``replay``) finishes a settled marked journal as its dismissal's: the event, unless stored already, then the
  journal, whatever is stored under the record's key now. An unmarked one whose record is still stored (unchanged:
  the dismissal has not erased it; rewritten: the rewrite won) it drops, with no event, If-Match the journal as it
  claimed it: a dismissal that erased the record since marked the journal, so the drop fails and the sweep finishes
  it as marked. An unmarked one whose record is gone it reads again (marked since: finished as marked); still
  unmarked, its dismissal erased nothing (or was an earlier build's, stopped between its erasure and its mark), and
  the sweep cannot tell that from an erasure by another hand (a later release deciding the request, an expiry): it
  is dropped when the trail already holds its event or a later one naming the request, else the event is written
  saying who erased it is not known (``SWEPT``). So a crash after the erasure never loses the event, and a slow
  dismissal and the sweep never write two. One journal per record version (its key and
  etag): a retry, or a dismissal at the same moment, of the version another journaled takes that journal over, so
  whichever erases the record writes the same event. A dismissal first closes the journals of other versions of the
  record (stored no more): an unmarked one is erased (its dismissal erased nothing; left, it would be finished as a
  second dismissal once this one erased the record), a marked one is finished (its dismissal erased that version,
  and a later release stored the request again): its event is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from memory_core.domain import journals
from memory_core.domain.audit import AuditAction, AuditTrail
from memory_core.domain.deletion import DeletionRequest, UnreadableRequest, read_request
from memory_core.domain.errors import Conflict, NotFound
from memory_core.domain.hold_requests import hold_name
from memory_core.domain.identity import InvalidCallerId, caller_upn
from memory_core.domain.models import SHARED_OWNER
from memory_core.domain.records import (
    ABSENT,
    DELETIONS_OWNER,
    Partition,
    Record,
    RecordKind,
    deletions_partition,
)
from memory_core.domain.store import MemoryStore

log = logging.getLogger("memory_core.custody")

_ATTEMPTS = 5  # reads of the record while other writes keep rewriting it (still unreadable each time)

#: The journal (``domain.journals``) of a dismissal under way, in the instance's deletions partition.
KIND = "dismissal"

#: The most characters of a stored ``kind`` or ``status`` a dismissal names: a label, never a document.
LABEL_CHARS = 64


@dataclass(frozen=True, slots=True)
class Dismissed:
    """What a dismissal erased: the request as listed (``request_id``, its stored ``upn`` when it names one), the
    stored record's id and the SHA-256 of its data (canonical JSON), how many holds named by it were left, its
    ``kind`` and ``status`` as stored (``stored_label``), and whether it was ``forced`` past standing holds."""

    request_id: str
    instance_id: str
    upn: str | None
    record_id: str
    record_sha256: str
    holds_left: int
    message: str
    kind: str | None = None
    status: str | None = None
    forced: bool = False


def record_sha256(record: Record) -> str:
    """The SHA-256 of ``record``'s stored data as canonical JSON (sorted keys, no spaces, UTF-8): what the
    dismissal's event names, so the record erased can be told from any other copy of it."""
    text = json.dumps(record.data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def stored_label(value: object) -> str | None:
    """A stored ``kind`` or ``status`` as a dismissal names it: text cut to ``LABEL_CHARS``; None when absent,
    empty or not text."""
    return value[:LABEL_CHARS] if isinstance(value, str) and value else None


def dismiss_unreadable(
    store: MemoryStore, audit: AuditTrail, operator: str, instance_id: str, request_id: str, *,
    clock: Callable[[], datetime], force: bool = False,
) -> Dismissed:
    """Erase the stored deletion request ``request_id`` (the id the listings show under ``unreadable``, or the
    record's key) if, and only if, this release still cannot read it at the moment of erasure; audit it, journaled
    first (the module's docstring). ``NotFound`` when there is none (or another dismissal erased it first: the event
    is that one's to write, or the sweep's); ``Conflict`` ``readable_request`` when it is (or became) one this
    release reads, which is left untouched; ``Conflict`` ``holds_standing`` when holds it filed still stand and not
    ``force``, untouched too."""
    for _ in range(_ATTEMPTS):
        record = _stored(store, instance_id, request_id)
        read = read_request(record)
        if isinstance(read, DeletionRequest):
            raise Conflict(f"deletion request {request_id} is one this release reads ({read.status.value}): "
                           "approve or reject it; only a request this release cannot read is dismissed",
                           code="readable_request")
        # Counted before the erasure, which leaves holds alone: the journal carries the event's every field.
        holds_left = _holds_left(store, record, read)
        kind, status = stored_label(record.data.get("kind")), stored_label(record.data.get("status"))
        if holds_left and not force:
            raise Conflict(f"deletion request {request_id} (stored as kind {kind or 'unknown'}, status "
                           f"{status or 'unknown'}) filed {holds_left} hold(s) that still stand: dismissed, it would "
                           "leave them standing, and the memory they hide stays hidden, neither shown again nor "
                           "erased, with no request to decide; run the release that reads it, or force the dismissal "
                           "if none will",
                           code="holds_standing")
        dismissed = Dismissed(read.id, instance_id, read.upn, record.id, record_sha256(record), holds_left,
                              read.message, kind, status, force and holds_left > 0)
        log.warning("dismissing deletion request record %s of instance %s (sha256 %s) by %s: %s",
                    record.id, instance_id, dismissed.record_sha256, operator, read.message)
        _close_stale(store, audit, record)
        journal, begun = _begin(store, Dismissal(_journal_id(record), dismissed, operator, clock()))
        try:
            # The erasure and the journal's mark in one unit: the journal stands, marked, the moment the record is
            # gone, even when a sweep dropped it meanwhile (it found the record still stored), so no crash and no
            # sweep leaves an erasure without its journal, or a journal in doubt.
            erased = store.delete_record_and_put(record, replace(begun, data={**begun.data, ERASED: True}, etag=None))
        except Conflict:  # rewritten since it was read (a later release): read again, refused if now readable
            _close(store, journal)  # that version is stored no more, and was erased by no one
            continue
        if erased is None:  # another dismissal of this version took it: its journal (this one) is its to finish
            raise NotFound(f"no deletion request {request_id} in instance {instance_id}")
        _finish(store, audit, journal)
        return journal.dismissed
    raise Conflict(f"deletion request {request_id} kept changing while it was being dismissed; try again")


def replay(store: MemoryStore, audit: AuditTrail, instance_id: str | None, *, clock: Callable[[], datetime]) -> int:
    """The sweep's step for dismissals a crash interrupted, or that are slower than ``journals.SETTLE``
    (``journals.replay``: settled, claimed once). A journal marked ``erased`` (its dismissal erased the record) is
    finished as that dismissal's: its event is written unless already stored (never ``SWEPT``: the mark tells who
    erased it), whatever is stored under the record's key now (a later version), then it is erased. An unmarked one
    whose record is still stored (the dismissal has not erased it; or stored under another etag: a rewrite won) is
    dropped, with no event, If-Match the journal as claimed (a dismissal erasing the record since marked it: then it
    is read again). An unmarked one whose record is gone is read again: marked or erased meanwhile, its dismissal
    is still running and tells it (finished as marked, or left); still unmarked, the sweep cannot tell whether
    another hand erased it (a later release deciding it, an expiry) or a dismissal of an earlier build, stopped
    between its erasure and its mark: when the trail already holds a later event naming the request, it is
    dropped; else its event is written saying so (``SWEPT``), then it is erased. Every writer creates the event
    only while none is stored (``_tell``), so a dismissal and a sweep finishing it at once leave one event, as the
    first wrote it. Answers how many were finished."""
    def finish(claimed: Record) -> None:
        journal = Dismissal.from_record(claimed)
        if _marked(claimed):
            _finish(store, audit, journal)
            return
        partition = deletions_partition(journal.dismissed.instance_id)
        if store.get_record(partition, RecordKind.DELETION_REQUEST, journal.dismissed.record_id) is not None:
            # Dropped only as claimed: a dismissal slower than SETTLE may erase the record, marking this journal
            # in the same unit, after the read above; then the mark is a write since the claim, and tells it.
            try:
                store.delete_record(partition, KIND, claimed.id, etag=claimed.etag)
                return
            except Conflict:
                pass
        # The record is gone, or the journal was written since the claim: a dismissal slower than SETTLE may have
        # erased the record and marked its journal since this sweep claimed it. The mark, read now, tells who.
        now = store.get_record(partition, KIND, claimed.id)
        if now is None:  # its dismissal finished it meanwhile: the event is stored
            return
        if _marked(now):
            _finish(store, audit, journal)
        elif store.get_record(partition, RecordKind.DELETION_REQUEST, journal.dismissed.record_id) is not None:
            return  # claimed since by another sweep, the record still stored: that sweep's to drop
        elif _told_by_another_hand(store, audit, journal):
            _close(store, journal)
        else:  # gone, unmarked: another hand erased it, or a dismissal of an earlier build stopped before its mark
            _finish(store, audit, journal, swept=True)

    return journals.replay(store, KIND, instance_id, clock=clock, wait=lambda record: timedelta(0), finish=finish)


@dataclass(frozen=True, slots=True)
class Dismissal:
    """A dismissal as journaled before its erasure: ``id`` (made from the record's key and etag), what it erases and
    says (``dismissed``), by whom and when it began. Names no memory text."""

    id: str
    dismissed: Dismissed
    operator: str
    started_on: datetime

    def to_record(self) -> Record:
        """The journal record, to create only (``ABSENT``)."""
        d = self.dismissed
        return Record(deletions_partition(d.instance_id), KIND, self.id, {
            "record_id": d.record_id, "record_sha256": d.record_sha256, "operator": self.operator,
            "started_on": self.started_on.isoformat(), "request_id": d.request_id, "upn": d.upn,
            "holds_left": d.holds_left, "message": d.message, "kind": d.kind, "status": d.status,
            "forced": d.forced,
        }, etag=ABSENT)

    @staticmethod
    def from_record(record: Record) -> Dismissal:
        data = record.data
        upn = data.get("upn")
        # kind, status and forced are absent from a journal an earlier build of this release wrote
        dismissed = Dismissed(str(data["request_id"]), record.partition.instance_id,
                              upn if isinstance(upn, str) else None, str(data["record_id"]),
                              str(data["record_sha256"]), int(data["holds_left"]), str(data["message"]),
                              stored_label(data.get("kind")), stored_label(data.get("status")),
                              data.get("forced") is True)
        return Dismissal(record.id, dismissed, str(data["operator"]), datetime.fromisoformat(data["started_on"]))


def _journal_id(record: Record) -> str:
    """One journal per version of the record (its key and etag), in characters every store takes as an id."""
    return hashlib.sha256(f"{record.id}\n{record.etag}".encode()).hexdigest()[:32]


def _begin(store: MemoryStore, journal: Dismissal) -> tuple[Dismissal, Record]:
    """Store ``journal``, or take over the one stored for the same version (a retry after a crash, or a dismissal at
    the same moment): the record is erased at most once at that etag, and whoever erases it writes that journal's
    event, so the trail holds one. Answers the journal and its record as stored (whose data the erasure marks).
    """
    for _ in range(_ATTEMPTS):
        try:
            return journal, store.put_record(journal.to_record())
        except Conflict:
            stored = store.get_record(deletions_partition(journal.dismissed.instance_id), KIND, journal.id)
            if stored is not None:
                return Dismissal.from_record(stored), stored
    raise Conflict(f"deletion request {journal.dismissed.request_id} kept changing while it was being dismissed; "
                   "try again")


def _close_stale(store: MemoryStore, audit: AuditTrail, record: Record) -> None:
    """Close the journals of dismissals of other versions of ``record``: the version each names is stored no more
    (this caller read ``record`` as stored now). One marked ``erased`` (its dismissal erased that version, then
    stopped before its event, and a later release stored the request again) is finished as that dismissal's
    (``_finish``): its erasure is audited, never dropped. An unmarked one is erased with no event: its
    dismissal erased nothing (a crash after the erasure and before the mark is the sweep's doubt, ``SWEPT``, and
    this caller cannot tell it apart). Left, the sweep would find the record gone once this dismissal erased it, and
    write a second event, for a version no one dismissed."""
    current = _journal_id(record)
    for stale in store.query_records(record.partition, KIND, {"record_id": record.id}):
        if stale.id == current:
            continue
        if _marked(stale):
            _finish(store, audit, Dismissal.from_record(stale))
        else:
            store.delete_record(record.partition, KIND, stale.id)


#: The journal's field a dismissal sets once its erasure succeeded: proof, for whoever finishes it, of who erased.
ERASED = "erased"


def _marked(journal: Record) -> bool:
    """Whether the journal record says its dismissal erased the record (marked in the erasure's own unit)."""
    return journal.data.get(ERASED) is True


def _finish(store: MemoryStore, audit: AuditTrail, journal: Dismissal, *, swept: bool = False) -> None:
    """The record is erased: audit it (``_tell``), then erase the journal (a crash between them leaves the journal,
    and whoever finishes it finds the event told)."""
    _tell(store, _event(audit, journal, swept=swept))
    _close(store, journal)


def _tell(store: MemoryStore, event: Record) -> None:
    """Write the dismissal's event unless one is stored under its id already: the one check of "already told",
    made by the write itself (create-only). The dismissal, the sweep and a dismissal of a later version may each
    finish one journal at the same moment; the event stays as the first wrote it, never rewritten in another's words
    (the sweep's ``SWEPT`` over the dismissal's, or back)."""
    with contextlib.suppress(Conflict):
        store.create_record(event)


def _told_by_another_hand(store: MemoryStore, audit: AuditTrail, journal: Dismissal) -> bool:
    """Whether the trail holds an event naming the journal's request later than the dismissal's own: the hand that
    erased the record (a later release deciding it), or a dismissal of a later version, told what became of it."""
    event = _event(audit, journal)
    return bool(store.page_records(event.partition, RecordKind.AUDIT, limit=1,
                                   where={"request_id": journal.dismissed.request_id}, after=event.id))


def _close(store: MemoryStore, journal: Dismissal) -> None:
    """Erase the journal record; none is fine."""
    store.delete_record(deletions_partition(journal.dismissed.instance_id), KIND, journal.id)


def _stored(store: MemoryStore, instance_id: str, request_id: str) -> Record:
    """The record listed as ``request_id``: the one whose data names that id, else (the listing shows a record naming
    no id by its own key) the one so keyed."""
    partition = deletions_partition(instance_id)
    records = store.query_records(partition, RecordKind.DELETION_REQUEST, {"id": request_id}, limit=1)
    record = records[0] if records else store.get_record(partition, RecordKind.DELETION_REQUEST, request_id)
    if record is None:
        raise NotFound(f"no deletion request {request_id} in instance {instance_id}")
    return record


def _user(upn: str | None) -> str | None:
    """The stored user when it is one a trail can be kept for (a valid UPN as stored), else None."""
    try:
        return upn if upn is not None and caller_upn(upn) == upn else None
    except InvalidCallerId:
        return None


def _holds_left(store: MemoryStore, record: Record, read: UnreadableRequest) -> int:
    """How many holds the request filed still stand (its user's, when it names one, and the team-shared one): a
    request's holds are named by its whole stored id (never the listing's, which is the key for a long one), the
    part of the record's key after its time when the data names none (``hold_requests.hold_name``)."""
    hold_id = hold_name(record)
    owners = [owner for owner in (_user(read.upn), SHARED_OWNER) if owner is not None]
    return sum(store.get_record(Partition(record.partition.instance_id, owner), RecordKind.HOLD, hold_id) is not None
               for owner in owners)


#: What an event the sweep writes for a journal whose record it found gone adds: who erased it is not known.
SWEPT = ("the record was gone when the sweep finished a dismissal under way: erased by this dismissal or by another "
         "hand (a later release deciding it, an expiry)")


def _event(audit: AuditTrail, journal: Dismissal, *, swept: bool = False) -> Record:
    """The dismissal's event record: dated by its journal and named by it, so one record however often written."""
    dismissed = journal.dismissed
    forced = " (forced past them)" if dismissed.forced else ""
    detail = (f"dismissed a stored deletion request this release cannot read: record {dismissed.record_id}, "
              f"sha256 {dismissed.record_sha256}, stored as kind {dismissed.kind or 'unknown'}, status "
              f"{dismissed.status or 'unknown'}; {dismissed.holds_left} hold(s) left standing{forced}; "
              f"{dismissed.message}" + (f"; {SWEPT}" if swept else ""))
    _, record = audit.event(AuditAction.DELETION_DISMISSED, actor=journal.operator, instance_id=dismissed.instance_id,
                            upn=_user(dismissed.upn) or DELETIONS_OWNER, request_id=dismissed.request_id,
                            content_sha256=dismissed.record_sha256, detail=detail, at=journal.started_on,
                            suffix=f"dismissed-{journal.id}")
    return record
