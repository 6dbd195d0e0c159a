"""MemoryService: the use cases behind every entry point (REST, MCP, CLI).

The caller is always an authenticated ``Caller`` handed in by an entry point; nothing in a request body decides
whose memory is touched. ``MemoryService`` is the one object entry points hold: it decides which profile a call
touches and its rules (``domain.targets``: scope, agent, the operators' settings; ``confirm``; an Idempotency-Key
only where one entry answers it), then hands the work to the module that owns it. The reads are ``MemoryReads``
(``domain/reads.py``), its base; what content may become an entry is ``NewEntries`` (``domain/new_entries.py``); a
new entry is stored with its audit event by ``AuditedAppends`` (``domain/audited_appends.py``); a clear and an
import-replace are ``ScopeClears`` (``domain/scope_clears.py``); a forget and a memory-tool version dropped are
``EntryRemovals`` (``domain/entry_removals.py``); deletion requests and the sweep are ``CustodyService``
(``domain/custody.py``; the sweep's steps: ``domain/custody_sweep.py``). This module also holds the legacy import,
the audit pages and the operator's scan for hidden text. ``DeletionMode``, ``ImportMode``, ``WriteOptions`` and the answer types are importable from here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from memory_core.domain.agent_settings import AgentSettingsBook
from memory_core.domain.audit import AuditAction, AuditEvent, AuditTrail, entry_fields
from memory_core.domain.audited_appends import AuditedAppends, seed_profile
from memory_core.domain.custody import CustodyService
from memory_core.domain.entry_removals import EntryRemovals
from memory_core.domain.errors import InvalidInput
from memory_core.domain.file_audits import FileAudits
from memory_core.domain.file_retirements import FileRetirements
from memory_core.domain.file_writers import FileWriters
from memory_core.domain.hidden_text_scan import HiddenTextScanPage, scan_page
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.kept import DEFAULT_MAX_BYTES
from memory_core.domain.models import (
    SHARED_OWNER,
    EntryKind,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Scope,
    Share,
    random_hex,
)
from memory_core.domain.new_entries import NewEntries
from memory_core.domain.paging import Page
from memory_core.domain.reads import MemoryReads
from memory_core.domain.scope_clears import ScopeClears
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
    utc_now,
    written_view,
)


class MemoryService(MemoryReads):
    """Get, append, clear, import and export memory for an authenticated caller (reads: ``MemoryReads``)."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        max_write_bytes: int = 64 * 1024,
        clock: Callable[[], datetime] = utc_now,
        new_id: Callable[[], str] = random_hex,
        deletion_mode: DeletionMode = DeletionMode.OPERATOR_APPROVAL,
        scanner: ContentScanner | None = None,
        default_sharing: SharingPolicy = SharingPolicy.PRIVATE,
        allow_sharing_override: bool = False,
        audit_retention: timedelta | None = None,
        finished_deletion_retention: timedelta | None = None,
        read_cache_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self._clock = clock
        self._new_id = new_id
        self.audit = AuditTrail(store, clock, audit_retention)
        self._new_entries = NewEntries(self.audit, max_write_bytes=max_write_bytes, clock=clock, new_id=new_id,
                                       scanner=scanner)
        self.agent_settings = AgentSettingsBook(store, self.audit, scanner=scanner)
        self.custody = CustodyService(store, self.audit, clock=clock, new_id=new_id,
                                      finished_retention=finished_deletion_retention, scanner=scanner)
        self._appends = AuditedAppends(store, self.audit, clock=clock)
        self._scope_clears = ScopeClears(store, self._appends, self._new_entries, self.custody, clock=clock,
                                         deletion_mode=deletion_mode)
        self._removals = EntryRemovals(store, self.audit, self.custody, deletion_mode=deletion_mode)
        self.file_retirements = FileRetirements(
            store, clock=clock, forget=self.forget,
            drop=lambda caller, key, entry_id, detail: self.drop_version(caller, key, entry_id, detail,
                                                                          maybe_hidden=True))
        self.custody.replay_also(self.file_retirements.replay)
        self.file_audits = FileAudits(
            store, self.audit, clock=clock,
            drop=lambda caller, key, entry_id, detail: self.drop_version(caller, key, entry_id, detail,
                                                                          maybe_hidden=True, if_stored=True))
        self.custody.replay_also(self.file_audits.replay)
        # The memory tool's writes of one user take turns in this process (``domain.file_writers``): every
        # ``MemoryFiles`` on this service queues here unless told otherwise (REST, MCP, any new front), as racing,
        # each read the memory again for every commit it lost.
        self.file_writers = FileWriters()
        super().__init__(store, ProfileTargets(self.agent_settings, default_sharing,
                                               allow_sharing_override=allow_sharing_override),
                         read_cache_bytes)

    def now(self) -> datetime:
        """The time by the service's clock, the one entries are stamped with."""
        return self._clock()

    def new_id(self) -> str:
        """A new entry id, as ``append`` makes one: for a caller that must name an entry before storing it."""
        return self._new_id()

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
        entry_id: str | None = None,
    ) -> MemoryView:
        """Store ``content_markdown`` as a new entry under a provenance heading.

        Answers the profile's metadata and the section just added (not the whole
        document, so an append costs the same at any memory size).
        Raises ``InvalidInput`` or ``PayloadTooLarge``, and ``Forbidden`` when the operators' settings refuse
        ``agent`` the use of memory (``Use.AGENT``). With ``idempotency_key`` a retry of the same request stores
        nothing and answers the entry the first stored (``domain.idempotency``; ``IdempotencyKeyReused`` for
        the key used on another request). ``entry_id``: the new entry's id, chosen by the caller (``new_id``) to
        name it in a journal before it is stored (the memory tool's commit); never one already used.
        """
        write_scope = self._targets.write_scope(scope, "append")
        key = self._targets.key(caller, instance_id, write_scope, agent, use=Use.AGENT)
        entry = self._new_entries.entry(caller, key, agent, content_markdown, EntryKind.APPEND, options,
                                        entry_id=entry_id)
        seed = seed_profile(caller, key, agent, options, entry.created_on)
        profile, entry = self._appends.store_new(AuditAction.APPEND, caller, seed, entry, idempotency_key)
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
            seed = seed_profile(caller, key, agent, options, entry.created_on)
            self._appends.store_new(AuditAction.IMPORT, caller, seed, entry, idempotency_key)
        else:
            request = self._scope_clears.replace(caller, key, agent, content_markdown, options)
            if request is not None:
                view = self.get(caller, instance_id, key.scope, agent)
                return replace(view, pending=PendingDeletion(request.id, REPLACE_PENDING_MESSAGE))
        return self.get(caller, instance_id, key.scope, agent)

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
        return self._scope_clears.clear(caller, key, agent)

    def import_legacy(
        self, operator: str, instance_id: str, scope: Scope, agent: AgentContext | None, content_markdown: str
    ) -> MemoryEntry:
        """Store memory from a deployment that predates per-user memory: no owner, read as shared.

        Legacy entries are visible only under the legacy policy and are never changed afterwards.
        """
        write_scope = self._targets.write_scope(scope, "legacy import")
        if write_scope is Scope.AGENT:
            agent = self._targets.require_agent(write_scope, agent)
        agent_id = agent.object_id if agent and write_scope is Scope.AGENT else None
        key = ProfileKey(instance_id, SHARED_OWNER, write_scope, agent_id)
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

    def forget(
        self, caller: Caller, instance_id: str, entry_id: str, *, fenced: bool = False
    ) -> PendingDeletion | Forgotten:
        """Forget one of the caller's visible entries: held by a deletion request under operator approval,
        erased at once otherwise. ``NotFound`` when there is none by that id. ``fenced``: the caller already
        stands the custody fence around this (``EntryRemovals.forget``)."""
        return self._removals.forget(caller, instance_id, entry_id, fenced=fenced)

    def drop_version(
        self, caller: Caller, key: ProfileKey, entry_id: str, detail: str, *, maybe_hidden: bool = False,
        if_stored: bool = False,
    ) -> None:
        """Erase a memory-tool file version whose text is not lost by it, and its team copy, in any deletion mode,
        audited; a version a deletion has hidden is left to it with ``maybe_hidden``, and one already gone is no
        event with ``if_stored`` (``EntryRemovals.drop_version``).
        """
        self._removals.drop_version(caller, key, entry_id, detail, maybe_hidden=maybe_hidden, if_stored=if_stored)

    def audit_page(
        self, instance_id: str, upn: str, *, limit: int, continuation: str | None = None, newest_first: bool = False
    ) -> Page[AuditEvent]:
        """One page of one user's audit trail (see ``AuditTrail.page``)."""
        return self.audit.page(instance_id, upn, limit=limit, continuation=continuation, newest_first=newest_first)

    def screen(self, caller: Caller, key: ProfileKey, text: str, *, name: str = "content") -> None:
        """Refuse ``text`` that holds text no reader sees or looks like a secret, as a write would
        (``HiddenText`` or ``SecretDetected`` naming it ``name``, audited).

        For what is stored beside content rather than as an entry: the memory tool's file names.
        """
        self._new_entries.screen(caller, key, text, WriteOptions(), name=name)

    def audit_trail(self, instance_id: str, upn: str, limit: int = 1000) -> list[AuditEvent]:
        """The audit events of one user's memory in an instance, oldest first."""
        return self.audit.read(instance_id, upn, limit)


__all__: Sequence[str] = (
    "DeletionMode", "ExportDocument", "Forgotten", "ImportMode", "MemoryService", "MemoryView", "PendingDeletion",
    "WriteOptions",
)
