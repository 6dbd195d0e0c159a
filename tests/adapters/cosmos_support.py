"""Test helpers for the Cosmos DB store: provision the test server as infra does, and configure the app for it.

Production never creates a database or a container; these helpers stand in
for ``infra/deploy.sh`` against the Cosmos protocol server of
``tests/support/cosmos_server.py`` (loopback, TLS verified against its own
certificate).
"""

from __future__ import annotations

import uuid
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
def own_container(server: CosmosServer, prefix: str) -> Iterator[str]:
    """A container of one test's own, provisioned as infra does and deleted afterwards; yields its name.

    The Cosmos test server scans its whole container for every query, so a test that writes
    hundreds or thousands of items gets a container of its own: its queries scan only its own
    items, no later test scans them, and dropping the container is one request however much
    it holds.
    """
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    provision(server, container=name)
    try:
        yield name
    finally:
        client = server.client()
        try:
            client.get_database_client(DATABASE).delete_container(name)
        finally:
            client.close()


@contextmanager
def raw_container(server: CosmosServer, database: str = DATABASE, container: str = CONTAINER) -> Iterator[Any]:
    """The container through the SDK directly, no store in between: for reading items as stored and writing ones
    no store of this version writes. Its client is closed when the block ends."""
    client = server.client()
    try:
        yield client.get_database_client(database).get_container_client(container)
    finally:
        client.close()


def erase_all_items(server: CosmosServer, database: str = DATABASE, container: str = CONTAINER) -> int:
    """Delete every item of a container (transactional batches of 100 deletes per partition); answers how many.

    For the session's shared container between test modules: every test there works in an instance
    of its own, so what a finished module left behind is never read again, yet the test server
    would scan it for every later query.
    """
    client = server.client()
    try:
        items = client.get_database_client(database).get_container_client(container)
        by_partition: dict[tuple[str, str], list[str]] = {}
        for item in items.query_items("SELECT c.id, c.instance_id, c.upn FROM c", enable_cross_partition_query=True):
            by_partition.setdefault((item["instance_id"], item["upn"]), []).append(item["id"])
        for (instance_id, upn), ids in by_partition.items():
            for at in range(0, len(ids), 100):
                items.execute_item_batch([("delete", (i,)) for i in ids[at:at + 100]],
                                         partition_key=[instance_id, upn])
        return sum(len(ids) for ids in by_partition.values())
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
