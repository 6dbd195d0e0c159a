"""The reads of memory: full and budgeted reads, entries pages, search and export.

``MemoryReads`` is the read half of ``MemoryService`` (which adds the writes). With a
store that stamps its partitions (``ChangeStamps``) reads are answered from what this
process kept, each checked against the store's stamp on every call
(``domain.snapshots``, ``domain.shared_snapshots``, ``domain.listings``), so a read costs
the same at any memory size and never shows memory a write from any process has changed.
A private entries page with no current listing is read from the store a page at a time
(``domain.stored_pages``), so a fresh process's first page costs a page, not the memory.
What is kept is held in one store bounded in bytes (``domain.kept``).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

from memory_core.domain.budgeted_read import (
    KeptRead,
    grown_read,
    kept_read,
    labelled_kept_read,
    read_within,
    within_snapshots,
)
from memory_core.domain.checkpoints import Checkpointing, ReadCheckpoints
from memory_core.domain.errors import InvalidInput
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.kept import DEFAULT_MAX_BYTES, KeptAnswers
from memory_core.domain.listings import Listing, Listings, Position, entry_position, listing_position
from memory_core.domain.models import SHARED_OWNER, MemoryEntry, ProfileKey, Scope
from memory_core.domain.paging import Page, check_page_size, decode_token, encode_token
from memory_core.domain.present_entries import PresentEntries
from memory_core.domain.refreshed_snapshots import refreshed_snapshots
from memory_core.domain.rendering import render_combined, render_scope
from memory_core.domain.search import FullTextIndex, SearchHit, query_terms, search_entries
from memory_core.domain.shared_checkpoints import SharedCheckpoints
from memory_core.domain.shared_loads import SharedLoads, entries_key
from memory_core.domain.shared_snapshots import SharedSnapshots, grown_shared_snapshots, shared_snapshots
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.snapshots import ChangeStamps, SnapshotCache, read_spans, snapshot_view
from memory_core.domain.stamped_answers import StampedAnswers
from memory_core.domain.store import MemoryStore
from memory_core.domain.stored_pages import stored_page
from memory_core.domain.targets import ProfileTargets, Use
from memory_core.domain.views import ExportDocument, MemoryView, ScopeRead, combined_view, export_filename, read_view
from memory_core.domain.visibility import visible_matches, visible_scopes

P = ParamSpec("P")
R = TypeVar("R")


_FIRST_PAGE_FROM_PARTS = object()
"""Names, in ``MemoryReads.kept``, a sharing listing whose last first page came from the parts with more to
read: the next read of it builds and keeps the listing."""
_MARKER_BYTES = 64


def _one_read(read: Callable[Concatenate[MemoryReads, P], R]) -> Callable[Concatenate[MemoryReads, P], R]:
    """``read`` inside the store's span of one read (``ReadSpans``): what it checks is reused within
    it, never by a later read. Every read that checks a stamp is one."""

    @functools.wraps(read)
    def spanned(self: MemoryReads, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._read_span():
            return read(self, *args, **kwargs)

    return spanned


class MemoryReads:
    """Get, search, list and export memory for an authenticated caller."""

    def __init__(self, store: MemoryStore, targets: ProfileTargets, kept_bytes: int = DEFAULT_MAX_BYTES) -> None:
        """``kept_bytes``: the most that everything reads keep may hold together (``domain.kept``)."""
        self._store = store
        self._targets = targets
        # Reads answered from snapshots the store re-checks on every read (stores that stamp writes).
        self._stamps: ChangeStamps | None = store if isinstance(store, ChangeStamps) else None
        self._read_span = read_spans(store)  # decided once: every read opens one (``_one_read``)
        self._snapshots: SnapshotCache | None = None
        self.kept = KeptAnswers(kept_bytes)
        # Kept while their partitions are unchanged (and grown after appends where that is exact):
        # budgeted reads of memories larger than the budget, sharing reads, and the listings entries
        # pages are cut from.
        self._budgeted: StampedAnswers[KeptRead] | None = None
        self._shared: StampedAnswers[SharedSnapshots] | None = None
        self._shared_parts: SharedCheckpoints | None = None  # where sharing reads start when none is kept
        self._listings: Listings | None = None
        # What the memory tool's commands read (``domain.file_entries``), composed on top of this service.
        self.file_entries: StampedAnswers[Any] | None = None
        if isinstance(store, ChangeStamps):
            checkpoints = Checkpointing(store) if isinstance(store, ReadCheckpoints) else None
            # After an erasure a kept snapshot drops what is gone instead of rendering everything again
            # (a store that lists its entry ids); a full load skips what a clear's watermark hides.
            refresh = functools.partial(refreshed_snapshots, store) if isinstance(store, PresentEntries) else None
            # A private get and a private search or entries page show the same visible entries: whichever of
            # them loads a memory in full keeps the other's answer from that load too (same stamp, same
            # sequence), so the next of the other reads no entry (``shared_loads``).
            shared = SharedLoads(store, self.kept, checkpoints, refresh)
            self._snapshots = shared.snapshots
            if isinstance(store, ReadCheckpoints):
                self._shared_parts = SharedCheckpoints(store, store)
            self._budgeted = StampedAnswers(store, lambda read: read.size, self.kept)
            self._shared = StampedAnswers(store, lambda read: read.size, self.kept)
            self._listings = shared.listings
            self.file_entries = StampedAnswers(store, lambda answer: answer.size, self.kept)

    @property
    def store(self) -> MemoryStore:
        """The store behind this service, for use cases composed on top of it (the memory tool's files)."""
        return self._store

    @property
    def targets(self) -> ProfileTargets:
        """Which profiles a call touches, and the operators' say on the agent's use of them (``Use``)."""
        return self._targets

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
        Raises ``InvalidInput`` when an agent or combined scope has no agent, and ``Forbidden`` when the
        operators' settings refuse ``agent`` the use of memory (``Use.AGENT``: this read feeds models).
        """
        return self._view(caller, instance_id, scope, agent, sharing, Use.AGENT)

    @_one_read
    def _view(
        self, caller: Caller, instance_id: str, scope: Scope, agent: AgentContext | None,
        sharing: SharingPolicy | None, use: Use,
    ) -> MemoryView:
        """``get``, for ``use``."""
        policy = self._targets.policy(sharing)
        keys = self._targets.read_keys(caller, instance_id, scope, agent, use=use)
        if self._snapshots is not None:
            if not policy.shares_read():
                return self._snapshot_view(caller, scope, keys, agent)
            if self._shared is not None and self._stamps is not None:
                stamps, parts = self._stamps, self._shared_parts
                kept = self._shared.answer_across(
                    (caller.upn, tuple(keys), policy), instance_id, (caller.upn, SHARED_OWNER),
                    (lambda: parts.snapshots(keys, caller.upn, policy)) if parts is not None
                    else (lambda: shared_snapshots(stamps, keys, caller.upn, policy)),
                    grow=lambda read, at: grown_shared_snapshots(stamps, read, at, keys, caller.upn, policy))
                return snapshot_view(caller, scope, kept.snapshots, agent)
        return self._read_in_full(caller, scope, keys, agent, policy)

    def _read_in_full(
        self, caller: Caller, scope: Scope, keys: list[ProfileKey], agent: AgentContext | None, policy: SharingPolicy
    ) -> MemoryView:
        """``get`` from every visible entry of the scope's profiles (``keys``), read and rendered now."""
        reads = [ScopeRead.of(state, entries, render_scope(state.key.scope, entries, viewer=caller.upn))
                 for state, entries in visible_scopes(self._store, caller.upn, keys, policy)]
        if scope is Scope.COMBINED:
            return combined_view(caller, reads[0], reads[1], agent, render_combined(reads[0].document, reads[1].document))
        return read_view(caller, reads[0], agent)

    def _snapshot_view(
        self, caller: Caller, scope: Scope, keys: list[ProfileKey], agent: AgentContext | None
    ) -> MemoryView:
        """A private read answered from the store-checked snapshots (``domain.snapshots``)."""
        assert self._snapshots is not None
        return snapshot_view(caller, scope, self._snapshots.read(keys, caller.upn), agent)

    @_one_read
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
        policy the store work is bounded by the budget, not by the memory's size, and
        right after appends by what was appended (``budgeted_read.grown_read``).
        Raises what ``get`` raises (this read feeds models: ``Use.AGENT``), and ``InvalidInput`` for a
        negative budget.
        """
        if max_chars < 0:
            raise InvalidInput("the budget (maxChars) must be 0 or more characters", code="invalid_budget")
        keys = self._targets.read_keys(caller, instance_id, scope, agent, use=Use.AGENT)
        policy = self._targets.policy(sharing)
        snapshots, stamps = self._snapshots, self._stamps
        if snapshots is None or stamps is None or self._budgeted is None:
            return read_within(self._store, caller, scope, keys, agent, max_chars, policy)
        if policy.shares_read():
            # A sharing read merges the shared partition when it is built (from both partitions'
            # checkpoints where the store keeps them): kept while both partitions are unchanged, and
            # grown when only entries were added to them.
            parts = self._shared_parts
            return self._budgeted.answer_across(
                (caller, scope, tuple(keys), agent, max_chars, policy), instance_id, (caller.upn, SHARED_OWNER),
                (lambda: parts.kept_read(caller, scope, keys, agent, max_chars, policy)) if parts is not None
                else (lambda: kept_read(self._store, stamps, caller, scope, keys, agent, max_chars, policy)),
                grow=lambda read, at: grown_read(stamps, read, at, caller, scope, keys, agent, max_chars, policy),
            ).view
        # A memory that fits the budget whole is answered from its snapshot (one stamp read);
        # ``peek`` never loads a memory in full, so the read's store work stays bounded.
        current = snapshots.peek(keys, caller.upn)
        fitted = within_snapshots(caller, scope, current, agent, max_chars)
        if fitted is not None:
            return fitted
        kept = self._budgeted.answer(
            (caller, scope, tuple(keys), agent, max_chars), instance_id, caller.upn,
            lambda: kept_read(self._store, stamps, caller, scope, keys, agent, max_chars),
            stamp=current.stamp if current is not None else None,
            grow=lambda read, at: grown_read(stamps, read, (at,), caller, scope, keys, agent, max_chars),
            labelled=lambda: labelled_kept_read(self._store, stamps, caller, scope, keys, agent, max_chars),
        )
        view = kept.view
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
        """The scope's document as a markdown file; ``InvalidInput`` for combined.

        The person's custody of their memory (``Use.CUSTODY``): answered whatever the operators'
        settings say of ``agent``."""
        view = self._view(caller, instance_id, self._targets.write_scope(scope, "export"), agent, sharing,
                          Use.CUSTODY)
        return ExportDocument(export_filename(view.scope, view.agent_name), view.content_markdown)

    def entries(
        self,
        caller: Caller,
        instance_id: str,
        scope: Scope,
        agent: AgentContext | None,
        sharing: SharingPolicy | None = None,
    ) -> list[MemoryEntry]:
        """The visible entries of ``scope`` (combined: user then agent), oldest first; each names its author.

        The person's custody of their memory (``Use.CUSTODY``), as ``entries_page``."""
        keys = self._targets.read_keys(caller, instance_id, scope, agent, use=Use.CUSTODY)
        return self._visible_entries(caller, keys, self._targets.policy(sharing))

    def _visible_entries(self, caller: Caller, keys: list[ProfileKey], policy: SharingPolicy) -> list[MemoryEntry]:
        """Every visible entry of ``keys`` under ``policy``, read in full (no listing kept)."""
        return [e for _, entries in visible_scopes(self._store, caller.upn, keys, policy) for e in entries]

    @_one_read
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
        walk exactly once, whichever way each page was read. A private page is cut from the
        scope's listing when this process keeps a current one (one stamp read; grown by the
        entries appended since, ``listings.Listings``), else read from the store a page at a
        time (``stored_pages``: about ``limit`` entries read, whatever the memory holds); when that
        page holds the whole scope, the scope's listing is built, kept and answered from. A sharing
        page is cut from a listing of the scope merged with the shared entries it shows, kept and
        grown the same way; where the store keeps checkpoints, one with none current is built from
        both partitions' parts (``shared_checkpoints``: neither read in full where its checkpoint is
        current), else from a full read of both. A first page with none current, unless the last
        first page of it was also so answered, comes from the parts with only about a page of entries
        decoded, and keeps nothing when more follows (a fresh process's one look at the first page
        stays cheap; reading on, or again, builds the listing).
        ``InvalidInput`` for a foreign or malformed token, or a limit outside 1..1000.
        The person's custody of their memory (``Use.CUSTODY``): answered whatever the operators'
        settings say of ``agent``, so the person sees what a disabled agent's memory holds.
        """
        name = f"entries:{scope.value}"
        after = listing_position(decode_token(name, continuation))
        check_page_size(limit)
        keys = self._targets.read_keys(caller, instance_id, scope, agent, use=Use.CUSTODY)
        policy = self._targets.policy(sharing)

        if self._listings is None:
            listing = Listing.of(self._visible_entries(caller, keys, policy))
        elif not policy.shares_read():
            kept = self._listings.kept(entries_key(keys), keys)
            if kept is not None:
                return _cut(name, kept, after, limit)
            page = stored_page(self._store, keys, after, limit)
            if page is not None and (after is not None or page.more):
                return _page(name, page.entries, page.more)
            # The page held the whole scope (or a hold no window expresses came up): build its listing
            # (about a page of entries read, plus any held or cleared not yet erased), so the next page
            # of a small memory costs one stamp read and appends grow it. A larger memory keeps none:
            # that read is the cost this path avoids.
            listing = self._listings.listing(entries_key(keys), keys)
        else:
            key = entries_key(keys, policy)
            kept = self._listings.kept_across(key, keys, caller.upn, policy)
            if kept is not None:
                return _cut(name, kept, after, limit)
            parts = self._shared_parts
            if parts is None:
                listing = self._listings.across(key, keys, caller.upn, policy)
                return _cut(name, listing, after, limit)
            marker = (_FIRST_PAGE_FROM_PARTS, key)
            if after is None and self.kept.get(marker) is None:
                # A first page with no listing kept (a process just started, or a write that was not an
                # append): from both partitions' checkpoints, decoding about a page of entries.
                page, read = parts.first_page(keys, caller.upn, policy, limit)
                if page.more:
                    self.kept.put(marker, True, _MARKER_BYTES)
                    return _page(name, page.entries, page.more)
                # The page is the whole listing, read at the parts' stamps.
                listing = Listing.of(page.entries, read.sequences)
            else:
                # Reading on (the next page, or the first page again) builds the listing from the parts and
                # keeps it: the next reads cost two stamp reads, appends grow it, and a large memory is
                # decoded once, not once per page.
                self.kept.discard(marker)
                listing, read = parts.listing(keys, caller.upn, policy)
            self._listings.keep_across(key, listing, (read.own.stamp, read.shared.stamp))
        return _cut(name, listing, after, limit)

    @_one_read
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
        other store's entries are ranked here (``_searched``). Either way only visible entries are found.
        Agents search to fill a model's context (MCP, the Agent Framework provider): ``Use.AGENT``, refused
        as ``get`` is.
        """
        keys = self._targets.read_keys(caller, instance_id, scope, agent, use=Use.AGENT)
        terms = query_terms(query)
        policy = self._targets.policy(sharing)
        if not terms or not isinstance(self._store, FullTextIndex):
            return search_entries(self._searched(caller, keys, policy), query, tags, limit)
        return visible_matches(self._store, caller.upn, keys, policy, terms, tags, limit)

    def _searched(self, caller: Caller, keys: list[ProfileKey], policy: SharingPolicy) -> Sequence[MemoryEntry]:
        """The visible entries a search ranks in process. On a stamped store, the listing entries pages are
        cut from (``listings.Listings``, same key, so either read reuses the other's): answered while the
        partitions' stamps are those it was read at (one stamp read each), grown by the entries appended
        since, built again after any other write (a clear, a forget, a hold, a profile change, and for a
        sharing read any of those in the shared partition). Without one, read in full on every call."""
        if self._listings is None:
            return self._visible_entries(caller, keys, policy)
        if not policy.shares_read():
            return self._listings.listing(entries_key(keys), keys).entries
        return self._listings.across(entries_key(keys, policy), keys, caller.upn, policy).entries


def _cut(name: str, listing: Listing, after: tuple[Position, datetime] | None, limit: int) -> Page[MemoryEntry]:
    """The page of ``listing`` that follows ``after``."""
    start = bisect.bisect_right(listing.positions, after[0]) if after is not None else 0
    return _page(name, list(listing.entries[start:start + limit]), len(listing.entries) > start + limit)


def _page(name: str, entries: list[MemoryEntry], more: bool) -> Page[MemoryEntry]:
    """``entries`` with, when ``more`` follow, the token that continues after the last of them:
    the same token whichever way the page was read."""
    return Page(entries, encode_token(name, list(entry_position(entries[-1]))) if more and entries else None)
