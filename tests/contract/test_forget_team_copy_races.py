"""A team-shared entry's copy stored late, after a forget of the entry (or under approval, a clear) took the copies.

A team-shared write stores the entry in its author's memory, then its copy in the scope's shared partition
(``domain.team_copies``), in two writes with no fence. An immediate forget erases the entry, then the copy by id; the
sweep of an approved forget reads the copy, then erases it; the sweep of an approved clear plans from its hold, then
erases. A copy stored after that outlived its entry: a teammate kept reading what its author had forgotten or an
operator had approved erasing. Now a forget stores the copy's mark before it erases the copy, and the copy's own
write creates that mark create-only (``team_copies.forbid``, ``share``); an approved clear's sweep seals its watermark
on the author's copies before its plan. A copy stored after the hold and before the sweep was hidden and erased
already: kept as a guard. Each test puts the copy's commit at one such point by wrapping the store (the writer's
append of the copy, or the sweeper's first erasure), so the interleaving is the same every run.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain.errors import EntryBeforeClear, EntryExists
from memory_core.domain.identity import Caller
from memory_core.domain.models import SHARED_OWNER, MemoryEntry, MemoryProfile, ProfileKey, Scope, Share, shared_copy_id
from memory_core.domain.service import DeletionMode, MemoryService, PendingDeletion, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock

T0 = datetime(2026, 12, 7, 7, 0, tzinfo=UTC)
TEAM = WriteOptions(share=Share.TEAM)
OPERATOR = "olivia@contoso.com"
StoreCopy = Callable[[], None]


def _caller(name: str) -> Caller:
    return Caller(upn=f"{name}-{uuid.uuid4().hex[:10]}@contoso.com")


def _service(store: MemoryStore, clock: TickingClock, mode: DeletionMode = DeletionMode.IMMEDIATE) -> MemoryService:
    return MemoryService(store, deletion_mode=mode, clock=clock,
                         default_sharing=SharingPolicy.TEAM, allow_sharing_override=True)


def _hold_copy(monkeypatch: pytest.MonkeyPatch, store: MemoryStore,
               race: Callable[[MemoryEntry, StoreCopy], None]) -> None:
    """The next team copy stored through ``store`` is held back: ``race`` runs first with the copy and a callable
    that stores it at that point (a refusal swallowed, as ``team_copies.share`` does); the writer's write of it
    follows unless ``race`` made it."""
    armed = [True]
    for name in ("append", "append_with_records"):
        real = getattr(store, name)

        def late(profile: MemoryProfile, entry: MemoryEntry, *rest: Any, real: Any = real) -> Any:
            if armed[0] and entry.key.upn == SHARED_OWNER:
                armed[0] = False
                written: list[bool] = []

                def store_copy() -> None:
                    written.append(True)
                    with contextlib.suppress(EntryExists, EntryBeforeClear):
                        real(profile, entry, *rest)
                race(entry, store_copy)
                if written:
                    return profile
            return real(profile, entry, *rest)

        monkeypatch.setattr(store, name, late)


def _source_id(copy: MemoryEntry) -> str:
    entry_id = copy.id.removesuffix("-shared")
    assert shared_copy_id(entry_id) == copy.id
    return entry_id


def _authors_copies(store: MemoryStore, instance: str, author: Caller) -> list[str]:
    (shared,) = store.load([ProfileKey(instance, author.upn, Scope.USER).shared()])
    return [e.content_markdown for e in shared.entries if e.author_upn == author.upn]


@pytest.mark.parametrize("same_process", [True, False], ids=["same-process", "other-process"])
def test_a_team_copy_stored_after_an_immediate_forget_is_not_kept(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch, same_process: bool
) -> None:
    """The forgotten entry's copy is refused: the teammate no longer reads it, the shared partition holds none
    of it; the author's other team entry still shows."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    appending = stores()
    forgetting = appending if same_process else stores()
    writer, custodian = _service(appending, clock), _service(forgetting, clock)
    author, teammate, instance = _caller("author"), _caller("mate"), f"race-{uuid.uuid4().hex[:8]}"
    writer.append(author, instance, Scope.USER, None, "- kept", TEAM)  # the writer knows the stamps
    _hold_copy(monkeypatch, appending,
               lambda copy, _: custodian.forget(author, instance, _source_id(copy)) and None)

    view = writer.append(author, instance, Scope.USER, None, "- raced the forget", TEAM)

    assert appending.get_entry(instance, author.upn, view.entry_id or "") is None  # the forget erased the entry
    assert forgetting.get_entry(instance, SHARED_OWNER, shared_copy_id(view.entry_id or "")) is None
    assert _authors_copies(forgetting, instance, author) == ["- kept"]
    seen = custodian.get(teammate, instance, Scope.USER, None).content_markdown
    assert "raced the forget" not in seen and "- kept" in seen


