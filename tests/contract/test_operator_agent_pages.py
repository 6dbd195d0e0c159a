"""The operator's agent list (``GET .../operator/agents``, ``AgentSettingsBook.page``) reads a page, not the
instance's every agent, on every store: one query of ``limit`` + 1 records, at the first page and a deep one.

At 10,000 agents (``bench/bench_operator_agents.py``, docs/performance.md) the same holds; here 1,500 keep the Cosmos
test server's container small.
"""

from __future__ import annotations

import uuid

from memory_core.domain.agent_settings import AGENT_SETTINGS, SETTINGS_OWNER, AgentSettings
from memory_core.domain.models import agent_hash
from memory_core.domain.records import Partition, Record
from memory_core.domain.service import MemoryService
from memory_core.domain.store import MemoryStore

AGENTS = 1500


def test_a_page_of_the_agent_list_reads_that_page_of_records(store: MemoryStore) -> None:
    """The first page of 100, and the page after 1,100 agents, each read 101 records in one round trip; walked to
    the end, the pages name every agent once."""
    instance = f"agent-pages-{uuid.uuid4().hex[:8]}"
    partition = Partition(instance, SETTINGS_OWNER)
    ids = [f"/agents/a{n:05d}" for n in range(AGENTS)]
    records = [Record(partition, AGENT_SETTINGS, agent_hash(i), AgentSettings(i, enabled=False).to_data())
               for i in ids]
    for at in range(0, AGENTS, 100):
        store.put_records(records[at:at + 100])
    book = MemoryService(store).agent_settings
    with store.measure() as first:
        page = book.page(instance, limit=100)
    deep = book.page(instance, limit=1000, continuation=page.continuation)
    with store.measure() as later:
        after = book.page(instance, limit=100, continuation=deep.continuation)
    for metrics in (first, later):
        assert (metrics.round_trips, metrics.rows) == (1, 101)
    assert len(page.items) == len(after.items) == 100
    listed, token = [], None
    while True:
        walked = book.page(instance, limit=500, continuation=token)
        listed += [s.settings.agent_object_id for s in walked.items]
        token = walked.continuation
        if token is None:
            break
    assert sorted(listed) == ids
