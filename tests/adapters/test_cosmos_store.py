"""CosmosMemoryStore against the Cosmos DB protocol server, through the real azure-cosmos SDK.

What the store contract suite (tests/contract) cannot show: the start-up check,
failures becoming 503, round trips per operation, request-charge logging and
the item layout. TLS is verified in every test.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests
from azure.core.pipeline.transport import RequestsTransport, RequestsTransportResponse
from azure.cosmos import PartitionKey
from azure.cosmos.exceptions import CosmosHttpResponseError

from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.domain.errors import PayloadTooLarge, TimedOut, Unavailable
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.service import MemoryService
from tests.adapters.cosmos_support import (
    DATABASE,
    cosmos_env,
    cosmos_settings,
    cosmos_store,
    provision,
    provisioned_cosmos_server,
    raw_container,
)
from tests.support.cosmos_server import CosmosServer
from tests.support.local_server import free_port, running_server

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
UPN = "alex@contoso.com"


def _key(scope: Scope = Scope.USER, agent: str | None = None, instance: str | None = None) -> ProfileKey:
    return ProfileKey(instance or f"adapter-{uuid.uuid4().hex[:8]}", UPN, scope, agent)


def _profile(key: ProfileKey, at: datetime = T0) -> MemoryProfile:
    return MemoryProfile(key, "Alex", "alex", None, at, at)


def _entry(key: ProfileKey, text: str = "- fact", at: datetime = T0) -> MemoryEntry:
    return MemoryEntry(uuid.uuid4().hex, key, text, EntryKind.APPEND, at, key.upn)


@pytest.fixture
def store(cosmos_account: CosmosServer) -> Iterator[CosmosMemoryStore]:
    """A store on the session's server, past its first use (client made, container checked)."""
    s = cosmos_store(cosmos_account)
    s.load([_key()])
    yield s
    s.close()


# -- start-up check -------------------------------------------------------------


def test_missing_container_fails_with_a_message_naming_what_to_create(cosmos_account: CosmosServer) -> None:
    """A missing container answers store_not_provisioned naming account, database, container, key and command."""
    s = cosmos_store(cosmos_account, container="NoSuchContainer")
    with pytest.raises(Unavailable) as caught:
        s.load([_key()])
    s.close()
    error = caught.value
    assert error.code == "store_not_provisioned"
    for part in (cosmos_account.endpoint, f"'{DATABASE}'", "'NoSuchContainer'", "/instance_id then /upn",
                 "MultiHash, version 2", "infra/deploy.sh --tenant"):
        assert part in error.message


def test_missing_database_fails_the_same_way(cosmos_account: CosmosServer) -> None:
    """A missing database is reported like a missing container, naming the database."""
    s = cosmos_store(cosmos_account, database="nosuchdb")
    key = _key()
    with pytest.raises(Unavailable) as caught:
        s.append(_profile(key), _entry(key))
    s.close()
    assert caught.value.code == "store_not_provisioned"
    assert "'nosuchdb'" in caught.value.message


def test_container_with_another_partition_key_is_refused(cosmos_account: CosmosServer) -> None:
    """A container keyed on /instance_id alone is refused, naming the key it has and the one expected."""
    name = f"Flat{uuid.uuid4().hex[:6]}"
    provision(cosmos_account, DATABASE, name, PartitionKey(path="/instance_id"))
    s = cosmos_store(cosmos_account, container=name)
    with pytest.raises(Unavailable) as caught:
        s.load([_key()])
    s.close()
    assert caught.value.code == "store_not_provisioned"
    assert "['/instance_id']" in caught.value.message
    assert "/instance_id then /upn (kind MultiHash, version 2)" in caught.value.message


def test_a_container_provisioned_later_is_used_without_a_restart(cosmos_account: CosmosServer) -> None:
    """After a not-provisioned failure the check runs again, so creating the container fixes the app."""
    name = f"Late{uuid.uuid4().hex[:6]}"
    s = cosmos_store(cosmos_account, container=name)
    with pytest.raises(Unavailable):
        s.load([_key()])
    provision(cosmos_account, DATABASE, name)
    assert s.load([_key()])[0].profile is None
    s.close()


