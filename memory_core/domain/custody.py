"""Custody of deletion: requests hide, operators decide, the sweep erases.

Nothing is erased before an operator approves, and nothing expires by age.
The sweep is idempotent and safe to crash and re-run at any step:

1. plan   - the entries the request's hold covers are found, and on the first run
            counted in the request (the entries are never listed in it: a clear of
            16,000 entries would pass Cosmos DB's 2 MB item);
2. erase  - the user's memory tool file index loses the names of those entries, then
            the entries are erased (erasing twice erases nothing more);
3. seal   - a clear moves the profile's watermark, a purge erases the profiles of the scopes
            it emptied, and the file index loses the directories and whitespace-only
            files the request hid (``domain.seals``);
4. unhold - the hold that hid the entries is removed;
5. done   - the request is marked executed with the first run's counts.

Until step 4 the hold still hides every covered entry, so a read never sees a
half-erased scope. A re-run after a crash finds again what the hold covers and is
still stored, so a request is never executed twice with different results, and an
entry's name leaves the index before the entry: no run erases an entry whose name
the next run could no longer find.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime, timedelta

from memory_core.domain.audit import AuditAction, AuditTrail
from memory_core.domain.budget import is_visible
from memory_core.domain.custody_fence import FenceTaken, fence, forget_fence
from memory_core.domain.deletion import (
    DeletionKind,
    DeletionPage,
    DeletionRequest,
    DeletionStatus,
    PlannedErase,
    UnreadableRequest,
    read_request,
)
from memory_core.domain.erasures import ImmediateErasures
from memory_core.domain.errors import Conflict, MemoryCoreError, NotFound
from memory_core.domain.models import (
    SHARED_OWNER,
    Hold,
    MemoryEntry,
    ProfileKey,
    Scope,
    shared_copy_id,
)
from memory_core.domain.paging import check_page_size, decode_token, encode_token
from memory_core.domain.records import DELETIONS_OWNER, Partition, Record, RecordKind, deletions_partition
from memory_core.domain.seals import erase_file_names, erase_request_file_names, seal
from memory_core.domain.store import MemoryStore
from memory_core.domain.sweeps import LeftRequest, SweepResult
from memory_core.domain.views import ContentScanner, refuse_operator_text

log = logging.getLogger("memory_core.custody")

SweepFault = Callable[[str, DeletionRequest], None]

_DECIDE_ATTEMPTS = 5  # reads of a request a decision makes while other writes keep changing it


def _no_fault(step: str, request: DeletionRequest) -> None:
    return None


class CustodyService:
    """Deletion requests, operator decisions and the sweep."""

    def __init__(
        self,
        store: MemoryStore,
        audit: AuditTrail,
        *,
        clock: Callable[[], datetime],
        new_id: Callable[[], str],
        fault: SweepFault = _no_fault,
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
        # A test seam: called between the sweep's steps so a crash can be injected.
        self._fault = fault
        self.erasures = ImmediateErasures(store, audit, self.erase_file_names, clock=clock)
        self._replays: list[Callable[[str | None], object]] = []

    # -- requests -------------------------------------------------------------

    def replay_also(self, replay: Callable[[str | None], object]) -> None:
        """Have every sweep run ``replay`` (of one instance, or None: all) after the immediate erasures: another
        journal of work a crash can interrupt (``domain.file_retirements``)."""
        self._replays.append(replay)

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
        self._open(request, AuditAction.CLEAR_REQUESTED, shared=Hold(request.id, (key.shared().profile_id,), now))
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
        self._open(request, AuditAction.REPLACE_REQUESTED,
                   shared=Hold(request.id, (key.shared().profile_id,), watermark))
        return request

    def request_forget(self, actor: str, entry: MemoryEntry) -> DeletionRequest:
        """Hide one entry until an operator decides."""
        key = entry.key
        request = self._new_request(
            actor, key.instance_id, key.upn, DeletionKind.FORGET, self._clock(),
            scope=key.scope.value, agent_object_id=key.agent_object_id, entry_id=entry.id,
            profile_ids=(key.profile_id,),
        )
        shared = Hold(request.id, (key.shared().profile_id,), None, (shared_copy_id(entry.id),))
        self._open(request, AuditAction.FORGET_REQUESTED, shared=shared, entry_id=entry.id,
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
                entry = self._store.get_entry(instance_id, upn, entry_id)
                if entry is None or not is_visible(self._store, entry):
                    raise NotFound(f"no memory entry {entry_id} of {upn}")
                return self.request_forget(actor, entry)
        except FenceTaken:  # another forget of it is under way: it hides the entry (the next call hears the same)
            raise NotFound(f"no memory entry {entry_id} of {upn}") from None

    def request_purge(self, actor: str, instance_id: str, upn: str) -> DeletionRequest:
        """Hide all of one user's memory in the instance until an operator decides."""
        with self.fence(instance_id, upn):
            now = self._clock()
            request = self._new_request(actor, instance_id, upn, DeletionKind.PURGE, now, watermark=now)
            self._open(request, AuditAction.PURGE_REQUESTED, shared=Hold(request.id, None, now))
        return request

    def _new_request(
        self, actor: str, instance_id: str, upn: str, kind: DeletionKind, now: datetime, **fields: object
    ) -> DeletionRequest:
        return DeletionRequest(
            id=self._new_id(), instance_id=instance_id, upn=upn, kind=kind, status=DeletionStatus.PENDING,
            requested_by=actor, requested_on=now, **fields,  # type: ignore[arg-type]
        )

    def _open(self, request: DeletionRequest, action: AuditAction, *, shared: Hold, **audit_fields: object) -> None:
        # The request is stored before the holds: a crash between them leaves a
        # visible request an operator can still decide, never a hidden orphan.
        self._store.put_record(request.to_record())
        hold = Hold(request.id, request.profile_ids, request.watermark,
                    (request.entry_id,) if request.entry_id else ())
        self._store.put_record(Record(Partition(request.instance_id, request.upn), RecordKind.HOLD, request.id,
                                      hold.to_data()))
        # The user's team-shared copies are hidden with the originals (only that author's copies).
        shared_hold = Hold(shared.request_id, shared.profile_ids, shared.watermark, shared.entry_ids, request.upn)
        self._store.put_record(Record(Partition(request.instance_id, SHARED_OWNER), RecordKind.HOLD, request.id,
                                      shared_hold.to_data()))
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
        self._audit.record(AuditAction.DELETION_APPROVED, actor=operator, instance_id=instance_id, upn=request.upn,
                           scope=request.scope, agent_object_id=request.agent_object_id, request_id=request.id)
        return request

    def reject(self, operator: str, instance_id: str, request_id: str, reason: str) -> DeletionRequest:
        """Refuse a pending request and show its entries again.

        Raises ``HiddenText`` or ``SecretDetected`` (where "reason"), deciding nothing, when the reason
        holds text no reader sees or looks like it holds a secret: it is kept with the request and shown
        in the user's own audit trail. ``NotFound`` for an unknown request, ``Conflict`` for one no longer
        pending.
        """
        refuse_operator_text(self._scanner, reason, "reason")
        request = self._decide(operator, instance_id, request_id, DeletionStatus.REJECTED, reason)
        self._unhold(request)
        self._audit.record(AuditAction.DELETION_REJECTED, actor=operator, instance_id=instance_id, upn=request.upn,
                           scope=request.scope, agent_object_id=request.agent_object_id, request_id=request.id,
                           detail=reason)
        return request

    def _decide(
        self, operator: str, instance_id: str, request_id: str, status: DeletionStatus, reason: str | None
    ) -> DeletionRequest:
        """``request_id`` decided: ``Conflict`` (code ``not_pending``) unless it is pending, the same answer on
        either store when another decision got there first (one decision wins)."""
        for _ in range(_DECIDE_ATTEMPTS):
            request = self.get(instance_id, request_id)
            if request.status is not DeletionStatus.PENDING:
                raise Conflict(f"deletion request {request_id} is {request.status.value}, not pending",
                               code="not_pending")
            decided = request.with_status(status, decided_by=operator, decided_on=self._clock(), reason=reason)
            try:
                stored = self._store.put_record(self._retained(decided))  # etag: a concurrent decision conflicts
            except Conflict:
                # Another write changed the record since it was read (Cosmos DB's etag; SQLite's writes wait for
                # each other instead): read it again, so the loser of two decisions hears "not pending" as a later
                # call would, and a write that left it pending (the record rewritten as it was) is decided anew.
                continue
            return replace(decided, etag=stored.etag)
        raise Conflict(f"deletion request {request_id} kept changing while it was being decided; try again")

    # -- the sweep ------------------------------------------------------------------

    def sweep(self, actor: str = "sweep", instance_id: str | None = None) -> SweepResult:
        """Execute every approved request (of one instance, or all), and finish the immediate erasures a crash or an
        outage left (``domain.erasures``). Answers the requests executed and, with the reason, the approved ones left
        for a later run (``domain.sweeps``): a step that failed, or a request this release cannot read."""
        self.erasures.replay(instance_id)
        for replay in self._replays:
            replay(instance_id)
        where = {"status": DeletionStatus.APPROVED.value}
        if instance_id is not None:
            records = self._store.query_records(deletions_partition(instance_id), RecordKind.DELETION_REQUEST, where)
        else:  # the scheduled sweep: every instance, one cross-partition query
            records = self._store.query_records_of_owner(DELETIONS_OWNER, RecordKind.DELETION_REQUEST, where)
        readable, left = _readable(records)
        result = SweepResult([], left)
        for request in sorted(readable, key=lambda r: (r.decided_on or r.requested_on, r.id)):
            try:
                result.executed.append(self._execute(actor, request))
            except Conflict as error:  # another sweep got there first (the next run sees its result), or a race
                log.info("approved deletion request %s was left for the next sweep: %r", request.id, error)
                result.left.append(LeftRequest.failed(request, error))
            except MemoryCoreError as error:  # left for the next run: one that keeps failing holds up no other
                log.warning("approved deletion request %s was left for the next sweep: %r", request.id, error)
                result.left.append(LeftRequest.failed(request, error))
        # Retention's sweep step (SQLite; Cosmos DB expires items by their ttl itself).
        self._store.erase_expired_records(self._clock())
        return result

    def _execute(self, actor: str, request: DeletionRequest) -> DeletionRequest:
        """Erase what ``request`` covers, seal it, lift its holds, then record it executed. Each step can run again:
        what is covered is found from the request's own hold each time (never stored: a clear of 16,000 entries
        would pass Cosmos DB's 2 MB item), and the names of covered entries leave the file index before the entries
        do, so a run that stopped after erasing them left no name to find again."""
        plan, profiles = (request.plan, 0) if request.plan is not None else self._covered(request)
        if request.erased_entries is None:  # its first run (a plan stored by an earlier release came counted)
            request = self._counted(request, plan, profiles)
        self._fault("planned", request)
        erase_request_file_names(self._store, request, [item.entry_id for item in plan if item.owner is None])
        keys: dict[tuple[str | None, str], tuple[PlannedErase, list[str]]] = {}
        for item in plan:
            keys.setdefault((item.owner, item.profile_id), (item, []))[1].append(item.entry_id)
        for item, entry_ids in keys.values():
            self._store.delete_entries(self._key(request, item.scope, item.agent_object_id, item.owner), entry_ids)
        self._fault("erased", request)
        seal(self._store, request)
        self._fault("sealed", request)
        self._unhold(request)
        self._fault("unheld", request)
        done = request.with_status(DeletionStatus.EXECUTED, executed_on=self._clock(), plan=None)
        stored = self._store.put_record(self._retained(done))
        self._audit.record(AuditAction.DELETION_EXECUTED, actor=actor, instance_id=request.instance_id,
                           upn=request.upn, scope=request.scope, agent_object_id=request.agent_object_id,
                           request_id=request.id,
                           detail=f"erased {done.erased_entries} entries, {done.erased_profiles} profiles")
        return replace(done, etag=stored.etag)

    def _retained(self, request: DeletionRequest) -> Record:
        """The request's record, expiring after the retention once it is finished."""
        record = request.to_record()
        finished = request.status in (DeletionStatus.EXECUTED, DeletionStatus.REJECTED)
        if not finished or self._finished_retention is None:
            return record
        return replace(record, expires_on=self._clock() + self._finished_retention)

    def _covered(self, request: DeletionRequest) -> tuple[tuple[PlannedErase, ...], int]:
        """The entries ``request``'s hold covers that are still stored (the user's, then their team-shared copies),
        and how many profiles of the user a purge erases."""
        hold = Hold(request.id, request.profile_ids, request.watermark,
                    (request.entry_id,) if request.entry_id else ())
        if request.kind is DeletionKind.FORGET and request.entry_id:
            return self._forgotten(request, hold), 0
        states = self._store.load_partition(request.instance_id, request.upn)
        plan = [
            PlannedErase(e.key.profile_id, e.key.scope.value, e.key.agent_object_id, e.id)
            for state in states
            for e in state.entries
            if hold.covers(e)
        ]
        shared_states = self._store.load_partition(request.instance_id, SHARED_OWNER)
        # Every state of a partition carries the same holds.
        shared_hold = next((h for h in (shared_states[0].holds if shared_states else ()) if h.request_id == request.id), None)
        if shared_hold is not None:
            plan += [
                PlannedErase(e.key.profile_id, e.key.scope.value, e.key.agent_object_id, e.id, SHARED_OWNER)
                for state in shared_states
                for e in state.entries
                if shared_hold.covers(e)
            ]
        return tuple(plan), len(states) if request.kind is DeletionKind.PURGE else 0

    def _forgotten(self, request: DeletionRequest, hold: Hold) -> tuple[PlannedErase, ...]:
        """A forget's plan from two point reads (the entry, its team-shared copy), not from the user's whole memory:
        a sweep of many forgets (a directory deleted file by file) would read a large partition once per file."""
        entry_id = str(request.entry_id)
        plan = []
        entry = self._store.get_entry(request.instance_id, request.upn, entry_id)
        if entry is not None and hold.covers(entry):
            plan.append(PlannedErase(entry.key.profile_id, entry.key.scope.value, entry.key.agent_object_id, entry.id))
        copy = self._store.get_entry(request.instance_id, SHARED_OWNER, shared_copy_id(entry_id))
        if copy is not None and copy.author_upn == request.upn:  # only that author's copy (the shared hold's rule)
            plan.append(PlannedErase(copy.key.profile_id, copy.key.scope.value, copy.key.agent_object_id, copy.id,
                                     SHARED_OWNER))
        return tuple(plan)

    def _counted(self, request: DeletionRequest, plan: tuple[PlannedErase, ...], profiles: int) -> DeletionRequest:
        """``request`` with what its first run erases counted and stored (a later run finds less still stored)."""
        own_entries = sum(1 for item in plan if item.owner is None)
        counted = replace(request, erased_entries=own_entries, erased_profiles=profiles)
        stored = self._store.put_record(counted.to_record())
        return replace(counted, etag=stored.etag)

    def erase_file_names(
        self, instance_id: str, upn: str, agent_object_ids: builtins.list[str | None] | None,
        made_by: datetime | None, entry_ids: builtins.list[str],
    ) -> None:
        """``seals.erase_file_names`` on this service's store: what an erasure took leaves ``upn``'s file index."""
        erase_file_names(self._store, instance_id, upn, agent_object_ids, made_by, entry_ids)

    def _unhold(self, request: DeletionRequest) -> None:
        self._store.delete_record(Partition(request.instance_id, request.upn), RecordKind.HOLD, request.id)
        self._store.delete_record(Partition(request.instance_id, SHARED_OWNER), RecordKind.HOLD, request.id)

    @staticmethod
    def _key(request: DeletionRequest, scope: str, agent_object_id: str | None, owner: str | None = None) -> ProfileKey:
        return ProfileKey(request.instance_id, owner or request.upn, Scope(scope), agent_object_id)


def _readable(records: builtins.list[Record]) -> tuple[builtins.list[DeletionRequest], builtins.list[LeftRequest]]:
    """The requests ``records`` hold, and those that cannot be read (another layout): logged and left."""
    requests, left = [], []
    for record in records:
        try:
            requests.append(DeletionRequest.from_record(record))
        except (KeyError, TypeError, ValueError) as error:
            log.warning("deletion request record %s cannot be read and was left: %r", record.id, error)
            left.append(LeftRequest.unreadable(record, error))
    return requests, left
