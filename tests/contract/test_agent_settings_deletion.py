"""An operator deletes an agent's settings (``AgentSettingsBook.delete``), on every store.

The settings record is erased If-Match the version its event describes, with that ``agent_settings_deleted``
event in the same unit (``MemoryStore.delete_record_and_put``); the agent is then governed as one with no settings
(enabled, any group, no instructions), and no one's memory changes: settings are configuration, not memory.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from memory_core.domain.agent_settings import AGENT_SETTINGS, PUT_ATTEMPTS, AgentSettings, AgentSettingsBook
from memory_core.domain.audit import AuditAction, AuditTrail
from memory_core.domain.errors import Conflict, Forbidden, NotFound
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import Scope, sha256_hex
from memory_core.domain.records import Partition, Record
from memory_core.domain.service import MemoryService
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock

AGENT = "/agents/travel"
INSTRUCTIONS = "Only remember seat and meal preferences."
OPERATOR = "operator-key"
CONFIGURED = AgentSettings(AGENT, enabled=False, auto_append=True, default_write_scope="agent",
                           policy_instructions=INSTRUCTIONS, allowed_group_ids=("g-travel",))


def _instance() -> str:
    return f"settings-del-{uuid.uuid4().hex[:8]}"


def _book(store: MemoryStore) -> AgentSettingsBook:
    """A new process's book: nothing cached."""
    return MemoryService(store).agent_settings


def test_a_deletion_erases_the_settings_with_an_event_naming_their_old_values(store: MemoryStore) -> None:
    """The answer is the settings erased; a new process reads the defaults and lists no agent; the trail holds the
    save and then the deletion, whose event names each old value against the default and the instructions' SHA-256
    and size, never their text."""
    instance = _instance()
    _book(store).put(instance, CONFIGURED, actor="first-operator")
    erased = _book(store).delete(instance, AGENT, actor=OPERATOR)
    assert erased.settings == CONFIGURED
    book = _book(store)
    assert book.get(instance, AGENT) == AgentSettings(AGENT)
    assert not book.is_stored(instance, AGENT)
    assert book.page(instance, limit=10).items == []
    saved, deleted = book.trail(instance, limit=10).items
    assert (saved.action, deleted.action) == (AuditAction.AGENT_SETTINGS, AuditAction.AGENT_SETTINGS_DELETED)
    assert (deleted.actor, deleted.agent_object_id) == (OPERATOR, AGENT)
    assert deleted.detail == ('enabled: false -> true; auto_append: true -> false; default_write_scope: agent -> user;'
                              ' policy_instructions removed; allowed_group_ids: "g-travel" -> any group')
    assert deleted.content_sha256 == sha256_hex(INSTRUCTIONS) and deleted.byte_count == len(INSTRUCTIONS)
    assert INSTRUCTIONS not in str(deleted.to_data())
    assert [e.action for e in book.trail(instance, limit=10, agent_object_id=AGENT).items][-1] is \
        AuditAction.AGENT_SETTINGS_DELETED


def test_deleting_settings_none_stored_is_not_found_and_writes_nothing(store: MemoryStore) -> None:
    """Never saved, or deleted already: ``NotFound``, no event; another agent's settings stay."""
    instance = _instance()
    book = _book(store)
    with pytest.raises(NotFound):
        book.delete(instance, AGENT, actor=OPERATOR)
    book.put(instance, AgentSettings(AGENT + "-other", enabled=False), actor=OPERATOR)
    book.put(instance, AgentSettings(AGENT, auto_append=True), actor=OPERATOR)
    book.delete(instance, AGENT, actor=OPERATOR)
    with pytest.raises(NotFound):
        book.delete(instance, AGENT, actor=OPERATOR)
    assert [e.action for e in book.trail(instance, limit=10).items] == [
        AuditAction.AGENT_SETTINGS, AuditAction.AGENT_SETTINGS, AuditAction.AGENT_SETTINGS_DELETED]
    assert _book(store).get(instance, AGENT + "-other") == AgentSettings(AGENT + "-other", enabled=False)


def test_a_deleted_agent_is_governed_as_one_with_no_settings_and_keeps_its_memory(store: MemoryStore) -> None:
    """Disabled, the agent's reads are refused; once its settings are deleted, the same process (its cache) and a
    new one let it read and write again, outside the groups it was limited to; every entry written before is there,
    and the person's trail has no event of the deletion (their memory did not change)."""
    instance = _instance()
    service = MemoryService(store)
    caller = Caller(upn="alex@contoso.com", group_ids=("g-other",))
    agent = AgentContext(AGENT, "Travel")
    service.append(caller, instance, Scope.AGENT, agent, "- prefers aisle seats")
    service.agent_settings.put(instance, CONFIGURED, actor=OPERATOR)
    with pytest.raises(Forbidden):
        service.get(caller, instance, Scope.AGENT, agent)
    trail_before = service.audit_page(instance, caller.upn, limit=50).items
    service.agent_settings.delete(instance, AGENT, actor=OPERATOR)
    assert service.audit_page(instance, caller.upn, limit=50).items == trail_before
    for reader in (service, MemoryService(store)):
        assert "aisle seats" in reader.get(caller, instance, Scope.COMBINED, agent).content_markdown
    MemoryService(store).append(caller, instance, Scope.AGENT, agent, "- vegetarian meals")
    entries = service.entries_page(caller, instance, Scope.AGENT, agent, limit=10).items
    assert [e.content_markdown for e in entries] == ["- prefers aisle seats", "- vegetarian meals"]


