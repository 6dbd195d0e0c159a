"""Agent settings whose instructions were screened under an older ruleset, on every store.

A read that scans such instructions and finds nothing marks the record with a write conditional on
the record it read (``AgentSettingsBook._stamp``). On every store that write must land, keep the
settings as they were, and leave nothing of the store's own bookkeeping in the record's data.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from memory_core.domain.agent_settings import (
    AGENT_SETTINGS,
    SCREENED_UNDER,
    SETTINGS_OWNER,
    AgentSettings,
    AgentSettingsBook,
)
from memory_core.domain.audit import AuditTrail
from memory_core.domain.models import agent_hash
from memory_core.domain.records import Partition, Record
from memory_core.domain.store import MemoryStore
from memory_core.secrets.ruleset import ruleset
from tests.support.clock import TickingClock
from tests.support.scanning import CountingScanner

AGENT = "/agents/travel"


def _book(store: MemoryStore, scanner: CountingScanner | None = None) -> AgentSettingsBook:
    """A new process's book: an empty cache."""
    return AgentSettingsBook(store, AuditTrail(store, TickingClock(datetime(2026, 12, 5, tzinfo=UTC))),
                             scanner=scanner)


def test_instructions_screened_under_another_ruleset_are_scanned_once_and_marked(store: MemoryStore) -> None:
    """The first process scans and marks; the next reads the same settings without a scan; the record's data is
    the settings and the mark alone; the trail has no event (no setting changed)."""
    instance = f"marks-{uuid.uuid4().hex[:8]}"
    stored = AgentSettings(AGENT, auto_append=True, allowed_group_ids=("g-travel",),
                           policy_instructions="Only seat and meal preferences.")
    partition = Partition(instance, SETTINGS_OWNER)
    store.put_record(Record(partition, AGENT_SETTINGS, agent_hash(AGENT),
                            {**stored.to_data(), SCREENED_UNDER: "screen-0000000000000000"}))
    first, second = CountingScanner(), CountingScanner()
    assert _book(store, first).for_models(instance, AGENT) == stored and len(first.scanned) == 1
    record = store.get_record(partition, AGENT_SETTINGS, agent_hash(AGENT))
    assert record is not None and record.data == {**stored.to_data(), SCREENED_UNDER: ruleset()}
    assert _book(store, second).for_models(instance, AGENT) == stored and second.scanned == []
    assert _book(store).trail(instance, limit=10).items == []
