"""Shared fixtures: a real local server process per test session."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adapters.cosmos_support import cosmos_env, erase_all_items, provisioned_cosmos_server
from tests.support.cosmos_server import CosmosServer
from tests.support.local_server import RunningServer, running_server


@pytest.fixture(scope="session")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """``python -m memory_core serve`` on the embedded SQLite store."""
    with running_server(tmp_path_factory.mktemp("sqlite-server")) as server:
        yield server


@pytest.fixture(scope="session")
def immediate_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """The local server with MEMORY_DELETION_MODE=immediate (clear and forget erase at once)."""
    with running_server(tmp_path_factory.mktemp("immediate-server"), {"MEMORY_DELETION_MODE": "immediate"}) as server:
        yield server


_RUNNING_COSMOS: list[CosmosServer] = []
"""The session's Cosmos test server once a test has asked for it (for ``fresh_shared_container``)."""


@pytest.fixture(scope="session")
def cosmos_account() -> Iterator[CosmosServer]:
    """The Cosmos DB protocol server (npm, loopback, TLS verified) with the database and the
    Memories container provisioned as infra does."""
    with provisioned_cosmos_server() as account:
        _RUNNING_COSMOS.append(account)
        try:
            yield account
        finally:
            _RUNNING_COSMOS.remove(account)


@pytest.fixture(scope="module", autouse=True)
def fresh_shared_container() -> Iterator[None]:
    """After each test module, erase every item of the session's shared Memories container.

    The Cosmos test server scans its whole container for every query, so items left by earlier
    modules made every later Cosmos test slower (the suite's time grew with its length). Each test
    works in an instance of its own (``instance_id``) or a container of its own, so nothing a
    finished module stored is read again; module-scoped fixtures are torn down before this runs.
    """
    yield
    for account in _RUNNING_COSMOS:
        erase_all_items(account)


@pytest.fixture(scope="session")
def cosmos_server(cosmos_account: CosmosServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """``python -m memory_core serve`` with MEMORY_STORE=cosmos on ``cosmos_account``."""
    with running_server(tmp_path_factory.mktemp("cosmos-server"), cosmos_env(cosmos_account)) as server:
        yield server


@pytest.fixture
def instance_id() -> str:
    """A fresh instance per test, so tests sharing a server never see each other's data."""
    return f"inst-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def tmp_db(tmp_path: Path) -> Path:
    return tmp_path / "memory.sqlite3"


STORES = ["sqlite", "cosmos"]


@pytest.fixture(scope="session", params=STORES)
def server(request: pytest.FixtureRequest) -> RunningServer:
    """The local server on each store the HTTP-level suite runs against."""
    return request.getfixturevalue(f"{request.param}_server")
