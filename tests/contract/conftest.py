"""The store contract suite runs against every MemoryStore implementation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.store import MemoryStore
from tests.adapters.cosmos_support import cosmos_store as make_cosmos_store
from tests.adapters.cosmos_support import own_container
from tests.support.cosmos_server import CosmosServer

STORE_KINDS = ["sqlite", "cosmos"]


@pytest.fixture
def cosmos_store(cosmos_account: CosmosServer) -> Iterator[MemoryStore]:
    """A CosmosMemoryStore built from settings against the session's Cosmos test server, on a container of
    the test's own (contract tests seed up to 10,000 entries; the test server scans a whole container per query)."""
    with own_container(cosmos_account, "contract") as container:
        store = make_cosmos_store(cosmos_account, container=container)
        yield store
        store.close()


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    if request.param == "sqlite":
        sqlite = SqliteMemoryStore(tmp_path / "contract.sqlite3")
        yield sqlite
        sqlite.close()
    else:
        yield request.getfixturevalue(f"{request.param}_store")


@pytest.fixture(params=STORE_KINDS)
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], MemoryStore]]:
    """A factory of store objects over the same data, each one as another process would open it (SQLite: the
    same file; Cosmos DB: the session's account); every one made is closed after the test. (A module may define
    a ``stores`` of its own, as the checkpoint tests do.)"""
    made: list[MemoryStore] = []
    if request.param == "sqlite":
        def another() -> MemoryStore:
            made.append(SqliteMemoryStore(tmp_path / "stores.sqlite3"))
            return made[-1]
    else:
        account = request.getfixturevalue("cosmos_account")

        def another() -> MemoryStore:
            made.append(make_cosmos_store(account))
            return made[-1]
    yield another
    for store in made:
        store.close()
