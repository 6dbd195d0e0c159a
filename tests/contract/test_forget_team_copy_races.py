"""A team-shared entry's copy stored late, after a forget of the entry (or under approval, a clear or a purge) took
the copies.

A team-shared write stores the entry in its author's memory, then its copy in the scope's shared partition
(``domain.team_copies``), in two writes with no fence. An immediate forget erases the entry, then the copy by id; the
sweep of an approved forget reads the copy, then erases it; the sweep of an approved clear plans from its hold, then
erases. A copy stored after that outlived its entry: a teammate kept reading what its author had forgotten or an
operator had approved erasing. Now a forget stores the copy's mark before it erases the copy, and the copy's own
write creates that mark create-only (``team_copies.forbid``, ``share``); an approved clear's sweep seals its watermark
on the author's copies before its plan, and an approved purge's sweep stores the mark of each team-shared entry it
covers (it has no scope to seal, and erases the profiles a seal is read from on SQLite): before 2026-12-07 a copy
stored during or after a purge's sweep outlived it. A copy stored after the hold and before the sweep was hidden and erased
already: kept as a guard. An entry stored after a purge's plan (stamped before its watermark) is erased by its seal
step, which now erases its copy too, mark first: before 2026-12-07 the copy outlived it. Each test puts the copy's commit at one such point by wrapping the store (the writer's
append of the copy, or the sweeper's first erasure), so the interleaving is the same every run.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain import team_copies
from memory_core.domain.identity import Caller
from memory_core.domain.models import SHARED_OWNER, MemoryEntry, MemoryProfile, ProfileKey, Scope, shared_copy_id
from memory_core.domain.service import DeletionMode, MemoryService, PendingDeletion
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock
from tests.support.team_copy_races import TEAM, StoreCopy, authors_copies, caller, hold_copy, team_service

T0 = datetime(2026, 12, 7, 7, 0, tzinfo=UTC)
OPERATOR = "olivia@contoso.com"


def _source_id(copy: MemoryEntry) -> str:
    entry_id = copy.id.removesuffix("-shared")
    assert shared_copy_id(entry_id) == copy.id
    return entry_id


@pytest.mark.parametrize("same_process", [True, False], ids=["same-process", "other-process"])
def test_a_team_copy_stored_after_an_immediate_forget_is_not_kept(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch, same_process: bool
) -> None:
    """The forgotten entry's copy is refused: the teammate no longer reads it, the shared partition holds none
    of it; the author's other team entry still shows."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    appending = stores()
    forgetting = appending if same_process else stores()
    writer, custodian = team_service(appending, clock), team_service(forgetting, clock)
    author, teammate, instance = caller("author"), caller("mate"), f"race-{uuid.uuid4().hex[:8]}"
    writer.append(author, instance, Scope.USER, None, "- kept", TEAM)  # the writer knows the stamps
    hold_copy(monkeypatch, appending,
               lambda copy, _: custodian.forget(author, instance, _source_id(copy)) and None)

    view = writer.append(author, instance, Scope.USER, None, "- raced the forget", TEAM)

    assert appending.get_entry(instance, author.upn, view.entry_id or "") is None  # the forget erased the entry
    assert forgetting.get_entry(instance, SHARED_OWNER, shared_copy_id(view.entry_id or "")) is None
    assert authors_copies(forgetting, instance, author) == ["- kept"]
    seen = custodian.get(teammate, instance, Scope.USER, None).content_markdown
    assert "raced the forget" not in seen and "- kept" in seen


def _approved(custodian: MemoryService, request_id: str, instance: str) -> None:
    custodian.custody.approve(OPERATOR, instance, request_id)
    custodian.custody.sweep(instance_id=instance)


def _request(custodian: MemoryService, author: Caller, instance: str, action: str, entry_id: str) -> str:
    """File the author's forget of ``entry_id`` or clear of user memory under approval, or an operator's purge of
    the author's memory: the request's id."""
    if action == "purge":
        return custodian.custody.request_purge(OPERATOR, instance, author.upn).id
    pending = (custodian.forget(author, instance, entry_id) if action == "forget"
               else custodian.clear(author, instance, Scope.USER, None, confirm=True))
    assert isinstance(pending, PendingDeletion)
    return pending.request_id


