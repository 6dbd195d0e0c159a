"""Records: small JSON documents the custody features keep beside memory entries.

Deletion requests, holds, audit events and settings are all records. A record
lives in a ``Partition`` - the owner's ``(instance_id, upn)`` or a reserved
owner name starting with "~" - so a Cosmos DB store reaches each kind with a
single-partition query. A record's kind is a name in the code, of lowercase letters, digits and underscores (at
most 40; ``RECORD_KIND``): a ``Record`` of any other raises ``ValueError`` when it is made, so no store writes a
kind it cannot read back (the SQLite store writes the kind into its statements).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory_core.domain.identity import internal_owner

# Internal partition owners ("~name"): no caller's UPN can take this form
# (memory_core.domain.identity.caller_upn), so no caller can name them.
SYSTEM_INSTANCE = internal_owner("system")
DELETIONS_OWNER = internal_owner("deletions")


class RecordKind:
    HOLD = "hold"
    DELETION_REQUEST = "deletion_request"
    AUDIT = "audit"
    KEYED_ENTRY = "keyed_entry"
    TEAM_COPY = "team_copy"  # a team copy's mark in the shared partition (``domain.team_copies``)


@dataclass(frozen=True, slots=True)
class Partition:
    instance_id: str
    owner: str


@dataclass(frozen=True, slots=True)
class Record:
    """A JSON document. ``etag`` is set by the store on read and write.

    ``expires_on`` (None: never) is when the store may erase it: Cosmos DB by the
    item's own ``ttl``, SQLite at the next sweep after that moment. Only audit
    events and finished deletion requests carry one (retention); holds, pending
    and approved requests never do. Stores do not hand it back on read.
    """

    partition: Partition
    kind: str
    id: str
    data: dict[str, Any] = field(default_factory=dict)
    etag: str | None = None
    expires_on: datetime | None = None

    def __post_init__(self) -> None:
        if not RECORD_KIND.fullmatch(self.kind):
            raise ValueError(f"not a record kind: {self.kind!r}")


RECORD_KIND = re.compile(r"[a-z0-9_]{1,40}")
"""What a record's kind may be: a name in the code, never a caller's value."""


def deletions_partition(instance_id: str) -> Partition:
    """Where an instance's deletion requests live: one partition per instance, so no
    partition collects every instance's requests, and an instance's listing (pending
    ones included) is one single-partition query per page. Finished requests expire
    (``MEMORY_DELETION_RETENTION_DAYS``), so the partition does not grow forever."""
    return Partition(instance_id, DELETIONS_OWNER)


ABSENT = "<absent>"
"""The etag of a record that was read as missing. ``MemoryStore.put_record`` and ``put_records``
write a record carrying it only while still no record has its id (``Conflict`` otherwise)."""


def appended_records(records: Sequence[Record]) -> tuple[list[Record], list[Record]]:
    """``records`` of an append (``MemoryStore.append_with_records``): those it creates only (etag ``ABSENT``),
    then those it puts (no etag), each in order. ``ValueError`` for another etag: an append replaces no record
    If-Match a version read."""
    if any(r.etag not in (None, ABSENT) for r in records):
        raise ValueError("append_with_records writes records with no etag (put) or ABSENT (create only)")
    return [r for r in records if r.etag == ABSENT], [r for r in records if r.etag is None]


def check_put_records(records: Sequence[Record]) -> None:
    """Raise ``ValueError`` unless ``records`` may be written together (``MemoryStore.put_records``):
    one partition, no hold (holds move the partition's stamp)."""
    if len({r.partition for r in records}) > 1:
        raise ValueError("put_records takes the records of one partition")
    if any(r.kind == RecordKind.HOLD for r in records):
        raise ValueError("put_records writes no hold")


def check_delete_record_and_put(erased: Record, written: Record) -> None:
    """Raise ``ValueError`` unless ``erased`` may be erased together with writing ``written``
    (``MemoryStore.delete_record_and_put``): one partition, no hold, ``erased`` read with its etag."""
    check_put_records([erased, written])
    if erased.etag in (None, ABSENT):
        raise ValueError("delete_record_and_put erases a record If-Match the etag it was read with")
