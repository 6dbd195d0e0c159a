"""An entry and its audit event are written atomically: neither exists without the other; so are an
agent's settings and the event of their change (``put_records``).

SQLite: one transaction; a child process is killed (``os._exit``, no cleanup)
inside it, right after the entry's row or right after the event's row, and the
database read afterwards holds neither. Cosmos DB: one transactional batch in
the user's partition; the Cosmos test server runs a batch's operations one by
one rather than atomically (docs/cosmos.md), so what is shown there is that the
pair travels in one request and that a failed batch stores neither.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.agent_settings import AgentSettings
from memory_core.domain.audit import AuditAction, AuditEvent
from memory_core.domain.errors import Conflict
from memory_core.domain.identity import Caller
from memory_core.domain.models import (
    EntryKind,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Scope,
)
from memory_core.domain.records import Partition, RecordKind
from memory_core.domain.service import DeletionMode, MemoryService

ROOT = Path(__file__).resolve().parents[2]
ALEX = Caller(upn="alex@contoso.com", name="Alex")

_CHILD = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    from memory_core.adapters.sqlite_store import SqliteMemoryStore
    from memory_core.domain.identity import Caller
    from memory_core.domain.models import Scope
    from memory_core.domain.service import MemoryService

    store = SqliteMemoryStore({path!r})
    # The test's crash: the trigger calls this inside the write transaction.
    store._db.connection().create_function("crash", 0, lambda: os._exit(137))
    store._db.connection().execute({trigger!r})
    MemoryService(store).append(Caller(upn="alex@contoso.com"), "i", Scope.USER, None, "- never half written")
    print("the write completed", flush=True)
""")

CRASH_POINTS = {
    "after the entry, before its event": (
        "CREATE TEMP TRIGGER crash_point BEFORE INSERT ON main.records WHEN NEW.kind = 'audit' BEGIN SELECT crash(); END"
    ),
    "after the event, before the commit": (
        "CREATE TEMP TRIGGER crash_point AFTER INSERT ON main.records WHEN NEW.kind = 'audit' BEGIN SELECT crash(); END"
    ),
}


