"""Deterministic ids and ownership normalization; what holds cover."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.domain.identity import caller_upn
from memory_core.domain.models import (
    EntryKind,
    HeldFacts,
    Hold,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Scope,
    ScopeState,
)


def test_upn_is_trimmed_and_lowercased() -> None:
    """Ownership is the UPN trimmed and lower-cased."""
    assert caller_upn("  Alex@Contoso.COM ") == "alex@contoso.com"


def test_user_profile_id_follows_the_seed() -> None:
    """User memory lives at memory:user:{normalizedUpn}."""
    assert ProfileKey("i", "alex@contoso.com", Scope.USER).profile_id == "memory:user:alex@contoso.com"


def test_agent_profile_id_hashes_the_agent_object_id() -> None:
    """Agent memory lives at memory:agent:{upn}:{hash}, with no slash from the object id."""
    pid = ProfileKey("i", "alex@contoso.com", Scope.AGENT, "/instances/x/agents/a").profile_id
    prefix, _, digest = pid.rpartition(":")
    assert prefix == "memory:agent:alex@contoso.com" and len(digest) == 32 and "/" not in pid


def test_agent_profile_ids_differ_per_agent_and_are_stable() -> None:
    """The same agent always maps to the same id; two agents never share one."""
    a1 = ProfileKey("i", "u", Scope.AGENT, "/agents/a").profile_id
    a2 = ProfileKey("i", "u", Scope.AGENT, "/agents/a").profile_id
    b = ProfileKey("i", "u", Scope.AGENT, "/agents/b").profile_id
    assert a1 == a2 and a1 != b


def test_guest_upn_characters_are_made_id_safe() -> None:
    """Characters Cosmos DB refuses in ids (# / \\ ?) are percent-encoded."""
    pid = ProfileKey("i", "ext_user#ext#@tenant.onmicrosoft.com", Scope.USER).profile_id
    assert "#" not in pid and "%23" in pid


_T0 = datetime(2026, 1, 1, tzinfo=UTC)
_moments = st.integers(0, 5).map(lambda minutes: _T0 + timedelta(minutes=minutes))
_ids = st.sampled_from(["e1", "e2", "e3"])
_authors = st.sampled_from(["a@contoso.com", "b@contoso.com"])
_holds = st.builds(
    Hold,
    request_id=st.just("r"),
    profile_ids=st.one_of(st.none(), st.sampled_from([("p",), ("q",), ("p", "q")])),
    watermark=st.one_of(st.none(), _moments),
    entry_ids=st.lists(_ids, max_size=2).map(tuple),
    author_upn=st.one_of(st.none(), _authors),
)


@settings(max_examples=400, deadline=None)
@given(holds=st.lists(_holds, max_size=5), author=_authors, moment=_moments, entry_id=_ids)
def test_held_facts_cover_exactly_what_one_of_the_holds_covers(
    holds: list[Hold], author: str, moment: datetime, entry_id: str
) -> None:
    """The index a read builds once answers, for any entry, what asking every hold would: a directory's delete files
    a hold per file, and asking each of them for each entry made reads quadratic."""
    expected = any(hold.covers_facts("p", author, moment, entry_id) for hold in holds)
    assert HeldFacts.of("p", holds).covers_facts(author, moment, entry_id) is expected


@pytest.mark.alone
def test_visible_entries_cost_grows_with_entries_and_holds_not_their_product() -> None:
    key = ProfileKey("i", "alex@contoso.com", Scope.USER)

    def seconds(n: int) -> float:
        entries = [MemoryEntry(f"e{i}", key, f"- fact {i}", EntryKind.APPEND, _T0 + timedelta(seconds=i), key.upn)
                   for i in range(n)]
        holds = tuple(Hold(f"r{i}", (key.profile_id,), None, (entries[i].id,)) for i in range(0, n, 2))
        state = ScopeState(key, MemoryProfile(key, "Alex", None, None, _T0, _T0), entries, holds)
        started = time.perf_counter()
        assert len(state.visible_entries()) == n // 2
        return time.perf_counter() - started

    # The fastest of seven: other processes only add to a run's time (of three, a loaded machine once made the
    # 1,000-entry run 0.5 ms and the 8,000-entry one 12 ms, 24 times as long).
    small, large = min(seconds(1000) for _ in range(7)), min(seconds(8000) for _ in range(7))
    assert large < small * 8 * 3, (small, large)  # linear: 8x; quadratic was 64x (0.34 s at 1,000 before)
