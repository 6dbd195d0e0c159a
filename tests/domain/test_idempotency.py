"""Retried writes with an Idempotency-Key (domain.idempotency), through MemoryService on the real SQLite store.

The store's refusal of a second entry of one id is the store contract's (tests/contract/test_entry_ids.py); here:
what a retry answers, what it writes (nothing), and what the key is scoped to.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.api.entries import _ENTRY_ID
from memory_core.domain.audit import AuditAction
from memory_core.domain.errors import IdempotencyKeyErased, IdempotencyKeyReused, InvalidInput
from memory_core.domain.idempotency import checked_key, keyed_entry_id
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import SHARED_OWNER, ProfileKey, Scope, Share, shared_copy_id
from memory_core.domain.records import Partition, RecordKind
from memory_core.domain.service import DeletionMode, ImportMode, MemoryService, PendingDeletion, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from tests.support.clock import TickingClock

ALEX = Caller(upn="alex@contoso.com", name="Alex", user_name="alex")
BLAKE = Caller(upn="blake@contoso.com", name="Blake", user_name="blake")
AGENT = AgentContext("/agents/benefits", "Benefits Assistant")
NOON = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
KEY = "8e03978e-40d5-43e8-bc93-6894a57f9324"


def _service(tmp_path: Path, mode: DeletionMode) -> tuple[SqliteMemoryStore, MemoryService]:
    store = SqliteMemoryStore(tmp_path / f"{mode.value}.sqlite3")
    return store, MemoryService(store, clock=TickingClock(NOON), deletion_mode=mode,
                                default_sharing=SharingPolicy.TEAM)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    store, service = _service(tmp_path, DeletionMode.IMMEDIATE)
    yield service
    store.close()


@pytest.fixture
def held(tmp_path: Path) -> Iterator[MemoryService]:
    """Deletions under operator approval: hidden and held, not erased."""
    store, service = _service(tmp_path, DeletionMode.OPERATOR_APPROVAL)
    yield service
    store.close()


def _appends(service: MemoryService, caller: Caller = ALEX) -> list[str]:
    return [e.entry_id or "" for e in service.audit_trail("i", caller.upn)
            if e.action in (AuditAction.APPEND, AuditAction.IMPORT)]


def test_a_retry_stores_nothing_and_answers_as_the_first_call(service: MemoryService) -> None:
    """The same append with the same key twice: one entry, one audit event, the same answer (entry id, section)."""
    first = service.append(ALEX, "i", Scope.USER, None, "- likes trains", WriteOptions(reason="said so"),
                           idempotency_key=KEY)
    again = service.append(ALEX, "i", Scope.USER, None, "- likes trains", WriteOptions(reason="said so"),
                           idempotency_key=KEY)
    assert again.entry_id == first.entry_id
    assert again.content_markdown == first.content_markdown and again.created_on == first.created_on
    assert [e.id for e in service.entries(ALEX, "i", Scope.USER, None)] == [first.entry_id]
    assert _appends(service) == [first.entry_id]


def test_the_keyed_id_is_one_the_api_accepts_and_the_callers_own() -> None:
    """32 hex digits, like a random id; the same for a retry, another for another caller, instance or key."""
    entry_id = keyed_entry_id("i", ALEX.upn, KEY)
    assert _ENTRY_ID.match(entry_id) and re.fullmatch(r"[0-9a-f]{32}", entry_id)
    assert keyed_entry_id("i", ALEX.upn, KEY) == entry_id
    assert len({entry_id, keyed_entry_id("i", BLAKE.upn, KEY), keyed_entry_id("j", ALEX.upn, KEY),
                keyed_entry_id("i", ALEX.upn, KEY + "x")}) == 4


def test_without_a_key_nothing_changes(service: MemoryService) -> None:
    """Two appends without a key are two entries, as before."""
    service.append(ALEX, "i", Scope.USER, None, "- twice")
    service.append(ALEX, "i", Scope.USER, None, "- twice")
    assert len(service.entries(ALEX, "i", Scope.USER, None)) == 2


@pytest.mark.parametrize("change", [
    {"content": "- likes planes"},
    {"options": WriteOptions(reason="another reason")},
    {"options": WriteOptions(tags=("mem_type:user-profile",))},
    {"options": WriteOptions(share=Share.TEAM)},
    {"scope": Scope.AGENT, "agent": AGENT},
], ids=["content", "reason", "tags", "share", "scope"])
def test_the_key_on_another_request_is_refused_and_stores_nothing(service: MemoryService,
                                                                   change: dict[str, object]) -> None:
    """The draft's rule: a key reused for a different request (content, a field beside it, or another scope)
    answers 422 idempotency_key_reused; nothing is stored and no event is written."""
    first = service.append(ALEX, "i", Scope.USER, None, "- likes trains", idempotency_key=KEY)
    with pytest.raises(IdempotencyKeyReused) as refused:
        service.append(ALEX, "i", change.get("scope", Scope.USER), change.get("agent"),  # type: ignore[arg-type]
                       change.get("content", "- likes trains"), change.get("options", WriteOptions()),  # type: ignore[arg-type]
                       idempotency_key=KEY)
    assert refused.value.code == "idempotency_key_reused" and "different request" in refused.value.message
    assert [e.id for e in service.entries(ALEX, "i", Scope.COMBINED, AGENT)] == [first.entry_id]
    assert _appends(service) == [first.entry_id]


def test_the_key_on_an_import_after_an_append_is_another_request(service: MemoryService) -> None:
    """An append and an import are two endpoints: one key names one request, so the import is refused."""
    service.append(ALEX, "i", Scope.USER, None, "- likes trains", idempotency_key=KEY)
    with pytest.raises(IdempotencyKeyReused):
        service.import_markdown(ALEX, "i", Scope.USER, None, "- likes trains", ImportMode.APPEND, idempotency_key=KEY)


def test_keys_are_the_callers_own(service: MemoryService) -> None:
    """Two people sending the same key write two entries of different ids, each in their own memory."""
    alex = service.append(ALEX, "i", Scope.USER, None, "- same words", idempotency_key=KEY)
    blake = service.append(BLAKE, "i", Scope.USER, None, "- same words", idempotency_key=KEY)
    assert alex.entry_id != blake.entry_id
    assert [e.id for e in service.entries(BLAKE, "i", Scope.USER, None)] == [blake.entry_id]


def test_an_import_in_append_mode_is_retried_once(service: MemoryService) -> None:
    """import (append mode) with a key: a retry stores nothing and answers the document."""
    first = service.import_markdown(ALEX, "i", Scope.USER, None, "- imported", ImportMode.APPEND, idempotency_key=KEY)
    again = service.import_markdown(ALEX, "i", Scope.USER, None, "- imported", ImportMode.APPEND, idempotency_key=KEY)
    assert again.content_markdown == first.content_markdown
    assert len(service.entries(ALEX, "i", Scope.USER, None)) == 1 and len(_appends(service)) == 1


def test_an_import_replace_refuses_a_key(service: MemoryService) -> None:
    """A replace is a custody step, not one entry a key could name: a key with it is refused before any write."""
    with pytest.raises(InvalidInput) as refused:
        service.import_markdown(ALEX, "i", Scope.USER, None, "- new", ImportMode.REPLACE, idempotency_key=KEY)
    assert refused.value.code == "idempotency_key_unsupported"
    assert service.entries(ALEX, "i", Scope.USER, None) == []


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9", "line\nbreak", "tab\there"])
def test_a_key_that_is_not_1_to_255_printable_ascii_characters_is_refused(service: MemoryService, key: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        service.append(ALEX, "i", Scope.USER, None, "- x", idempotency_key=key)
    assert refused.value.code == "invalid_idempotency_key"
    assert service.entries(ALEX, "i", Scope.USER, None) == []


def test_printable_ascii_keys_up_to_255_characters_are_taken() -> None:
    """Spaces and quotes included: the draft's quoted form is a key as sent."""
    for key in ("a", "x" * 255, '"8e03978e-40d5"', "with space ~!"):
        assert checked_key(key) == key


