"""An agent's settings: what an operator may store in its instructions.

The policy instructions are sent word for word to every model that calls memory as the
agent (the MCP instructions and append_memory's description), so they pass the same
secret screen as a write. On the real SQLite store with the real scanner.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.composition import ScannerOnFirstScan
from memory_core.domain.agent_settings import AgentSettings, AgentSettingsBook
from memory_core.domain.errors import SecretDetected

INSTANCE = "inst-settings"
AGENT = "/agents/travel"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
FULL_WIDTH_CARD = "".join(chr(ord(c) + 0xFEE0) if c.isdigit() else c for c in "4111 1111 1111 1111")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    store = SqliteMemoryStore(tmp_path / "m.sqlite3")
    yield store
    store.close()


@pytest.mark.parametrize(
    ("instructions", "detector"),
    [
        (f"Call the weather tool with token {GITHUB_TOKEN}.", "GitHub Token"),
        (f"Bill trips to the company card {FULL_WIDTH_CARD}.", "Payment Card Number"),
    ],
    ids=["token", "full-width card"],
)
def test_instructions_holding_a_secret_are_refused_and_the_old_settings_kept(
    store: SqliteMemoryStore, instructions: str, detector: str
) -> None:
    """The put raises SecretDetected naming the field; this process and a new one still read the old settings."""
    book = AgentSettingsBook(store, scanner=ScannerOnFirstScan())
    before = book.put(INSTANCE, AgentSettings(AGENT, policy_instructions="Only travel preferences."))
    with pytest.raises(SecretDetected) as refused:
        book.put(INSTANCE, AgentSettings(AGENT, auto_append=True, policy_instructions=instructions))
    assert refused.value.where == "policy_instructions" and detector in refused.value.detectors
    assert str(refused.value).startswith("policy_instructions looks like it contains a secret")
    assert book.get(INSTANCE, AGENT) == before
    assert AgentSettingsBook(store).get(INSTANCE, AGENT) == before


def test_ordinary_instructions_with_numbers_are_stored(store: SqliteMemoryStore) -> None:
    """Dates, times, amounts and ids in instructions are not secrets: stored and read back as written."""
    book = AgentSettingsBook(store, scanner=ScannerOnFirstScan())
    instructions = ("Remember trips booked after 2026-01-15 14:30 UTC, budgets under $4,000, "
                    "and booking references like TRV-2026-000123. 予算は１２万円まで。")
    stored = book.put(INSTANCE, AgentSettings(AGENT, policy_instructions=instructions))
    assert AgentSettingsBook(store).get(INSTANCE, AGENT) == stored
    assert stored.policy_instructions == instructions


def test_settings_without_instructions_are_not_scanned(store: SqliteMemoryStore) -> None:
    """Settings with no instructions (the default) never start the scanner: its first scan loads the detectors."""

    class Refuses:
        def scan(self, text: str) -> list[object]:
            raise AssertionError(f"scanned {text!r}")

    book = AgentSettingsBook(store, scanner=Refuses())
    assert book.put(INSTANCE, AgentSettings(AGENT, enabled=False)).enabled is False
