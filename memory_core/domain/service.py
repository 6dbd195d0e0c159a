"""MemoryService: the use cases behind every entry point (REST, MCP, CLI).

The caller is always an authenticated ``Caller`` handed in by an entry point;
nothing in a request body decides whose memory is touched. This module holds the
writes (append, import, clear, forget) and the audit; the reads are ``MemoryReads``
(``domain/reads.py``), which profiles a call touches is ``ProfileTargets``
(``domain/targets.py``), what content may become an entry is ``NewEntries``
(``domain/new_entries.py``), and the shared partition's copies of team-shared entries
are ``domain/team_copies.py``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from memory_core.domain import team_copies
from memory_core.domain.agent_settings import AgentSettingsBook
from memory_core.domain.audit import AuditAction, AuditEvent, AuditTrail, entry_fields
from memory_core.domain.budget import is_visible
from memory_core.domain.custody import CustodyService
from memory_core.domain.errors import Conflict, InvalidInput, NotFound
from memory_core.domain.file_audits import FileAudits
from memory_core.domain.file_retirements import FileRetirements
from memory_core.domain.hidden_text_scan import HiddenTextScanPage, scan_page
from memory_core.domain.idempotency import store_once
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.kept import DEFAULT_MAX_BYTES
from memory_core.domain.models import (
    SHARED_OWNER,
    EntryKind,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Scope,
    ScopeState,
    Share,
    shared_copy_id,
)
from memory_core.domain.new_entries import NewEntries
from memory_core.domain.paging import Page
from memory_core.domain.reads import MemoryReads
from memory_core.domain.records import Record
from memory_core.domain.rendering import render_scope, strip_title
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore
from memory_core.domain.targets import ProfileTargets, Use
from memory_core.domain.views import (
    REPLACE_PENDING_MESSAGE,
    ContentScanner,
    DeletionMode,
    ExportDocument,
    Forgotten,
    ImportMode,
    MemoryView,
    PendingDeletion,
    WriteOptions,
    scope_view,
    utc_now,
    written_view,
)

_PROFILE_WRITE_ATTEMPTS = 8


class MemoryService(MemoryReads):
    """Get, append, clear, import and export memory for an authenticated caller (reads: ``MemoryReads``)."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        max_write_bytes: int = 64 * 1024,
        clock: Callable[[], datetime] = utc_now,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        deletion_mode: DeletionMode = DeletionMode.OPERATOR_APPROVAL,
        scanner: ContentScanner | None = None,
        default_sharing: SharingPolicy = SharingPolicy.PRIVATE,
        allow_sharing_override: bool = False,
        audit_retention: timedelta | None = None,
        finished_deletion_retention: timedelta | None = None,
        read_cache_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self._clock = clock
        self._deletion_mode = deletion_mode
        self.audit = AuditTrail(store, clock, audit_retention)
        self._new_entries = NewEntries(self.audit, max_write_bytes=max_write_bytes, clock=clock, new_id=new_id,
                                       scanner=scanner)
        self.agent_settings = AgentSettingsBook(store, self.audit, scanner=scanner)
        self.custody = CustodyService(store, self.audit, clock=clock, new_id=new_id,
                                      finished_retention=finished_deletion_retention, scanner=scanner)
        self.file_retirements = FileRetirements(
            store, clock=clock, forget=self.forget,
            drop=lambda caller, key, entry_id, detail: self.drop_version(caller, key, entry_id, detail,
                                                                          maybe_hidden=True))
        self.custody.replay_also(self.file_retirements.replay)
        self.file_audits = FileAudits(store, self.audit, clock=clock)
        self.custody.replay_also(self.file_audits.replay)
        super().__init__(store, ProfileTargets(self.agent_settings, default_sharing,
                                               allow_sharing_override=allow_sharing_override),
                         read_cache_bytes)

    def now(self) -> datetime:
        """The time by the service's clock, the one entries are stamped with."""
        return self._clock()

    # -- writes --------------------------------------------------------------

    def append(
        self,
        caller: Caller,
        instance_id: str,
        scope: Scope,
        agent: AgentContext | None,
        content_markdown: str,
        options: WriteOptions = WriteOptions(),
        *,
        idempotency_key: str | None = None,
    ) -> MemoryView:
        """Store ``content_markdown`` as a new entry under a provenance heading.

        Answers the profile's metadata and the section just added (not the whole
        document, so an append costs the same at any memory size).
        Raises ``InvalidInput`` or ``PayloadTooLarge``, and ``Forbidden`` when the operators' settings refuse
        ``agent`` the use of memory (``Use.AGENT``). With ``idempotency_key`` a retry of the same request stores
        nothing and answers the entry the first stored (``domain.idempotency``; ``IdempotencyKeyReused`` for
        the key used on another request).
        """
        write_scope = self._targets.write_scope(scope, "append")
        key = self._targets.key(caller, instance_id, write_scope, agent, use=Use.AGENT)
        entry = self._new_entries.entry(caller, key, agent, content_markdown, EntryKind.APPEND, options)
        seed = self._seed_profile(caller, key, agent, options, entry.created_on)
        profile, entry = self._store_new(AuditAction.APPEND, caller, seed, entry, idempotency_key)
        return written_view(caller, key, profile, entry)

    def import_markdown(
        self,
        caller: Caller,
        instance_id: str,
        scope: Scope,
        agent: AgentContext | None,
        content_markdown: str,
        mode: ImportMode,
        options: WriteOptions = WriteOptions(),
        *,
        idempotency_key: str | None = None,
    ) -> MemoryView:
        """Import markdown: ``append`` adds it under an import heading; ``replace``
        makes it the scope's whole content. Answers the resulting document.

        Under operator approval a replace erases nothing: what it replaces is
        hidden and held by a deletion request (the answer's ``pending`` names it),
        and the new content is visible at once. Raises ``InvalidInput``,
        ``PayloadTooLarge`` or ``SecretDetected`` before anything is written, and ``Forbidden`` as ``append``.
        ``idempotency_key`` as for ``append``, in append mode only (``InvalidInput`` with replace).
        """
        write_scope = self._targets.write_scope(scope, "import")
        key = self._targets.key(caller, instance_id, write_scope, agent, use=Use.AGENT)
        if idempotency_key is not None and mode is not ImportMode.APPEND:
            # A replace is a custody step (a request, holds, erasures), not one entry a key could name.
            raise InvalidInput("Idempotency-Key is taken by an import in append mode only",
                               code="idempotency_key_unsupported")
        if mode is ImportMode.APPEND:
            entry = self._new_entries.entry(caller, key, agent, content_markdown, EntryKind.IMPORT, options)
            seed = self._seed_profile(caller, key, agent, options, entry.created_on)
            self._store_new(AuditAction.IMPORT, caller, seed, entry, idempotency_key)
        elif self._deletion_mode is DeletionMode.OPERATOR_APPROVAL:
            return self._replace_pending(caller, key, agent, content_markdown, options)
        else:
            body = strip_title(key.scope, content_markdown)
            with self.custody.fence(instance_id, caller.upn):  # the replace's time is its watermark: chosen fenced
                entry = self._new_entries.entry(caller, key, agent, body, EntryKind.REPLACE, options,
                                                allow_empty=True)
                watermark = entry.created_on - timedelta(microseconds=1)
                # Journaled first: the erasure after the entry is finished by the sweep if this stops half way.
                erasure = self.custody.erasures.begin("replace", caller.upn, key, watermark=watermark, entry=entry)
                # The replace entry alone switches what readers see at once.
                self._append_audited(AuditAction.IMPORT, caller,
                                     self._seed_profile(caller, key, agent, options, entry.created_on), entry,
                                     "replace")
            self._advance_watermark(key, watermark, entry.created_on)
            # Erased once the watermark hides them: an entry another writer stamped before it but stored after an
            # earlier read would stay stored, hidden and never erased.
            self.custody.erasures.finish(erasure)
            team_copies.share(self._store, entry)
        return self.get(caller, instance_id, key.scope, agent)

    def _replace_pending(
        self, caller: Caller, key: ProfileKey, agent: AgentContext | None, content_markdown: str, options: WriteOptions
    ) -> MemoryView:
        """Import-replace under operator approval: the old content is held, not erased.

        A deletion request hides everything the scope showed up to just before the
        new entry (and the caller's team-shared copies of it), exactly like a clear;
        the new content is an entry after that watermark (kind ``held_replace``: it
        renders like a replace without cutting off what came before), so it shows
        at once, and a rejection shows the old content again before it.
        The content is screened before anything is written.
        """
        body = strip_title(key.scope, content_markdown)
        with self.custody.fence(key.instance_id, caller.upn):  # the new entry's time is the request's watermark
            entry = self._new_entries.entry(caller, key, agent, body, EntryKind.HELD_REPLACE, options,
                                            allow_empty=True)
            # The request and its holds go first: a crash after them leaves the old
            # content hidden and a request an operator can decide, never old and new mixed.
            request = self.custody.request_replace(caller.upn, key, entry.created_on - timedelta(microseconds=1))
        if body.strip():
            self._append_audited(AuditAction.IMPORT, caller,
                                 self._seed_profile(caller, key, agent, options, entry.created_on), entry,
                                 f"replace pending request {request.id}")
            team_copies.share(self._store, entry)
        view = self.get(caller, key.instance_id, key.scope, agent)
        return replace(view, pending=PendingDeletion(request.id, REPLACE_PENDING_MESSAGE))

    def clear(
        self, caller: Caller, instance_id: str, scope: Scope, agent: AgentContext | None, *, confirm: bool
    ) -> MemoryView | PendingDeletion:
        """Empty the scope, keeping its profile (created_on stays).

        Under operator approval the scope is hidden at once and a
        ``PendingDeletion`` is answered; nothing is erased until approved.
        Raises ``InvalidInput`` unless ``confirm`` is true. The person's custody of their memory
        (``Use.CUSTODY``): a disabled agent's memory, or one limited to groups the caller has left, can
        still be cleared. (MCP, which only agents call, asks the agent's way first: ``mcp.tools``.)
        """
        write_scope = self._targets.write_scope(scope, "clear")
        key = self._targets.key(caller, instance_id, write_scope, agent, use=Use.CUSTODY)
        if confirm is not True:
            raise InvalidInput("clear requires confirm=true", code="confirm_required")
        if self._deletion_mode is DeletionMode.OPERATOR_APPROVAL:
            with self.custody.fence(instance_id, caller.upn):
                return PendingDeletion(self.custody.request_clear(caller.upn, key).id)
        with self.custody.fence(instance_id, caller.upn):
            now = self._clock()
            # Journaled first: what follows the watermark is finished by the sweep if this stops half way.
            erasure = self.custody.erasures.begin("clear", caller.upn, key, watermark=now)
            (state,) = self._store.load([key])
            if state.profile is None:
                seed = self._seed_profile(caller, key, agent, WriteOptions(), now)
                self._store.save_profile(replace(seed, cleared_on=now))
            else:
                self._advance_watermark(key, now, now, first=state)
        # Erased once the watermark hides them: an entry another writer stamped before it but stored after the read
        # above would stay stored, hidden and never erased.
        self.custody.erasures.finish(erasure)
        (sealed,) = self._store.load([key])
        return scope_view(caller, sealed, agent, render_scope(key.scope, sealed.visible_entries()))

    def import_legacy(
        self, operator: str, instance_id: str, scope: Scope, agent: AgentContext | None, content_markdown: str
    ) -> MemoryEntry:
        """Store memory from a deployment that predates per-user memory: no owner, read as shared.

        Legacy entries are visible only under the legacy policy and are never changed afterwards.
        """
        write_scope = self._targets.write_scope(scope, "legacy import")
        if write_scope is Scope.AGENT:
            agent = self._targets.require_agent(write_scope, agent)
        key = ProfileKey(instance_id, SHARED_OWNER, write_scope, agent.object_id if agent and write_scope is Scope.AGENT else None)
        nobody = Caller(upn="")
        entry = self._new_entries.entry(nobody, key, agent, content_markdown, EntryKind.IMPORT,
                                        WriteOptions(share=Share.LEGACY), actor=operator)
        _, event = self.audit.event(AuditAction.IMPORT, actor=operator, **entry_fields(entry), detail="legacy")
        seed = MemoryProfile(key, None, None, None, entry.created_on, entry.created_on)
        self._store.append_with_records(seed, entry, [event])
        return entry

    def legacy_trail(
        self, instance_id: str, *, limit: int, continuation: str | None = None, newest_first: bool = False
    ) -> Page[AuditEvent]:
        """One page of the instance's legacy-import trail: an ``import`` event for each legacy import and a
        ``write_rejected`` one for each refused, both naming the operator (see ``AuditTrail.page``).
        ``InvalidInput`` for a foreign continuation token."""
        return self.audit.page(instance_id, SHARED_OWNER, limit=limit, continuation=continuation,
                               newest_first=newest_first)

    def hidden_text_page(self, instance_id: str, *, limit: int, continuation: str | None = None) -> HiddenTextScanPage:
        """One page of the operator's scan for stored text no reader sees (``domain.hidden_text_scan``)."""
        return scan_page(self._store, instance_id, limit, continuation)

    # -- forget, audit ---------------------------------------------------------

    def audit_page(
        self, instance_id: str, upn: str, *, limit: int, continuation: str | None = None, newest_first: bool = False
    ) -> Page[AuditEvent]:
        """One page of one user's audit trail (see ``AuditTrail.page``)."""
        return self.audit.page(instance_id, upn, limit=limit, continuation=continuation, newest_first=newest_first)

    def forget(
        self, caller: Caller, instance_id: str, entry_id: str, *, fenced: bool = False
    ) -> PendingDeletion | Forgotten:
        """Forget one of the caller's visible entries. ``NotFound`` when there is none by that id.

        ``fenced``: the caller already stands the fence (``CustodyService.fence``) around this and more forgets, as
        the memory tool does around a command's old versions."""
        entry = self._store.get_entry(instance_id, caller.upn, entry_id)
        if entry is not None and not is_visible(self._store, entry):
            entry = None
        if entry is None:
            raise NotFound(f"no memory entry {entry_id}")
        # Fenced from the hold or the erasure on: an edit that read the entry before commits nothing made from it.
        with contextlib.nullcontext() if fenced else self.custody.fence(instance_id, caller.upn):
            if self._deletion_mode is DeletionMode.OPERATOR_APPROVAL:
                return PendingDeletion(self.custody.request_forget(caller.upn, entry).id)
            erasure = self.custody.erasures.begin("forget", caller.upn, entry.key, entry=entry)
            self._store.delete_entries(entry.key, [entry.id])
        self.custody.erasures.finish(erasure)  # its team copy, its file's path, the event
        return Forgotten(entry.id)

    def screen(self, caller: Caller, key: ProfileKey, text: str, *, name: str = "content") -> None:
        """Refuse ``text`` that holds text no reader sees or looks like a secret, as a write would
        (``HiddenText`` or ``SecretDetected`` naming it ``name``, audited).

        For what is stored beside content rather than as an entry: the memory tool's file names.
        """
        self._new_entries.screen(caller, key, text, WriteOptions(), name=name)

    def drop_version(
        self, caller: Caller, key: ProfileKey, entry_id: str, detail: str, *, maybe_hidden: bool = False
    ) -> None:
        """Erase one of the caller's entries whose text is not lost by it, and its team copy, in any deletion mode.

        Only for the memory tool's file versions (``memory_file_service``): a version superseded by
        one that keeps its whole text (an insert, a replacement that keeps what it replaces, a move
        between scopes), or a version a command stored but never published because it lost a race.
        Text that would be lost goes through ``forget`` instead. Audited ``memory_file`` with the
        entry's SHA-256 and ``detail``; a missing entry is fine. ``maybe_hidden``: a deletion may have hidden
        the version since the command read it; one it did is left to that deletion, for an operator to decide.
        """
        entry = self._store.get_entry(key.instance_id, caller.upn, entry_id)
        if maybe_hidden and entry is not None and not is_visible(self._store, entry):
            self.audit.record(
                AuditAction.MEMORY_FILE, actor=caller.upn, instance_id=key.instance_id, upn=caller.upn,
                scope=key.scope.value, agent_object_id=key.agent_object_id, entry_id=entry_id,
                content_sha256=entry.content_sha256, detail=f"{detail}; kept: a deletion hid it first",
            )
            return
        self._store.delete_entries(key, [entry_id])
        if entry is not None:
            # Its team copy goes with it: the file's new version is private (the memory tool shares nothing), and
            # a copy left behind would outlive every later forget of the file.
            self._withdraw_copy(entry)
        self.audit.record(
            AuditAction.MEMORY_FILE, actor=caller.upn, instance_id=key.instance_id, upn=caller.upn,
            scope=key.scope.value, agent_object_id=key.agent_object_id, entry_id=entry_id,
            content_sha256=entry.content_sha256 if entry else None, detail=detail,
        )

    def _withdraw_copy(self, entry: MemoryEntry) -> None:
        """Erase ``entry``'s copy in the shared partition when it is team-shared: with the entry, always."""
        if entry.share is Share.TEAM:
            self._store.delete_entries(entry.key.shared(), [shared_copy_id(entry.id)])

    def audit_trail(self, instance_id: str, upn: str, limit: int = 1000) -> list[AuditEvent]:
        """The audit events of one user's memory in an instance, oldest first."""
        return self.audit.read(instance_id, upn, limit)

    # -- entries and profiles ------------------------------------------------

    def _audit_write(self, action: AuditAction, caller: Caller, entry: MemoryEntry, detail: str | None = None) -> None:
        self.audit.record(action, actor=caller.upn, **entry_fields(entry), detail=detail)

    def _append_audited(
        self, action: AuditAction, caller: Caller, seed: MemoryProfile, entry: MemoryEntry, detail: str | None = None,
        also: Sequence[Record] = (),
    ) -> MemoryProfile:
        """Store ``entry`` and its audit event (and ``also``, records of its partition) atomically: none exists
        without the others."""
        _, event = self.audit.event(action, actor=caller.upn, **entry_fields(entry), detail=detail)
        return self._store.append_with_records(seed, entry, [event, *also])

    def _store_new(self, action: AuditAction, caller: Caller, seed: MemoryProfile, entry: MemoryEntry,
                   key: str | None) -> tuple[MemoryProfile, MemoryEntry]:
        """Store a new entry, audited, and offer it to the team; with an idempotency key, once (``store_once``)."""
        if key is not None:
            return store_once(self._store, seed, entry, key,
                              lambda e, marker: self._append_audited(action, caller, seed, e, also=(marker,)))
        profile = self._append_audited(action, caller, seed, entry)
        team_copies.share(self._store, entry)
        return profile, entry

    @staticmethod
    def _seed_profile(
        caller: Caller, key: ProfileKey, agent: AgentContext | None, options: WriteOptions, now: datetime
    ) -> MemoryProfile:
        agent_name = options.agent_name or (agent.name if agent else None)
        return MemoryProfile(
            key=key,
            name=caller.name,
            user_name=caller.user_name,
            agent_name=agent_name if key.scope is Scope.AGENT else None,
            created_on=now,
            updated_on=now,
        )

    def _advance_watermark(
        self, key: ProfileKey, watermark: datetime, updated_on: datetime, *, first: ScopeState | None = None
    ) -> None:
        """Move the profile's cleared_on forward, retrying on concurrent profile writes.

        ``first`` is a state the caller has just read; it spares the first attempt a load.
        """
        for attempt in range(_PROFILE_WRITE_ATTEMPTS):
            (state,) = [first] if attempt == 0 and first is not None else self._store.load([key])
            if state.profile is None:
                raise Conflict("the memory profile disappeared during the write; retry")
            current = state.profile.cleared_on
            if current is not None and current >= watermark:
                return
            try:
                self._store.save_profile(
                    replace(state.profile, cleared_on=watermark, updated_on=max(updated_on, state.profile.updated_on))
                )
                return
            except Conflict:
                continue
        raise Conflict("the memory profile kept changing during the write; retry")


__all__: Sequence[str] = (
    "DeletionMode", "ExportDocument", "Forgotten", "ImportMode", "MemoryService", "MemoryView", "PendingDeletion",
    "WriteOptions",
)
