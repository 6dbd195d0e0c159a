"""Each pending deletion request's size, as the operator's and the person's listings show it
(``overview.request_entry_counts``), on every store.

A clear's or a replace's count comes from counts of the profile's entries up to its watermark; a purge's from the
person's entries. Whichever way, it is the number of entries the request's hold hides now.
"""

from __future__ import annotations

import uuid

from memory_core.domain.deletion import DeletionStatus
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import Scope
from memory_core.domain.overview import request_entry_counts
from memory_core.domain.service import DeletionMode, ImportMode, MemoryService, PendingDeletion
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock

ALEX = Caller(upn="alex@contoso.com")
AGENT = AgentContext("/agents/travel")


def _id(outcome: object) -> str:
    assert isinstance(outcome, PendingDeletion)
    return outcome.request_id


def test_each_pending_request_counts_the_entries_its_hold_hides(store: MemoryStore) -> None:
    """Four user facts, two agent facts: a clear of the user scope counts the four, not the fact appended after it;
    an import-replace of the agent scope counts the two before it, not its own content; a purge counts every
    entry of Alex's it hides (all six, and the fact appended after the clear, which the purge's later watermark
    covers too); a rejected clear counts nothing."""
    instance = f"counts-{uuid.uuid4().hex[:8]}"
    service = MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    for n in range(4):
        service.append(ALEX, instance, Scope.USER, None, f"- user fact {n}")
    for n in range(2):
        service.append(ALEX, instance, Scope.AGENT, AGENT, f"- agent fact {n}")
    user_clear = _id(service.clear(ALEX, instance, Scope.USER, None, confirm=True))
    service.append(ALEX, instance, Scope.USER, None, "- after the clear")
    view = service.import_markdown(ALEX, instance, Scope.AGENT, AGENT, "- the new agent memory", ImportMode.REPLACE)
    assert view.pending is not None
    replace_request = view.pending.request_id
    rejected = _id(service.clear(ALEX, instance, Scope.USER, None, confirm=True))
    service.custody.reject("op", instance, rejected, "kept")
    purge = service.custody.request_purge("op", instance, ALEX.upn).id
    requests = service.custody.page(instance, None, limit=100).items
    counts = dict(zip([r.id for r in requests], request_entry_counts(store, requests), strict=True))
    assert counts == {user_clear: 4, replace_request: 2, rejected: None, purge: 8}
    pending = service.custody.page(instance, DeletionStatus.PENDING, limit=100).items
    assert {r.id for r in pending} == {user_clear, replace_request, purge}