@pytest.mark.parametrize("action", ["forget", "clear", "purge"])
@pytest.mark.parametrize("when", ["after-the-hold", "after-the-sweep", "during-the-sweep"])
def test_a_team_copy_stored_late_under_approval_goes_with_its_entry(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch, action: str, when: str
) -> None:
    """Under operator approval the copy is hidden by the request's hold once it is filed, and erased or refused
    with its entry once the request is swept, whenever it is stored: after the hold (the sweep erases it), during
    the sweep after its plan (refused), or after the sweep (refused). The teammate never reads it again."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    appending, sweeping = stores(), stores()
    writer = team_service(appending, clock, DeletionMode.OPERATOR_APPROVAL)
    custodian = team_service(sweeping, clock, DeletionMode.OPERATOR_APPROVAL)
    author, teammate, instance = caller("author"), caller("mate"), f"race-{uuid.uuid4().hex[:8]}"
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

    hold_copy(monkeypatch, appending, race)
    view = writer.append(author, instance, Scope.USER, None, "- raced the request", TEAM)

    assert all("raced the request" not in seen for seen in seen_while_held)
    assert sweeping.get_entry(instance, author.upn, view.entry_id or "") is None  # the sweep erased the entry
    assert sweeping.get_entry(instance, SHARED_OWNER, shared_copy_id(view.entry_id or "")) is None
    kept = ["- known before"] if action == "forget" else []
    assert authors_copies(sweeping, instance, author) == kept
    seen = custodian.get(teammate, instance, Scope.USER, None).content_markdown
    assert "raced the request" not in seen and ("- known before" in seen) == (action == "forget")


def test_a_purge_forbids_the_copies_of_more_team_shared_entries_than_one_batch_holds(
    stores: Callable[[], MemoryStore]
) -> None:
    """The sweep of a purge stores a mark for each team-shared entry it erases, in batches (a Cosmos DB batch takes
    100 operations): with 101 of them it executes, and a copy of the last one written afterwards is refused."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    store = stores()
    service = team_service(store, clock, DeletionMode.OPERATOR_APPROVAL)
    author, teammate, instance = caller("author"), caller("mate"), f"race-{uuid.uuid4().hex[:8]}"
    for number in range(101):
        service.append(author, instance, Scope.USER, None, f"- fact {number}", TEAM)
    (last,) = [e for s in store.load_partition(instance, author.upn) for e in s.entries if e.content_markdown == "- fact 100"]
    request_id = _request(service, author, instance, "purge", "")
    service.custody.approve(OPERATOR, instance, request_id)
    (done,) = service.custody.sweep(instance_id=instance).executed
    assert done.erased_entries == 101
    team_copies.share(store, last)  # its writer, late
    assert authors_copies(store, instance, author) == []
    assert "fact" not in service.get(teammate, instance, Scope.USER, None).content_markdown


@pytest.mark.parametrize("copy_when", ["before-the-seal", "after-the-sweep"])
def test_an_entry_stored_between_a_purges_plan_and_its_seal_goes_with_its_team_copy(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch, copy_when: str
) -> None:
    """A team-shared entry stamped before a purge's watermark and stored after its sweep planned (at its first
    erasure) is erased by the seal step, and its copy goes too, whenever its writer stores it: before the seal
    (erased with its entry) or after the sweep (refused by its mark). Before 2026-12-07 the seal erased the entry
    and left the copy, which teammates read once the hold was lifted."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    appending, sweeping = stores(), stores()
    writer = team_service(appending, clock, DeletionMode.OPERATOR_APPROVAL)
    custodian = team_service(sweeping, clock, DeletionMode.OPERATOR_APPROVAL)
    author, teammate, instance = caller("author"), caller("mate"), f"race-{uuid.uuid4().hex[:8]}"
    writer.append(author, instance, Scope.USER, None, "- known before", TEAM)
    append_entry, erase = appending.append_with_records, sweeping.delete_entries

    def late_entry(profile: MemoryProfile, entry: MemoryEntry, records: Any) -> MemoryProfile:
        if entry.key.upn != author.upn:  # the copy, or a write of the purge's own
            return append_entry(profile, entry, records)
        monkeypatch.setattr(appending, "append_with_records", append_entry)
        request_id = _request(custodian, author, instance, "purge", "")  # its watermark after the entry's stamp
        stored: list[MemoryProfile] = []

        def erase_late(key: ProfileKey, entry_ids: Any) -> int:  # the sweep's first erasure: its plan is made
            monkeypatch.setattr(sweeping, "delete_entries", erase)
            stored.append(append_entry(profile, entry, records))
            if copy_when == "before-the-seal":
                team_copies.share(appending, entry)
            return erase(key, entry_ids)
        monkeypatch.setattr(sweeping, "delete_entries", erase_late)
        _approved(custodian, request_id, instance)
        return stored[0]

    monkeypatch.setattr(appending, "append_with_records", late_entry)
    view = writer.append(author, instance, Scope.USER, None, "- raced the purge", TEAM)  # its copy: after the sweep

    assert sweeping.get_entry(instance, author.upn, view.entry_id or "") is None  # the seal erased the entry
    assert sweeping.get_entry(instance, SHARED_OWNER, shared_copy_id(view.entry_id or "")) is None
    assert authors_copies(sweeping, instance, author) == []
    assert "raced the purge" not in custodian.get(teammate, instance, Scope.USER, None).content_markdown