def test_the_not_provisioned_error_is_logged(cosmos_account: CosmosServer, caplog: pytest.LogCaptureFixture) -> None:
    """The start-up check's failure is logged at ERROR with the same message."""
    s = cosmos_store(cosmos_account, container="NoSuchContainer")
    with caplog.at_level(logging.ERROR, logger="memory_core.adapters.cosmos"), pytest.raises(Unavailable):
        s.load([_key()])
    s.close()
    assert any("infra/deploy.sh" in r.getMessage() and r.levelno == logging.ERROR for r in caplog.records)


def test_not_provisioned_over_http_answers_503_with_the_message(
    cosmos_account: CosmosServer, tmp_path: Path, instance_id: str
) -> None:
    """Through the API a missing container is a 503 with Retry-After and the provisioning message."""
    env = cosmos_env(cosmos_account, container="NoSuchContainer")
    with running_server(tmp_path, env) as server, server.client() as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    assert response.status_code == 503
    assert response.headers["Retry-After"].isdigit()
    assert response.json()["error"]["code"] == "store_not_provisioned"
    assert "infra/deploy.sh" in response.json()["error"]["message"]


# -- failures become 503 ----------------------------------------------------------


def test_cosmos_stopped_mid_run_answers_503_with_retry_after(tmp_path: Path, instance_id: str) -> None:
    """When the Cosmos account stops answering mid-run, reads and writes answer 503 + Retry-After, never 500."""
    with provisioned_cosmos_server() as account, running_server(tmp_path, cosmos_env(account)) as server:
        with server.client() as http:
            ok = http.post(f"/instances/{instance_id}/memory/append", json={"scope": "user", "content_markdown": "- a"})
            assert ok.status_code == 200
            account.stop()
            read = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
            write = http.post(f"/instances/{instance_id}/memory/append",
                              json={"scope": "user", "content_markdown": "- b"})
    for response in (read, write):
        assert response.status_code == 503
        assert int(response.headers["Retry-After"]) > 0
        assert response.json()["error"]["code"] == "unavailable"


def test_an_account_that_never_answers_is_unavailable_not_a_start_failure(cosmos_account: CosmosServer) -> None:
    """Building the store makes no call; the first call to a dead endpoint raises Unavailable."""
    dead = f"https://127.0.0.1:{free_port()}/"
    s = CosmosMemoryStore.from_settings(cosmos_settings(cosmos_account, cosmos_endpoint=dead))
    with pytest.raises(Unavailable) as caught:
        s.load([_key()])
    s.close()
    assert caught.value.code == "unavailable"
    assert caught.value.retry_after_seconds > 0


class _StatusTransport(RequestsTransport):
    """Answers every item request with one status (a throttled, unavailable or refusing account)."""

    def __init__(self, status: int = 429, retry_after_ms: int = 10) -> None:
        super().__init__()
        self.status = status
        self.retry_after_ms = retry_after_ms

    def send(self, request, **kwargs):  # type: ignore[no-untyped-def]
        if "/docs" not in request.url:
            return super().send(request, **kwargs)
        raw = requests.Response()
        raw.status_code = self.status
        raw.headers.update({"content-type": "application/json", "x-ms-request-charge": "0"})
        if self.status == 429:
            raw.headers.update({"x-ms-retry-after-ms": str(self.retry_after_ms), "x-ms-substatus": "3200"})
        raw._content = b'{"code": "Error", "message": "injected by the test transport"}'
        raw.url = request.url
        return RequestsTransportResponse(request, raw)


def test_throttling_past_the_sdk_retries_is_unavailable_with_the_servers_retry_after(
    cosmos_account: CosmosServer,
) -> None:
    """A 429 is retried by the SDK (9 retries by default), then Unavailable with Retry-After from the server."""
    s = CosmosMemoryStore.from_settings(cosmos_settings(cosmos_account), transport=_StatusTransport(429, 10))
    with s.measure() as metrics, pytest.raises(Unavailable) as caught:
        s.get_entry("i", UPN, "e1")
    s.close()
    assert caught.value.code == "unavailable"
    assert caught.value.retry_after_seconds == 1  # 10 ms, rounded up to a whole second
    assert metrics.round_trips - 2 == 10  # after the account and container reads: 1 attempt + 9 retries


