"""MemoryService: the use cases behind every entry point (REST, MCP, CLI).

The caller is always an authenticated ``Caller`` handed in by an entry point;
nothing in a request body decides whose memory is touched.
"""

from __future__ import annotations

import bisect
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from memory_core.domain.agent_settings import AgentSettingsBook
from memory_core.domain.audit import AuditAction, AuditEvent, AuditTrail
from memory_core.domain.budget import is_visible
from memory_core.domain.budgeted_read import read_within, within_snapshots
from memory_core.domain.custody import CustodyService
from memory_core.domain.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge, SecretDetected
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.listings import Listing, Listings
from memory_core.domain.models import (
    SHARED_OWNER,
    EntryKind,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Scope,
    ScopeState,
    Share,
    sha256_hex,
    shared_copy_id,
)
from memory_core.domain.paging import Page, check_page_size, decode_token, encode_token
from memory_core.domain.rendering import render_combined, render_scope, strip_title
from memory_core.domain.search import FullTextIndex, SearchHit, query_terms, search_entries
from memory_core.domain.sharing import SharingPolicy, resolve_policy
from memory_core.domain.snapshots import ChangeStamps, SnapshotCache, StampedAnswers, snapshot_view
from memory_core.domain.store import MemoryStore
from memory_core.domain.tags import normalize_tags
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
    agent_name_of,
    export_filename,
    scope_view,
    updated_on_of,
    utc_now,
    written_view,
)
from memory_core.domain.visibility import visible_matches, visible_scopes

_PROFILE_WRITE_ATTEMPTS = 8


