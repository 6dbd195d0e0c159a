"""Immediate erasures, journaled: a crash or an outage between their writes is finished by the next sweep.

Under ``MEMORY_DELETION_MODE=immediate`` a clear, an import-replace and a forget erase at once, in several writes:
the watermark that hides the scope (a forget: the entry's own erasure), the entries under it, the caller's
team-shared copies, the names the memory tool's file index keeps for them, and the audit event. A crash or a 503
between them left the rest undone for good: entries stored under the watermark, where no read shows them and no
later step erases them; a file's path outliving its text; a clear with no event in the trail.

So each writes a journal record first (kind ``immediate_erasure``, in the instance's deletions partition, naming
no text), then its writes, and erases the record last. A clear's file names go before its entries: a replay finds
what the watermark covers among what is still stored, so names left behind entries already erased would stay.
A clear or a replace that erases team-shared entries seals its watermark on their copies (``MemoryStore.seal_copies``)
before it reads which copies to erase (a replay stores the profile's ``cleared_on`` first, ``seals.advance_watermark``:
the run it finishes may have stopped before it, and a seal holds only what the profile holds), and a forget of a team-shared entry forbids its copy (``team_copies.forbid``)
before erasing it: a copy its writer stores later is refused by the store, never kept for teammates after its entry
was erased.
Every step can run twice: ``finish`` erases what is left and audits, and the sweep (``replay``) finishes every
settled record, claimed once (``domain.journals``: an erasure under way is left to finish itself). A crash after the event and before the record's erasure audits the
erasure twice.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from memory_core.domain import journals, team_copies
from memory_core.domain.audit import AuditAction, AuditTrail, entry_fields
from memory_core.domain.identity import Caller
from memory_core.domain.models import MemoryEntry, ProfileKey, Scope, ScopeState, Share
from memory_core.domain.records import Record, deletions_partition
from memory_core.domain.seals import advance_watermark
from memory_core.domain.store import EntryWindow, MemoryStore

KIND = "immediate_erasure"

Action = Literal["clear", "replace", "forget"]
EraseFileNames = Callable[[str, str, "list[str | None] | None", "datetime | None", "list[str]"], None]


@dataclass(frozen=True, slots=True)
class Erasure:
    """One immediate erasure, as journaled: ``watermark`` for a clear or a replace; ``entry``: a forget's facts for
    its event, or a replace's new entry's id."""

    id: str
    action: Action
    actor: str
    key: ProfileKey
    started_on: datetime
    watermark: datetime | None = None
    entry: dict[str, Any] | None = None

    def to_record(self) -> Record:
        return Record(deletions_partition(self.key.instance_id), KIND, self.id, {
            "action": self.action, "actor": self.actor, "upn": self.key.upn, "scope": self.key.scope.value,
            "agent_object_id": self.key.agent_object_id, "started_on": self.started_on.isoformat(),
            "watermark": self.watermark.isoformat() if self.watermark else None, "entry": self.entry,
        })

    @staticmethod
    def from_record(record: Record) -> Erasure:
        data = record.data
        key = ProfileKey(record.partition.instance_id, data["upn"], Scope(data["scope"]), data.get("agent_object_id"))
        watermark = data.get("watermark")
        return Erasure(record.id, data["action"], data["actor"], key, datetime.fromisoformat(data["started_on"]),
                       datetime.fromisoformat(watermark) if watermark else None, data.get("entry"))


class ImmediateErasures:
    """Begin, finish and replay immediate erasures (see the module's docstring)."""

    def __init__(
        self, store: MemoryStore, audit: AuditTrail, erase_file_names: EraseFileNames, *, clock: Callable[[], datetime]
    ) -> None:
        self._store = store
        self._audit = audit
        self._erase_file_names = erase_file_names
        self._clock = clock

    def begin(
        self, action: Action, actor: str, key: ProfileKey, *, watermark: datetime | None = None,
        entry: MemoryEntry | None = None,
    ) -> Erasure:
        """Journal an erasure before its first write. Raises the store's errors (nothing is erased then)."""
        facts: dict[str, Any] | None = None
        if entry is not None and action == "replace":  # the new content: a replace stopped before it erases nothing
            facts = {"id": entry.id}
        elif entry is not None:  # what the forget's event says of the entry: no text
            facts = {"id": entry.id, "shared": entry.share is Share.TEAM, "event": entry_fields(entry)}
        erasure = Erasure(uuid.uuid4().hex, action, actor, key, self._clock(), watermark, facts)
        self._store.put_record(erasure.to_record())
        return erasure

    def finish(self, erasure: Erasure, *, replayed: bool = False) -> int:
        """Erase what ``erasure`` covers that is still stored, take its names out of the file index, audit it (a clear,
        a forget: a replace's event was written with its entry), and close the journal record. Answers how many
        entries this call erased. Safe to run again after a failure at any step."""
        key, upn, instance_id = erasure.key, erasure.key.upn, erasure.key.instance_id
        if erasure.action == "forget":
            assert erasure.entry is not None
            entry_id = str(erasure.entry["id"])
            # The forget erased the entry itself, under its fence; a replay erases it again (it may have stopped first).
            erased = self._store.delete_entries(key, [entry_id]) if replayed else 1
            if erasure.entry.get("shared"):  # its team copy goes with it (a write there would reset the instance's
                # shared checkpoints: only then). Forbidden first: a copy its writer stores after this erasure is
                # refused by the store, never kept for teammates after its entry was forgotten.
                team_copies.withdraw(self._store, key, [entry_id])
            self._erase_file_names(instance_id, upn, None, None, [entry_id])
        else:
            assert erasure.watermark is not None
            watermark = erasure.watermark
            # The profile only: what the watermark covers is read below as ids and facts (``entry_facts``), never
            # as the scope's entries whole (tens of thousands of them, text and all, for a large memory).
            (state,) = self._store.load_heads([key])
            if replayed and erasure.action == "replace" and not self._replaced(erasure, state):
                # Stopped before its new content was stored: nothing was replaced, and nothing may be erased.
                self._store.delete_record(deletions_partition(instance_id), KIND, erasure.id)
                return 0
            if replayed:
                # The watermark first, before the read below: the run this finishes may have stopped before it stored
                # it, and the store refuses an entry stamped under it (and the seal below a team copy) only once the
                # profile holds it, in a profile of its own when the scope has none (a first write may still be on
                # its way). Read before it, a late entry stored in between would stay at rest, hidden, never erased.
                advance_watermark(self._store, key, watermark, watermark, first=state)
            covered = self._store.entry_facts(EntryWindow(key, up_to=watermark))
            # The names first: a replay finds covered only what is still stored, and a name must not outlive its text.
            self._erase_file_names(instance_id, upn, [key.agent_object_id], watermark, [e.id for e in covered])
            erased = self._store.delete_entries(key, [e.id for e in covered])
            if replayed or any(e.share is Share.TEAM for e in covered):
                # Sealed before the copies are read: a team-shared entry stored before the watermark may not have
                # its copy stored yet, and a copy stored after the read below would outlive its entry. A replay
                # seals too: what it finds is what the first run left, its team entries maybe erased already.
                self._store.seal_copies(key, watermark)
            self._store.delete_entries(key.shared(), team_copies.copies_before(self._store, Caller(upn), key, watermark))
        note = " (finished by the sweep after an interruption)" if replayed else ""
        if erasure.action == "clear":
            self._audit.record(AuditAction.CLEAR, actor=erasure.actor, instance_id=instance_id, upn=upn,
                               scope=key.scope.value, agent_object_id=key.agent_object_id,
                               detail=f"erased {erased} entries{note}")
        elif erasure.action == "forget":
            assert erasure.entry is not None
            self._audit.record(AuditAction.FORGET, actor=erasure.actor, **erasure.entry["event"],
                               detail=note.strip(" ()") or None)
        self._store.delete_record(deletions_partition(instance_id), KIND, erasure.id)
        return erased

    def _replaced(self, erasure: Erasure, state: ScopeState) -> bool:
        """Whether a replace's new content was stored (its entry, or a watermark at or past the replace's, which a
        later clear moves), given its scope's profile as just read: one point read, not the scope's entries."""
        assert erasure.entry is not None and erasure.watermark is not None
        cleared = state.profile.cleared_on if state.profile else None
        if cleared is not None and cleared >= erasure.watermark:
            return True
        # One point read: an entry id is unique in its owner's partition (``MemoryStore.append``).
        entry = self._store.get_entry(erasure.key.instance_id, erasure.key.upn, str(erasure.entry["id"]))
        return entry is not None and entry.key == erasure.key

    def replay(self, instance_id: str | None = None) -> int:
        """Finish every journaled erasure a crash or an outage left (``journals.replay``: settled, claimed once);
        answers how many."""
        return journals.replay(self._store, KIND, instance_id, clock=self._clock, wait=lambda record: timedelta(0),
                               finish=lambda record: self.finish(Erasure.from_record(record), replayed=True))
