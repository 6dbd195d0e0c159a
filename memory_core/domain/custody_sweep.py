"""The sweep: approved deletion requests executed in replayable steps.

Nothing is erased before an operator approves (``domain.custody`` files the requests and takes the decisions), and
nothing expires by age. The sweep is idempotent and safe to crash and re-run at any step:

0. the request's ``deletion_approved`` event is written (``audit_approval``: the approval's own record again);
1. plan   - the entries the request's hold covers are found, and on the first run
            counted in the request (the entries are never listed in it: a clear of
            16,000 entries would pass Cosmos DB's 2 MB item). Before their team copies
            are read, none can be stored any more: a clear or a replace moves its
            watermark first and seals it on the copies of team-shared entries it covers,
            a forget of a team-shared entry stores its copy's mark (``team_copies.forbid``), and a purge
            the mark of each team-shared entry it covers;
2. erase  - the user's memory tool file index loses the names of those entries, then
            the entries are erased (erasing twice erases nothing more);
3. seal   - a purge seals its watermark on the user's partition (the store refuses an entry stamped under
            it from then on, in any scope), then erases what its watermark covers that was stored after the
            plan (counted in the request), the
            team copies of those team-shared first (their marks before them), and the
            profiles of the scopes it emptied (a clear moved the
            profile's watermark before its plan), and the file index loses the
            directories and whitespace-only files the request hid (``domain.seals``);
4. unhold - the hold that hid the entries is removed (``lift_holds``, which a rejection runs too);
5. done   - the ``deletion_executed`` event is written, then the request is marked executed with the first
            run's counts (a crash between the two audits the erasure twice, never not at all).

Until step 4 the hold still hides every covered entry, so a read never sees a
half-erased scope. A re-run after a crash finds again what the hold covers and is
still stored, so a request is never executed twice with different results, and an
entry's name leaves the index before the entry: no run erases an entry whose name
the next run could no longer find.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from memory_core.domain import team_copies
from memory_core.domain.audit import AuditAction, AuditTrail
from memory_core.domain.deletion import (
    DeletionKind,
    DeletionRequest,
    DeletionStatus,
    PlannedErase,
    retained_record,
)
from memory_core.domain.erasures import ImmediateErasures
from memory_core.domain.errors import Conflict, InvalidInput, MemoryCoreError
from memory_core.domain.models import SHARED_OWNER, Hold, ProfileKey, Scope, Share, shared_copy_id
from memory_core.domain.paging import decode_token, encode_token
from memory_core.domain.records import DELETIONS_OWNER, Partition, Record, RecordKind, deletions_partition
from memory_core.domain.seals import erase_request_file_names, seal
from memory_core.domain.store import EntryWindow, MemoryStore
from memory_core.domain.sweeps import LeftRequest, SweepResult

# The name custody's log lines had before the sweep moved here: operators' log filters (and tests) select it.
log = logging.getLogger("memory_core.custody")

SweepFault = Callable[[str, DeletionRequest], None]


def no_fault(step: str, request: DeletionRequest) -> None:
    """The sweep's fault seam when no test injects one: every step goes on."""
    return None


def shared_hold(request: DeletionRequest) -> Hold:
    """The hold ``request`` puts on its user's team-shared copies (only that author's), made from the request alone:
    the one ``CustodyService`` files, and the one the sweep plans the copies' erasure from."""
    profile_ids = None  # a purge: every scope
    if request.scope is not None:
        shared = ProfileKey(request.instance_id, SHARED_OWNER, Scope(request.scope), request.agent_object_id)
        profile_ids = (shared.profile_id,)
    entry_ids = (shared_copy_id(request.entry_id),) if request.entry_id else ()
    return Hold(request.id, profile_ids, request.watermark, entry_ids, request.upn)


#: The journal (``domain.journals``) of a rejection under way, in the instance's deletions partition: a rejected
#: request is no sweep's to execute, so the sweep lifts the holds a crash kept after the decision from this record.
REJECTION_KIND = "rejection"