def test_the_operation_timeout_bounds_the_sdk_retries(cosmos_account: CosmosServer) -> None:
    """COSMOS_OPERATION_TIMEOUT stops the retries of a throttled query: 503 in time, not minutes later."""
    settings = cosmos_settings(cosmos_account, cosmos_operation_timeout=1)
    s = CosmosMemoryStore.from_settings(settings, transport=_StatusTransport(429, 400))
    started = time.monotonic()
    with pytest.raises(Unavailable) as caught:
        s.load([_key()])
    s.close()
    assert time.monotonic() - started < 5  # unbounded, a throttled query retries 10 x 10 times (~40 s here)
    # a deadline, told apart for the sweep's report, answered as any Unavailable is
    assert isinstance(caught.value, TimedOut) and caught.value.code == "unavailable"


@pytest.mark.parametrize(
    ("status", "error", "code"),
    [(503, Unavailable, "unavailable"), (403, Unavailable, "store_access_denied"),
     (413, PayloadTooLarge, "payload_too_large")],
)
def test_cosmos_failures_map_to_domain_errors(
    cosmos_account: CosmosServer, status: int, error: type[Exception], code: str
) -> None:
    """503 (after the SDK's retries) and 403 (missing data-plane role) are Unavailable; 413 is PayloadTooLarge."""
    s = CosmosMemoryStore.from_settings(cosmos_settings(cosmos_account), transport=_StatusTransport(status))
    key = _key()
    with pytest.raises(error) as caught:  # type: ignore[call-overload]
        s.load([key])
    s.close()
    assert caught.value.code == code


def test_an_unexpected_cosmos_error_is_left_to_the_internal_error_mapping(cosmos_account: CosmosServer) -> None:
    """A 400 means a bug in the request, not an outage: it propagates as the SDK's error (HTTP 500)."""
    s = CosmosMemoryStore.from_settings(cosmos_settings(cosmos_account), transport=_StatusTransport(400))
    with pytest.raises(CosmosHttpResponseError):
        s.load([_key()])
    s.close()


def test_a_container_deleted_mid_run_is_reported_as_not_provisioned(cosmos_account: CosmosServer) -> None:
    """When the container goes away after the start-up check, calls answer store_not_provisioned again."""
    name = f"Gone{uuid.uuid4().hex[:6]}"
    provision(cosmos_account, DATABASE, name)
    s = cosmos_store(cosmos_account, container=name)
    key = _key()
    s.append(_profile(key), _entry(key))
    client = cosmos_account.client()
    client.get_database_client(DATABASE).delete_container(name)
    client.close()
    for call in (lambda: s.load([key]), lambda: s.append(_profile(key), _entry(key))):
        with pytest.raises(Unavailable) as caught:
            call()
        assert caught.value.code == "store_not_provisioned"
    s.close()


# -- round trips ------------------------------------------------------------------


def test_the_client_is_made_and_the_container_checked_once(cosmos_account: CosmosServer) -> None:
    """The first call pays for the client and the container check; later calls are one round trip."""
    s = cosmos_store(cosmos_account)
    key = _key()
    with s.measure() as first:
        s.load([key])
    with s.measure() as second:
        s.load([key])
    s.close()
    assert first.round_trips == 3  # database account, container properties, the query
    assert second.round_trips == 1


def test_every_get_is_one_round_trip(store: CosmosMemoryStore) -> None:
    """get of user, agent and combined scope is one query each, with memory in both scopes."""
    service = MemoryService(store)
    caller, agent, instance = Caller(UPN, "Alex"), AgentContext("/agents/a", "A"), f"rt-{uuid.uuid4().hex[:8]}"
    service.append(caller, instance, Scope.USER, None, "- user fact")
    service.append(caller, instance, Scope.AGENT, agent, "- agent fact")
    for scope in (Scope.USER, Scope.AGENT, Scope.COMBINED):
        service.get(caller, instance, scope, agent)  # the service's agent-settings cache (5 s) is warm
        with store.measure() as metrics:
            view = service.get(caller, instance, scope, agent)
        assert view.content_markdown
        assert metrics.round_trips == 1, scope