class _RacingStore:
    """The store under test, where another operator's write of the agent's settings (``race``) lands right after
    each of the next ``races`` reads of them: between a deletion's read and its erasure."""

    def __init__(self, store: MemoryStore, instance: str, race: str) -> None:
        self._store = store
        self._instance = instance
        self._race = race
        self.races = 0
        # One clock for both operators: the trail reads back in the order the events were written.
        self.trail = AuditTrail(store, TickingClock(datetime(2026, 12, 5, tzinfo=UTC)))
        self._racer = AgentSettingsBook(cast(MemoryStore, self), self.trail)
        self._enabled = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def get_record(self, partition: Partition, kind: str, record_id: str) -> Record | None:
        record = self._store.get_record(partition, kind, record_id)
        if kind == AGENT_SETTINGS and self.races > 0:
            races, self.races = self.races - 1, 0  # the racer's own read does not race
            if self._race == "delete":
                self._racer.delete(self._instance, AGENT, actor="racer")
            else:
                self._enabled = not self._enabled
                self._racer.put(self._instance, AgentSettings(AGENT, enabled=self._enabled), actor="racer")
            self.races = races
        return record


def test_a_deletion_racing_a_save_erases_the_saved_settings_and_describes_them(store: MemoryStore) -> None:
    """Another operator disables the agent between the deletion's read and its erasure: the erasure, If-Match what
    it read, is refused, and the deletion reads again and erases the other operator's settings, described as they
    were (enabled false), not as first read."""
    instance = _instance()
    racing = _RacingStore(store, instance, "put")
    book = AgentSettingsBook(cast(MemoryStore, racing), racing.trail)
    book.put(instance, AgentSettings(AGENT, auto_append=True), actor=OPERATOR)
    racing.races = 1
    erased = book.delete(instance, AGENT, actor=OPERATOR)
    assert erased.settings == AgentSettings(AGENT, enabled=False)
    events = _book(store).trail(instance, limit=10).items
    assert [(e.actor, e.action, e.detail) for e in events[1:]] == [
        ("racer", AuditAction.AGENT_SETTINGS, "enabled: true -> false; auto_append: true -> false"),
        (OPERATOR, AuditAction.AGENT_SETTINGS_DELETED, "enabled: false -> true"),
    ]
    assert not _book(store).is_stored(instance, AGENT)


def test_a_deletion_that_loses_every_attempt_erases_nothing_and_says_conflict(store: MemoryStore) -> None:
    """Saves landing between every read and erasure: ``Conflict`` after ``PUT_ATTEMPTS``; the settings are the last
    save's and the trail holds no deletion."""
    instance = _instance()
    racing = _RacingStore(store, instance, "put")
    book = AgentSettingsBook(cast(MemoryStore, racing), racing.trail)
    book.put(instance, AgentSettings(AGENT), actor=OPERATOR)
    racing.races = PUT_ATTEMPTS
    with pytest.raises(Conflict):
        book.delete(instance, AGENT, actor=OPERATOR)
    assert _book(store).get(instance, AGENT) == AgentSettings(AGENT, enabled=PUT_ATTEMPTS % 2 == 0)
    actions = [e.action for e in _book(store).trail(instance, limit=10).items]
    assert actions == [AuditAction.AGENT_SETTINGS] * (1 + PUT_ATTEMPTS)


def test_two_deletions_at_once_erase_once_and_the_later_is_not_found(store: MemoryStore) -> None:
    """Another deletion lands between this one's read and its erasure: this one answers ``NotFound`` having written
    nothing, so the trail tells one deletion."""
    instance = _instance()
    racing = _RacingStore(store, instance, "delete")
    book = AgentSettingsBook(cast(MemoryStore, racing), racing.trail)
    book.put(instance, CONFIGURED, actor=OPERATOR)
    racing.races = 1
    with pytest.raises(NotFound):
        book.delete(instance, AGENT, actor=OPERATOR)
    deletions = [e for e in _book(store).trail(instance, limit=10).items
                 if e.action is AuditAction.AGENT_SETTINGS_DELETED]
    assert [e.actor for e in deletions] == ["racer"]
