"""An operator's way out for a stored deletion request this release cannot read: dismissing it.

Such a request (a later release's layout or kind, or a record damaged in the store: ``deletion.read_request``) is
listed apart, cannot be approved or rejected here, is left by every sweep, and counts as filed for the memory tool's
retirements (``file_retirements``). Dismissing it erases that one record, and nothing else:

- only while it is still unreadable: the record is read, found unreadable and erased If-Match the etag it was read
  at (``MemoryStore.delete_record``), so a record a later release rewrote meanwhile is never erased. One rewritten
  readable is refused (``Conflict`` ``readable_request``: decide it instead); one rewritten still unreadable is
  read and checked again;
- no memory: the holds the request filed (named by its id, in its user's partition and in the team-shared one) are
  left standing, so what it hid stays hidden, neither shown again nor erased (this release cannot tell what a
  request it cannot read covers); the answer counts them;
- audited after the erasure (an event written first would stand for a dismissal that lost a race): a
  ``deletion_dismissed`` event naming the record's id and the SHA-256 of its stored data, in its user's trail when
  the record names a user, else in the instance's deletions trail. A crash between the erasure and the event loses
  the event; the log line written before the erasure still names the record and its digest.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass

from memory_core.domain.audit import AuditAction, AuditTrail
from memory_core.domain.deletion import DeletionRequest, UnreadableRequest, read_request
from memory_core.domain.errors import Conflict, NotFound
from memory_core.domain.identity import InvalidCallerId, caller_upn
from memory_core.domain.models import SHARED_OWNER
from memory_core.domain.records import DELETIONS_OWNER, Partition, Record, RecordKind, deletions_partition
from memory_core.domain.store import MemoryStore

log = logging.getLogger("memory_core.custody")

_ATTEMPTS = 5  # reads of the record while other writes keep rewriting it (still unreadable each time)


@dataclass(frozen=True, slots=True)
class Dismissed:
    """What a dismissal erased: the request as listed (``request_id``, its stored ``upn`` when it names one), the
    stored record's id and the SHA-256 of its data (canonical JSON), and how many holds named by it were left."""

    request_id: str
    instance_id: str
    upn: str | None
    record_id: str
    record_sha256: str
    holds_left: int
    message: str


def record_sha256(record: Record) -> str:
    """The SHA-256 of ``record``'s stored data as canonical JSON (sorted keys, no spaces, UTF-8): what the
    dismissal's event names, so the record erased can be told from any other copy of it."""
    text = json.dumps(record.data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def dismiss_unreadable(
    store: MemoryStore, audit: AuditTrail, operator: str, instance_id: str, request_id: str
) -> Dismissed:
    """Erase the stored deletion request ``request_id`` (the id the listings show under ``unreadable``) if, and only
    if, this release still cannot read it at the moment of erasure; audit it. ``NotFound`` when there is none;
    ``Conflict`` ``readable_request`` when it is (or became) one this release reads, which is left untouched."""
    for _ in range(_ATTEMPTS):
        record = _stored(store, instance_id, request_id)
        read = read_request(record)
        if isinstance(read, DeletionRequest):
            raise Conflict(f"deletion request {request_id} is one this release reads ({read.status.value}): "
                           "approve or reject it; only a request this release cannot read is dismissed",
                           code="readable_request")
        digest = record_sha256(record)
        log.warning("dismissing deletion request record %s of instance %s (sha256 %s) by %s: %s",
                    record.id, instance_id, digest, operator, read.message)
        try:
            erased = store.delete_record(record.partition, RecordKind.DELETION_REQUEST, record.id, etag=record.etag)
        except Conflict:  # rewritten since it was read (a later release): read again, refused if now readable
            continue
        if not erased:
            raise NotFound(f"no deletion request {request_id} in instance {instance_id}")
        dismissed = Dismissed(read.id, instance_id, read.upn, record.id, digest, _holds_left(store, record, read),
                              read.message)
        _audit(audit, operator, dismissed)
        return dismissed
    raise Conflict(f"deletion request {request_id} kept changing while it was being dismissed; try again")


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
    request's holds are named by its id, the part of the record's key after its time when the data names none."""
    hold_id = read.id if isinstance(record.data.get("id"), str) else record.id.rpartition("~")[2]
    owners = [owner for owner in (_user(read.upn), SHARED_OWNER) if owner is not None]
    return sum(store.get_record(Partition(record.partition.instance_id, owner), RecordKind.HOLD, hold_id) is not None
               for owner in owners)


def _audit(audit: AuditTrail, operator: str, dismissed: Dismissed) -> None:
    detail = (f"dismissed a stored deletion request this release cannot read: record {dismissed.record_id}, "
              f"sha256 {dismissed.record_sha256}, {dismissed.holds_left} hold(s) left standing; {dismissed.message}")
    audit.record(AuditAction.DELETION_DISMISSED, actor=operator, instance_id=dismissed.instance_id,
                 upn=_user(dismissed.upn) or DELETIONS_OWNER, request_id=dismissed.request_id,
                 content_sha256=dismissed.record_sha256, detail=detail)
