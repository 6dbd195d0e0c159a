"""A key's entry erased stays erased: a retry with its Idempotency-Key is refused and stores nothing, on every store.

An entry id derived from a key (``domain.idempotency``) is the same at every retry. Were a retry after an erasure
stored again under that id, a read kept by a process (``domain.present_entries``, which relies on an id never being
stored twice) would still show the erased text, and a late retry would bring an erased fact back. The key's mark,
written with the entry, outlives it.
"""

from __future__ import annotations

import uuid

import pytest

from memory_core.domain.errors import IdempotencyKeyErased
from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore


def _caller() -> Caller:
    return Caller(upn=f"keyed-{uuid.uuid4().hex[:8]}@contoso.com", name="Alex", user_name="alex")


def test_a_retry_after_an_immediate_forget_is_refused_and_the_kept_read_shows_neither_text(store: MemoryStore) -> None:
    service = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE)
    alex, key = _caller(), uuid.uuid4().hex
    first = service.append(alex, "kx", Scope.USER, None, "- erasedzq fact", idempotency_key=key)
    assert "erasedzq" in service.get(alex, "kx", Scope.USER, None).content_markdown  # the process keeps this read
    service.forget(alex, "kx", first.entry_id or "")
    with pytest.raises(IdempotencyKeyErased) as refused:
        service.append(alex, "kx", Scope.USER, None, "- erasedzq fact", idempotency_key=key)
    assert refused.value.code == "idempotency_key_erased" and "erased" in refused.value.message
    with pytest.raises(IdempotencyKeyErased):  # another content under the key: refused the same way
        service.append(alex, "kx", Scope.USER, None, "- newzq fact", idempotency_key=key)
    for reader in (service, MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE)):  # kept, and fresh
        assert reader.get(alex, "kx", Scope.USER, None).content_markdown == ""
        assert reader.entries(alex, "kx", Scope.USER, None) == []
    appended = service.append(alex, "kx", Scope.USER, None, "- newzq fact", idempotency_key=uuid.uuid4().hex)
    assert appended.entry_id != first.entry_id
    assert "newzq" in service.get(alex, "kx", Scope.USER, None).content_markdown


def test_a_retry_after_an_approved_forget_is_swept_is_refused(store: MemoryStore) -> None:
    service = MemoryService(store, deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    alex, key = _caller(), uuid.uuid4().hex
    first = service.append(alex, "kx", Scope.USER, None, "- heldzq fact", idempotency_key=key)
    pending = service.forget(alex, "kx", first.entry_id or "")
    assert service.append(alex, "kx", Scope.USER, None, "- heldzq fact", idempotency_key=key).entry_id == first.entry_id
    service.custody.approve("operator", "kx", pending.request_id)
    service.custody.sweep(instance_id="kx")
    with pytest.raises(IdempotencyKeyErased):
        service.append(alex, "kx", Scope.USER, None, "- heldzq fact", idempotency_key=key)
    assert service.entries(alex, "kx", Scope.USER, None) == []


def test_a_retry_after_a_purge_is_refused(store: MemoryStore) -> None:
    service = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE)
    alex, key = _caller(), uuid.uuid4().hex
    service.append(alex, "kx", Scope.USER, None, "- purgedzq fact", idempotency_key=key)
    request = service.custody.request_purge("operator", "kx", alex.upn)
    service.custody.approve("operator", "kx", request.id)
    service.custody.sweep(instance_id="kx")
    with pytest.raises(IdempotencyKeyErased):
        service.append(alex, "kx", Scope.USER, None, "- purgedzq fact", idempotency_key=key)
    assert service.entries(alex, "kx", Scope.USER, None) == []
