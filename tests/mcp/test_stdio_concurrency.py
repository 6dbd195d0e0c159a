"""Many tool calls at once from one stdio client (``python -m memory_core mcp``), on each store.

A stdio process serves one client, its only user. On Cosmos DB its store calls run in worker threads, where each user
has a share of ``stalled.MAX_CALLS_PER_USER``; before, the client's eleventh concurrent call was refused ("10 of your
earlier calls to the store have not returned yet"): 50 appends sent at once answered 35 refusals. Now a call past the
share waits for a place (``AbandonedCalls.share_line``) and every call is served. On SQLite the calls run on the
event loop and never met the share; the same test holds there. Real parts only: the real command, started by the
official client's ``stdio_client``; Cosmos DB is the @vercel/cosmosdb-server test server through azure-cosmos.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from memory_core.mcp.stalled import MAX_CALLS_PER_USER
from tests.adapters.cosmos_support import cosmos_env
from tests.support.stdio_server import TIME_LIMIT, parameters, stdio_env

pytestmark = pytest.mark.anyio

BURST = 5 * MAX_CALLS_PER_USER
"""Calls one client sends at once: past its share of worker threads, and past the 32 requests the stdio front reads
ahead of its answers (``stdio_front.MAX_REQUESTS_IN_FLIGHT``), so both the share's line and the front's hold are met."""


@pytest.fixture(params=["sqlite", "cosmos"])
def store_env(request: pytest.FixtureRequest, tmp_path: Path, instance_id: str) -> dict[str, str]:
    """A stdio server's environment on each store, serving a user of its own in the test's instance."""
    upn = f"burst-{uuid.uuid4().hex[:8]}@contoso.com"
    store: dict[str, str] = {}
    if request.param == "cosmos":
        store = cosmos_env(request.getfixturevalue("cosmos_account"))
    return stdio_env(tmp_path / "memory.sqlite3", upn, MEMORY_MCP_INSTANCE_ID=instance_id, **store)


@asynccontextmanager
async def _session(env: Mapping[str, str], errlog: Path) -> AsyncIterator[ClientSession]:
    with errlog.open("w", encoding="utf-8") as log:
        async with asyncio.timeout(TIME_LIMIT):
            async with stdio_client(parameters(env), errlog=log) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                yield client


async def test_a_burst_of_appends_from_one_client_is_all_stored(store_env: dict[str, str], tmp_path: Path) -> None:
    """50 appends sent at once by one client all succeed, each stored once, none refused as unavailable."""
    facts = [f"- burst fact {i:02d}" for i in range(BURST)]
    async with _session(store_env, tmp_path / "stderr.txt") as client:
        results = await asyncio.gather(*(client.call_tool("append_memory", {"scope": "user", "memory": fact})
                                         for fact in facts))
        memory = await client.call_tool("get_memory", {"scope": "user", "max_chars": 1_000_000})
    refused = [result.content[0].text for result in results if result.is_error]  # type: ignore[union-attr]
    assert refused == []
    lines = memory.content[0].text.splitlines()  # type: ignore[union-attr]
    assert sorted(line for line in lines if line.startswith("- burst fact")) == facts


async def test_a_burst_of_reads_and_searches_from_one_client_is_all_answered(
    store_env: dict[str, str], tmp_path: Path
) -> None:
    """Reads and searches sent at once, interleaved, are all answered with the memory stored before them."""
    async with _session(store_env, tmp_path / "stderr.txt") as client:
        stored = await client.call_tool("append_memory", {"scope": "user", "memory": "- prefers aisle seats"})
        assert not stored.is_error
        calls = [client.call_tool("get_memory", {"scope": "user"}) if i % 2 else
                 client.call_tool("search_memory", {"query": "aisle", "scope": "user"}) for i in range(BURST)]
        results = await asyncio.gather(*calls)
    assert [r.content[0].text for r in results if r.is_error] == []  # type: ignore[union-attr]
    assert all("aisle seats" in r.content[0].text for r in results)  # type: ignore[union-attr]