def close_rejection(store: MemoryStore, instance_id: str, request_id: str) -> None:
    """Erase the journal record of ``request_id``'s rejection (its holds lifted, or none to lift); none is fine."""
    store.delete_record(deletions_partition(instance_id), REJECTION_KIND, request_id)


def audit_approval(audit: AuditTrail, request: DeletionRequest) -> None:
    """Write ``request``'s ``deletion_approved`` event, dated by its decision: one record whoever writes it and however
    often (its id made from the decision's time and the request). The approval writes it after its decision, and the
    sweep again before it executes the request, so a crash between the decision and the event loses no approval from
    the trail (a retried approval hears "not pending")."""
    audit.record(AuditAction.DELETION_APPROVED, actor=str(request.decided_by), instance_id=request.instance_id,
                 upn=request.upn, scope=request.scope, agent_object_id=request.agent_object_id,
                 request_id=request.id, at=request.decided_on, suffix=f"approved-{request.id}")


def lift_holds(store: MemoryStore, request: DeletionRequest) -> None:
    """Remove the holds ``request`` filed (the user's, and the one on their team-shared copies): what they hid shows
    again, unless erased. The sweep's unhold step, and a rejection's; removing them twice removes nothing more."""
    lift_holds_of(store, request.instance_id, request.id, (request.upn, SHARED_OWNER))


def lift_holds_of(store: MemoryStore, instance_id: str, request_id: str, owners: Iterable[str]) -> None:
    """Remove the holds named ``request_id`` in the partitions of ``owners`` (``lift_holds``), by the request's id
    alone: also an operator's release of holds whose request is gone (``domain.orphan_holds``)."""
    for owner in owners:
        store.delete_record(Partition(instance_id, owner), RecordKind.HOLD, request_id)