def test_a_team_shared_retry_leaves_one_copy(service: MemoryService) -> None:
    """The retry offers the entry again, and the copy already there is left as is: teammates see it once."""
    first = service.append(ALEX, "i", Scope.USER, None, "- team fact", WriteOptions(share=Share.TEAM),
                           idempotency_key=KEY)
    service.append(ALEX, "i", Scope.USER, None, "- team fact", WriteOptions(share=Share.TEAM), idempotency_key=KEY)
    seen = service.entries(BLAKE, "i", Scope.USER, None)
    assert [e.id for e in seen] == [shared_copy_id(first.entry_id or "")]


def test_a_retry_makes_the_team_copy_a_crash_left_unmade(service: MemoryService) -> None:
    """A first call that stopped after its commit, before the team copy: the retry makes the copy."""
    first = service.append(ALEX, "i", Scope.USER, None, "- team fact", WriteOptions(share=Share.TEAM),
                           idempotency_key=KEY)
    copy_id = shared_copy_id(first.entry_id or "")
    # The crash: neither the copy nor the mark its write creates with it (``team_copies.share``) was stored.
    service._store.delete_entries(ProfileKey("i", ALEX.upn, Scope.USER).shared(), [copy_id])
    service._store.delete_record(Partition("i", SHARED_OWNER), RecordKind.TEAM_COPY, copy_id)
    service.append(ALEX, "i", Scope.USER, None, "- team fact", WriteOptions(share=Share.TEAM), idempotency_key=KEY)
    assert [e.id for e in service.entries(BLAKE, "i", Scope.USER, None)] == [copy_id]


