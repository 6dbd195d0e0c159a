"""Setup the custody crash tests share (tests/contract/test_*_crashes.py): an approval-mode, team-sharing service on
a store, fresh callers, a store call wrapped to stop the process once (``Crash``), a user's pending clear, and a
later release's request an operator dismisses.

A crash is a ``Crash`` raised from a wrapped store call before it writes anything: the process stops between two of
its writes at the same point every run, and the test then runs a sweep as a restarted process would.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope, Share
from memory_core.domain.records import Record, RecordKind, deletions_partition
from memory_core.domain.service import DeletionMode, MemoryService, PendingDeletion, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock
from tests.support.later_release import put_unreadable_request

INSTANCE = "crashes"
LATER_ID = "from-a-later-release"  # ``put_unreadable_request``'s request (its user: ``later_release.LATER``)


class Crash(Exception):
    """The process stopped here: raised by a call ``crash_once`` wrapped, before that call wrote anything."""


def custody_service(store: MemoryStore, clock: TickingClock) -> MemoryService:
    """A service on ``store`` filing deletions for an operator's approval, team sharing by default."""
    return MemoryService(store, clock=clock, deletion_mode=DeletionMode.OPERATOR_APPROVAL,
                         default_sharing=SharingPolicy.TEAM, allow_sharing_override=True)


def fresh_caller(name: str) -> Caller:
    """A caller whose user name starts with ``name`` and is new to every store (a random suffix)."""
    return Caller(upn=f"{name}-{uuid.uuid4().hex[:10]}@contoso.com")


def crash_once(monkeypatch: pytest.MonkeyPatch, store: MemoryStore, method: str, when: Callable[..., bool]) -> None:
    """The first call of ``store.method`` that ``when`` picks raises ``Crash`` before it writes anything."""
    real = getattr(store, method)
    armed = [True]

    def stopped(*args: Any, **kwargs: Any) -> Any:
        if armed[0] and when(*args, **kwargs):
            armed[0] = False
            raise Crash(method)
        return real(*args, **kwargs)

    monkeypatch.setattr(store, method, stopped)


def pending_clear(service: MemoryService, caller: Caller, share: Share = Share.PRIVATE) -> str:
    """``caller`` appends one entry to user memory and clears it: the id of the clear's pending request."""
    service.append(caller, INSTANCE, Scope.USER, None, "- prefers tea", WriteOptions(share=share))
    outcome = service.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert isinstance(outcome, PendingDeletion)
    return outcome.request_id


def later_request(store: MemoryStore) -> Record:
    """A pending request of a later release's kind, stored: the record an operator dismisses."""
    put_unreadable_request(store, INSTANCE, status="pending", request_id=LATER_ID)
    (record,) = store.query_records(deletions_partition(INSTANCE), RecordKind.DELETION_REQUEST, {"id": LATER_ID})
    return record