class Sweep:
    """Executes approved requests, and finishes the journaled work a crash or an outage left."""

    def __init__(
        self,
        store: MemoryStore,
        audit: AuditTrail,
        erasures: ImmediateErasures,
        *,
        clock: Callable[[], datetime],
        fault: SweepFault = no_fault,
        finished_retention: timedelta | None = None,
    ) -> None:
        """``finished_retention``: how long an executed request is kept (None: forever). ``fault``: a test seam,
        called between the steps so a crash can be injected."""
        self._store = store
        self._audit = audit
        self._erasures = erasures
        self._clock = clock
        self._fault = fault
        self._finished_retention = finished_retention
        self._replays: list[Callable[[str | None], object]] = []

    def replay_also(self, replay: Callable[[str | None], object]) -> None:
        """Have every run call ``replay`` (of one instance, or None: all) after the immediate erasures."""
        self._replays.append(replay)

    def run(self, actor: str, instance_id: str | None, *, limit: int | None = None,
            continuation: str | None = None) -> SweepResult:
        """Execute the approved requests (of one instance, or all), and finish the immediate erasures a crash or an
        outage left (``domain.erasures``). Answers the requests executed and, with the reason, the approved ones left
        for a later run (``domain.sweeps``): a step that failed, or a request this release cannot read.

        Requests are tried in the order they were approved (then by id). ``limit`` bounds how many one run tries
        (executed or left); the result's ``remaining`` then counts the approved requests it did not reach and its
        ``continuation`` names where the next run goes on (None when it reached every one). A run given that
        ``continuation`` tries only requests after it: one that failed is not tried again by the same walk (the
        next walk, or the timer's, tries it), so a walk ends however often a request fails. Nothing is kept
        between runs but the requests themselves: a walk may stop anywhere, and two may overlap (each request is
        marked executed once; the other walk leaves it as a ``conflict`` or no longer finds it approved, after
        repeating steps that can run again, its event among them). The requests
        this release cannot read are reported by a walk's first run only (they have no place in the order).
        Raises ``InvalidInput`` for a malformed ``continuation`` (``invalid_continuation``); one is not signed, so
        a well-formed place in the order is taken as given."""
        after = _resume_point(continuation)
        self._erasures.replay(instance_id)
        for replay in self._replays:
            replay(instance_id)
        where = {"status": DeletionStatus.APPROVED.value}
        if instance_id is not None:
            records = self._store.query_records(deletions_partition(instance_id), RecordKind.DELETION_REQUEST, where)
        else:  # the scheduled sweep: every instance, one cross-partition query
            records = self._store.query_records_of_owner(DELETIONS_OWNER, RecordKind.DELETION_REQUEST, where)
        readable, left = _readable(records)
        ordered = sorted(readable, key=_order)
        if after is not None:
            ordered = [r for r in ordered if _order(r) > after]
        batch = ordered if limit is None else ordered[:limit]
        remaining = len(ordered) - len(batch)
        result = SweepResult([], left if after is None else [], remaining=remaining,
                             continuation=encode_token(SWEEP_LISTING, _position(batch[-1])) if remaining else None)
        if batch:  # progress for the operator who waits on a long sweep (serve's log, the Function's trace)
            log.info("sweep: %d approved deletion requests to execute%s", len(batch),
                     f", {result.remaining} more after them" if result.remaining else "")
        for number, request in enumerate(batch, 1):
            started = time.monotonic()
            try:
                done = self._execute(actor, request)
                result.executed.append(done)
                log.info("sweep: executed deletion request %s (%d of %d): %s entries erased in %.2f s",
                         request.id, number, len(batch), done.erased_entries, time.monotonic() - started)
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
        if request.kind in (DeletionKind.CLEAR, DeletionKind.REPLACE):
            # Sealed before the plan too: an entry stamped before the watermark and stored after the plan is refused
            # by the store (its writer stamps it after), and so is its team copy (``_covered``). The plan would miss
            # either, and once the hold is lifted it would show. So the seal step after the erasure is a purge's only.
            seal(self._store, request)
        # Before anything is erased: an approval stopped after its decision left its event to this run (written
        # again by every run until the request is executed, it stays one record).
        audit_approval(self._audit, request)
        plan, profiles = (request.plan, 0) if request.plan is not None else self._covered(request)
        if request.erased_entries is None:  # its first run (a plan stored by an earlier release came counted)
            request = self._counted(request, plan, profiles)
        self._fault("planned", request)
        erase_request_file_names(self._store, request, [item.entry_id for item in plan if item.owner is None])
        keys: dict[tuple[str | None, str], tuple[PlannedErase, list[str]]] = {}
        for item in plan:
            keys.setdefault((item.owner, item.profile_id), (item, []))[1].append(item.entry_id)
        for item, entry_ids in keys.values():
            self._store.delete_entries(_key(request, item.scope, item.agent_object_id, item.owner), entry_ids)
        self._fault("erased", request)
        if request.kind is DeletionKind.PURGE:  # a clear's or a replace's was made before the plan; a forget has none
            late = seal(self._store, request)
            if late:  # stored after the plan (a slow append), so not in the first run's count: counted now
                request = self._counted_late(request, late)
        self._fault("sealed", request)
        lift_holds(self._store, request)
        self._fault("unheld", request)
        done = request.with_status(DeletionStatus.EXECUTED, executed_on=self._clock(), plan=None)
        # Audited before the request is marked executed: no later run picks up an executed request, so an event
        # written after that mark was lost for good to a crash between them (one here audits the erasure twice).
        self._audit.record(AuditAction.DELETION_EXECUTED, actor=actor, instance_id=request.instance_id,
                           upn=request.upn, scope=request.scope, agent_object_id=request.agent_object_id,
                           request_id=request.id,
                           detail=f"erased {done.erased_entries} entries, {done.erased_profiles} profiles")
        self._fault("audited", request)
        stored = self._store.put_record(retained_record(done, self._clock, self._finished_retention))
        return replace(done, etag=stored.etag)

    def _covered(self, request: DeletionRequest) -> tuple[tuple[PlannedErase, ...], int]:
        """The entries ``request``'s hold covers that are still stored (the user's, then their team-shared copies),
        and how many profiles of the user a purge erases."""
        hold = Hold(request.id, request.profile_ids, request.watermark,
                    (request.entry_id,) if request.entry_id else ())
        if request.kind is DeletionKind.FORGET and request.entry_id:
            return self._forgotten(request, hold), 0
        if _one_scope_under_watermark(request):
            return self._watermarked(request), 0
        # The facts of every scope (``partition_facts``: ids, times, shares, authors; no text): a purge covers
        # every scope and counts them, and loading the partition whole read a large memory's text for nothing.
        scopes = self._store.partition_facts(request.instance_id, request.upn)
        covered = [(s.key, f) for s in scopes for f in s.entries
                   if hold.covers_facts(s.key.profile_id, f.author_upn, f.created_on, f.id)]
        plan = [PlannedErase(key.profile_id, key.scope.value, key.agent_object_id, f.id) for key, f in covered]
        if request.watermark is not None and request.scope and any(f.share is Share.TEAM for _, f in covered):
            # A covered team-shared entry's copy may still be on its way: sealed before the copies are read, it is
            # refused by the store (``MemoryStore.seal_copies``), as an immediate clear's is. A run after the
            # erasure finds no such entry: the run that erased them sealed first.
            self._store.seal_copies(_key(request, request.scope, request.agent_object_id), request.watermark)
        elif request.kind is DeletionKind.PURGE:
            # A purge has no scope to seal, and the profiles it erases would take a seal with them on SQLite (the
            # copy's write reads its source profile's watermark): each covered team-shared entry's copy is forbidden
            # by its mark instead, as a forget's is, before the copies are read.
            team_copies.forbid_all(self._store, request.instance_id,
                                   [f.id for _, f in covered if f.share is Share.TEAM])
        # The copies' hold made from the request, not read: a crash that filed the request without it (or before
        # either hold) must not leave the copies of the entries this run erases to teammates.
        copies = shared_hold(request)
        plan += [
            PlannedErase(s.key.profile_id, s.key.scope.value, s.key.agent_object_id, f.id, SHARED_OWNER)
            for s in self._store.partition_facts(request.instance_id, SHARED_OWNER)
            for f in s.entries
            if copies.covers_facts(s.key.profile_id, f.author_upn, f.created_on, f.id)
        ]
        return tuple(plan), len(scopes) if request.kind is DeletionKind.PURGE else 0

    def _watermarked(self, request: DeletionRequest) -> tuple[PlannedErase, ...]:
        """The plan of a request whose hold is one scope's watermark (``_one_scope_under_watermark``: a clear's, a
        replace's) from the ids under it in that scope and in the scope's shared copies (``entry_facts``: no entry
        read whole, no other scope read): what ``_covered`` would find in the two partitions loaded whole."""
        assert request.watermark is not None and request.scope is not None
        key = _key(request, request.scope, request.agent_object_id)
        own = self._store.entry_facts(EntryWindow(key, up_to=request.watermark))
        if any(f.share is Share.TEAM for f in own):
            # Sealed before the copies are read, as in ``_covered``.
            self._store.seal_copies(key, request.watermark)
        shared, copies = key.shared(), shared_hold(request)
        # The key's parts read once, not once an entry: a large clear plans tens of thousands.
        profile_id, scope, agent = key.profile_id, key.scope.value, key.agent_object_id
        shared_id = shared.profile_id
        return tuple(
            [PlannedErase(profile_id, scope, agent, f.id) for f in own]
            + [PlannedErase(shared_id, scope, agent, f.id, SHARED_OWNER)
               for f in self._store.entry_facts(EntryWindow(shared, up_to=request.watermark))
               if copies.covers_facts(shared_id, f.author_upn, f.created_on, f.id)]
        )

    def _forgotten(self, request: DeletionRequest, hold: Hold) -> tuple[PlannedErase, ...]:
        """A forget's plan from two point reads (the entry, its team-shared copy), not from the user's whole memory:
        a sweep of many forgets (a directory deleted file by file) would read a large partition once per file."""
        entry_id = str(request.entry_id)
        plan = []
        entry = self._store.get_entry(request.instance_id, request.upn, entry_id)
        if entry is not None and entry.share is Share.TEAM:
            # Before the copy is read: a copy stored after this is refused (a run after the entry's erasure finds
            # none to forbid, as the run that erased it forbade it first).
            team_copies.forbid(self._store, request.instance_id, entry_id)
        if entry is not None and hold.covers(entry):
            plan.append(PlannedErase(entry.key.profile_id, entry.key.scope.value, entry.key.agent_object_id, entry.id))
        copy = self._store.get_entry(request.instance_id, SHARED_OWNER, shared_copy_id(entry_id))
        if copy is not None and copy.author_upn == request.upn:  # only that author's copy (the shared hold's rule)
            plan.append(PlannedErase(copy.key.profile_id, copy.key.scope.value, copy.key.agent_object_id, copy.id,
                                     SHARED_OWNER))
        return tuple(plan)

    def _counted_late(self, request: DeletionRequest, late: int) -> DeletionRequest:
        """``request`` with ``late`` more entries counted and stored at once: a run after a crash finds them erased
        and counts none. A crash between the seal's erasure and this write leaves them uncounted, never twice."""
        counted = replace(request, erased_entries=(request.erased_entries or 0) + late)
        stored = self._store.put_record(counted.to_record())
        return replace(counted, etag=stored.etag)

    def _counted(self, request: DeletionRequest, plan: tuple[PlannedErase, ...], profiles: int) -> DeletionRequest:
        """``request`` with what its first run erases counted and stored (a later run finds less still stored)."""
        own_entries = sum(1 for item in plan if item.owner is None)
        counted = replace(request, erased_entries=own_entries, erased_profiles=profiles)
        stored = self._store.put_record(counted.to_record())
        return replace(counted, etag=stored.etag)