def test_a_retry_of_a_forgotten_entry_held_for_approval_stores_nothing(held: MemoryService) -> None:
    """Forgotten and waiting for an operator, the entry is still stored: a retry answers as the first call did
    and shows nothing again (the fact stays hidden, its team copy is not made again)."""
    first = held.append(ALEX, "i", Scope.USER, None, "- team fact", WriteOptions(share=Share.TEAM),
                        idempotency_key=KEY)
    assert isinstance(held.forget(ALEX, "i", first.entry_id or ""), PendingDeletion)
    again = held.append(ALEX, "i", Scope.USER, None, "- team fact", WriteOptions(share=Share.TEAM),
                        idempotency_key=KEY)
    assert again.entry_id == first.entry_id
    assert held.entries(ALEX, "i", Scope.USER, None) == []
    assert held.entries(BLAKE, "i", Scope.USER, None) == []
    assert len(_appends(held)) == 1


def test_a_retry_after_a_clear_held_for_approval_stores_nothing(held: MemoryService) -> None:
    held.append(ALEX, "i", Scope.USER, None, "- fact", idempotency_key=KEY)
    held.clear(ALEX, "i", Scope.USER, None, confirm=True)
    held.append(ALEX, "i", Scope.USER, None, "- fact", idempotency_key=KEY)
    assert held.entries(ALEX, "i", Scope.USER, None) == [] and len(_appends(held)) == 1


def test_once_the_entry_is_erased_a_retry_is_refused_and_stores_nothing(service: MemoryService) -> None:
    """A key is used once for all time: after an erasure (here an immediate forget) a retry is refused, 422
    ``idempotency_key_erased``, and the fact does not come back (docs/architecture.md, "Retrying a write")."""
    first = service.append(ALEX, "i", Scope.USER, None, "- fact", idempotency_key=KEY)
    service.forget(ALEX, "i", first.entry_id or "")
    with pytest.raises(IdempotencyKeyErased):
        service.append(ALEX, "i", Scope.USER, None, "- fact", idempotency_key=KEY)
    assert service.entries(ALEX, "i", Scope.USER, None) == []
    assert len(_appends(service)) == 1