def test_append_is_one_round_trip_once_the_profile_is_known(store: CosmosMemoryStore) -> None:
    """After the first append of a profile in a process, an append is a single write."""
    key = _key()
    store.append(_profile(key), _entry(key))
    with store.measure() as metrics:
        store.append(_profile(key), _entry(key, "- second"))
    assert metrics.round_trips == 1


def test_first_append_in_another_process_reads_the_stored_profile(cosmos_account: CosmosServer) -> None:
    """A process that has seen neither the profile nor the partition's stamp reads both (two point
    reads before the batch) and keeps the stored profile's created_on."""
    key = _key()
    one, two = cosmos_store(cosmos_account), cosmos_store(cosmos_account)
    one.append(_profile(key), _entry(key))
    two.load([_key()])  # warm up the client on another key
    with two.measure() as metrics:
        stored = two.append(_profile(key, T0 + timedelta(days=1)), _entry(key, "- later"))
    one.close()
    two.close()
    assert stored.created_on == T0
    assert metrics.round_trips == 3


def test_a_get_before_an_append_makes_the_append_one_round_trip(cosmos_account: CosmosServer) -> None:
    """Loading a scope tells the process its profile exists, so the append that follows is one write."""
    key = _key()
    one, two = cosmos_store(cosmos_account), cosmos_store(cosmos_account)
    one.append(_profile(key), _entry(key))
    two.load([key])
    with two.measure() as metrics:
        two.append(_profile(key), _entry(key, "- more"))
    one.close()
    two.close()
    assert metrics.round_trips == 1


def test_delete_entries_is_one_query_and_one_batch_per_hundred(store: CosmosMemoryStore) -> None:
    """Erasing 250 entries (and an unknown id) takes one query and three batches, and counts 250."""
    key = _key()
    entries = [_entry(key, f"- {i}", T0 + timedelta(microseconds=i)) for i in range(250)]
    for entry in entries:
        store.append(_profile(key), entry)
    with store.measure() as metrics:
        erased = store.delete_entries(key, [e.id for e in entries] + ["no-such-id"])
    assert erased == 250
    assert metrics.round_trips == 4
    assert store.load([key])[0].entries == []


