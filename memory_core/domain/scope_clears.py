"""A scope's content taken away at once: a clear, and an import that replaces the scope's whole content.

Both hide what the scope showed up to a watermark, under the deletion mode (``MEMORY_DELETION_MODE``):

- operator approval: nothing is erased. A deletion request (``CustodyService.request_clear``,
  ``request_replace``) hides the content until an operator decides, and a rejection shows it again.
- immediate: the profile's ``cleared_on`` moves forward to the watermark, and what it hides is erased by a journaled
  erasure (``domain.erasures``), begun before the first write and finished after the watermark is stored, so the
  sweep finishes what a crash left half way.

Each chooses its watermark inside the custody fence (``CustodyService.fence``): a memory-tool edit that read the
scope before it commits nothing made from what the watermark hides. A replace's new content is one entry just after
the watermark, visible at once in either mode. Content is screened (``domain.new_entries``) before anything is
written. The caller decides the profile (``domain.targets``) and the call's rules (``confirm``); nothing here erases
an entry itself (``domain.erasures`` and custody do).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from memory_core.domain import team_copies
from memory_core.domain.audit import AuditAction
from memory_core.domain.audited_appends import AuditedAppends, seed_profile
from memory_core.domain.custody import CustodyService
from memory_core.domain.deletion import DeletionRequest
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import EntryKind, MemoryProfile, ProfileKey
from memory_core.domain.new_entries import NewEntries
from memory_core.domain.rendering import render_scope, strip_title
from memory_core.domain.seals import advance_watermark
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import DeletionMode, MemoryView, PendingDeletion, WriteOptions, scope_view


class ScopeClears:
    """Clear a scope, or replace its content, under the deletion mode."""

    def __init__(
        self,
        store: MemoryStore,
        appends: AuditedAppends,
        new_entries: NewEntries,
        custody: CustodyService,
        *,
        clock: Callable[[], datetime],
        deletion_mode: DeletionMode,
    ) -> None:
        self._store = store
        self._appends = appends
        self._new_entries = new_entries
        self._custody = custody
        self._clock = clock
        self._deletion_mode = deletion_mode

    def clear(self, caller: Caller, key: ProfileKey, agent: AgentContext | None) -> MemoryView | PendingDeletion:
        """Empty ``key``'s scope, keeping its profile (created_on stays; a scope with none gets one, cleared).

        Under operator approval answers the ``PendingDeletion`` that hides the scope at once; otherwise the scope
        as it reads after the erasure."""
        if self._deletion_mode is DeletionMode.OPERATOR_APPROVAL:
            with self._custody.fence(key.instance_id, caller.upn):
                return PendingDeletion(self._custody.request_clear(caller.upn, key).id)
        with self._custody.fence(key.instance_id, caller.upn):
            now = self._clock()
            # Journaled first: what follows the watermark is finished by the sweep if this stops half way.
            erasure = self._custody.erasures.begin("clear", caller.upn, key, watermark=now)
            # A scope with no profile gets one, cleared (the caller's names): a first write stamped before ``now``
            # and stored later is refused by it, whatever the profile it was to make.
            self._advance_watermark(key, now, now, seed=seed_profile(caller, key, agent, WriteOptions(), now))
        # Erased once the watermark is stored: an append stamped before it that had not committed yet is refused by
        # the store from now on and stamped after it (``domain.audited_appends``), so what finish's load misses shows.
        self._custody.erasures.finish(erasure)
        (sealed,) = self._store.load([key])
        return scope_view(caller, sealed, agent, render_scope(key.scope, sealed.visible_entries()))

    def replace(
        self, caller: Caller, key: ProfileKey, agent: AgentContext | None, content_markdown: str, options: WriteOptions
    ) -> DeletionRequest | None:
        """Make ``content_markdown`` (its title stripped) the scope's whole content, audited as an ``import``.

        Answers the deletion request that holds the replaced content under operator approval, None when it was
        erased at once. Raises what ``NewEntries.entry`` raises before anything is written."""
        if self._deletion_mode is DeletionMode.OPERATOR_APPROVAL:
            return self._replace_pending(caller, key, agent, content_markdown, options)
        body = strip_title(key.scope, content_markdown)
        with self._custody.fence(key.instance_id, caller.upn):  # the replace's time is its watermark: chosen fenced
            entry = self._new_entries.entry(caller, key, agent, body, EntryKind.REPLACE, options, allow_empty=True)
            watermark = entry.created_on - timedelta(microseconds=1)
            # Journaled first: the erasure after the entry is finished by the sweep if this stops half way.
            erasure = self._custody.erasures.begin("replace", caller.upn, key, watermark=watermark, entry=entry)
            # The replace entry alone switches what readers see at once.
            seed = seed_profile(caller, key, agent, options, entry.created_on)
            _, entry = self._appends.append(AuditAction.IMPORT, caller, seed, entry, "replace")
        self._advance_watermark(key, watermark, entry.created_on)
        # Erased once the watermark is stored: an append stamped before it and stored after is refused by the store
        # and stamped after it (``domain.audited_appends``): never hidden yet stored.
        self._custody.erasures.finish(erasure)
        team_copies.share(self._store, entry)
        return None

    def _replace_pending(
        self, caller: Caller, key: ProfileKey, agent: AgentContext | None, content_markdown: str, options: WriteOptions
    ) -> DeletionRequest:
        """Import-replace under operator approval: the old content is held, not erased.

        A deletion request hides everything the scope showed up to just before the
        new entry (and the caller's team-shared copies of it), exactly like a clear;
        the new content is an entry after that watermark (kind ``held_replace``: it
        renders like a replace without cutting off what came before), so it shows
        at once, and a rejection shows the old content again before it.
        The content is screened before anything is written.
        """
        body = strip_title(key.scope, content_markdown)
        with self._custody.fence(key.instance_id, caller.upn):  # the new entry's time is the request's watermark
            entry = self._new_entries.entry(caller, key, agent, body, EntryKind.HELD_REPLACE, options,
                                            allow_empty=True)
            # The request and its holds go first: a crash after them leaves the old
            # content hidden and a request an operator can decide, never old and new mixed.
            request = self._custody.request_replace(caller.upn, key, entry.created_on - timedelta(microseconds=1))
        if body.strip():
            seed = seed_profile(caller, key, agent, options, entry.created_on)
            _, entry = self._appends.append(AuditAction.IMPORT, caller, seed, entry,
                                           f"replace pending request {request.id}")
            team_copies.share(self._store, entry)
        return request

    def _advance_watermark(
        self, key: ProfileKey, watermark: datetime, updated_on: datetime, *, seed: MemoryProfile | None = None
    ) -> None:
        """Move the profile's cleared_on forward, in a profile made from ``seed`` when the scope has none
        (``seals.advance_watermark``)."""
        advance_watermark(self._store, key, watermark, updated_on, seed=seed)
