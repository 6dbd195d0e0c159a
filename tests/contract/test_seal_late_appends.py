"""A slow append racing a purge's seal: an entry stamped before the purge's watermark and stored late.

A writer stamps its entry, then stores it; a purge filed in between covers that entry (its watermark is later), and
so does its hold. The sweep plans from what is stored, erases it, then seals (``domain.seals``): it reads the user's
memory again and erases what the watermark covers that the plan never saw. An entry stored after that read was
erased by no step, and showed once the hold was lifted (before 2026-12-07). Now the seal first seals the watermark
on the whole partition (``MemoryStore.seal_partition``), then reads: an entry stored before the seal's read is
erased by it, and counted in the request's ``erased_entries``; one stored after is refused by the store
(``EntryBeforeClear``), and its writer stamps it after the watermark, so it counts as made after the purge.

Each test puts the late write at one point by wrapping the sweeping store (its first erasure: the plan is made;
the seal's read of the partition), so the interleaving is the same every run; the writer is another store object
over the same data (another process).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain.errors import EntryBeforeClear
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock

T0 = datetime(2026, 12, 7, 7, 0, tzinfo=UTC)
OPERATOR = "olivia@contoso.com"
PLANNER = AgentContext("/agents/planner", name="Planner")


def _service(store: MemoryStore, clock: TickingClock) -> MemoryService:
    return MemoryService(store, clock=clock, deletion_mode=DeletionMode.OPERATOR_APPROVAL)


def _stored_under(store: MemoryStore, instance: str, upn: str, watermark: datetime) -> list[str]:
    """The texts of ``upn``'s entries stamped at or before ``watermark`` that are still stored."""
    return [e.content_markdown for s in store.load_partition(instance, upn) for e in s.entries
            if e.created_on <= watermark]


@pytest.mark.parametrize("scope", [Scope.USER, Scope.AGENT], ids=["known-scope", "scope-without-a-profile"])
def test_an_entry_stamped_before_a_purge_and_stored_after_its_seals_read_is_refused(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch, scope: Scope
) -> None:
    """The writer's entry, stamped before the purge's watermark, reaches the store just after the seal read the
    user's memory: refused, and written again after the watermark. No entry under the watermark is left stored
    once the hold is lifted; the late one shows as made after the purge. Its scope may have no profile at all when
    the seal runs (a first write to an agent's scope): the seal holds for every scope of the user."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    appending, sweeping = stores(), stores()
    writer, custodian = _service(appending, clock), _service(sweeping, clock)
    alex, instance = Caller(upn=f"alex-{uuid.uuid4().hex[:8]}@contoso.com"), f"seal-{uuid.uuid4().hex[:8]}"
    writer.append(alex, instance, Scope.USER, None, "- known before")
    agent = PLANNER if scope is Scope.AGENT else None
    # The seal's read of the partition: its facts (``partition_facts``; before 2026-12-07 ``load_partition``).
    append_entry, erase, read = appending.append_with_records, sweeping.delete_entries, sweeping.partition_facts
    refused: list[EntryBeforeClear] = []
    watermarks: list[datetime] = []

    def late_entry(profile: MemoryProfile, entry: MemoryEntry, records: Any) -> MemoryProfile:
        monkeypatch.setattr(appending, "append_with_records", append_entry)
        request = custodian.custody.request_purge(OPERATOR, instance, alex.upn)  # its watermark after the stamp
        assert request.watermark is not None and entry.created_on <= request.watermark
        watermarks.append(request.watermark)

        def read_late(instance_id: str, upn: str) -> Any:  # the seal's read: the plan's erasure came first
            states = read(instance_id, upn)
            if upn == alex.upn:
                monkeypatch.setattr(sweeping, "partition_facts", read)
                try:
                    append_entry(profile, entry, records)
                except EntryBeforeClear as refusal:
                    refused.append(refusal)
            return states

        def erase_then_arm(key: ProfileKey, entry_ids: Any) -> int:
            monkeypatch.setattr(sweeping, "delete_entries", erase)
            monkeypatch.setattr(sweeping, "partition_facts", read_late)
            return erase(key, entry_ids)

        monkeypatch.setattr(sweeping, "delete_entries", erase_then_arm)
        custodian.custody.approve(OPERATOR, instance, request.id)
        custodian.custody.sweep(instance_id=instance)
        if refused:
            raise refused[0]  # as the store answered the writer: it stamps the entry after the watermark
        return profile

    monkeypatch.setattr(appending, "append_with_records", late_entry)
    view = writer.append(alex, instance, scope, agent, "- raced the seal")

    (watermark,) = watermarks
    assert _stored_under(sweeping, instance, alex.upn, watermark) == []
    assert [r.cleared_on for r in refused] == [watermark]
    stored = sweeping.get_entry(instance, alex.upn, view.entry_id or "")
    assert stored is not None and stored.created_on > watermark
    seen = custodian.get(alex, instance, scope, agent).content_markdown
    assert "raced the seal" in seen and "known before" not in seen


def test_an_entry_the_seal_erases_late_is_counted_in_the_request(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry stamped before the purge's watermark and stored after the sweep's plan (at its first erasure) is
    erased by the seal, and the executed request counts it with the ones the plan erased (before 2026-12-07 it
    said 1 entry where 2 were erased)."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    appending, sweeping = stores(), stores()
    writer, custodian = _service(appending, clock), _service(sweeping, clock)
    alex, instance = Caller(upn=f"alex-{uuid.uuid4().hex[:8]}@contoso.com"), f"seal-{uuid.uuid4().hex[:8]}"
    writer.append(alex, instance, Scope.USER, None, "- known before")
    append_entry, erase = appending.append_with_records, sweeping.delete_entries
    executed: list[Any] = []

    def late_entry(profile: MemoryProfile, entry: MemoryEntry, records: Any) -> MemoryProfile:
        monkeypatch.setattr(appending, "append_with_records", append_entry)
        request = custodian.custody.request_purge(OPERATOR, instance, alex.upn)
        stored: list[MemoryProfile] = []

        def erase_late(key: ProfileKey, entry_ids: Any) -> int:
            monkeypatch.setattr(sweeping, "delete_entries", erase)
            stored.append(append_entry(profile, entry, records))
            return erase(key, entry_ids)

        monkeypatch.setattr(sweeping, "delete_entries", erase_late)
        custodian.custody.approve(OPERATOR, instance, request.id)
        executed.extend(custodian.custody.sweep(instance_id=instance).executed)
        return stored[0]

    monkeypatch.setattr(appending, "append_with_records", late_entry)
    view = writer.append(alex, instance, Scope.USER, None, "- stored after the plan")

    (done,) = executed
    assert sweeping.get_entry(instance, alex.upn, view.entry_id or "") is None
    assert done.erased_entries == 2
    assert custodian.custody.get(instance, done.id).erased_entries == 2  # as stored
    assert "stored after the plan" not in custodian.get(alex, instance, Scope.USER, None).content_markdown
