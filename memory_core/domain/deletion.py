"""Deletion requests: what an operator approves or rejects before anything is erased."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
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
        d = record.data
        plan = d.get("plan")
        return DeletionRequest(
            id=d["id"],
            instance_id=d["instance_id"],
            upn=d["upn"],
            kind=DeletionKind(d["kind"]),
            status=DeletionStatus(d["status"]),
            requested_by=d["requested_by"],
            requested_on=datetime.fromisoformat(d["requested_on"]),
            scope=d.get("scope"),
            agent_object_id=d.get("agent_object_id"),
            entry_id=d.get("entry_id"),
            profile_ids=tuple(d["profile_ids"]) if d.get("profile_ids") is not None else None,
            watermark=_parse(d.get("watermark")),
            decided_by=d.get("decided_by"),
            decided_on=_parse(d.get("decided_on")),
            reason=d.get("reason"),
            plan=tuple(PlannedErase(**p) for p in plan) if plan is not None else None,
            executed_on=_parse(d.get("executed_on")),
            erased_entries=d.get("erased_entries"),
            erased_profiles=d.get("erased_profiles"),
            etag=record.etag,
        )

    def with_status(self, status: DeletionStatus, **changes: Any) -> DeletionRequest:
        return replace(self, status=status, **changes)


def vars_of(p: PlannedErase) -> dict[str, Any]:
    return {"profile_id": p.profile_id, "scope": p.scope, "agent_object_id": p.agent_object_id,
            "entry_id": p.entry_id, "owner": p.owner}


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _parse(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


_SHOWN_CHARS = 320  # of a user, kind or status as stored (a UPN's most): a label, never a document


@dataclass(frozen=True, slots=True)
class UnreadableRequest:
    """A stored deletion request this release cannot read (another layout: a later release's kind, a field it
    needs missing): what can be told of it. ``kind`` and ``status`` are as stored, when the record names them
    (a kind may be one this release does not know); ``message`` says why, as the service's errors are written for
    a caller."""

    id: str
    instance_id: str
    upn: str | None
    kind: str | None
    status: str | None
    message: str

    @staticmethod
    def of(record: Record, error: Exception) -> UnreadableRequest:
        d = record.data

        def label(name: str) -> str | None:
            value = d.get(name)
            return value[:_SHOWN_CHARS] if isinstance(value, str) and value else None

        return UnreadableRequest(
            label("id") or record.id, record.partition.instance_id, label("upn"), label("kind"), label("status"),
            f"the stored deletion request cannot be read by this release ({type(error).__name__}: {error})",
        )


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