@pytest.mark.parametrize("point", list(CRASH_POINTS))
def test_sqlite_process_killed_mid_write_leaves_neither(point: str, tmp_path: Path) -> None:
    """Kill the process inside the write: afterwards there is no entry and no audit event."""
    path = tmp_path / "crash.sqlite3"
    child = subprocess.run(
        [sys.executable, "-c", _CHILD.format(root=str(ROOT), path=str(path), trigger=CRASH_POINTS[point])],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert child.returncode == 137, child.stderr
    assert "completed" not in child.stdout
    store = SqliteMemoryStore(path)
    try:
        (state,) = store.load([ProfileKey("i", ALEX.upn, Scope.USER)])
        events = store.query_records(Partition("i", ALEX.upn), RecordKind.AUDIT)
    finally:
        store.close()
    assert state.entries == [] and events == []


def test_sqlite_write_completes_with_both(tmp_path: Path) -> None:
    """Without a crash the same write leaves the entry and its event (the crash test is not vacuous)."""
    store = SqliteMemoryStore(tmp_path / "ok.sqlite3")
    try:
        view = MemoryService(store).append(ALEX, "i", Scope.USER, None, "- whole")
        events = store.query_records(Partition("i", ALEX.upn), RecordKind.AUDIT)
        assert [e.data["entry_id"] for e in events] == [view.entry_id]
        assert store.get_entry("i", ALEX.upn, view.entry_id or "") is not None
    finally:
        store.close()


def test_cosmos_entry_and_event_travel_in_one_batch(cosmos: CosmosMemoryStore) -> None:
    """Once the profile is known, an append is one round trip that stores the entry and its event."""
    instance = f"atomic-{uuid.uuid4().hex[:8]}"
    service = MemoryService(cosmos, deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    service.append(ALEX, instance, Scope.USER, None, "- first (creates the profile)")
    with cosmos.measure() as metrics:
        view = service.append(ALEX, instance, Scope.USER, None, "- second")
    events = cosmos.query_records(Partition(instance, ALEX.upn), RecordKind.AUDIT)
    assert metrics.round_trips == 1
    assert view.entry_id in [e.data["entry_id"] for e in events]
    assert cosmos.get_entry(instance, ALEX.upn, view.entry_id or "") is not None


def test_cosmos_failed_batch_stores_neither(cosmos: CosmosMemoryStore) -> None:
    """A batch whose entry cannot be created (its id is taken) fails whole: no event is written for it."""
    instance = f"atomic-{uuid.uuid4().hex[:8]}"
    service = MemoryService(cosmos, new_id=lambda: "fixed-id", deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    service.append(ALEX, instance, Scope.USER, None, "- first")
    with pytest.raises(Conflict):
        service.append(ALEX, instance, Scope.USER, None, "- second, same id")
    events = cosmos.query_records(Partition(instance, ALEX.upn), RecordKind.AUDIT)
    assert len(events) == 1
    (state,) = cosmos.load([ProfileKey(instance, ALEX.upn, Scope.USER)])
    assert [e.content_markdown for e in state.entries] == ["- first"]


def test_records_of_another_partition_are_refused(cosmos: CosmosMemoryStore, tmp_path: Path) -> None:
    """Atomicity only holds inside one partition, so both stores refuse a record from elsewhere."""
    sqlite = SqliteMemoryStore(tmp_path / "x.sqlite3")
    key = ProfileKey("i", ALEX.upn, Scope.USER)
    entry = MemoryEntry("e1", key, "- x", EntryKind.APPEND, datetime.now(UTC), ALEX.upn)
    profile = MemoryProfile(key, None, None, None, entry.created_on, entry.created_on)
    _, elsewhere = MemoryService(sqlite).audit.event(
        AuditAction.APPEND, actor="x", instance_id="i", upn="someone@else.com"
    )
    try:
        for store in (sqlite, cosmos):
            with pytest.raises(ValueError):
                store.append_with_records(profile, entry, [elsewhere])
    finally:
        sqlite.close()


_SETTINGS_CHILD = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    from memory_core.adapters.sqlite_store import SqliteMemoryStore
    from memory_core.domain.agent_settings import AgentSettings
    from memory_core.domain.service import MemoryService

    store = SqliteMemoryStore({path!r})
    store._db.connection().create_function("crash", 0, lambda: os._exit(137))
    store._db.connection().execute({trigger!r})
    book = MemoryService(store).agent_settings
    {change}
    print("the write completed", flush=True)
""")


def _settings_after_a_crash(tmp_path: Path, first: AgentSettings, change: str, point: str
                            ) -> tuple[AgentSettings, list[AuditEvent]]:
    """Save ``first`` (by "first"), kill a process inside ``change`` (Python run on its ``book``) at ``point``,
    and answer the agent's settings and the settings trail as a new process reads them."""
    path = tmp_path / "crash.sqlite3"
    store = SqliteMemoryStore(path)
    try:
        MemoryService(store).agent_settings.put("i", first, actor="first")
    finally:
        store.close()
    source = _SETTINGS_CHILD.format(root=str(ROOT), path=str(path), trigger=CRASH_POINTS[point], change=change)
    child = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=60, check=False)
    assert child.returncode == 137, child.stderr
    store = SqliteMemoryStore(path)
    try:
        book = MemoryService(store).agent_settings
        return book.get("i", first.agent_object_id), book.trail("i", limit=10).items
    finally:
        store.close()


@pytest.mark.parametrize("point", list(CRASH_POINTS))
def test_sqlite_process_killed_mid_settings_change_leaves_the_old_settings_and_no_event(
    point: str, tmp_path: Path
) -> None:
    """Kill the process inside an agent settings change: afterwards the settings are the earlier ones and the
    trail holds only the earlier change's event."""
    first = AgentSettings("/agents/a", auto_append=True)
    change = 'book.put("i", AgentSettings("/agents/a", enabled=False), actor="operator-key")'
    settings, events = _settings_after_a_crash(tmp_path, first, change, point)
    assert settings == first
    assert [e.actor for e in events] == ["first"]


@pytest.mark.parametrize("point", list(CRASH_POINTS))
def test_sqlite_process_killed_mid_settings_deletion_keeps_the_settings_and_no_event(
    point: str, tmp_path: Path
) -> None:
    """Kill the process inside a deletion of an agent's settings, after the erasure and before or after its event:
    afterwards the settings are still stored and the trail holds only the save's event."""
    first = AgentSettings("/agents/a", enabled=False)
    settings, events = _settings_after_a_crash(tmp_path, first, 'book.delete("i", "/agents/a", actor="operator-key")',
                                               point)
    assert settings == first
    assert [(e.actor, e.action.value) for e in events] == [("first", "agent_settings")]


def test_cosmos_settings_and_their_event_travel_in_one_batch(cosmos: CosmosMemoryStore) -> None:
    """A settings change is a point read of the settings it replaces and one batch with its event (measured on
    the second change: a new client's first call also reads the account and the container)."""
    instance = f"atomic-{uuid.uuid4().hex[:8]}"
    book = MemoryService(cosmos).agent_settings
    book.put(instance, AgentSettings("/agents/a", enabled=False), actor="operator-key")
    with cosmos.measure() as metrics:
        book.put(instance, AgentSettings("/agents/a", auto_append=True), actor="operator-key")
    assert metrics.round_trips == 2
    assert [e.detail for e in book.trail(instance, limit=10).items] == [
        "enabled: true -> false", "enabled: false -> true; auto_append: false -> true"]


def test_cosmos_settings_deletion_and_its_event_travel_in_one_batch(cosmos: CosmosMemoryStore) -> None:
    """A deletion of an agent's settings is a point read of them and one batch erasing them with its event."""
    instance = f"atomic-{uuid.uuid4().hex[:8]}"
    book = MemoryService(cosmos).agent_settings
    book.put(instance, AgentSettings("/agents/a", enabled=False), actor="operator-key")
    with cosmos.measure() as metrics:
        book.delete(instance, "/agents/a", actor="operator-key")
    assert metrics.round_trips == 2
    assert [e.action.value for e in book.trail(instance, limit=10).items] == [
        "agent_settings", "agent_settings_deleted"]
    assert not book.is_stored(instance, "/agents/a")
