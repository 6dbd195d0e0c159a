"""What the memory tool's kept entries find once and carry over an edit (``domain.file_entries``):
carried only while it is exactly what finding it anew from every entry gives, found anew otherwise.

The contract suite (tests/contract/test_memory_file_entries.py) checks the same through real
stores and commands; these pin each condition on its own.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from memory_core.domain.file_entries import FileEntries, carried_visible
from memory_core.domain.models import EntryKind, Hold, MemoryEntry, MemoryProfile, ProfileKey, Scope, ScopeState
from tests.support.seeding import START, make_entries

KEY = ProfileKey("files", "alex@contoso.com", Scope.USER)
PROFILE = MemoryProfile(KEY, "Alex", "alex", None, START, START)


def _state(entries: list[MemoryEntry], profile: MemoryProfile = PROFILE, holds: tuple[Hold, ...] = ()) -> ScopeState:
    return ScopeState(KEY, profile, sorted(entries, key=lambda e: e.sort_key), holds)


def _later(count: int, after: MemoryEntry, kind: EntryKind = EntryKind.APPEND) -> list[MemoryEntry]:
    return [replace(e, kind=kind) for e in make_entries(KEY, count, start=after.created_on + timedelta(seconds=1))]


def _carried(before: ScopeState, after: ScopeState, dropped: list[MemoryEntry], added: list[MemoryEntry]) -> Any:
    return carried_visible(before, before.visible_entries(), after, dropped, added)


def test_entries_erased_and_added_after_the_last_visible_one_are_carried_exactly() -> None:
    entries = make_entries(KEY, 6)
    added = _later(2, entries[-1])
    before, after = _state(entries), _state([*entries[:2], *entries[3:], *added])
    carried = _carried(before, after, [entries[2]], added)
    assert carried is not None and [*carried.kept, *carried.added] == after.visible_entries()
    assert carried.dropped == [entries[2]]


def test_a_replace_erased_is_found_anew_since_what_it_hid_shows_again() -> None:
    entries = make_entries(KEY, 4)
    entries[2] = replace(entries[2], kind=EntryKind.REPLACE)
    before, after = _state(entries), _state([*entries[:2], entries[3]])
    assert before.visible_entries() == entries[2:]
    assert after.visible_entries() == [*entries[:2], entries[3]]
    assert _carried(before, after, [entries[2]], []) is None


def test_a_replace_added_is_found_anew_since_it_hides_what_came_before() -> None:
    entries = make_entries(KEY, 3)
    added = _later(1, entries[-1], EntryKind.REPLACE)
    assert _carried(_state(entries), _state([*entries, *added]), [], added) is None


def test_an_entry_from_a_writer_whose_clock_ran_behind_is_found_anew() -> None:
    entries = make_entries(KEY, 3)
    behind = replace(make_entries(KEY, 1)[0], created_on=entries[1].created_on)
    assert _carried(_state(entries), _state([*entries, behind]), [], [behind]) is None


@pytest.mark.parametrize("change", ["hold", "clear"])
def test_a_hold_or_a_clear_is_found_anew(change: str) -> None:
    entries = make_entries(KEY, 3)
    if change == "hold":
        after = _state(entries, holds=(Hold("r1", None, entry_ids=(entries[0].id,)),))
    else:
        after = _state(entries, profile=replace(PROFILE, cleared_on=entries[1].created_on))
    assert _carried(_state(entries), after, [], []) is None


def test_what_a_grown_or_refreshed_one_carries_is_what_it_would_find_itself() -> None:
    entries = make_entries(KEY, 8)
    blank = replace(entries[4], content_markdown="   ")
    entries[4] = blank
    before: FileEntries[object] = FileEntries({False: _state(entries)}, 8)

    def make(entry: MemoryEntry) -> tuple[str, str] | None:
        return (f"appended/{entry.id}.md", entry.content_markdown) if entry.content_markdown.strip() else None

    assert len(before.by_visible(False, "files", make)) == 7
    before.ids(), before.scope_ids(False), before.visible_ids(False)  # found, so carried over
    added = _later(3, entries[-1])
    states = {False: _state([*entries[:1], *entries[2:5], *entries[6:], *added])}
    after = before.succeeded_by(states, 11, {False: [entries[1], entries[5]]}, {False: added})
    anew: FileEntries[object] = FileEntries(states, 11)
    assert after._derived.get(("visible", False)) is not None  # carried, not found anew
    assert after.visible(False) == anew.visible(False) == states[False].visible_entries()
    assert list(after.by_visible(False, "files", make).items()) == list(anew.by_visible(False, "files", make).items())
    assert after.held_bytes() == anew.held_bytes()
    assert "ids" in after._derived and after.ids() == anew.ids()
    assert after.scope_ids(False) == anew.scope_ids(False) and after.visible_ids(False) == anew.visible_ids(False)


def test_carrying_over_leaves_what_the_earlier_one_found_as_it_was() -> None:
    # A racing command may still read the earlier entries' sets and maps: the later one's are copies.
    entries = make_entries(KEY, 6)
    before: FileEntries[object] = FileEntries({False: _state(entries)}, 6)

    def make(entry: MemoryEntry) -> tuple[str, str]:
        return (entry.id, entry.content_markdown)

    found = (set(before.ids()), set(before.scope_ids(False)), set(before.visible_ids(False)),
             dict(before.by_visible(False, "files", make)), list(before.visible(False)))
    added = _later(2, entries[-1])
    states = {False: _state([*entries[:3], *entries[4:], *added])}
    after = before.succeeded_by(states, 8, {False: [entries[3]]}, {False: added})
    assert (set(before.ids()), set(before.scope_ids(False)), set(before.visible_ids(False)),
            dict(before.by_visible(False, "files", make)), list(before.visible(False))) == found
    assert set(after.ids()) == {e.id for e in states[False].entries} == set(after.scope_ids(False))
    assert list(after.by_visible(False, "files", make)) == [e.id for e in states[False].entries]
    assert after.scope_entries(False) == {e.id: e for e in states[False].entries}


def test_a_later_one_carried_over_many_erasures_still_finds_what_finding_anew_gives() -> None:
    entries = make_entries(KEY, 200)
    current: FileEntries[object] = FileEntries({False: _state(entries)}, 200)

    def make(entry: MemoryEntry) -> tuple[str, str]:
        return (entry.id, entry.content_markdown)

    current.ids(), current.scope_ids(False), current.visible_ids(False), current.by_visible(False, "files", make)
    kept = list(entries)
    for step in range(150):  # past a third of the entries popped: the copies drop what was popped
        gone = kept.pop((step * 7) % len(kept))
        added = _later(1, kept[-1] if kept[-1].sort_key > gone.sort_key else gone)
        kept.append(added[0])
        current = current.succeeded_by({False: _state(kept)}, 201 + step, {False: [gone]}, {False: added})
    anew: FileEntries[object] = FileEntries({False: _state(kept)}, 0)
    assert current.visible(False) == anew.visible(False) == kept
    assert list(current.by_visible(False, "files", make).items()) == list(anew.by_visible(False, "files", make).items())
    assert current.ids() == anew.ids() and current.visible_ids(False) == anew.visible_ids(False)
