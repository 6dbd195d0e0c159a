"""Every listing pages with continuation tokens, over HTTP on both stores.

Entries, the caller's audit trail, an operator's view of it and the deletion
requests each answer at most ``limit`` items and a ``continuation`` while more
follow; walking every page gives every item exactly once, in order.
Large fixtures are written straight into the server's store (10,000 entries
through the HTTP API would take minutes on the Cosmos test server); the reads
under test all go through HTTP.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.models import (
    EntryKind,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Scope,
)
from memory_core.domain.paging import encode_token
from memory_core.domain.store import MemoryStore
from memory_core.settings import Settings
from tests.support.local_server import OPERATOR_KEY, RunningServer
from tests.support.seeding import erase_cosmos_entries, write_cosmos_entries

UPN = "alex@contoso.com"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def store(server: RunningServer) -> Iterator[MemoryStore]:
    """The server's own store, opened from this process to write large fixtures."""
    env = server.env
    if env.get("MEMORY_STORE") == "cosmos":
        opened: MemoryStore = CosmosMemoryStore.from_settings(Settings(
            memory_store="cosmos", cosmos_endpoint=env["COSMOS_ENDPOINT"], cosmos_key=env["COSMOS_KEY"],
            cosmos_ca_bundle=env["COSMOS_CA_BUNDLE"], cosmos_database=env["COSMOS_DATABASE"],
            cosmos_container=env["COSMOS_CONTAINER"],
        ))
    else:
        opened = SqliteMemoryStore(env["MEMORY_SQLITE_PATH"])
    yield opened
    opened.close()


