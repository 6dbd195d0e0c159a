"""Kept entries less the erased ones (``domain.present_entries.without``, ``erased_entries.states_less_erased``):
the same entries, in the same order, whether they are cut out by bisection or found by a walk."""

from __future__ import annotations

from dataclasses import replace

from memory_core.domain.erased_entries import ErasedLoad, states_less_erased
from memory_core.domain.models import MemoryProfile, ProfileKey, Scope, ScopeState
from memory_core.domain.present_entries import without
from memory_core.domain.snapshots import PartitionStamp, StampedLoad
from tests.support.seeding import START, make_entries

KEY = ProfileKey("files", "alex@contoso.com", Scope.USER)
PROFILE = MemoryProfile(KEY, "Alex", "alex", None, START, START)


def test_a_few_entries_are_cut_out_in_order_and_ones_not_held_are_left() -> None:
    entries = make_entries(KEY, 50)
    stranger = make_entries(ProfileKey("files", "sam@contoso.com", Scope.USER), 1)[0]
    kept, gone = without(entries, [entries[30], entries[0], stranger, entries[49]])
    assert gone == [entries[0], entries[30], entries[49]]
    assert kept == [e for i, e in enumerate(entries) if i not in (0, 30, 49)]


def test_many_entries_are_found_by_one_walk_with_the_same_answer() -> None:
    entries = make_entries(KEY, 300)
    leaving = entries[::3]  # more than a bisection each is worth
    kept, gone = without(entries, reversed(leaving))
    assert gone == leaving and kept == [e for e in entries if e not in leaving]


def test_held_entries_out_of_order_are_found_by_a_walk() -> None:
    entries = make_entries(KEY, 20)
    shuffled = [*entries[10:], *entries[:10]]  # not in order: bisection misses some
    kept, gone = without(shuffled, [entries[2], entries[15]], held=True)
    assert gone == [entries[15], entries[2]] and kept == [e for e in shuffled if e not in gone]


def test_states_less_erased_drops_the_erased_entries_of_each_scope_and_adds_the_new() -> None:
    entries = make_entries(KEY, 10)
    later = make_entries(KEY, 2, start=entries[-1].created_on + (entries[1].created_on - entries[0].created_on))
    kept = {False: ScopeState(KEY, PROFILE, entries, ())}
    held = replace(PROFILE, name="Alex B")
    loaded = ErasedLoad(StampedLoad(PartitionStamp(9, 7), 12, [ScopeState(KEY, held, later, ())], 3),
                         frozenset({entries[4].id, "elsewhere"}))
    states, dropped = states_less_erased(kept, loaded, {False: {e.id: e for e in entries}})
    assert dropped == {False: [entries[4]]}
    assert states[False].entries == [*entries[:4], *entries[5:], *later] and states[False].profile == held
