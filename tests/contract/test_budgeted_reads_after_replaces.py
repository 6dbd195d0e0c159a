"""A kept budgeted read after an empty replace, on every store: what a process answers from what it kept
(a budgeted read grown by the entries stored since, or answered from its snapshot) is what a process
that keeps nothing answers, and what the full get shows.

An import replace of "" with immediate deletion stores an empty replace entry, then moves the clear
watermark to just before it. Between those two writes (or for good, when the writing instance stops
between them) the empty replace alone hides what came before it: also an entry another Functions
instance appends then with a clock running behind, which sorts before the replace. The kept read must
not show that entry, and its ``updated_on`` is the replace's, as the full get says.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.domain.identity import Caller
from memory_core.domain.models import MemoryProfile, Scope
from memory_core.domain.service import DeletionMode, ImportMode, MemoryService
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import MemoryView
from tests.contract.test_memory_file_entries import INSTANCE, _caller
from tests.contract.test_reads_after_erasures import _Unkept
from tests.support.clock import TickingClock

START = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
POLICIES = [SharingPolicy.PRIVATE, SharingPolicy.TEAM]  # a sharing read is kept and grown from other parts
BUDGETS = (120, 100_000)  # about one entry's worth (the fill leaves entries out), and the whole memory


class _Between:
    """A store whose first profile save (the replace's watermark) runs ``meanwhile`` first: what other
    processes do between a replace's entry and its watermark."""

    def __init__(self, store: MemoryStore, meanwhile: Callable[[], None]) -> None:
        self._store = store
        self._meanwhile: Callable[[], None] | None = meanwhile

    def save_profile(self, profile: MemoryProfile) -> MemoryProfile:
        meanwhile, self._meanwhile = self._meanwhile, None
        if meanwhile is not None:
            meanwhile()
        return self._store.save_profile(profile)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _budgeted(service: MemoryService, caller: Caller) -> list[MemoryView]:
    return [service.get_within(caller, INSTANCE, Scope.USER, None, budget) for budget in BUDGETS]


def _shown(views: list[MemoryView]) -> list[tuple[str, object]]:
    return [(view.content_markdown, view.budget) for view in views]


def _check(keeper: MemoryService, stores: Callable[[], MemoryStore], caller: Caller,
           what: Callable[[list[MemoryView]], object] = lambda views: views) -> list[MemoryView]:
    """Every budgeted read of ``keeper`` (read twice: grown or built, then answered from what it kept)
    is the truth as ``what`` sees it, and the whole-memory one is the full get; answers the truth."""
    truth = MemoryService(_Unkept(stores()),   # type: ignore[arg-type]
                           default_sharing=keeper._targets.policy(None))  # the keeper's policy
    expected = _budgeted(truth, caller)
    for _ in range(2):
        assert what(_budgeted(keeper, caller)) == what(expected)
    full = truth.get(caller, INSTANCE, Scope.USER, None)
    assert (expected[-1].content_markdown, expected[-1].updated_on) == (full.content_markdown, full.updated_on)
    return expected


def _replacing_with_nothing(stores: Callable[[], MemoryStore], caller: Caller, clock: TickingClock,
                            meanwhile: Callable[[], None], keeper: MemoryService) -> None:
    """A memory of a few entries replaced by "" under immediate deletion; ``meanwhile`` runs between the
    replace's entry and its watermark."""
    writer = MemoryService(stores(), clock=clock, deletion_mode=DeletionMode.IMMEDIATE)
    for n in range(4):
        writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n} of the memory before the replace")
    _check(keeper, stores, caller)
    replacing = MemoryService(_Between(stores(), meanwhile), clock=clock,  # type: ignore[arg-type]
                              deletion_mode=DeletionMode.IMMEDIATE)
    replacing.import_markdown(caller, INSTANCE, Scope.USER, None, "", ImportMode.REPLACE)
    _check(keeper, stores, caller)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_kept_budgeted_read_after_an_empty_replace_was_updated_when_the_replace_was_stored(
    stores: Callable[[], MemoryStore], policy: SharingPolicy,
) -> None:
    """Before its watermark, only the empty replace says when the memory last changed."""
    caller, clock, keeper = _caller(), TickingClock(START), MemoryService(stores(), default_sharing=policy)
    _replacing_with_nothing(stores, caller, clock, lambda: _check(keeper, stores, caller), keeper)


@pytest.mark.parametrize("policy", POLICIES)
def test_an_entry_from_a_clock_behind_sorting_before_an_empty_replace_is_hidden_in_kept_budgeted_reads(
    stores: Callable[[], MemoryStore], policy: SharingPolicy,
) -> None:
    """Another instance's clock 5 ms behind: its entry, appended after the replace, sorts before it."""
    caller, clock, keeper = _caller(), TickingClock(START), MemoryService(stores(), default_sharing=policy)
    behind = MemoryService(stores(), clock=lambda: clock.now - timedelta(milliseconds=5))

    def meanwhile() -> None:
        _budgeted(keeper, caller)  # kept as the replace alone leaves the memory
        behind.append(caller, INSTANCE, Scope.USER, None, "- appended by an instance whose clock is behind")
        truth = _check(keeper, stores, caller, _shown)
        assert all("clock is behind" not in view.content_markdown for view in truth)

    _replacing_with_nothing(stores, caller, clock, meanwhile, keeper)
