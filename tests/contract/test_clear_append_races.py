"""An append racing an immediate clear, on every store: the entry shows after the clear, or is erased; never hidden
yet stored (``MemoryStore.append``, ``domain.audited_appends``, ``domain.scope_clears``).

A REST append does not stand in the custody fence: it takes its time, then commits. A clear chooses its watermark,
saves it, then erases what its own load finds at or before it. An append stamped before the watermark that commits
after that load would be hidden by the watermark and stay stored for good: "cleared" with data at rest. Each test
puts the append's commit at that point by wrapping the appending store, so the interleaving is the same every run.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain.errors import EntryBeforeClear
from memory_core.domain.identity import Caller
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock

T0 = datetime(2026, 12, 7, 3, 0, tzinfo=UTC)


def _caller() -> Caller:
    return Caller(upn=f"race-{uuid.uuid4().hex[:10]}@contoso.com")


def _stored_but_hidden(store: MemoryStore, key: ProfileKey) -> list[str]:
    """The contents of the scope's entries a read never shows and no step will erase: under its ``cleared_on``."""
    (state,) = store.load([key])
    cleared = state.profile.cleared_on if state.profile else None
    return [e.content_markdown for e in state.entries if cleared is not None and e.created_on <= cleared]


def _clear_before_commit(monkeypatch: pytest.MonkeyPatch, store: MemoryStore, clear: Callable[[], object]) -> None:
    """The next append through ``store`` is held back until ``clear`` has run whole: its entry's time is taken
    before the clear's watermark, its commit comes after the clear's erasure read what to erase."""
    real = store.append_with_records
    armed = [True]

    def late(*args: Any, **kwargs: Any) -> Any:
        if armed[0]:
            armed[0] = False
            clear()
        return real(*args, **kwargs)

    monkeypatch.setattr(store, "append_with_records", late)


@pytest.mark.parametrize("same_process", [True, False], ids=["same-process", "other-process"])
def test_an_append_stamped_before_a_clear_and_committed_after_its_erasure_shows(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch, same_process: bool
) -> None:
    """The clear's answer says what it erased; the late entry is refused by the store, stamped after the watermark,
    and shows. Another process's append knew the profile and the partition before the clear (its caches)."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    appending = stores()
    clearing = appending if same_process else stores()
    writer = MemoryService(appending, deletion_mode=DeletionMode.IMMEDIATE, clock=clock)
    custodian = MemoryService(clearing, deletion_mode=DeletionMode.IMMEDIATE, clock=clock)
    caller, instance = _caller(), f"race-{uuid.uuid4().hex[:8]}"
    writer.append(caller, instance, Scope.USER, None, "- before the clear")  # the writer knows profile and stamp
    _clear_before_commit(monkeypatch, appending,
                         lambda: custodian.clear(caller, instance, Scope.USER, None, confirm=True))

    view = writer.append(caller, instance, Scope.USER, None, "- raced the clear")

    key = ProfileKey(instance, caller.upn, Scope.USER)
    assert _stored_but_hidden(clearing, key) == []
    assert _stored_but_hidden(appending, key) == []
    shown = custodian.get(caller, instance, Scope.USER, None).content_markdown
    assert "raced the clear" in shown and "before the clear" not in shown
    stored = appending.get_entry(instance, caller.upn, view.entry_id or "")
    assert stored is not None  # the answer names the entry as stored, with its new time
    (state,) = clearing.load([key])
    assert state.profile is not None and state.profile.cleared_on is not None
    assert stored.created_on > state.profile.cleared_on


def test_a_keyed_append_that_raced_a_clear_answers_its_retry_with_the_entry_shown(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an Idempotency-Key the entry's id is the key's: re-stamped, it keeps it, and a retry answers it."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    appending, clearing = stores(), stores()
    writer = MemoryService(appending, deletion_mode=DeletionMode.IMMEDIATE, clock=clock)
    custodian = MemoryService(clearing, deletion_mode=DeletionMode.IMMEDIATE, clock=clock)
    caller, instance, idem = _caller(), f"race-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    writer.append(caller, instance, Scope.USER, None, "- before the clear")
    _clear_before_commit(monkeypatch, appending,
                         lambda: custodian.clear(caller, instance, Scope.USER, None, confirm=True))

    first = writer.append(caller, instance, Scope.USER, None, "- keyed", idempotency_key=idem)
    again = writer.append(caller, instance, Scope.USER, None, "- keyed", idempotency_key=idem)

    assert first.entry_id == again.entry_id
    assert _stored_but_hidden(clearing, ProfileKey(instance, caller.upn, Scope.USER)) == []
    assert "keyed" in custodian.get(caller, instance, Scope.USER, None).content_markdown


def test_a_store_refuses_an_entry_its_profiles_stored_watermark_covers(stores: Callable[[], MemoryStore]) -> None:
    """``EntryBeforeClear`` with the watermark, nothing written, also in a process whose caches predate the
    watermark; an entry after it is stored."""
    one, two = stores(), stores()
    key = ProfileKey(f"race-{uuid.uuid4().hex[:8]}", "alex@contoso.com", Scope.USER)
    profile = MemoryProfile(key, "Alex", "alex", None, T0, T0)

    def entry(text: str, at: datetime) -> MemoryEntry:
        return MemoryEntry(id=uuid.uuid4().hex, key=key, content_markdown=text, kind=EntryKind.APPEND,
                           created_on=at, author_upn=key.upn)

    one.append(profile, entry("- first", T0))  # ``one`` knows the profile and the partition's stamp now
    (state,) = two.load([key])
    assert state.profile is not None
    watermark = T0 + timedelta(seconds=1)
    two.save_profile(replace(state.profile, cleared_on=watermark))

    for at in (T0 + timedelta(milliseconds=500), watermark):
        with pytest.raises(EntryBeforeClear) as refused:
            one.append_with_records(profile, entry(f"- at {at}", at), [])
        assert refused.value.cleared_on == watermark
    later = entry("- after", watermark + timedelta(microseconds=1))
    one.append(profile, later)
    (state,) = two.load([key])
    assert [e.content_markdown for e in state.entries] == ["- first", "- after"]
