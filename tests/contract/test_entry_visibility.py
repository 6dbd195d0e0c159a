"""Whether one entry shows is decided with bounded store work, and agrees with a full read, on every store.

``budget.is_visible`` (what ``forget`` asks, through ``budget.visible_entry``) reads the profile, the holds and the
newest replace; ``ScopeState.visible_entries`` reads the whole scope. After each step
of a seeded random walk over every write that changes what shows (append, import
append and replace, forget, clear, approval and rejection of deletions, the sweep),
both must agree on every entry ever written.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from memory_core.domain.budget import is_visible, visible_entry
from memory_core.domain.errors import NotFound
from memory_core.domain.identity import Caller
from memory_core.domain.models import EntryKind, ProfileKey, Scope
from memory_core.domain.service import DeletionMode, ImportMode, MemoryService
from memory_core.domain.store import MemoryStore
from tests.support.random_walk import RandomWalk
from tests.support.seeding import make_entries, seed


def _agree(store: MemoryStore, key: ProfileKey, written: list[str]) -> None:
    (state,) = store.load([key])
    shown = {e.id for e in state.visible_entries()}
    for entry_id in written:
        entry = store.get_entry(key.instance_id, key.upn, entry_id)
        if entry is not None:
            assert is_visible(store, entry) is (entry.id in shown), entry.content_markdown
        assert (visible_entry(store, key.instance_id, key.upn, entry_id) is not None) is (entry_id in shown)


@pytest.mark.parametrize("mode", [DeletionMode.OPERATOR_APPROVAL, DeletionMode.IMMEDIATE])
def test_one_entrys_visibility_agrees_with_a_full_read_after_every_write(store: MemoryStore, mode: DeletionMode) -> None:
    service = MemoryService(store, deletion_mode=mode)
    caller = Caller(upn=f"visibility-{uuid.uuid4().hex[:8]}@contoso.com")
    instance = "visibility"
    key = ProfileKey(instance, caller.upn, Scope.USER)
    walk = RandomWalk(1915, instance)
    written = walk.written_by(caller)
    for step in range(40):
        action = walk.choice(["append", "append", "append", "import", "replace", "forget", "clear", "decide"])
        walk.take(action, service, caller, Scope.USER, None, step)
        if action in ("import", "replace"):  # forgets take imported entries too, and every one is checked
            (state,) = store.load([key])
            written.extend(e.id for e in state.entries if e.id not in written)
        _agree(store, key, written)


def test_forget_refuses_an_entry_a_later_replace_hid_and_takes_the_replace_itself(store: MemoryStore) -> None:
    service = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE)
    caller = Caller(upn=f"replaced-{uuid.uuid4().hex[:8]}@contoso.com")
    old = service.append(caller, "visibility", Scope.USER, None, "- before the replace")
    service.import_markdown(caller, "visibility", Scope.USER, None, "- the new document", ImportMode.REPLACE)
    with pytest.raises(NotFound):
        service.forget(caller, "visibility", old.entry_id or "")
    (state,) = store.load([ProfileKey("visibility", caller.upn, Scope.USER)])
    (replace_entry,) = state.visible_entries()
    service.forget(caller, "visibility", replace_entry.id)
    assert service.get(caller, "visibility", Scope.USER, None).content_markdown == ""


def test_a_replace_hides_every_older_entry_still_stored(store: MemoryStore) -> None:
    """Stored entries older than the newest replace (kept, not erased) do not show; the replace and newer ones do."""
    key = ProfileKey("visibility", f"stored-{uuid.uuid4().hex[:8]}@contoso.com", Scope.USER)
    entries = make_entries(key, 6)
    entries[2] = replace(entries[2], kind=EntryKind.REPLACE, content_markdown="- replaced here")
    entries[4] = replace(entries[4], kind=EntryKind.REPLACE, content_markdown="- and replaced again")
    seed(store, entries)
    assert [is_visible(store, e) for e in entries] == [False, False, False, False, True, True]
    _agree(store, key, [e.id for e in entries])