def _one_scope_under_watermark(request: DeletionRequest) -> bool:
    """Whether ``request``'s hold covers exactly the entries of its scope's profile stamped at or before its
    watermark (a clear's, a replace's, as ``CustodyService`` files them), and its copies' hold those of the scope's
    shared profile by the same author: ``Sweep._watermarked`` plans it from ids. Any other shape (a purge's every
    profile, a hold naming entries, a request of another layout) is planned from the facts of every scope of the two
    partitions (``MemoryStore.partition_facts``)."""
    if request.kind not in (DeletionKind.CLEAR, DeletionKind.REPLACE) or request.entry_id:
        return False
    if request.watermark is None or not request.scope:
        return False
    key = _key(request, request.scope, request.agent_object_id)
    return request.profile_ids == (key.profile_id,)


def _key(request: DeletionRequest, scope: str, agent_object_id: str | None, owner: str | None = None) -> ProfileKey:
    return ProfileKey(request.instance_id, owner or request.upn, Scope(scope), agent_object_id)


#: The listing a sweep's continuation belongs to (``domain.paging``): another listing's token is refused.
SWEEP_LISTING = "sweep"


def _order(request: DeletionRequest) -> tuple[datetime, str]:
    """Where ``request`` comes in a sweep: by its approval's time (its filing's, were none stored), then its id."""
    when = request.decided_on or request.requested_on
    # A time stored without a zone (by hand, or another writer) is taken as UTC: naive and aware times do not compare.
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC), request.id


def _position(request: DeletionRequest) -> list[str]:
    when, request_id = _order(request)
    return [when.isoformat(), request_id]


def _resume_point(continuation: str | None) -> tuple[datetime, str] | None:
    """The place in the order a sweep's ``continuation`` names; None for none. ``InvalidInput`` for a token that is
    not one a run of the sweep made."""
    position = decode_token(SWEEP_LISTING, continuation)
    if position is None:
        return None
    try:
        when, request_id = position
        at = datetime.fromisoformat(when)
        if at.tzinfo is None:  # the order's times are all aware: comparing a naive one would raise
            raise ValueError("no time zone")
    except ValueError:
        raise InvalidInput("continuation is not a token this listing answered; start again without it",
                           code="invalid_continuation") from None
    return at, request_id


def _readable(records: list[Record]) -> tuple[list[DeletionRequest], list[LeftRequest]]:
    """The requests ``records`` hold, and those that cannot be read (another layout): logged and left."""
    requests, left = [], []
    for record in records:
        try:
            requests.append(DeletionRequest.from_record(record))
        except (KeyError, TypeError, ValueError) as error:
            log.warning("deletion request record %s cannot be read and was left: %r", record.id, error)
            left.append(LeftRequest.unreadable(record, error))
    return requests, left
