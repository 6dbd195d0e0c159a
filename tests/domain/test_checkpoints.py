"""Checkpoints in the domain: what a payload carries, when a read is due one, and a store that fails to keep one."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.checkpoints import (
    CHECKPOINT_MIN_SECTIONS,
    CHECKPOINT_REFRESH_SECTIONS,
    Checkpointing,
    StoredCheckpoint,
    decode,
    encode,
    read_key,
)
from memory_core.domain.errors import Unavailable
from memory_core.domain.identity import Caller
from memory_core.domain.models import EntryKind, MemoryEntry, ProfileKey, Scope, ScopeState, Share
from memory_core.domain.service import MemoryService
from memory_core.domain.snapshots import PartitionStamp, ScopeSnapshot, Snapshots

ALEX = Caller(upn="alex@contoso.com", name="Alex")
USER = ProfileKey("i", ALEX.upn, Scope.USER)
AGENT = ProfileKey("i", ALEX.upn, Scope.AGENT, "agent-7")


def _entry(key: ProfileKey, n: int) -> MemoryEntry:
    return MemoryEntry(
        id=f"e{n}", key=key, content_markdown=f"- fact {n} — ünïcode", kind=EntryKind.IMPORT,
        created_on=datetime(2026, 12, 3, 9, 0, n, 123456, tzinfo=UTC), author_upn=ALEX.upn, author_user_id="oid-1",
        agent_name="Helper", reason="asked", session_id="s-1", operation_id="op-1", tags=("plans", "tables"),
        share=Share.TEAM, content_sha256="ab" * 32,
    )


def test_a_payload_carries_each_scopes_document_newest_entry_and_count_exactly() -> None:
    snapshots = Snapshots(PartitionStamp(41, 17), 99, (
        ScopeSnapshot.build(ScopeState(USER, None, [_entry(USER, 1), _entry(USER, 2)]), ALEX.upn),
        ScopeSnapshot.build(ScopeState(AGENT, None, []), ALEX.upn),
    ))
    restored = decode([USER, AGENT], StoredCheckpoint(snapshots.stamp, encode([USER, AGENT], snapshots)))
    assert restored is not None
    assert (restored.stamp, restored.sequence, restored.checkpointed) == (snapshots.stamp, 99, 2)
    for got, want in zip(restored.scopes, snapshots.scopes, strict=True):
        assert (got.document, got.last_entry, got.entry_agent_name, got.sections) == (
            want.document, want.last_entry, want.entry_agent_name, want.sections)
        assert got.state.profile is None and got.state.holds == ()  # the store supplies those on extending


def test_a_payload_is_only_for_the_read_it_was_made_for() -> None:
    snapshots = Snapshots(PartitionStamp(1, 1), 1, (ScopeSnapshot.build(ScopeState(USER, None, [_entry(USER, 1)]),
                                                                        ALEX.upn),))
    stored = StoredCheckpoint(snapshots.stamp, encode([USER], snapshots))
    assert decode([AGENT], stored) is None
    assert decode([USER, AGENT], stored) is None
    assert read_key([USER], ALEX.upn) != read_key([USER], "bea@contoso.com")  # documents are rendered per viewer
    assert read_key([USER], ALEX.upn) != read_key([USER, AGENT], ALEX.upn)
    assert len(read_key([USER, AGENT], ALEX.upn)) == 32


def _shown(count: int, checkpointed: int | None = None) -> Snapshots:
    scope = ScopeSnapshot.of(ScopeState(USER, None), "# doc\n", None, None, count)
    return Snapshots(PartitionStamp(1, 1), 1, (scope,), checkpointed)


def test_a_read_is_due_a_checkpoint_when_large_and_again_once_it_has_grown_enough(tmp_path: Path) -> None:
    store = SqliteMemoryStore(tmp_path / "due.sqlite3")
    checkpoints = Checkpointing(store)
    assert not checkpoints.due(_shown(CHECKPOINT_MIN_SECTIONS - 1))
    assert checkpoints.due(_shown(CHECKPOINT_MIN_SECTIONS))
    grown = CHECKPOINT_MIN_SECTIONS + CHECKPOINT_REFRESH_SECTIONS
    assert not checkpoints.due(_shown(grown - 1, checkpointed=CHECKPOINT_MIN_SECTIONS))
    assert checkpoints.due(_shown(grown, checkpointed=CHECKPOINT_MIN_SECTIONS))
    store.close()


class _UnavailableForCheckpoints(SqliteMemoryStore):
    """A real SQLite store whose checkpoint writes fail as an unreachable store's would."""

    def keep_checkpoint(self, instance_id: str, upn: str, read_key: str, checkpoint: StoredCheckpoint) -> bool:
        raise Unavailable("the store is unavailable")


def test_a_store_that_cannot_keep_a_checkpoint_still_answers_the_read(tmp_path: Path) -> None:
    store = _UnavailableForCheckpoints(tmp_path / "unavailable.sqlite3")
    service = MemoryService(store)
    for n in range(CHECKPOINT_MIN_SECTIONS):
        service.append(ALEX, "i", Scope.USER, None, f"- fact {n}")
    view = service.get(ALEX, "i", Scope.USER, None)
    assert "- fact 0" in view.content_markdown
    assert service._snapshots is not None and service._snapshots._checkpoints is not None
    assert (service._snapshots._checkpoints.kept, service._snapshots._checkpoints.refused) == (0, 1)
    service.append(ALEX, "i", Scope.USER, None, "- one more")
    assert "- one more" in service.get(ALEX, "i", Scope.USER, None).content_markdown
    assert service._snapshots._checkpoints.refused == 2  # still due: tried again, and the read answered again
    store.close()


def test_a_read_grown_in_one_process_refreshes_its_checkpoint_for_the_next(tmp_path: Path) -> None:
    store = SqliteMemoryStore(tmp_path / "refresh.sqlite3")
    service = MemoryService(store)
    for n in range(CHECKPOINT_MIN_SECTIONS):
        service.append(ALEX, "i", Scope.USER, None, f"- fact {n}")
    service.get(ALEX, "i", Scope.USER, None)
    first = store.read_checkpoint("i", ALEX.upn, read_key([USER], ALEX.upn))
    for n in range(CHECKPOINT_REFRESH_SECTIONS - 1):
        service.append(ALEX, "i", Scope.USER, None, f"- later {n}")
        service.get(ALEX, "i", Scope.USER, None)
    assert store.read_checkpoint("i", ALEX.upn, read_key([USER], ALEX.upn)) == first
    service.append(ALEX, "i", Scope.USER, None, "- the one that makes it due")
    service.get(ALEX, "i", Scope.USER, None)
    refreshed = store.read_checkpoint("i", ALEX.upn, read_key([USER], ALEX.upn))
    assert refreshed is not None and refreshed != first and "the one that makes it due" in refreshed.payload
    assert service._snapshots is not None and service._snapshots.rebuilds == 1  # grown, never rebuilt
    store.close()