def _approved(custodian: MemoryService, request_id: str, instance: str) -> None:
    custodian.custody.approve(OPERATOR, instance, request_id)
    custodian.custody.sweep(instance_id=instance)


def _request(custodian: MemoryService, author: Caller, instance: str, action: str, entry_id: str) -> str:
    """File the author's forget of ``entry_id`` or clear of user memory under approval: the request's id."""
    pending = (custodian.forget(author, instance, entry_id) if action == "forget"
               else custodian.clear(author, instance, Scope.USER, None, confirm=True))
    assert isinstance(pending, PendingDeletion)
    return pending.request_id


@pytest.mark.parametrize("action", ["forget", "clear"])
@pytest.mark.parametrize("when", ["after-the-hold", "after-the-sweep", "during-the-sweep"])
def test_a_team_copy_stored_late_under_approval_goes_with_its_entry(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch, action: str, when: str
) -> None:
    """Under operator approval the copy is hidden by the request's hold once it is filed, and erased or refused
    with its entry once the request is swept, whenever it is stored: after the hold (the sweep erases it), during
    the sweep after its plan (refused), or after the sweep (refused). The teammate never reads it again."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    appending, sweeping = stores(), stores()
    writer = _service(appending, clock, DeletionMode.OPERATOR_APPROVAL)
    custodian = _service(sweeping, clock, DeletionMode.OPERATOR_APPROVAL)
    author, teammate, instance = _caller("author"), _caller("mate"), f"race-{uuid.uuid4().hex[:8]}"
    writer.append(author, instance, Scope.USER, None, "- known before", TEAM)
    seen_while_held: list[str] = []

    def race(copy: MemoryEntry, store_copy: StoreCopy) -> None:
        request_id = _request(custodian, author, instance, action, _source_id(copy))
        if when == "after-the-hold":
            store_copy()
            seen_while_held.append(custodian.get(teammate, instance, Scope.USER, None).content_markdown)
        elif when == "during-the-sweep":  # stored once the sweep's plan is made: at its first erasure
            erase = sweeping.delete_entries

            def erase_late(key: ProfileKey, entry_ids: Any) -> int:
                monkeypatch.setattr(sweeping, "delete_entries", erase)
                store_copy()
                return erase(key, entry_ids)
            monkeypatch.setattr(sweeping, "delete_entries", erase_late)
        _approved(custodian, request_id, instance)

    _hold_copy(monkeypatch, appending, race)
    view = writer.append(author, instance, Scope.USER, None, "- raced the request", TEAM)

    assert all("raced the request" not in seen for seen in seen_while_held)
    assert sweeping.get_entry(instance, author.upn, view.entry_id or "") is None  # the sweep erased the entry
    assert sweeping.get_entry(instance, SHARED_OWNER, shared_copy_id(view.entry_id or "")) is None
    kept = ["- known before"] if action == "forget" else []
    assert _authors_copies(sweeping, instance, author) == kept
    seen = custodian.get(teammate, instance, Scope.USER, None).content_markdown
    assert "raced the request" not in seen and ("- known before" in seen) == (action == "forget")
