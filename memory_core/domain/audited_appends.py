"""A new entry stored with its audit event: the one way the service's writes add an entry to a memory.

``AuditedAppends.append`` stores the entry and its event in one atomic write (``MemoryStore.append_with_records``):
no entry exists without its event, nor the event without the entry. ``store_new`` adds the team's copy of a
team-shared entry (``domain.team_copies``), and with an Idempotency-Key stores the entry at most once
(``domain.idempotency.store_once``). ``seed_profile`` is the profile a scope gets when its first entry is stored.

An append does not stand in the custody fence (``domain.custody_fence``): it may take its time before an immediate
clear's watermark and commit after the clear's erasure has read what to erase. Stored, such an entry would be hidden
by the watermark and never erased: "cleared" would leave data at rest. So the store refuses it inside the append's
atomic write (``EntryBeforeClear``: the SQLite transaction reads the profile's ``cleared_on``; the Cosmos DB batch is
If-Match the partition stamp that carries it), and ``append`` stamps the entry just after the watermark (or now,
when later) and writes again: the append counts as made after the clear, and shows.
Nothing here decides whether content may become an entry (``domain.new_entries``) or which profile it goes to
(``domain.targets``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from memory_core.domain import team_copies
from memory_core.domain.audit import AuditAction, AuditTrail, entry_fields
from memory_core.domain.errors import Conflict, EntryBeforeClear
from memory_core.domain.idempotency import store_once
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.records import Record
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import WriteOptions


def seed_profile(
    caller: Caller, key: ProfileKey, agent: AgentContext | None, options: WriteOptions, now: datetime
) -> MemoryProfile:
    """The profile ``key`` is created with when a write finds none: the caller's names, the agent's name in an
    agent scope (``options.agent_name`` before the agent's own), created and updated ``now``."""
    agent_name = options.agent_name or (agent.name if agent else None)
    return MemoryProfile(
        key=key,
        name=caller.name,
        user_name=caller.user_name,
        agent_name=agent_name if key.scope is Scope.AGENT else None,
        created_on=now,
        updated_on=now,
    )


_RESTAMPS = 4


class AuditedAppends:
    """Store new entries of a caller's memory, each with its audit event."""

    def __init__(self, store: MemoryStore, audit: AuditTrail, *, clock: Callable[[], datetime]) -> None:
        self._store = store
        self._audit = audit
        self._clock = clock

    def append(
        self, action: AuditAction, caller: Caller, seed: MemoryProfile, entry: MemoryEntry, detail: str | None = None,
        also: Sequence[Record] = (),
    ) -> tuple[MemoryProfile, MemoryEntry]:
        """Store ``entry`` and its audit event (and ``also``, records of its partition) atomically: none exists
        without the others. Answers the profile as stored (``seed`` when the scope had none) and the entry as
        stored: re-stamped after the profile's ``cleared_on`` when a clear's watermark covered its time (see the
        module's docstring). ``Conflict`` when clears kept covering it."""
        _, event = self._audit.event(action, actor=caller.upn, **entry_fields(entry), detail=detail)
        for _ in range(_RESTAMPS):
            try:
                return self._store.append_with_records(seed, entry, [event, *also]), entry
            except EntryBeforeClear as covered:
                # Nothing was written: the entry counts as made after the clear (its event names no time).
                entry = replace(entry, created_on=max(self._clock(), covered.cleared_on + timedelta(microseconds=1)))
        raise Conflict("the memory kept being cleared during the write; retry")

    def store_new(self, action: AuditAction, caller: Caller, seed: MemoryProfile, entry: MemoryEntry,
                  idempotency_key: str | None) -> tuple[MemoryProfile, MemoryEntry]:
        """Store a new entry, audited, and offer it to the team; with an idempotency key, once (``store_once``:
        a retry answers the entry the first request stored)."""
        if idempotency_key is not None:
            return store_once(self._store, seed, entry, idempotency_key,
                              lambda e, marker: self.append(action, caller, seed, e, also=(marker,)))
        profile, entry = self.append(action, caller, seed, entry)
        team_copies.share(self._store, entry)
        return profile, entry
