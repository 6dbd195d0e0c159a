"""Fixtures of the adapter tests: Cosmos DB stores on the session's test server container."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memory_core.adapters.cosmos_store import CosmosMemoryStore
from tests.adapters.cosmos_support import cosmos_store
from tests.support.cosmos_server import CosmosServer


@pytest.fixture
def cosmos(cosmos_account: CosmosServer) -> Iterator[CosmosMemoryStore]:
    """A Cosmos store on the session's container, closed after the test."""
    store = cosmos_store(cosmos_account)
    yield store
    store.close()


@pytest.fixture
def stores(cosmos_account: CosmosServer) -> Iterator[list[CosmosMemoryStore]]:
    """Three stores on the session's container, as three processes would have."""
    opened = [cosmos_store(cosmos_account) for _ in range(3)]
    yield opened
    for store in opened:
        store.close()