class MemoryService:
    """Get, append, clear, import and export memory for an authenticated caller."""

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
    ) -> None:
        self._store = store
        self._max_write_bytes = max_write_bytes
        self._clock = clock
        self._new_id = new_id
        self._deletion_mode = deletion_mode
        self._scanner = scanner
        self._default_sharing = default_sharing
        self._allow_sharing_override = allow_sharing_override
        self.audit = AuditTrail(store, clock, audit_retention)
        self.agent_settings = AgentSettingsBook(store)
        self.custody = CustodyService(store, self.audit, clock=clock, new_id=new_id,
                                      finished_retention=finished_deletion_retention)
        # Reads answered from snapshots the store re-checks on every read (stores that stamp writes).
        self._snapshots = SnapshotCache(store) if isinstance(store, ChangeStamps) else None
        # Budgeted reads of memories larger than the budget, and the listings entries pages are cut
        # from, kept while their partition is unchanged.
        self._budgeted: StampedAnswers[MemoryView] | None = None
        self._listings: Listings | None = None
        if isinstance(store, ChangeStamps):
            self._budgeted = StampedAnswers(store, lambda view: len(view.content_markdown))
            self._listings = Listings(store)

    @property
    def store(self) -> MemoryStore:
        """The store behind this service, for use cases composed on top of it (the memory tool's files)."""
        return self._store

    # -- reads ---------------------------------------------------------------

    def get(
        self,
        caller: Caller,
        instance_id: str,
        scope: Scope,
        agent: AgentContext | None,
        sharing: SharingPolicy | None = None,
    ) -> MemoryView:
        """The rendered memory of ``scope``; empty content when nothing is stored.

        ``sharing`` asks for a policy other than the deployment's default (``Forbidden``
        unless overrides are allowed); team and legacy add entries others shared,
        marked "shared by ..." in the markdown.
        Raises ``InvalidInput`` when an agent or combined scope has no agent.
        """
        policy = self._policy(sharing)
        if self._snapshots is not None:
            keys = self._read_keys(caller, instance_id, scope, agent)
            if not policy.shares_read():
                return self._snapshot_view(caller, scope, keys, agent)
            if self._budgeted is not None:
                return self._budgeted.answer_across(
                    ("get", caller, scope, tuple(keys), agent, policy), instance_id, (caller.upn, SHARED_OWNER),
                    lambda: self._read_in_full(caller, instance_id, scope, agent, policy))
        return self._read_in_full(caller, instance_id, scope, agent, policy)

    def _read_in_full(
        self, caller: Caller, instance_id: str, scope: Scope, agent: AgentContext | None, policy: SharingPolicy
    ) -> MemoryView:
        """``get`` from every visible entry of the scope, read and rendered now."""
        if scope is Scope.COMBINED:
            agent_ctx = self._require_agent(scope, agent)
            self._guard(caller, instance_id, scope, agent_ctx)
            user_key = ProfileKey(instance_id, caller.upn, Scope.USER)
            agent_key = ProfileKey(instance_id, caller.upn, Scope.AGENT, agent_ctx.object_id)
            (user_state, user_entries), (agent_state, agent_entries) = visible_scopes(
                self._store, caller.upn, [user_key, agent_key], policy
            )
            user_doc = render_scope(Scope.USER, user_entries, viewer=caller.upn)
            agent_doc = render_scope(Scope.AGENT, agent_entries, viewer=caller.upn)
            created = [p.created_on for p in (user_state.profile, agent_state.profile) if p]
            updated = [u for u in (updated_on_of(user_state), updated_on_of(agent_state)) if u]
            return MemoryView(
                scope=Scope.COMBINED,
                upn=caller.upn,
                name=caller.name,
                user_name=caller.user_name,
                agent_object_id=agent_ctx.object_id,
                agent_name=agent_name_of(agent_state, agent_ctx),
                content_markdown=render_combined(user_doc, agent_doc),
                created_on=min(created) if created else None,
                updated_on=max(updated) if updated else None,
            )
        key = self._key(caller, instance_id, scope, agent)
        ((state, entries),) = visible_scopes(self._store, caller.upn, [key], policy)
        return scope_view(caller, state, agent, render_scope(key.scope, entries, viewer=caller.upn))

    def _snapshot_view(
        self, caller: Caller, scope: Scope, keys: list[ProfileKey], agent: AgentContext | None
    ) -> MemoryView:
        """A private read answered from the store-checked snapshots (``domain.snapshots``)."""
        assert self._snapshots is not None
        return snapshot_view(caller, scope, self._snapshots.read(keys, caller.upn), agent)

    def get_within(
        self,
        caller: Caller,
        instance_id: str,
        scope: Scope,
        agent: AgentContext | None,
        max_chars: int,
        sharing: SharingPolicy | None = None,
    ) -> MemoryView:
        """The newest memory of ``scope`` that fits in ``max_chars`` characters, and what was left out.

        The fill rule is ``memory_core.domain.budget``'s; ``view.budget`` reports, per
        scope, the entries shown and the exact count and date range of those left
        out. ``content_markdown`` is never longer than ``max_chars``. With the private
        policy the store work is bounded by the budget, not by the memory's size.
        Raises what ``get`` raises, and ``InvalidInput`` for a negative budget.
        """
        if max_chars < 0:
            raise InvalidInput("the budget (maxChars) must be 0 or more characters", code="invalid_budget")
        keys = self._read_keys(caller, instance_id, scope, agent)
        policy = self._policy(sharing)
        if self._budgeted is not None and policy.shares_read():
            # A sharing read merges the shared partition in full: kept while both partitions are unchanged.
            return self._budgeted.answer_across(
                ("within", caller, scope, tuple(keys), agent, max_chars, policy), instance_id,
                (caller.upn, SHARED_OWNER), lambda: read_within(self._store, caller, scope, keys, agent, max_chars,
                                                                policy))
        snapshots = self._snapshots
        if snapshots is None or self._budgeted is None:
            return read_within(self._store, caller, scope, keys, agent, max_chars, policy)
        # A memory that fits the budget whole is answered from its snapshot (one stamp read);
        # ``peek`` never loads a memory in full, so the read's store work stays bounded.
        current = snapshots.peek(keys, caller.upn)
        fitted = within_snapshots(caller, scope, current, agent, max_chars)
        if fitted is not None:
            return fitted
        view = self._budgeted.answer(
            (caller, scope, tuple(keys), agent, max_chars), instance_id, caller.upn,
            lambda: read_within(self._store, caller, scope, keys, agent, max_chars, policy),
            stamp=current.stamp if current is not None else None,
        )
        if view.budget is not None and view.budget.omitted_entries == 0:
            snapshots.read(keys, caller.upn)  # it all fit, so the snapshot is small: keep one for the next read
        return view

    def export(
        self,
        caller: Caller,
        instance_id: str,
        scope: Scope,
        agent: AgentContext | None,
        sharing: SharingPolicy | None = None,
    ) -> ExportDocument:
        """The scope's document as a markdown file; ``InvalidInput`` for combined."""
        view = self.get(caller, instance_id, self._write_scope(scope, "export"), agent, sharing)
        return ExportDocument(export_filename(view.scope, view.agent_name), view.content_markdown)

    # -- writes --------------------------------------------------------------

    def append(
        self,
        caller: Caller,
        instance_id: str,
        scope: Scope,
        agent: AgentContext | None,
        content_markdown: str,
        options: WriteOptions = WriteOptions(),
    ) -> MemoryView:
        """Store ``content_markdown`` as a new entry under a provenance heading.

        Answers the profile's metadata and the section just added (not the whole
        document, so an append costs the same at any memory size).
        Raises ``InvalidInput`` or ``PayloadTooLarge``.
        """
        key = self._key(caller, instance_id, self._write_scope(scope, "append"), agent)
        entry = self._new_entry(caller, key, agent, content_markdown, EntryKind.APPEND, options)
        profile = self._append_audited(
            AuditAction.APPEND, caller, self._seed_profile(caller, key, agent, options, entry.created_on), entry
        )
        self._share(entry)
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
    ) -> MemoryView:
        """Import markdown: ``append`` adds it under an import heading; ``replace``
        makes it the scope's whole content. Answers the resulting document.

        Under operator approval a replace erases nothing: what it replaces is
        hidden and held by a deletion request (the answer's ``pending`` names it),
        and the new content is visible at once. Raises ``InvalidInput``,
        ``PayloadTooLarge`` or ``SecretDetected`` before anything is written.
        """
        key = self._key(caller, instance_id, self._write_scope(scope, "import"), agent)
        if mode is ImportMode.APPEND:
            entry = self._new_entry(caller, key, agent, content_markdown, EntryKind.IMPORT, options)
            self._append_audited(
                AuditAction.IMPORT, caller, self._seed_profile(caller, key, agent, options, entry.created_on), entry
            )
            self._share(entry)
        elif self._deletion_mode is DeletionMode.OPERATOR_APPROVAL:
            return self._replace_pending(caller, key, agent, content_markdown, options)
        else:
            (before,) = self._store.load([key])
            body = strip_title(key.scope, content_markdown)
            entry = self._new_entry(caller, key, agent, body, EntryKind.REPLACE, options, allow_empty=True)
            # The replace entry alone switches what readers see; the watermark and
            # the purge after it only reclaim space, so a crash between them loses nothing.
            self._append_audited(AuditAction.IMPORT, caller,
                                 self._seed_profile(caller, key, agent, options, entry.created_on), entry, "replace")
            watermark = entry.created_on - timedelta(microseconds=1)
            self._advance_watermark(key, watermark, entry.created_on)
            self._store.delete_entries(key, [e.id for e in before.entries if e.created_on <= watermark])
            self._unshare(caller, key, watermark)
            self._share(entry)
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
        entry = self._new_entry(caller, key, agent, body, EntryKind.HELD_REPLACE, options, allow_empty=True)
        # The request and its holds go first: a crash after them leaves the old
        # content hidden and a request an operator can decide, never old and new mixed.
        request = self.custody.request_replace(caller.upn, key, entry.created_on - timedelta(microseconds=1))
        if body.strip():
            self._append_audited(AuditAction.IMPORT, caller,
                                 self._seed_profile(caller, key, agent, options, entry.created_on), entry,
                                 f"replace pending request {request.id}")
            self._share(entry)
        view = self.get(caller, key.instance_id, key.scope, agent)
        return replace(view, pending=PendingDeletion(request.id, REPLACE_PENDING_MESSAGE))

    def clear(
        self, caller: Caller, instance_id: str, scope: Scope, agent: AgentContext | None, *, confirm: bool
    ) -> MemoryView | PendingDeletion:
        """Empty the scope, keeping its profile (created_on stays).

        Under operator approval the scope is hidden at once and a
        ``PendingDeletion`` is answered; nothing is erased until approved.
        Raises ``InvalidInput`` unless ``confirm`` is true.
        """
        key = self._key(caller, instance_id, self._write_scope(scope, "clear"), agent)
        if confirm is not True:
            raise InvalidInput("clear requires confirm=true", code="confirm_required")
        if self._deletion_mode is DeletionMode.OPERATOR_APPROVAL:
            return PendingDeletion(self.custody.request_clear(caller.upn, key).id)
        now = self._clock()
        (state,) = self._store.load([key])
        if state.profile is None:
            seed = self._seed_profile(caller, key, agent, WriteOptions(), now)
            self._store.save_profile(replace(seed, cleared_on=now))
        else:
            self._advance_watermark(key, now, now, first=state)
        erased = self._store.delete_entries(key, [e.id for e in state.entries if e.created_on <= now])
        self._unshare(caller, key, now)
        self.audit.record(AuditAction.CLEAR, actor=caller.upn, instance_id=instance_id, upn=caller.upn,
                          scope=key.scope.value, agent_object_id=key.agent_object_id, detail=f"erased {erased} entries")
        (after,) = self._store.load([key])
        return scope_view(caller, after, agent, render_scope(key.scope, after.visible_entries()))

    def import_legacy(
        self, operator: str, instance_id: str, scope: Scope, agent: AgentContext | None, content_markdown: str
    ) -> MemoryEntry:
        """Store memory from a deployment that predates per-user memory: no owner, read as shared.

        Legacy entries are visible only under the legacy policy and are never changed afterwards.
        """
        write_scope = self._write_scope(scope, "legacy import")
        if write_scope is Scope.AGENT:
            agent = self._require_agent(write_scope, agent)
        key = ProfileKey(instance_id, SHARED_OWNER, write_scope, agent.object_id if agent and write_scope is Scope.AGENT else None)
        nobody = Caller(upn="")
        entry = self._new_entry(nobody, key, agent, content_markdown, EntryKind.IMPORT, WriteOptions(share=Share.LEGACY))
        _, event = self.audit.event(AuditAction.IMPORT, actor=operator, **self._audit_fields(entry), detail="legacy")
        seed = MemoryProfile(key, None, None, None, entry.created_on, entry.created_on)
        self._store.append_with_records(seed, entry, [event])
        return entry

    # -- entries, forget, search, audit -----------------------------------------

    def entries(
        self,
        caller: Caller,
        instance_id: str,
        scope: Scope,
        agent: AgentContext | None,
        sharing: SharingPolicy | None = None,
    ) -> list[MemoryEntry]:
        """The visible entries of ``scope`` (combined: user then agent), oldest first; each names its author."""
        keys = self._read_keys(caller, instance_id, scope, agent)
        return [e for _, entries in visible_scopes(self._store, caller.upn, keys, self._policy(sharing))
                for e in entries]

    def _read_keys(
        self, caller: Caller, instance_id: str, scope: Scope, agent: AgentContext | None
    ) -> list[ProfileKey]:
        """The profiles a read of ``scope`` covers (combined: user then agent)."""
        if scope is Scope.COMBINED:
            agent_ctx = self._require_agent(scope, agent)
            self._guard(caller, instance_id, scope, agent_ctx)
            return [ProfileKey(instance_id, caller.upn, Scope.USER),
                    ProfileKey(instance_id, caller.upn, Scope.AGENT, agent_ctx.object_id)]
        return [self._key(caller, instance_id, scope, agent)]

    def entries_page(
        self,
        caller: Caller,
        instance_id: str,
        scope: Scope,
        agent: AgentContext | None,
        sharing: SharingPolicy | None = None,
        *,
        limit: int,
        continuation: str | None = None,
    ) -> Page[MemoryEntry]:
        """One page of ``entries``: user before agent (combined), then oldest first.

        Keyset pages: walking every page gives every entry visible throughout the
        walk exactly once. A page is cut from the scope's visible entries in order; with
        the private policy that listing is kept while the partition's stamp is unchanged and
        grown by the entries appended since (``listings.Listings``), so a walk reads the scope
        once (one stamp read a page after the first) unless a write other than an append
        comes between pages. ``InvalidInput`` for a foreign token.
        """
        name = f"entries:{scope.value}"
        position = decode_token(name, continuation)
        check_page_size(limit)
        keys = self._read_keys(caller, instance_id, scope, agent)
        policy = self._policy(sharing)

        # Walking a large memory page by page reads it once, not once per page, while nothing changes
        # but appends.
        def read_in_full() -> Listing:
            return Listing.of([e for _, entries in visible_scopes(self._store, caller.upn, keys, policy)
                               for e in entries])

        if self._listings is None:
            listing = read_in_full()
        elif not policy.shares_read():
            listing = self._listings.listing(("entries", caller.upn, scope, tuple(keys)), keys)
        else:
            listing = self._listings.across(("entries", caller.upn, scope, tuple(keys), policy), keys, read_in_full)
        start = bisect.bisect_right(listing.positions, tuple(position)) if position else 0
        page = listing.entries[start:start + limit]
        more = len(listing.entries) > start + limit
        token = encode_token(name, list(listing.positions[start + limit - 1])) if more else None
        return Page(list(page), token)

    def audit_page(
        self, instance_id: str, upn: str, *, limit: int, continuation: str | None = None, newest_first: bool = False
    ) -> Page[AuditEvent]:
        """One page of one user's audit trail (see ``AuditTrail.page``)."""
        return self.audit.page(instance_id, upn, limit=limit, continuation=continuation, newest_first=newest_first)

    def forget(self, caller: Caller, instance_id: str, entry_id: str) -> PendingDeletion | Forgotten:
        """Forget one of the caller's visible entries. ``NotFound`` when there is none by that id."""
        entry = self._store.get_entry(instance_id, caller.upn, entry_id)
        if entry is not None and not is_visible(self._store, entry):
            entry = None
        if entry is None:
            raise NotFound(f"no memory entry {entry_id}")
        if self._deletion_mode is DeletionMode.OPERATOR_APPROVAL:
            return PendingDeletion(self.custody.request_forget(caller.upn, entry).id)
        self._store.delete_entries(entry.key, [entry.id])
        self._store.delete_entries(entry.key.shared(), [shared_copy_id(entry.id)])
        self._audit_write(AuditAction.FORGET, caller, entry)
        return Forgotten(entry.id)

    def screen(self, caller: Caller, key: ProfileKey, text: str) -> None:
        """Refuse ``text`` that looks like a secret, as a write would (``SecretDetected``, audited).

        For what is stored beside content rather than as an entry: the memory tool's file names.
        """
        self._screen_for_secrets(caller, key, text, WriteOptions())

    def drop_version(self, caller: Caller, key: ProfileKey, entry_id: str, detail: str) -> None:
        """Erase one of the caller's entries whose text is not lost by it, in any deletion mode.

        Only for the memory tool's file versions (``memory_file_service``): a version superseded by
        one that keeps its whole text (an insert, a replacement that keeps what it replaces, a move
        between scopes), or a version a command stored but never published because it lost a race.
        Text that would be lost goes through ``forget`` instead. Audited ``memory_file`` with the
        entry's SHA-256 and ``detail``; a missing entry is fine.
        """
        entry = self._store.get_entry(key.instance_id, caller.upn, entry_id)
        self._store.delete_entries(key, [entry_id])
        self.audit.record(
            AuditAction.MEMORY_FILE, actor=caller.upn, instance_id=key.instance_id, upn=caller.upn,
            scope=key.scope.value, agent_object_id=key.agent_object_id, entry_id=entry_id,
            content_sha256=entry.content_sha256 if entry else None, detail=detail,
        )

    def search(
        self,
        caller: Caller,
        instance_id: str,
        scope: Scope,
        agent: AgentContext | None,
        query: str,
        tags: Sequence[str] = (),
        limit: int = 10,
        sharing: SharingPolicy | None = None,
    ) -> list[SearchHit]:
        """BM25 search over the visible entries of ``scope``, composed with a tag filter.

        A store with its own full-text index (``FullTextIndex``) answers from it; any
        other store's entries are ranked here. Either way only visible entries are found.
        """
        terms = query_terms(query)
        if not terms or not isinstance(self._store, FullTextIndex):
            return search_entries(self.entries(caller, instance_id, scope, agent, sharing), query, tags, limit)
        return visible_matches(
            self._store, caller.upn, self._read_keys(caller, instance_id, scope, agent), self._policy(sharing),
            terms, tags, limit,
        )

    def audit_trail(self, instance_id: str, upn: str, limit: int = 1000) -> list[AuditEvent]:
        """The audit events of one user's memory in an instance, oldest first."""
        return self.audit.read(instance_id, upn, limit)

    # -- sharing -------------------------------------------------------------

    def _policy(self, requested: SharingPolicy | None) -> SharingPolicy:
        return resolve_policy(self._default_sharing, requested, allow_override=self._allow_sharing_override)

    def _share(self, entry: MemoryEntry) -> None:
        """Offer a team-shared entry to the instance: a copy in the shared partition."""
        if entry.share is not Share.TEAM:
            return
        shared_key = entry.key.shared()
        copy = replace(entry, id=shared_copy_id(entry.id), key=shared_key)
        seed = MemoryProfile(shared_key, None, None, None, entry.created_on, entry.created_on)
        self._store.append(seed, copy)

    def _unshare(self, caller: Caller, key: ProfileKey, watermark: datetime) -> None:
        """Withdraw the caller's shared copies in ``key``'s scope created at or before ``watermark``."""
        (shared,) = self._store.load([key.shared()])
        mine = [e.id for e in shared.entries if e.author_upn == caller.upn and e.created_on <= watermark]
        self._store.delete_entries(key.shared(), mine)

    # -- rules ---------------------------------------------------------------

    def _guard(self, caller: Caller, instance_id: str, scope: Scope, agent: AgentContext | None) -> None:
        """Operators' agent settings: a disabled agent, or a caller outside its groups, is refused."""
        if agent is not None and agent.object_id.strip():
            self.agent_settings.enforce(caller, instance_id, agent.object_id, scope)

    @staticmethod
    def _require_agent(scope: Scope, agent: AgentContext | None) -> AgentContext:
        if agent is None or not agent.object_id.strip():
            raise InvalidInput(f"agent_object_id is required for scope={scope.value}", code="agent_required")
        return agent

    @staticmethod
    def _write_scope(scope: Scope, operation: str) -> Scope:
        if scope is Scope.COMBINED:
            raise InvalidInput(
                f"scope=combined is read-only; {operation} takes scope=user or scope=agent",
                code="invalid_scope",
            )
        return scope

    def _key(self, caller: Caller, instance_id: str, scope: Scope, agent: AgentContext | None) -> ProfileKey:
        self._guard(caller, instance_id, scope, agent)
        if scope is Scope.AGENT:
            return ProfileKey(instance_id, caller.upn, scope, self._require_agent(scope, agent).object_id)
        return ProfileKey(instance_id, caller.upn, scope)

    def _new_entry(
        self,
        caller: Caller,
        key: ProfileKey,
        agent: AgentContext | None,
        content: str,
        kind: EntryKind,
        options: WriteOptions,
        *,
        allow_empty: bool = False,
    ) -> MemoryEntry:
        size = len(content.encode("utf-8"))
        if size > self._max_write_bytes:
            raise PayloadTooLarge(
                f"content_markdown is {size} bytes; the limit is {self._max_write_bytes} bytes"
            )
        if not allow_empty and not content.strip():
            raise InvalidInput("content_markdown must not be empty", code="empty_content")
        tags = normalize_tags(options.tags, session_id=options.session_id, agent_id=key.agent_object_id)
        self._screen_for_secrets(caller, key, content, options)
        return MemoryEntry(
            id=self._new_id(),
            key=key,
            content_markdown=content,
            kind=kind,
            created_on=self._clock(),
            author_upn=caller.upn,
            author_user_id=caller.user_id,
            agent_name=options.agent_name or (agent.name if agent and key.scope is Scope.AGENT else None),
            reason=options.reason,
            session_id=options.session_id,
            operation_id=options.operation_id,
            tags=tags,
            share=options.share,
            content_sha256=sha256_hex(content),
        )

    def _screen_for_secrets(self, caller: Caller, key: ProfileKey, content: str, options: WriteOptions) -> None:
        findings = self._scanner.scan(content) if self._scanner else []
        if not findings:
            return
        detectors = sorted({str(f.detector) for f in findings})
        self.audit.record(
            AuditAction.WRITE_REJECTED, actor=caller.upn or "operator", instance_id=key.instance_id, upn=key.upn,
            scope=key.scope.value, agent_object_id=key.agent_object_id, session_id=options.session_id,
            operation_id=options.operation_id, content_sha256=sha256_hex(content),
            byte_count=len(content.encode("utf-8")), detail="secret_detected: " + ", ".join(detectors),
        )
        raise SecretDetected(detectors)

    def _audit_write(self, action: AuditAction, caller: Caller, entry: MemoryEntry, detail: str | None = None) -> None:
        self.audit.record(action, actor=caller.upn, **self._audit_fields(entry), detail=detail)

    def _append_audited(
        self, action: AuditAction, caller: Caller, seed: MemoryProfile, entry: MemoryEntry, detail: str | None = None
    ) -> MemoryProfile:
        """Store ``entry`` and its audit event atomically: neither exists without the other."""
        _, event = self.audit.event(action, actor=caller.upn, **self._audit_fields(entry), detail=detail)
        return self._store.append_with_records(seed, entry, [event])

    @staticmethod
    def _audit_fields(entry: MemoryEntry) -> dict[str, Any]:
        return {
            "instance_id": entry.key.instance_id, "upn": entry.key.upn, "scope": entry.key.scope.value,
            "agent_object_id": entry.key.agent_object_id, "session_id": entry.session_id,
            "operation_id": entry.operation_id, "entry_id": entry.id, "content_sha256": entry.content_sha256,
            "byte_count": len(entry.content_markdown.encode("utf-8")),
        }

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
