"""The provider asks the service for a budget: the newest memory reaches the model, with an exact count of
what was left out; retrieval="auto" adds search hits for the user's message when memory does not fit."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_core.domain.models import ProfileKey, Scope
from memory_core.integrations.agent_framework import (
    MEMORY_BLOCK_TAG,
    MemoryCoreConfigurationError,
    MemoryCoreContextProvider,
)
from memory_core.integrations.agent_framework.blocks import newest_lines
from tests.integrations.conftest import AGENT_ID, UPN, Harness, memory_delimiters
from tests.support.local_server import USER_KEY
from tests.support.seeding import CORRECTION, make_entries, memory_with_correction, seeded_server


def _body(block: str) -> str:
    opening, closing = memory_delimiters(block)
    return block[block.index(">", block.index(opening)) + 2: block.rindex(closing) - 1]


def test_the_newest_correction_of_10000_entries_reaches_the_model(
    harness: Callable[..., Harness], request: pytest.FixtureRequest
) -> None:
    """With 10,000 user entries whose newest is a correction, the model gets the correction (not the oldest
    facts), at most max_memory_chars of memory, and the exact number of older entries not shown."""
    h = harness(max_memory_chars=6000, timeout_seconds=60)
    with seeded_server(h.server, request, memory_with_correction(ProfileKey(h.instance_id, UPN, Scope.USER))):
        h.run("Where do I live now?")
    (block,) = h.model.last.blocks(MEMORY_BLOCK_TAG)
    memory = _body(block)
    assert CORRECTION in memory and "I live in Bergen." not in memory and len(memory) <= 6000
    shown = memory.count("## Appended ")
    assert f"{10_000 - shown} older entries are not shown, created 2025-01-01 to " in block
    assert h.state["last_recall"] == {"status": "ok", "retrieval": "combined", "empty": False, "scope": "combined",
                                      "shown_entries": shown, "omitted_entries": 10_000 - shown}


def test_auto_adds_search_hits_for_the_message_when_memory_does_not_fit(
    harness: Callable[..., Harness], request: pytest.FixtureRequest
) -> None:
    """retrieval="auto": the newest memory in three quarters of the budget, then the best search hits for the
    user's message that are not already shown, all within max_memory_chars."""
    h = harness(retrieval="auto", max_memory_chars=8000, timeout_seconds=60)
    with seeded_server(h.server, request, memory_with_correction(ProfileKey(h.instance_id, UPN, Scope.USER))):
        h.run("Did I ever live in Bergen?")
    (block,) = h.model.last.blocks(MEMORY_BLOCK_TAG)
    memory = _body(block)
    assert len(memory) <= 8000 and CORRECTION in memory
    newest, found = memory.split("# Older memory that matches this message (found by search)")
    assert len(newest) <= 6000 and "- I live in Bergen." in found and CORRECTION not in found
    recall = h.state["last_recall"]
    assert recall["retrieval"] == "auto" and recall["search_hits_added"] >= 1
    assert recall["omitted_entries"] == 10_000 - newest.count("## Appended ")


def test_auto_with_memory_that_fits_is_the_whole_memory_and_no_search(harness: Callable[..., Harness]) -> None:
    h = harness(retrieval="auto")
    h.append("- Prefers window seats.")
    h.append("- Booked Lisbon last spring.", scope="agent")
    h.run("Where should I sit?")
    (block,) = h.model.last.blocks(MEMORY_BLOCK_TAG)
    assert "Prefers window seats." in block and "Booked Lisbon" in block and "found by search" not in block
    assert "not shown" not in block and h.state["last_recall"]["omitted_entries"] == 0
    assert "search_hits_added" not in h.state["last_recall"]


def test_agent_memory_is_not_starved_by_a_large_user_memory(
    harness: Callable[..., Harness], request: pytest.FixtureRequest
) -> None:
    """The service splits the budget between user and agent memory, so this agent's own notes still arrive."""
    h = harness(max_memory_chars=3000, timeout_seconds=60)
    with seeded_server(h.server, request, make_entries(ProfileKey(h.instance_id, UPN, Scope.USER), 2000)):
        h.append("- Agent note: the user books with points.", scope="agent")
        h.run("Book me a flight.")
    (block,) = h.model.last.blocks(MEMORY_BLOCK_TAG)
    assert "- Agent note: the user books with points." in block


@pytest.mark.parametrize("value", [-1, 10_000_001])
def test_an_unusable_budget_is_refused_at_construction(value: int) -> None:
    with pytest.raises(MemoryCoreConfigurationError, match="max_memory_chars"):
        MemoryCoreContextProvider("http://127.0.0.1:1/api", "i", api_key=USER_KEY, user_identity={"upn": UPN},
                                  max_memory_chars=value, agent_object_id=AGENT_ID)


def test_a_service_without_budgets_still_gives_the_newest_whole_lines() -> None:
    """Against a service that ignores maxChars the provider keeps the last whole lines (the newest)."""
    memory = "# User memory\n\n- oldest\n\n- middle\n\n- newest 🎉\n"
    assert newest_lines(memory, 14) == "- newest 🎉\n"
    assert newest_lines(memory, 1000) == memory
    assert newest_lines("one long line", 4) == ""


def test_search_retrieval_keeps_whole_hits_within_the_budget(harness: Callable[..., Harness]) -> None:
    """retrieval="search": the best hits that fit in max_memory_chars, whole; the model and last_recall are told
    how many matching hits were left out."""
    h = harness(retrieval="search", search_limit=10, max_memory_chars=16_000)
    for n in range(5):
        h.append(f"- hotel lisbon note {n} " + "lorem ipsum dolor " * 3500)  # about 63,000 characters each
    h.append("- hotel lisbon: Memmo Alfama")
    h.run("Which hotel in Lisbon?")
    (block,) = h.model.last.blocks(MEMORY_BLOCK_TAG)
    assert len(_body(block)) <= 16_000 and "Memmo Alfama" in block and "lorem" not in block
    assert "5 more matching entries do not fit in the memory budget and are not shown." in block
    recall = h.state["last_recall"]
    assert (recall["search_hits_shown"], recall["search_hits_left_out"]) == (1, 5)
