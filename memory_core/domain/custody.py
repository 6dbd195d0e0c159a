"""Custody of deletion: requests hide, operators decide, the sweep erases.

``CustodyService`` files a user's or an operator's deletion requests (a clear, an import-replace, a forget, a purge),
each with holds that hide what it covers at once; lists them for operators (a page at a time, with the stored requests
this release cannot read in ``unreadable``); and takes an operator's decision: approval hands a pending request to the
sweep, rejection lifts its holds and the memory shows again. Nothing is erased before an operator approves, and
nothing expires by age. The sweep itself, its replayable steps and what a crash between them leaves, is
``domain.custody_sweep``; ``CustodyService.sweep`` runs it.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime, timedelta

from memory_core.domain import dismissals, journals, orphan_holds
from memory_core.domain.audit import AuditAction, AuditTrail
from memory_core.domain.budget import visible_entry
from memory_core.domain.custody_fence import FenceTaken, fence, forget_fence
from memory_core.domain.custody_sweep import (
    REJECTION_KIND,
    Sweep,
    SweepFault,
    audit_approval,
    close_rejection,
    lift_holds,
    no_fault,
    shared_hold,
)
from memory_core.domain.deletion import (
    DeletionKind,
    DeletionPage,
    DeletionRequest,
    DeletionStatus,
    UnreadableRequest,
    read_request,
    retained_record,
)
from memory_core.domain.dismissals import Dismissed
from memory_core.domain.erasures import ImmediateErasures
from memory_core.domain.errors import Conflict, NotFound
from memory_core.domain.models import SHARED_OWNER, Hold, MemoryEntry, ProfileKey
from memory_core.domain.orphan_holds import OrphanHoldPage, Released
from memory_core.domain.paging import check_page_size, decode_token, encode_token
from memory_core.domain.records import Partition, Record, RecordKind, deletions_partition
from memory_core.domain.seals import erase_file_names
from memory_core.domain.store import MemoryStore
from memory_core.domain.sweeps import SweepResult
from memory_core.domain.views import ContentScanner, refuse_operator_text

log = logging.getLogger("memory_core.custody")

_DECIDE_ATTEMPTS = 5  # reads of a request a decision makes while other writes keep changing it


class CustodyService:
    """Deletion requests, operator decisions and the sweep."""

    def __init__(
        self,
        store: MemoryStore,
        audit: AuditTrail,
        *,
        clock: Callable[[], datetime],
        new_id: Callable[[], str],
        fault: SweepFault = no_fault,
        finished_retention: timedelta | None = None,
        scanner: ContentScanner | None = None,
    ) -> None:
        """``finished_retention``: how long executed and rejected requests are kept (None: forever).
        Pending and approved requests, and holds, never expire. ``scanner``: the secret screen
        writes pass through; ``reject`` runs the operator's reason through it.
        """
        self._store = store
        self._scanner = scanner
        self._finished_retention = finished_retention
        self._audit = audit
        self._clock = clock
        self._new_id = new_id
        self.erasures = ImmediateErasures(store, audit, self.erase_file_names, clock=clock)
        # ``fault``: a test seam, called between the sweep's steps so a crash can be injected.
        self._sweep = Sweep(store, audit, self.erasures, clock=clock, fault=fault,
                            finished_retention=finished_retention)
        self._sweep.replay_also(self._replay_rejections)
        self._sweep.replay_also(lambda instance_id: dismissals.replay(store, audit, instance_id, clock=clock))

    # -- requests -------------------------------------------------------------

    def replay_also(self, replay: Callable[[str | None], object]) -> None:
        """Have every sweep run ``replay`` (of one instance, or None: all) after the immediate erasures: another
        journal of work a crash can interrupt (``domain.file_retirements``)."""
        self._sweep.replay_also(replay)

    def fence(
        self, instance_id: str, upn: str, *, exclusive: str | None = None, claims: Collection[str] = (),
    ) -> AbstractContextManager[frozenset[str]]:
        """Hold ``upn``'s memory-tool edits back while a deletion chooses what it covers and writes it
        (``domain.custody_fence``): every request and immediate erasure of their memory is made inside one.
        ``exclusive``: ``FenceTaken`` while another fence so named stands (``forget_fence`` names a forget's).
        ``claims``: names stood alike where free; the block gets those another fence stands (their deletions are
        another's to make)."""
        return fence(self._store, instance_id, upn, clock=self._clock, exclusive=exclusive, claims=claims)

    def request_clear(self, actor: str, key: ProfileKey) -> DeletionRequest:
        """Hide everything now in ``key``'s scope until an operator decides."""
        now = self._clock()
        request = self._new_request(
            actor, key.instance_id, key.upn, DeletionKind.CLEAR, now,
            scope=key.scope.value, agent_object_id=key.agent_object_id,
            profile_ids=(key.profile_id,), watermark=now,
        )
        self._open(request, AuditAction.CLEAR_REQUESTED)
        return request

    def request_replace(self, actor: str, key: ProfileKey, watermark: datetime) -> DeletionRequest:
        """Hide what ``key``'s scope held up to ``watermark`` (an import replacing it) until an operator decides.

        Entries written after ``watermark`` - the import's own content included - stay visible.
        """
        request = self._new_request(
            actor, key.instance_id, key.upn, DeletionKind.REPLACE, self._clock(),
            scope=key.scope.value, agent_object_id=key.agent_object_id,
            profile_ids=(key.profile_id,), watermark=watermark,
        )
        self._open(request, AuditAction.REPLACE_REQUESTED)
        return request

    def request_forget(self, actor: str, entry: MemoryEntry) -> DeletionRequest:
        """Hide one entry until an operator decides."""
        key = entry.key
        request = self._new_request(
            actor, key.instance_id, key.upn, DeletionKind.FORGET, self._clock(),
            scope=key.scope.value, agent_object_id=key.agent_object_id, entry_id=entry.id,
            profile_ids=(key.profile_id,),
        )
        self._open(request, AuditAction.FORGET_REQUESTED, entry_id=entry.id,
                   content_sha256=entry.content_sha256, byte_count=len(entry.content_markdown.encode("utf-8")))
        return request

    def request_forget_of(self, actor: str, instance_id: str, upn: str, entry_id: str) -> DeletionRequest:
        """An operator's request to forget one of ``upn``'s visible entries (``hidden_text_scan`` names them).

        Pending like a person's own forget, in either deletion mode: an operator approves it and the
        sweep erases it. ``NotFound`` when ``upn`` has no visible entry by that id (one a pending request
        already hides included).
        """
        try:
            with self.fence(instance_id, upn, exclusive=forget_fence(entry_id)):
                entry = visible_entry(self._store, instance_id, upn, entry_id)
                if entry is None:
                    raise NotFound(f"no memory entry {entry_id} of {upn}")
                return self.request_forget(actor, entry)
        except FenceTaken:  # another forget of it is under way: it hides the entry (the next call hears the same)
            raise NotFound(f"no memory entry {entry_id} of {upn}") from None

    def request_purge(self, actor: str, instance_id: str, upn: str) -> DeletionRequest:
        """Hide all of one user's memory in the instance until an operator decides."""
        with self.fence(instance_id, upn):
            now = self._clock()
            request = self._new_request(actor, instance_id, upn, DeletionKind.PURGE, now, watermark=now)
            self._open(request, AuditAction.PURGE_REQUESTED)
        return request

    def _new_request(
        self, actor: str, instance_id: str, upn: str, kind: DeletionKind, now: datetime, **fields: object
    ) -> DeletionRequest:
        return DeletionRequest(
            id=self._new_id(), instance_id=instance_id, upn=upn, kind=kind, status=DeletionStatus.PENDING,
            requested_by=actor, requested_on=now, **fields,  # type: ignore[arg-type]
        )

    def _open(self, request: DeletionRequest, action: AuditAction, **audit_fields: object) -> None:
        # The request is stored before the holds: a crash between them leaves a
        # visible request an operator can still decide, never a hidden orphan.
        self._store.put_record(request.to_record())
        hold = Hold(request.id, request.profile_ids, request.watermark,
                    (request.entry_id,) if request.entry_id else ())
        self._store.put_record(Record(Partition(request.instance_id, request.upn), RecordKind.HOLD, request.id,
                                      hold.to_data()))
        # The user's team-shared copies are hidden with the originals (only that author's copies); the sweep
        # erases them by the same hold, made again from the request, should a crash have kept this one unwritten.
        self._store.put_record(Record(Partition(request.instance_id, SHARED_OWNER), RecordKind.HOLD, request.id,
                                      shared_hold(request).to_data()))
        self._audit.record(action, actor=request.requested_by, instance_id=request.instance_id, upn=request.upn,
                           scope=request.scope, agent_object_id=request.agent_object_id, request_id=request.id,
                           **audit_fields)

    # -- operator decisions -----------------------------------------------------

    def list(self, instance_id: str, status: DeletionStatus | None = None) -> list[DeletionRequest]:
        """Every request of the instance (with ``status``), oldest first. Unbounded: prefer ``page``."""
        where = {"status": status.value} if status is not None else None
        records = self._store.query_records(deletions_partition(instance_id), RecordKind.DELETION_REQUEST, where)
        return [DeletionRequest.from_record(r) for r in records]

    def page(
        self, instance_id: str, status: DeletionStatus | None, *, limit: int, continuation: str | None = None,
        upn: str | None = None,
    ) -> DeletionPage:
        """One page of the instance's requests (with ``status``; of user ``upn`` only when given),
        oldest first: one query. A stored request this release cannot read is in ``unreadable``.

        ``InvalidInput`` for a continuation token another listing made: one user's listing
        does not continue the instance's, nor the other way round.
        """
        listing = f"{'own-' if upn is not None else ''}deletions:{status.value if status else 'all'}"
        position = decode_token(listing, continuation)
        where = {"status": status.value} if status is not None else {}
        if upn is not None:
            where["upn"] = upn
        records = self._store.page_records(
            deletions_partition(instance_id), RecordKind.DELETION_REQUEST, limit=check_page_size(limit) + 1,
            where=where or None, after=position[0] if position else None,
        )
        token = encode_token(listing, [records[limit - 1].id]) if len(records) > limit else None
        return DeletionPage.of(records[:limit], token)

    def get(self, instance_id: str, request_id: str) -> DeletionRequest:
        """The request by its id. ``NotFound`` when there is none; ``Conflict`` (code ``unreadable_request``) for
        one this release cannot read (another layout): it is listed, but deciding it needs a release that reads
        it."""
        records = self._store.query_records(
            deletions_partition(instance_id), RecordKind.DELETION_REQUEST, {"id": request_id}, limit=1
        )
        if not records:
            raise NotFound(f"no deletion request {request_id} in instance {instance_id}")
        read = read_request(records[0])
        if isinstance(read, UnreadableRequest):
            raise Conflict(f"{read.message}: deciding it needs a release that reads it", code="unreadable_request")
        return read

    def approve(self, operator: str, instance_id: str, request_id: str) -> DeletionRequest:
        """Hand a pending request to the sweep. ``Conflict`` unless it is pending."""
        request = self._decide(operator, instance_id, request_id, DeletionStatus.APPROVED, None)
        # After the decision, never before: an event written first would stand for a decision that lost the race
        # to another (``not_pending``). A crash between the two is made good by the sweep, which writes the same
        # event (one record: dated by the decision, named by the request) before it executes the request.
        audit_approval(self._audit, request)
        return request

    def reject(self, operator: str, instance_id: str, request_id: str, reason: str) -> DeletionRequest:
        """Refuse a pending request and show its entries again.

        Raises ``HiddenText`` or ``SecretDetected`` (where "reason"), deciding nothing, when the reason
        holds text no reader sees or looks like it holds a secret: it is kept with the request and shown
        in the user's own audit trail. ``NotFound`` for an unknown request, ``Conflict`` for one no longer
        pending.
        """
        refuse_operator_text(self._scanner, reason, "reason")
        pending = _pending(self.get(instance_id, request_id))
        # Journaled before the decision: a rejected request is no sweep's to execute, so holds a crash kept after
        # the decision would hide its memory for good; the sweep lifts them from this record (``_replay_rejections``).
        # It names the request's user, whose partition (and the team-shared one) holds them: the sweep lifts them
        # even once the rejected request has expired (retention; Cosmos DB's ttl needs no sweep) and names no one.
        journal = Record(deletions_partition(instance_id), REJECTION_KIND, request_id,
                         {"request_id": request_id, "started_on": self._clock().isoformat(), "upn": pending.upn,
                          "operator": operator})
        self._store.put_record(journal)
        try:
            request = self._decide(operator, instance_id, request_id, DeletionStatus.REJECTED, reason, read=pending)
        except NotFound:  # gone since it was read: nothing to finish (one decided already is left to the sweep)
            close_rejection(self._store, instance_id, request_id)
            raise
        self._finish_rejection(request)
        return request

    def dismiss_unreadable(self, operator: str, instance_id: str, request_id: str, *,
                           force: bool = False) -> Dismissed:
        """Erase the stored request ``request_id`` only while this release cannot read it, and audit it
        (``domain.dismissals``: its holds stay; journaled, so a crash after the erasure leaves the event to the
        sweep). ``NotFound`` for none; ``Conflict`` ``readable_request`` for one this release reads (decide it
        instead), ``holds_standing`` for one whose holds still stand unless ``force``; both untouched."""
        return dismissals.dismiss_unreadable(self._store, self._audit, operator, instance_id, request_id,
                                             clock=self._clock, force=force)

    def orphan_holds(self, instance_id: str, *, limit: int, continuation: str | None = None) -> OrphanHoldPage:
        """One page of the holds whose deletion request is no longer stored (``domain.orphan_holds``): ids only.
        ``InvalidInput`` for a limit outside 1-100 or another listing's continuation."""
        return orphan_holds.orphan_page(self._store, instance_id, limit, continuation)

    def release_orphan_hold(self, operator: str, instance_id: str, upn: str, request_id: str, *,
                            must_stand: bool = False) -> Released:
        """Lift the holds ``request_id`` left on ``upn``'s memory once that request is gone, audited
        (``domain.orphan_holds.release``): the memory shows again. ``Conflict`` ``hold_not_orphaned`` while the
        request is stored; 0 released when none stands, or with ``must_stand`` ``NotFound`` ``hold_not_found``."""
        return orphan_holds.release(self._store, self._audit, operator, instance_id, upn, request_id,
                                    must_stand=must_stand)

    def _finish_rejection(self, request: DeletionRequest) -> None:
        """Lift a rejected request's holds, audit the rejection and close its journal; safe to run again: the event
        is one record whoever writes it (its id made from the decision's time and the request)."""
        lift_holds(self._store, request)
        self._audit.record(AuditAction.DELETION_REJECTED, actor=str(request.decided_by), instance_id=request.instance_id,
                           upn=request.upn, scope=request.scope, agent_object_id=request.agent_object_id,
                           request_id=request.id, detail=request.reason, at=request.decided_on,
                           suffix=f"rejected-{request.id}")
        close_rejection(self._store, request.instance_id, request.id)

    def _replay_rejections(self, instance_id: str | None) -> int:
        """The sweep's step for rejections a crash interrupted (``domain.journals``): a request found rejected has its
        holds lifted and its event written; one still pending (the crash came first), or decided otherwise, keeps
        its holds; one no longer stored (rejected, then expired before a sweep finished it) has the holds still
        standing on the journal's user lifted (``_release_after_expiry``)."""
        def finish(record: Record) -> None:
            instance, request_id = record.partition.instance_id, str(record.data["request_id"])
            try:
                request: DeletionRequest | None = self.get(instance, request_id)
            except NotFound:
                request = None
                self._release_after_expiry(record, request_id)
            except Conflict:  # one this release cannot read: not this release's to lift
                request = None
            if request is not None and request.status is DeletionStatus.REJECTED:
                self._finish_rejection(request)
            else:
                close_rejection(self._store, instance, record.id)

        return journals.replay(self._store, REJECTION_KIND, instance_id, clock=self._clock,
                               wait=lambda record: timedelta(0), finish=finish)

    def _release_after_expiry(self, journal: Record, request_id: str) -> None:
        """Lift the holds of a rejection's request that is no longer stored, from its journal's user
        (``orphan_holds.release``: only while no request of that id is stored, audited ``hold_released``): the
        rejection stopped after its decision and before it lifted them, and the rejected request expired before a
        sweep finished it. A journal an earlier release wrote names no user: its holds stay, listed as orphans for
        an operator to release. A request executed, then expired, left none standing: nothing is written."""
        upn = journal.data.get("upn")
        if not isinstance(upn, str) or not upn:
            log.warning("rejection journal %s names no user: the holds of deletion request %s, no longer stored, are "
                        "left to an operator (orphan holds)", journal.id, request_id)
            return
        operator = journal.data.get("operator")
        by = f" by {operator}" if isinstance(operator, str) else ""
        orphan_holds.release(self._store, self._audit, "sweep", journal.partition.instance_id, upn, request_id,
                             cause=f"lifted by the sweep finishing a rejection{by} stopped before it lifted them")

    def _decide(
        self, operator: str, instance_id: str, request_id: str, status: DeletionStatus, reason: str | None,
        *, read: DeletionRequest | None = None,
    ) -> DeletionRequest:
        """``request_id`` decided: ``Conflict`` (code ``not_pending``) unless it is pending, the same answer on
        either store when another decision got there first (one decision wins). ``read``: the request as just read,
        taken for the first attempt."""
        for _ in range(_DECIDE_ATTEMPTS):
            request = _pending(read if read is not None else self.get(instance_id, request_id))
            read = None
            decided = request.with_status(status, decided_by=operator, decided_on=self._clock(), reason=reason)
            try:
                # etag: a concurrent decision conflicts
                stored = self._store.put_record(retained_record(decided, self._clock, self._finished_retention))
            except Conflict:
                # Another write changed the record since it was read (Cosmos DB's etag; SQLite's writes wait for
                # each other instead): read it again, so the loser of two decisions hears "not pending" as a later
                # call would, and a write that left it pending (the record rewritten as it was) is decided anew.
                continue
            return replace(decided, etag=stored.etag)
        raise Conflict(f"deletion request {request_id} kept changing while it was being decided; try again")

    # -- the sweep ------------------------------------------------------------------

    def sweep(self, actor: str = "sweep", instance_id: str | None = None, *, limit: int | None = None,
              continuation: str | None = None) -> SweepResult:
        """Execute every approved request (of one instance, or all), or at most ``limit`` of them after
        ``continuation`` (``Sweep.run``), and finish the immediate erasures a crash or an outage left
        (``domain.erasures``). Answers the requests executed and, with the reason, the approved ones left for a later
        run (``domain.sweeps``): a step that failed, or a request this release cannot read
        (``domain.custody_sweep``); and, for a bounded run, how many it did not reach."""
        return self._sweep.run(actor, instance_id, limit=limit, continuation=continuation)

    def erase_file_names(
        self, instance_id: str, upn: str, agent_object_ids: builtins.list[str | None] | None,
        made_by: datetime | None, entry_ids: builtins.list[str],
    ) -> None:
        """``seals.erase_file_names`` on this service's store: what an erasure took leaves ``upn``'s file index."""
        erase_file_names(self._store, instance_id, upn, agent_object_ids, made_by, entry_ids)


def _pending(request: DeletionRequest) -> DeletionRequest:
    """``request`` when it is pending; else ``Conflict`` ``not_pending`` (only a pending request is decided)."""
    if request.status is not DeletionStatus.PENDING:
        raise Conflict(f"deletion request {request.id} is {request.status.value}, not pending", code="not_pending")
    return request