def _seed_entries(store: MemoryStore, instance: str, count: int) -> list[MemoryEntry]:
    key = ProfileKey(instance, UPN, Scope.USER)
    entries = [MemoryEntry(f"e{n:06d}-{uuid.uuid4().hex[:6]}", key, f"- fact {n}", EntryKind.APPEND,
                           T0 + timedelta(seconds=n // 3), UPN) for n in range(count)]  # ties on time: ids decide
    store.append(MemoryProfile(key, "Alex", UPN, None, T0, T0), entries[0])
    if isinstance(store, CosmosMemoryStore):
        write_cosmos_entries(store, entries[1:])  # stamped batches of 98: the quick way to 10,000 items
    else:
        for entry in entries[1:]:
            store.append(MemoryProfile(key, "Alex", UPN, None, T0, T0), entry)
    return entries


def _unseed(store: MemoryStore, instance: str, entries: list[MemoryEntry]) -> None:
    """Remove the seeded entries from a Cosmos-backed server: the Cosmos test server scans its
    whole container on every query, so 10,000 left-over items slow every later Cosmos test."""
    if not isinstance(store, CosmosMemoryStore):
        return
    erase_cosmos_entries(store, entries)


def _walk(http: httpx.Client, path: str, field: str, **params: object) -> tuple[list[dict], int]:
    items: list[dict] = []
    pages = 0
    continuation = None
    while True:
        response = http.get(path, params={**params, **({"continuation": continuation} if continuation else {})})
        assert response.status_code == 200, response.text
        body = response.json()
        items += body[field]
        pages += 1
        continuation = body.get("continuation")
        if not continuation:
            return items, pages


def test_a_client_walks_10000_entries_without_duplicate_or_gap(
    server: RunningServer, store: MemoryStore, instance_id: str
) -> None:
    """limit=1000: ten pages, every entry once, oldest first (ties on time ordered by id)."""
    seeded = _seed_entries(store, instance_id, 10_000)
    try:
        with server.client() as http:
            items, pages = _walk(http, f"/instances/{instance_id}/memory/entries", "entries", scope="user", limit=1000)
    finally:
        _unseed(store, instance_id, seeded)
    ids = [e["id"] for e in items]
    assert pages == 10
    assert len(ids) == len(set(ids)) == 10_000
    assert [e["content_markdown"] for e in items] == [f"- fact {n}" for n in range(10_000)]


def test_entries_written_during_a_walk_do_not_duplicate_or_skip_others(server: RunningServer, instance_id: str) -> None:
    """An append between pages lands after the walked ones; nothing already listed repeats."""
    with server.client() as http:
        for n in range(5):
            http.post(f"/instances/{instance_id}/memory/append",
                      json={"scope": "user", "content_markdown": f"- {n}"}).raise_for_status()
        first = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user", "limit": 3}).json()
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- late"}).raise_for_status()
        rest = http.get(f"/instances/{instance_id}/memory/entries",
                        params={"scope": "user", "limit": 3, "continuation": first["continuation"]}).json()
    texts = [e["content_markdown"] for e in first["entries"] + rest["entries"]]
    assert texts == ["- 0", "- 1", "- 2", "- 3", "- 4", "- late"]
    assert "continuation" not in rest or rest["continuation"] is None


def test_audit_pages_in_both_orders_for_the_user_and_the_operator(server: RunningServer, instance_id: str) -> None:
    """memory/audit and operator/audit page alike; newest_first walks the same events backwards."""
    with server.client() as http, httpx.Client(base_url=server.api, headers={"X-API-KEY": OPERATOR_KEY},
                                               timeout=30) as op:
        for n in range(7):
            http.post(f"/instances/{instance_id}/memory/append",
                      json={"scope": "user", "content_markdown": f"- {n}"}).raise_for_status()
        own, own_pages = _walk(http, f"/instances/{instance_id}/memory/audit", "events", limit=3)
        newest, _ = _walk(http, f"/instances/{instance_id}/memory/audit", "events", limit=3, order="newest_first")
        theirs, _ = _walk(op, f"/instances/{instance_id}/operator/audit", "events", limit=2, upn=UPN)
    assert own_pages == 3 and len(own) == 7
    assert own == theirs == list(reversed(newest))
    assert [e["time"] for e in own] == sorted(e["time"] for e in own)


def test_deletion_requests_page_and_filter_by_status(server: RunningServer, instance_id: str) -> None:
    """Five pending requests in pages of two; each listed once, oldest first; other instances' not at all."""
    with server.client() as http, httpx.Client(base_url=server.api, headers={"X-API-KEY": OPERATOR_KEY},
                                               timeout=30) as op:
        made = []
        for n in range(5):
            http.post(f"/instances/{instance_id}/memory/append",
                      json={"scope": "user", "content_markdown": f"- {n}"}).raise_for_status()
            made.append(http.post(f"/instances/{instance_id}/memory/clear",
                                  json={"scope": "user", "confirm": True}).json()["request_id"])
        http.post(f"/instances/{instance_id}-other/memory/clear", json={"scope": "user", "confirm": True})
        listed, pages = _walk(op, f"/instances/{instance_id}/operator/deletions", "requests", status="pending", limit=2)
        op.post(f"/instances/{instance_id}/operator/deletions/{made[0]}/reject", json={"reason": "no"})
        pending, _ = _walk(op, f"/instances/{instance_id}/operator/deletions", "requests", status="pending")
    assert pages == 3
    assert [r["id"] for r in listed] == made
    assert [r["id"] for r in pending] == made[1:]


@pytest.mark.parametrize("params", [
    {"continuation": "not-a-token"},
    {"continuation": "eyJsIjoiYXVkaXQ6b2xkZXN0IiwicCI6WyJ4Il19"},  # a token of the audit listing
    # Positions no entry can have: the edge of the calendar (no UTC time), a time not in the written form.
    {"continuation": encode_token("entries:user", ["0", "9999-12-31T23:59:59.999999-01:00", "a"])},
    {"continuation": encode_token("entries:user", ["0", "2026-01-02T03:04:05Z", "a"])},
    {"continuation": encode_token("entries:user", ["1", "2026-01-02T03:04:05.000000+00:00"])},
    {"limit": "0"},
    {"limit": "1001"},
])
def test_bad_paging_parameters_answer_400(server: RunningServer, instance_id: str, params: dict) -> None:
    """A malformed or foreign continuation, or a limit outside 1-1000, is a clear 400."""
    with server.client() as http:
        response = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user", **params})
    assert response.status_code == 400
    assert response.json()["error"]["code"] in {"invalid_continuation", "validation_error"}


def test_openapi_documents_paging_on_every_listing(server: RunningServer) -> None:
    """limit and continuation are query parameters, and continuation a response field, of all eight listings."""
    document = httpx.get(f"{server.api}/openapi.json", timeout=30).json()
    routes = {
        "/api/instances/{instanceId}/memory/entries": "EntriesResponse",
        "/api/instances/{instanceId}/memory/audit": "AuditResponse",
        "/api/instances/{instanceId}/memory/deletions": "DeletionListResponse",
        "/api/instances/{instanceId}/operator/audit": "AuditResponse",
        "/api/instances/{instanceId}/operator/agent-settings/audit": "AgentSettingsAuditResponse",
        "/api/instances/{instanceId}/operator/legacy-imports/audit": "LegacyImportAuditResponse",
        "/api/instances/{instanceId}/operator/agents": "AgentSettingsListResponse",
        "/api/instances/{instanceId}/operator/deletions": "DeletionListResponse",
    }
    for route, model in routes.items():
        names = {p["name"] for p in document["paths"][route]["get"]["parameters"]}
        assert {"limit", "continuation"} <= names, route
        assert "continuation" in document["components"]["schemas"][model]["properties"]
