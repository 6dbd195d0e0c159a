"""Deletion requests: what an operator approves or rejects before anything is erased."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from memory_core.domain.paging import Page
from memory_core.domain.records import Record, RecordKind, deletions_partition


class DeletionKind(StrEnum):
    CLEAR = "clear"  # one scope of one user
    REPLACE = "replace"  # what an import with mode=replace replaced in one scope (sealed like a clear)
    FORGET = "forget"  # one entry
    PURGE = "purge"  # all of one user's memory in an instance


class DeletionStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    EXECUTED = "executed"


PENDING_MESSAGE = "deletion requested, pending operator approval"


@dataclass(frozen=True, slots=True)
class PlannedErase:
    """One entry the sweep will erase, with what it needs to address it."""

    profile_id: str
    scope: str
    agent_object_id: str | None
    entry_id: str
    owner: str | None = None  # the partition owner when not the request's user (shared copies)


@dataclass(frozen=True, slots=True)
class DeletionRequest:
    id: str
    instance_id: str
    upn: str
    kind: DeletionKind
    status: DeletionStatus
    requested_by: str
    requested_on: datetime
    scope: str | None = None
    agent_object_id: str | None = None
    entry_id: str | None = None
    profile_ids: tuple[str, ...] | None = None
    watermark: datetime | None = None
    decided_by: str | None = None
    decided_on: datetime | None = None
    reason: str | None = None
    plan: tuple[PlannedErase, ...] | None = None
    executed_on: datetime | None = None
    erased_entries: int | None = None
    erased_profiles: int | None = None
    etag: str | None = field(default=None, compare=False)

    def to_record(self) -> Record:
        data: dict[str, Any] = {
            "id": self.id,
            "instance_id": self.instance_id,
            "upn": self.upn,
            "kind": self.kind.value,
            "status": self.status.value,
            "requested_by": self.requested_by,
            "requested_on": self.requested_on.isoformat(),
            "scope": self.scope,
            "agent_object_id": self.agent_object_id,
            "entry_id": self.entry_id,
            "profile_ids": list(self.profile_ids) if self.profile_ids is not None else None,
            "watermark": _iso(self.watermark),
            "decided_by": self.decided_by,
            "decided_on": _iso(self.decided_on),
            "reason": self.reason,
            "plan": [vars_of(p) for p in self.plan] if self.plan is not None else None,
            "executed_on": _iso(self.executed_on),
            "erased_entries": self.erased_entries,
            "erased_profiles": self.erased_profiles,
        }
        return Record(deletions_partition(self.instance_id), RecordKind.DELETION_REQUEST, self.record_id, data,
                      self.etag)

    @property
    def record_id(self) -> str:
        """The stored record's id: the request time first, so a partition's records sort by age."""
        return f"{self.requested_on.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')}~{self.id}"

    @staticmethod
    def from_record(record: Record) -> DeletionRequest:
        """The request ``record`` holds. ``KeyError`` when it lacks a field this release needs, ``TypeError`` or
        ``ValueError`` when a field is not of the type this release reads (a later release's layout): every request
        it answers is one the service's pages can show."""
        d = record.data
        plan = d.get("plan")
        if plan is not None and not isinstance(plan, list):
            raise TypeError(f"plan is {type(plan).__name__}, not a list")
        return DeletionRequest(
            id=_text(d, "id"),
            instance_id=_text(d, "instance_id"),
            upn=_text(d, "upn"),
            kind=DeletionKind(d["kind"]),
            status=DeletionStatus(d["status"]),
            requested_by=_text(d, "requested_by"),
            requested_on=datetime.fromisoformat(d["requested_on"]),
            scope=_optional_text(d, "scope"),
            agent_object_id=_optional_text(d, "agent_object_id"),
            entry_id=_optional_text(d, "entry_id"),
            profile_ids=_texts(d, "profile_ids"),
            watermark=_parse(d.get("watermark")),
            decided_by=_optional_text(d, "decided_by"),
            decided_on=_parse(d.get("decided_on")),
            reason=_optional_text(d, "reason"),
            plan=tuple(_planned(p) for p in plan) if plan is not None else None,
            executed_on=_parse(d.get("executed_on")),
            erased_entries=_count(d, "erased_entries"),
            erased_profiles=_count(d, "erased_profiles"),
            etag=record.etag,
        )

    def with_status(self, status: DeletionStatus, **changes: Any) -> DeletionRequest:
        return replace(self, status=status, **changes)


def retained_record(
    request: DeletionRequest, clock: Callable[[], datetime], retention: timedelta | None
) -> Record:
    """``request``'s record, expiring ``retention`` after ``clock``'s now once it is finished (executed or rejected);
    a pending or approved request, or any with ``retention`` None, never expires. ``clock`` is read only then."""
    record = request.to_record()
    finished = request.status in (DeletionStatus.EXECUTED, DeletionStatus.REJECTED)
    if not finished or retention is None:
        return record
    return replace(record, expires_on=clock() + retention)


def vars_of(p: PlannedErase) -> dict[str, Any]:
    return {"profile_id": p.profile_id, "scope": p.scope, "agent_object_id": p.agent_object_id,
            "entry_id": p.entry_id, "owner": p.owner}


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _parse(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


# The type checks of a stored request's fields: a record written in another layout (a later release's, say a count
# kept as an object or a user as null) is one this release cannot read, told as such, rather than a request that
# fails where it is shown or decided.

def _text(d: dict[str, Any], name: str) -> str:
    value = d[name]
    if not isinstance(value, str):
        raise TypeError(f"{name} is {_type_of(value)}, not text")
    return value


def _optional_text(d: dict[str, Any], name: str) -> str | None:
    return _text(d, name) if d.get(name) is not None else None


def _texts(d: dict[str, Any], name: str) -> tuple[str, ...] | None:
    value = d.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TypeError(f"{name} is {_type_of(value)}, not a list of text")
    return tuple(value)


def _count(d: dict[str, Any], name: str) -> int | None:
    value = d.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"{name} is {_type_of(value)}, not a count")
    return value


def _planned(item: object) -> PlannedErase:
    if not isinstance(item, dict):
        raise TypeError(f"a plan item is {_type_of(item)}, not an object")
    return PlannedErase(_text(item, "profile_id"), _text(item, "scope"), _optional_text(item, "agent_object_id"),
                        _text(item, "entry_id"), _optional_text(item, "owner"))


def _type_of(value: object) -> str:
    return "null" if value is None else type(value).__name__


_SHOWN_CHARS = 320  # of an id, user, kind or status as stored (a UPN's most), and of why: a label, never a document


@dataclass(frozen=True, slots=True)
class UnreadableRequest:
    """A stored deletion request this release cannot read (another layout: a later release's kind, a field it
    needs missing or of another type): what can be told of it, each text at most ``_SHOWN_CHARS`` characters but
    ``id`` (``listed_id``: the record's key when the stored id is longer) and ``record_id``. ``kind`` and ``status``
    are as stored, when the record names them (a kind may be one this release does not know); ``message`` says why,
    as the service's errors are written for a caller."""

    id: str
    instance_id: str
    upn: str | None
    kind: str | None
    status: str | None
    message: str
    record_id: str  # the record's key in the store, uncut

    @staticmethod
    def of(record: Record, error: Exception) -> UnreadableRequest:
        d = record.data
        return UnreadableRequest(
            listed_id(record), record.partition.instance_id, shown_label(d.get("upn")),
            shown_label(d.get("kind")), shown_label(d.get("status")),
            unreadable_message(error), record.id,
        )


def listed_id(record: Record) -> str:
    """The id a stored request this release cannot read is listed by, one an operator can dismiss it by
    (``domain.dismissals`` resolves either): the id its data names, when that is text of at most ``_SHOWN_CHARS``
    characters, else the record's key, uncut (an id cut to fit would name no record, or another's)."""
    stored = record.data.get("id")
    return stored if isinstance(stored, str) and stored and len(stored) <= _SHOWN_CHARS else record.id


def unreadable_message(error: Exception) -> str:
    """Why a stored request cannot be read (``error``, what reading it raised), for a caller: at most
    ``_SHOWN_CHARS`` characters, since the error may quote a stored value of any length."""
    message = f"the stored deletion request cannot be read by this release ({type(error).__name__}: {error})"
    return message if len(message) <= _SHOWN_CHARS else message[:_SHOWN_CHARS - 2] + "…)"


def shown_label(value: object) -> str | None:
    """``value``, a stored label (an id, a user, a kind, a status), as a caller is shown it: text, at most
    ``_SHOWN_CHARS`` characters; None when it is not text or is empty."""
    return value[:_SHOWN_CHARS] if isinstance(value, str) and value else None


def read_request(record: Record) -> DeletionRequest | UnreadableRequest:
    """The request ``record`` holds, or what can be told of it when this release cannot read it."""
    try:
        return DeletionRequest.from_record(record)
    except (KeyError, TypeError, ValueError) as error:
        return UnreadableRequest.of(record, error)


@dataclass(frozen=True, slots=True)
class DeletionPage(Page[DeletionRequest]):
    """A page of deletion requests: ``items`` those read, ``unreadable`` those this release cannot read, in the
    listing's order. Both count towards the page's size, and the continuation follows the last of either."""

    unreadable: list[UnreadableRequest] = field(default_factory=list)

    @staticmethod
    def of(records: list[Record], continuation: str | None) -> DeletionPage:
        read = [read_request(r) for r in records]
        return DeletionPage([r for r in read if isinstance(r, DeletionRequest)], continuation,
                            [r for r in read if isinstance(r, UnreadableRequest)])
