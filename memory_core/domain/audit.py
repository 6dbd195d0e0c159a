"""The audit trail: every change, request and decision leaves an event, never the content.

Events carry a SHA-256 and a byte count of the content they concern, so a trail
proves what happened without keeping what an erase erased.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from memory_core.domain.models import MemoryEntry, random_hex
from memory_core.domain.paging import Page, check_page_size, decode_token, encode_token
from memory_core.domain.records import Partition, Record, RecordKind
from memory_core.domain.store import MemoryStore


class AuditAction(StrEnum):
    APPEND = "append"
    IMPORT = "import"
    CLEAR = "clear"
    FORGET = "forget"
    CLEAR_REQUESTED = "clear_requested"
    REPLACE_REQUESTED = "replace_requested"
    FORGET_REQUESTED = "forget_requested"
    PURGE_REQUESTED = "purge_requested"
    DELETION_APPROVED = "deletion_approved"
    DELETION_REJECTED = "deletion_rejected"
    DELETION_EXECUTED = "deletion_executed"
    DELETION_DISMISSED = "deletion_dismissed"  # an unreadable request's record erased (``domain.dismissals``)
    HOLD_RELEASED = "hold_released"  # holds whose request is gone lifted by an operator (``domain.orphan_holds``)
    WRITE_REJECTED = "write_rejected"
    MEMORY_FILE = "memory_file"
    AGENT_SETTINGS = "agent_settings"
    AGENT_SETTINGS_DELETED = "agent_settings_deleted"  # an agent's settings erased by an operator


@dataclass(frozen=True, slots=True)
class AuditEvent:
    time: datetime
    actor: str
    action: AuditAction
    instance_id: str
    upn: str
    scope: str | None = None
    agent_object_id: str | None = None
    session_id: str | None = None
    operation_id: str | None = None
    request_id: str | None = None
    entry_id: str | None = None
    content_sha256: str | None = None
    byte_count: int | None = None
    detail: str | None = None

    def to_data(self) -> dict[str, Any]:
        # Every field is a str, int, None, datetime or enum: a shallow copy is the whole copy
        # (dataclasses.asdict deep-copies each value, a tenth of an append's time in process).
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["time"] = self.time.isoformat()
        data["action"] = self.action.value
        return data

    @staticmethod
    def from_data(data: dict[str, Any]) -> AuditEvent:
        fields: dict[str, Any] = {k: data.get(k) for k in AuditEvent.__dataclass_fields__}
        fields["time"] = datetime.fromisoformat(str(data["time"]))
        fields["action"] = AuditAction(str(data["action"]))
        return AuditEvent(**fields)


def entry_fields(entry: MemoryEntry) -> dict[str, Any]:
    """What an event about one entry says of it: where it is, its ids, its SHA-256 and size; never its text."""
    return {
        "instance_id": entry.key.instance_id, "upn": entry.key.upn, "scope": entry.key.scope.value,
        "agent_object_id": entry.key.agent_object_id, "session_id": entry.session_id,
        "operation_id": entry.operation_id, "entry_id": entry.id, "content_sha256": entry.content_sha256,
        "byte_count": len(entry.content_markdown.encode("utf-8")),
    }


class AuditTrail:
    """Appends events to, and reads them from, each user's partition."""

    def __init__(
        self, store: MemoryStore, clock: Callable[[], datetime], retention: timedelta | None = None
    ) -> None:
        """``retention``: how long an event is kept (None: forever, the default)."""
        self._store = store
        self._clock = clock
        self._retention = retention

    def record(self, action: AuditAction, *, actor: str, instance_id: str, upn: str, **fields: Any) -> AuditEvent:
        """Write one event on its own (for changes that are not an entry write)."""
        event, record = self.event(action, actor=actor, instance_id=instance_id, upn=upn, **fields)
        self._store.put_record(record)
        return event

    def event(
        self, action: AuditAction, *, actor: str, instance_id: str, upn: str, at: datetime | None = None,
        suffix: str | None = None, **fields: Any
    ) -> tuple[AuditEvent, Record]:
        """An event and the record that stores it, not yet written: the caller writes it
        atomically with the change it describes (``MemoryStore.append_with_records``).

        ``at`` (default: now) and ``suffix`` (default: random) make the record's id: an event given both is the same
        record whoever writes it, so a journal replayed twice (``domain.file_audits``) stores it once."""
        event = AuditEvent(time=at or self._clock(), actor=actor, action=action, instance_id=instance_id, upn=upn,
                           **fields)
        # Ids sort by time, so a partition's trail reads back in order.
        record_id = f"{event.time.isoformat()}~{suffix or random_hex(6)}"
        expires = event.time + self._retention if self._retention is not None else None
        return event, Record(Partition(instance_id, upn), RecordKind.AUDIT, record_id, event.to_data(),
                             expires_on=expires)

    def read(self, instance_id: str, upn: str, limit: int = 1000) -> list[AuditEvent]:
        """The newest ``limit`` events of one user's trail, oldest first (one bounded query)."""
        records = self._store.page_records(Partition(instance_id, upn), RecordKind.AUDIT, limit=limit, descending=True)
        return [AuditEvent.from_data(r.data) for r in reversed(records)]

    def page(
        self, instance_id: str, upn: str, *, limit: int, continuation: str | None = None, newest_first: bool = False,
        agent_object_id: str | None = None,
    ) -> Page[AuditEvent]:
        """One page of one user's trail (or an internal owner's), oldest (or newest) first, with
        ``agent_object_id`` only that agent's events: one query of at most ``limit`` + 1 records,
        whatever the trail's length. ``InvalidInput`` for a foreign continuation token."""
        listing = "audit:newest" if newest_first else "audit:oldest"
        position = decode_token(listing, continuation)
        records = self._store.page_records(
            Partition(instance_id, upn), RecordKind.AUDIT, limit=check_page_size(limit) + 1,
            where={"agent_object_id": agent_object_id} if agent_object_id is not None else None,
            after=position[0] if position else None, descending=newest_first,
        )
        token = encode_token(listing, [records[limit - 1].id]) if len(records) > limit else None
        return Page([AuditEvent.from_data(r.data) for r in records[:limit]], token)
