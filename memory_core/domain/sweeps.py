"""What one run of the sweep reports: the requests it executed, and the approved ones it left for a later run, and why.

The sweep (``domain.custody_sweep``) leaves an approved request for the next run when a step of it fails, and goes on
with the others; the request stays approved, and its hold keeps hiding what it covers, until a run executes it. The report
names each one it left, so an operator (the HTTP answer, the CLI, the timer's log line) sees it without reading the
service log. Only what the run did is reported: leaving a request changes nothing about it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from memory_core.domain.deletion import DeletionKind, DeletionRequest, listed_id, shown_label, unreadable_message
from memory_core.domain.errors import Conflict, MemoryCoreError, TimedOut, Unavailable
from memory_core.domain.records import Record


class LeftReason(StrEnum):
    """Why a run left an approved request (each one a later run may resolve)."""

    #: A store operation ran past its deadline (Cosmos DB: ``COSMOS_OPERATION_TIMEOUT``, 20 s by default, retries
    #: included, such as a clear of many thousand entries on a throttled account; SQLite: its busy timeout).
    DEADLINE = "deadline"
    #: The store could not serve the run otherwise (unreachable, refusing the credential, throttling, busy writers).
    STORE_UNAVAILABLE = "store_unavailable"
    #: Another sweep was executing it at the same time (the next run sees its result), or the memory kept changing.
    CONFLICT = "conflict"
    #: The store refused a write of the run (such as Cosmos DB's 413), or another error of the service's family.
    REFUSED = "refused"
    #: The stored request cannot be read by this release (another layout): it waits for a release that reads it.
    UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class LeftRequest:
    """An approved request a run left, still approved: ``code`` and ``message`` are the failure's, as the service's
    errors are written for a caller (no secret, no memory text). ``upn`` and ``kind`` are None only for a request
    that cannot be read."""

    request_id: str
    instance_id: str
    upn: str | None
    kind: DeletionKind | None
    reason: LeftReason
    code: str
    message: str

    @staticmethod
    def failed(request: DeletionRequest, error: MemoryCoreError) -> LeftRequest:
        """``request``, left because a step of it raised ``error``."""
        return LeftRequest(request.id, request.instance_id, request.upn, request.kind, reason_for(error), error.code,
                           error.message)

    @staticmethod
    def unreadable(record: Record, error: Exception) -> LeftRequest:
        """The request ``record`` holds, which this release cannot read (``error``)."""
        return LeftRequest(
            listed_id(record), record.partition.instance_id,
            shown_label(record.data.get("upn")), None, LeftReason.UNREADABLE, "unreadable_request",
            unreadable_message(error),
        )


def reason_for(error: MemoryCoreError) -> LeftReason:
    """The reason a run that failed with ``error`` reports (most specific class first)."""
    if isinstance(error, TimedOut):
        return LeftReason.DEADLINE
    if isinstance(error, Unavailable):
        return LeftReason.STORE_UNAVAILABLE
    if isinstance(error, Conflict):
        return LeftReason.CONFLICT
    return LeftReason.REFUSED


@dataclass(slots=True)
class SweepResult:
    """One run: the requests it executed, in the order it executed them, and the approved ones it left for a later
    run, in the order it tried them (``left`` is empty when it executed every approved request it tried).

    A run given a bound (``Sweep.run``'s ``limit``) may stop before the end: ``remaining`` counts the approved
    requests it found and did not try (0 for a run that tried all), and ``continuation`` is set exactly when
    ``remaining`` is, to go on after the last it tried. A request ``left`` is never counted in ``remaining``."""

    executed: list[DeletionRequest] = field(default_factory=list)
    left: list[LeftRequest] = field(default_factory=list)
    remaining: int = 0
    continuation: str | None = None

    def summary(self, most: int = 20) -> str:
        """One line for a log: how many were executed and left, and the first ``most`` left (id, kind, reason)."""
        line = f"executed {len(self.executed)} deletion request(s), left {len(self.left)} for a later sweep"
        if not self.left:
            return line
        named = ", ".join(f"{left.request_id} ({left.kind or 'unknown kind'}: {left.reason})"
                          for left in self.left[:most])
        more = f" and {len(self.left) - most} more" if len(self.left) > most else ""
        return f"{line}: {named}{more}"
