"""Test helpers for the Cosmos DB store: provision the test server as infra does, and configure the app for it.

Production never creates a database or a container; these helpers stand in
for ``infra/deploy.sh`` against the Cosmos protocol server of
``tests/support/cosmos_server.py`` (loopback, TLS verified against its own
certificate).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from azure.cosmos import PartitionKey

from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.settings import Settings
from tests.support.cosmos_server import CosmosServer, running_cosmos_server

DATABASE = "memory"
CONTAINER = "Memories"


def hierarchical_key() -> PartitionKey:
    """The key infra gives the Memories container: /instance_id then /upn, MultiHash v2."""
    return PartitionKey(path=["/instance_id", "/upn"], kind="MultiHash", version=2)


def provision(
    server: CosmosServer,
    database: str = DATABASE,
    container: str = CONTAINER,
    partition_key: PartitionKey | None = None,
) -> None:
    """Create the database (if absent) and the container, as infra/deploy.sh does."""
    client = server.client()
    try:
        db = client.create_database_if_not_exists(database)
        db.create_container(container, partition_key=partition_key or hierarchical_key())
    finally:
        client.close()


@contextmanager
def provisioned_cosmos_server(**server_options: Any) -> Iterator[CosmosServer]:
    """A fresh Cosmos test server with the database and the Memories container."""
    with running_cosmos_server(**server_options) as server:
        provision(server)
        yield server


def cosmos_env(server: CosmosServer, database: str = DATABASE, container: str = CONTAINER) -> dict[str, str]:
    """The app settings that point memory-core at ``server`` (key auth, its CA bundle)."""
    return {
        "MEMORY_STORE": "cosmos",
        "COSMOS_ENDPOINT": server.endpoint,
        "COSMOS_KEY": server.key,
        "COSMOS_CA_BUNDLE": server.ca_bundle,
        "COSMOS_DATABASE": database,
        "COSMOS_CONTAINER": container,
    }


def cosmos_settings(
    server: CosmosServer, database: str = DATABASE, container: str = CONTAINER, **overrides: Any
) -> Settings:
    values: dict[str, Any] = {k.lower(): v for k, v in cosmos_env(server, database, container).items()}
    values.update(overrides)
    return Settings(**values)


def cosmos_store(
    server: CosmosServer, database: str = DATABASE, container: str = CONTAINER, **overrides: Any
) -> CosmosMemoryStore:
    """A store built the production way (``from_settings``) for ``server``."""
    return CosmosMemoryStore.from_settings(cosmos_settings(server, database, container, **overrides))
