"""Retention on Cosmos DB: expiring records carry the per-item ``ttl``; nothing else does.

The Cosmos test server stores ``ttl`` but does not expire items, so what is shown
here is the item the store writes (Cosmos DB's expiry itself is the service's);
the container's ``defaultTtl: -1`` is in infra/arm/cosmos-sql.json (tests/infra).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from memory_core.adapters import cosmos_documents as docs
from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope
from memory_core.domain.records import Partition, Record, RecordKind
from memory_core.domain.service import DeletionMode, MemoryService
from tests.adapters.cosmos_support import raw_container
from tests.support.cosmos_server import CosmosServer

ALEX = Caller(upn="alex@contoso.com")


def _item(account: CosmosServer, record: Record) -> dict:
    with raw_container(account) as container:
        return container.read_item(docs.record_item_id(record.partition, record.kind, record.id),
                                   partition_key=[record.partition.instance_id, record.partition.owner])


def test_an_expiring_record_carries_ttl_and_others_do_not(cosmos: CosmosMemoryStore, cosmos_account: CosmosServer) -> None:
    """ttl is the seconds from the write to expires_on; a record without expires_on has none."""
    partition = Partition(f"ttl-{uuid.uuid4().hex[:8]}", ALEX.upn)
    expiring = Record(partition, RecordKind.AUDIT, "a1", {}, expires_on=datetime.now(UTC) + timedelta(days=30))
    forever = Record(partition, RecordKind.HOLD, "h1", {})
    cosmos.put_record(expiring)
    cosmos.put_record(forever)
    ttl = _item(cosmos_account, expiring)["ttl"]
    assert 30 * 86400 - 60 <= ttl <= 30 * 86400
    assert "ttl" not in _item(cosmos_account, forever)
    assert cosmos.erase_expired_records(datetime.now(UTC) + timedelta(days=365)) == 0  # the service expires items


def test_service_audit_events_carry_the_retention(cosmos: CosmosMemoryStore, cosmos_account: CosmosServer) -> None:
    """With MEMORY_AUDIT_RETENTION_DAYS=90 the event written with an entry (in its batch) has ttl 90 days."""
    instance = f"ttl-{uuid.uuid4().hex[:8]}"
    service = MemoryService(cosmos, deletion_mode=DeletionMode.OPERATOR_APPROVAL, audit_retention=timedelta(days=90))
    service.append(ALEX, instance, Scope.USER, None, "- x")
    (event,) = cosmos.query_records(Partition(instance, ALEX.upn), RecordKind.AUDIT)
    assert 90 * 86400 - 60 <= _item(cosmos_account, event)["ttl"] <= 90 * 86400
