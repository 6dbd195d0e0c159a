"""A purge's seal racing appends to the scope it empties, on every store (``domain.seals``, ``delete_profile``).

The seal reads the user's memory, erases what the purge covers and the profile of every scope it found empty. An
append from another process can land at any point of that; each test puts one at a chosen point by wrapping the
sweeping store, so the interleaving is the same on every run. What must hold: a scope with entries keeps a profile
(the person's agent list finds scopes by their profiles), and the profile an append made and answered (its agent's
display name, ``cleared_on``, ``created_on``) is what stays stored: no step of the seal overwrites it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any, cast

from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.overview import agent_scopes
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock

ALEX = Caller(upn="alex@contoso.com")
OPERATOR = "olivia@contoso.com"
AGENT = AgentContext("/agents/planner", name="Planner")
WRITES = frozenset({"append", "append_with_records", "save_profile", "delete_entries", "delete_profile",
                    "put_record", "put_records", "create_record", "delete_record", "delete_record_and_put",
                    "erase_expired_records"})


class _Interleaved:
    """The sweeping store, with hooks: ``before_erasure`` runs just before the seal erases the watched scope's
    profile, ``after_erasure`` just before the seal's next write once it did (a profile made again included)."""

    def __init__(self, store: MemoryStore, key: ProfileKey, before_erasure: Callable[[], None],
                 after_erasure: Callable[[], None]) -> None:
        self._store, self._key = store, key
        self._before, self._after = before_erasure, after_erasure
        self.erased = self.done = False

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)
        if name not in WRITES:
            return method

        def write(*args: Any, **kwargs: Any) -> Any:
            if self.erased and not self.done:
                self.done = True
                self._after()
            if name == "delete_profile" and args[0] == self._key and not self.erased:
                self._before()
                self.erased = True
            return method(*args, **kwargs)

        return write


def _purge_approved(store: MemoryStore, instance: str) -> MemoryService:
    """Alex's agent scope with one entry, under a purge an operator approved; the service sweeps through ``store``."""
    service = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    service.append(ALEX, instance, Scope.AGENT, AGENT, "- before the purge")
    request = service.custody.request_purge(OPERATOR, instance, ALEX.upn)
    service.custody.approve(OPERATOR, instance, request.id)
    return service


def _fields(profile: MemoryProfile | None) -> tuple[object, ...]:
    assert profile is not None
    return (profile.name, profile.user_name, profile.agent_name, profile.created_on, profile.updated_on,
            profile.cleared_on)


def _append_renamed(writer: MemoryStore, key: ProfileKey, text: str) -> MemoryProfile:
    """Append ``text`` with a profile whose fields no other write has: a display name, a watermark and times of
    its own (what a first append with a renamed agent, after a clear of an empty scope, would seed)."""
    at = TickingClock().now + timedelta(days=30)
    profile = MemoryProfile(key, "Alex Wilber", "alex", "Planner, renamed", at, at, at - timedelta(hours=1))
    entry = MemoryEntry(uuid.uuid4().hex, key, text, EntryKind.APPEND, at + timedelta(seconds=1), key.upn)
    return writer.append(profile, entry)


def test_an_appends_profile_survives_the_seal_that_found_its_scope_empty(
    stores: Callable[[], MemoryStore],
) -> None:
    """One append lands after the seal read Alex's agent scope (so the seal finds it empty) and before it erases
    the profile; a second lands after that erasure, before the seal's next write. Both entries stay, the agent is
    listed, and the stored profile is the one the second append answered, field for field (before, the seal made
    the profile again from the entries with an unconditional write, after the second append had made its own:
    its display name, ``cleared_on`` and ``created_on`` were lost)."""
    sweeper, writer = stores(), stores()
    instance = f"seal-race-{uuid.uuid4().hex[:8]}"
    key = ProfileKey(instance, ALEX.upn, Scope.AGENT, AGENT.object_id)
    answered: list[MemoryProfile] = []
    racing = _Interleaved(
        sweeper, key,
        before_erasure=lambda: answered.append(_append_renamed(writer, key, "- landed before the erasure")),
        after_erasure=lambda: answered.append(_append_renamed(writer, key, "- landed after the erasure")),
    )
    service = _purge_approved(cast(MemoryStore, racing), instance)

    (executed,) = service.custody.sweep(instance_id=instance).executed
    assert racing.done and len(answered) == 2
    (state,) = stores().load([key])
    assert _fields(state.profile) == _fields(answered[-1])
    assert sorted(e.content_markdown for e in state.visible_entries()) == [
        "- landed after the erasure", "- landed before the erasure"]
    assert [(s.agent_object_id, s.entry_count) for s in agent_scopes(writer, instance, ALEX.upn).items] == [
        (AGENT.object_id, 2)]
    assert executed.erased_profiles == 1


def test_an_append_that_makes_the_profile_after_the_erasure_keeps_every_field(
    stores: Callable[[], MemoryStore],
) -> None:
    """The scope is empty when the seal erases its profile; an append then makes a new one with its own display
    name, ``cleared_on`` and ``created_on``, before the seal's next write. That profile is stored as answered."""
    sweeper, writer = stores(), stores()
    instance = f"seal-after-{uuid.uuid4().hex[:8]}"
    key = ProfileKey(instance, ALEX.upn, Scope.AGENT, AGENT.object_id)
    answered: list[MemoryProfile] = []
    racing = _Interleaved(
        sweeper, key, before_erasure=lambda: None,
        after_erasure=lambda: answered.append(_append_renamed(writer, key, "- landed after the erasure")),
    )
    service = _purge_approved(cast(MemoryStore, racing), instance)

    service.custody.sweep(instance_id=instance)
    (state,) = stores().load([key])
    assert _fields(state.profile) == _fields(answered[0])
    assert _fields(state.profile)[2:4] == ("Planner, renamed", answered[0].created_on)
    assert [e.content_markdown for e in state.visible_entries()] == ["- landed after the erasure"]