def test_delete_entries_gives_each_500_ids_a_time_budget_of_their_own(
    store: CosmosMemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A large erasure is a store operation per 500 ids (a query and at most 6 batches), each within
    ``COSMOS_OPERATION_TIMEOUT``: with one budget for all, a clear of 15,600 entries answered 503 (and so did
    every replay of it), since the budget bounded the whole erasure, not a step of it."""
    key = _key()
    entries = [_entry(key, f"- {i}", T0 + timedelta(microseconds=i)) for i in range(1100)]
    for entry in entries:
        store.append(_profile(key), entry)
    with caplog.at_level(logging.DEBUG, logger="memory_core.adapters.cosmos"):
        erased = store.delete_entries(key, [e.id for e in entries])
    operations = [r.getMessage() for r in caplog.records if r.getMessage().startswith("cosmos delete_entries: ")]
    assert erased == 1100
    assert [m.split(": ")[1].split(",")[0] for m in operations] == ["7 round trip(s)", "7 round trip(s)",
                                                                     "3 round trip(s)"]
    assert store.load([key])[0].entries == []


def test_request_charge_of_every_call_is_logged_at_debug(
    store: CosmosMemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Each Cosmos HTTP call logs its RU, and each store operation its round trips and RU, at DEBUG."""
    key = _key()
    with caplog.at_level(logging.DEBUG, logger="memory_core.adapters.cosmos"):
        store.append(_profile(key), _entry(key))
    messages = [r.getMessage() for r in caplog.records if r.name == "memory_core.adapters.cosmos"]
    assert any(m.startswith("cosmos POST docs -> 200: ") and " RU " in m for m in messages)  # the batch
    assert any(m.startswith("cosmos append: ") and "round trip(s)" in m and "RU" in m for m in messages)
    assert not any(UPN in m for m in messages)  # item ids carry UPNs; the log does not


def test_the_sdks_per_request_log_stays_out_of_an_info_level_log(
    cosmos_account: CosmosServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK logs every request and response (URL, headers) at INFO; at the Functions host's default level each
    would be a trace in Application Insights (two of about 1.5 KB per round trip), so a store's client logs them
    only at WARNING and above, while the store's own DEBUG lines stay."""
    s = cosmos_store(cosmos_account)
    key = _key()
    try:
        with caplog.at_level(logging.INFO):
            s.append(_profile(key), _entry(key))
            s.load([key])
    finally:
        s.close()
    sdk = [r.name for r in caplog.records if r.name.startswith(("azure", "memory_core.adapters.cosmos.sdk_http"))]
    assert sdk == []


def test_request_charge_is_measured(store: CosmosMemoryStore) -> None:
    """measure() sums the x-ms-request-charge of the calls in the block."""
    key = _key()
    with store.measure() as metrics:
        store.load([key])
    assert metrics.request_charge > 0


# -- item layout --------------------------------------------------------------------


def test_items_keep_the_seed_layout(store: CosmosMemoryStore, cosmos_account: CosmosServer) -> None:
    """Profiles use the seed's deterministic id; entries are 'entry:'+id; both carry the key fields."""
    key = _key(Scope.AGENT, "/instances/i/agents/a")
    entry = _entry(key)
    store.append(_profile(key), entry)
    with raw_container(cosmos_account) as container:
        profile = container.read_item(key.profile_id, partition_key=[key.instance_id, key.upn])
        stored = container.read_item(f"entry:{entry.id}", partition_key=[key.instance_id, key.upn])
    assert key.profile_id.startswith("memory:agent:alex@contoso.com:")
    assert {profile["type"], stored["type"]} == {"profile", "entry"}
    assert profile["schema_version"] == stored["schema_version"] == 1
    assert (stored["instance_id"], stored["upn"], stored["profile_id"]) == (key.instance_id, UPN, key.profile_id)
    assert stored["agent_object_id"] == "/instances/i/agents/a"
    assert stored["created_on"] == "2026-01-02T03:04:05.678901Z"


def test_a_guest_upn_round_trips(store: CosmosMemoryStore) -> None:
    """A guest UPN (with #EXT#) is stored under an id-safe profile id and loads back."""
    key = ProfileKey(f"g-{uuid.uuid4().hex[:8]}", "alex_fabrikam.com#ext#@contoso.onmicrosoft.com", Scope.USER)
    store.append(_profile(key), _entry(key))
    (state,) = store.load([key])
    assert state.profile is not None and len(state.entries) == 1


def test_an_entry_id_cosmos_cannot_hold_is_simply_not_found(store: CosmosMemoryStore) -> None:
    """get_entry with '/', '?' or '#' in the id answers None without asking Cosmos."""
    with store.measure() as metrics:
        found = [store.get_entry("i", UPN, bad) for bad in ("a/b", "a?b", "a#b", "")]
    assert found == [None, None, None, None]
    assert metrics.round_trips == 0


def test_settings_select_the_ca_bundle_and_timeouts(cosmos_account: CosmosServer) -> None:
    """from_settings verifies TLS against COSMOS_CA_BUNDLE and passes the connection timeouts."""
    s = CosmosMemoryStore.from_settings(
        cosmos_settings(cosmos_account, cosmos_connection_timeout=3, cosmos_read_timeout=7)
    )
    kwargs = s._client_kwargs
    assert kwargs["ssl_config"].SSLCaCerts == cosmos_account.ca_bundle
    assert (kwargs["connection_timeout"], kwargs["read_timeout"]) == (3, 7)


def test_without_a_key_the_store_uses_default_azure_credential(cosmos_account: CosmosServer) -> None:
    """With COSMOS_KEY unset the credential is DefaultAzureCredential (managed identity in Azure)."""
    from azure.identity import DefaultAzureCredential

    s = CosmosMemoryStore.from_settings(cosmos_settings(cosmos_account, cosmos_key=None))
    assert isinstance(s._credential, DefaultAzureCredential)
