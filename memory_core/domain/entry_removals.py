"""One entry taken out of a caller's memory: a forget, and a memory-tool file version dropped.

``forget`` follows the deletion mode (``MEMORY_DELETION_MODE``): under operator approval it files a deletion request
that hides the entry until an operator decides; otherwise it erases the entry at once, journaled
(``domain.erasures``) so the sweep finishes its team copy, its file's name and its event if a crash stops it.
``drop_version`` erases, in any mode, only a memory-tool version whose text is not lost by it, with its team copy.
Both are audited. This and custody (``domain.custody_sweep``, ``domain.erasures``, ``domain.file_retirements``,
``domain.file_audits``) are the only domain code that erases memory (docs/custody.md).
"""

from __future__ import annotations

import contextlib

from memory_core.domain import team_copies
from memory_core.domain.audit import AuditAction, AuditTrail
from memory_core.domain.budget import is_visible, visible_entry
from memory_core.domain.custody import CustodyService
from memory_core.domain.custody_fence import FenceTaken, forget_fence
from memory_core.domain.errors import NotFound
from memory_core.domain.identity import Caller
from memory_core.domain.models import MemoryEntry, ProfileKey, Share
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import DeletionMode, Forgotten, PendingDeletion


class EntryRemovals:
    """Forget an entry under the deletion mode, or drop a memory-tool version whose text a newer one keeps."""

    def __init__(
        self, store: MemoryStore, audit: AuditTrail, custody: CustodyService, *, deletion_mode: DeletionMode
    ) -> None:
        self._store = store
        self._audit = audit
        self._custody = custody
        self._deletion_mode = deletion_mode

    def forget(
        self, caller: Caller, instance_id: str, entry_id: str, *, fenced: bool = False
    ) -> PendingDeletion | Forgotten:
        """Forget one of the caller's visible entries. ``NotFound`` when there is none by that id.

        ``fenced``: the caller already stands the fence (``CustodyService.fence``) around this and more forgets, with
        this entry's ``forget_fence`` claimed, as the memory tool does around a command's old versions."""
        if not fenced:
            self._visible(instance_id, caller.upn, entry_id)  # an unknown id is answered without a write
        # Fenced from the hold or the erasure on: an edit that read the entry before commits nothing made from it.
        # The fence is exclusive to this entry's forgets, and the entry is read again inside it: of concurrent
        # forgets one is taken and the others hear "not found", on either store (fences otherwise overlap).
        fence = (contextlib.nullcontext() if fenced
                 else self._custody.fence(instance_id, caller.upn, exclusive=forget_fence(entry_id)))
        try:
            with fence:
                entry = self._visible(instance_id, caller.upn, entry_id)
                if self._deletion_mode is DeletionMode.OPERATOR_APPROVAL:
                    return PendingDeletion(self._custody.request_forget(caller.upn, entry).id)
                erasure = self._custody.erasures.begin("forget", caller.upn, entry.key, entry=entry)
                self._store.delete_entries(entry.key, [entry.id])
        except FenceTaken:
            raise NotFound(f"no memory entry {entry_id}") from None
        self._custody.erasures.finish(erasure)  # its team copy, its file's path, the event
        return Forgotten(entry.id)

    def _visible(self, instance_id: str, upn: str, entry_id: str) -> MemoryEntry:
        """``upn``'s entry ``entry_id``; ``NotFound`` when there is none or a deletion hides it."""
        entry = visible_entry(self._store, instance_id, upn, entry_id)
        if entry is None:
            raise NotFound(f"no memory entry {entry_id}")
        return entry

    def drop_version(
        self, caller: Caller, key: ProfileKey, entry_id: str, detail: str, *, maybe_hidden: bool = False,
        if_stored: bool = False,
    ) -> None:
        """Erase one of the caller's entries whose text is not lost by it, and its team copy, in any deletion mode.

        Only for the memory tool's file versions (``memory_file_service``): a version superseded by
        one that keeps its whole text (an insert, a replacement that keeps what it replaces, a move
        between scopes), or a version a command stored but never published because it lost a race.
        Text that would be lost goes through ``forget`` instead. Audited ``memory_file`` with the
        entry's SHA-256 and ``detail``; a missing entry is fine. ``maybe_hidden``: a deletion may have hidden
        the version since the command read it; one it did is left to that deletion, for an operator to decide.
        ``if_stored``: an entry already gone is no event (a withdrawal another hand made first, audited there).
        """
        entry = self._store.get_entry(key.instance_id, caller.upn, entry_id)
        if if_stored and entry is None:
            return
        if maybe_hidden and entry is not None and not is_visible(self._store, entry):
            self._audit.record(
                AuditAction.MEMORY_FILE, actor=caller.upn, instance_id=key.instance_id, upn=caller.upn,
                scope=key.scope.value, agent_object_id=key.agent_object_id, entry_id=entry_id,
                content_sha256=entry.content_sha256, detail=f"{detail}; kept: a deletion hid it first",
            )
            return
        if entry is not None:
            # Its team copy goes with it: the file's new version is private (the memory tool shares nothing), and
            # a copy left behind would outlive every later forget of the file.
            self._withdraw_copy(entry)
        # The copy and the event before the entry: a replay (``domain.file_retirements``) drops only a version still
        # stored, so a crash after the entry's erasure left its copy to teammates and the erasure unaudited for good.
        # (A crash after the event and before the erasure audits the drop twice.)
        self._audit.record(
            AuditAction.MEMORY_FILE, actor=caller.upn, instance_id=key.instance_id, upn=caller.upn,
            scope=key.scope.value, agent_object_id=key.agent_object_id, entry_id=entry_id,
            content_sha256=entry.content_sha256 if entry else None, detail=detail,
        )
        self._store.delete_entries(key, [entry_id])

    def _withdraw_copy(self, entry: MemoryEntry) -> None:
        """Erase ``entry``'s copy in the shared partition when it is team-shared: with the entry, always. The copy's
        mark is stored first (``team_copies.withdraw``, as a forget does): a copy its writer has not stored yet (a
        team-shared append stores the entry, then the copy) is refused once the mark is, instead of outliving the
        version this drop erases."""
        if entry.share is Share.TEAM:
            team_copies.withdraw(self._store, entry.key, [entry.id])
