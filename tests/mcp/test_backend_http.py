"""CoreApiBackend against a real CoreAPI (the local server): contract, forwarding and error mapping."""

from __future__ import annotations

import json
import logging
import socket
import time
import uuid
from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.auth import parse_identity
from memory_core.client_errors import CoreApiFailure, error_from_response
from memory_core.domain.errors import (
    ConfigurationError,
    InvalidInput,
    PayloadTooLarge,
    Unauthenticated,
    Unavailable,
)
from memory_core.domain.identity import AgentContext
from memory_core.domain.models import ProfileKey, Scope
from memory_core.identity import Authentication, AuthMode
from memory_core.identity.obo import OnBehalfOfExchange
from memory_core.mcp.backend import CallTarget, CoreApiBackend
from memory_core.settings import settings_from
from memory_core.wire.custody import PendingDeletionResponse
from memory_core.wire.memory import MemoryResponse
from tests.auth.idp import CORE_SCOPE, OBO_CLIENT_ID, TENANT_ID
from tests.mcp.client import AGENT_A
from tests.support.local_server import USER_KEY, RunningServer, free_port, identity

pytestmark = pytest.mark.anyio


def _target(instance_id: str, upn: str | None = None, agent: AgentContext | None = None, **extra: str) -> CallTarget:
    raw = identity(upn or f"u-{uuid.uuid4().hex[:8]}@contoso.com")
    return CallTarget(parse_identity(raw), raw, instance_id, agent, **extra)


@pytest.fixture
async def backend(core_server: RunningServer) -> AsyncIterator[CoreApiBackend]:
    client = CoreApiBackend(core_server.api, USER_KEY)
    yield client
    await client.aclose()


async def test_append_then_get_round_trips_through_the_coreapi(backend: CoreApiBackend, instance_id: str) -> None:
    """append answers the section written; get answers the document the CoreAPI renders."""
    target = _target(instance_id)
    appended = await backend.append(target, Scope.USER, "- over HTTP", "stated")
    read = await backend.get(target, Scope.USER)
    assert appended.entry_id and "- over HTTP" in appended.content_markdown
    assert read.content_markdown.startswith("# User memory\n")
    assert "reason: stated" in read.content_markdown


async def test_forwarded_identity_decides_the_owner(
    backend: CoreApiBackend, core_server: RunningServer, instance_id: str
) -> None:
    """The CoreAPI stores under the forwarded X-USER-IDENTITY's upn, readable by that user over REST."""
    upn = f"owner-{uuid.uuid4().hex[:8]}@contoso.com"
    result = await backend.append(_target(instance_id, upn), Scope.USER, "- mine", None)
    with core_server.client(upn) as rest:
        document = rest.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()
    assert result.upn == upn
    assert "- mine" in document["content_markdown"]


async def test_agent_and_provenance_reach_the_coreapi(backend: CoreApiBackend, instance_id: str) -> None:
    """Agent object id and name, and the session id, are sent with an append."""
    agent = AgentContext(AGENT_A, "Benefits Assistant")
    target = _target(instance_id, agent=agent, session_id="s-9", operation_id="op-1")
    appended = await backend.append(target, Scope.AGENT, "- agent fact", None)
    read = await backend.get(target, Scope.AGENT)
    assert appended.agent_object_id == AGENT_A and appended.agent_name == "Benefits Assistant"
    assert "session: s-9" in read.content_markdown


async def test_search_reaches_the_coreapi_by_post_and_logs_no_word(
    backend: CoreApiBackend, instance_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The MCP server's search_memory over a remote CoreAPI: tags, agent and limit reach it in a POST body, so
    httpx's INFO line for the request (the MCP server's own log) holds no word of the search."""
    agent = AgentContext(AGENT_A, "Benefits Assistant")
    target = _target(instance_id, agent=agent)
    await backend.append(target, Scope.AGENT, "- prefers gooseberry pie", None)
    await backend.append(target, Scope.USER, "- gooseberry allergy", None)
    caplog.set_level(logging.INFO, logger="httpx")
    found = await backend.search(target, Scope.AGENT, "gooseberry", [], 5)
    assert [h.entry.content_markdown for h in found.hits] == ["- prefers gooseberry pie"]
    logged = [r.getMessage() for r in caplog.records if r.name == "httpx"]
    assert any("POST" in line and "/memory/search" in line for line in logged), logged
    assert all("gooseberry" not in line for line in logged)


async def test_clear_with_confirm_empties_the_scope(backend: CoreApiBackend, instance_id: str) -> None:
    """clear(confirm=True) answers empty content and a later get is empty."""
    target = _target(instance_id)
    await backend.append(target, Scope.USER, "- gone soon", None)
    cleared = await backend.clear(target, Scope.USER, confirm=True)
    assert isinstance(cleared, MemoryResponse) and cleared.content_markdown == ""
    assert (await backend.get(target, Scope.USER)).content_markdown == ""


async def test_coreapi_validation_error_keeps_its_code_and_message(backend: CoreApiBackend, instance_id: str) -> None:
    """A CoreAPI 400 {"error": {...}} becomes InvalidInput with the CoreAPI's code and message."""
    with pytest.raises(InvalidInput) as raised:
        await backend.clear(_target(instance_id), Scope.USER, confirm=False)
    assert raised.value.code == "confirm_required"
    assert raised.value.message == "clear requires confirm=true"


async def test_coreapi_413_is_payload_too_large(backend: CoreApiBackend, instance_id: str) -> None:
    """A CoreAPI 413 becomes PayloadTooLarge with the CoreAPI's message."""
    with pytest.raises(PayloadTooLarge) as raised:
        await backend.append(_target(instance_id), Scope.USER, "x" * (64 * 1024 + 1), None)
    assert raised.value.message == f"content_markdown is {64 * 1024 + 1} bytes; the limit is {64 * 1024} bytes"


async def test_wrong_coreapi_key_is_unauthenticated(core_server: RunningServer, instance_id: str) -> None:
    """A CoreAPI 401 (this server's MEMORY_COREAPI_KEY is wrong) becomes Unauthenticated with its message."""
    client = CoreApiBackend(core_server.api, "not-the-key")
    try:
        with pytest.raises(Unauthenticated) as raised:
            await client.get(_target(instance_id), Scope.USER)
    finally:
        await client.aclose()
    assert raised.value.message == "invalid API key"


async def test_unreachable_coreapi_is_unavailable(instance_id: str) -> None:
    """No CoreAPI listening is Unavailable with a retry hint and no address or exception text."""
    client = CoreApiBackend(f"http://127.0.0.1:{free_port()}/api", USER_KEY)
    try:
        with pytest.raises(Unavailable) as raised:
            await client.get(_target(instance_id), Scope.USER)
    finally:
        await client.aclose()
    assert raised.value.message == "the CoreAPI cannot be reached; retry later"


def test_gateway_error_without_error_body_is_unavailable() -> None:
    """A 502 with an HTML body becomes Unavailable naming only the status."""
    response = httpx.Response(502, text="<html>Bad Gateway</html>", headers={"Retry-After": "7"})
    error = error_from_response(response)
    assert isinstance(error, Unavailable)
    assert error.message == "the CoreAPI answered HTTP 502; retry later"
    assert error.retry_after_seconds == 7


def test_coreapi_503_keeps_message_and_retry_after() -> None:
    """A CoreAPI 503 error body becomes Unavailable with its code, message and Retry-After."""
    body = {"error": {"code": "store_unavailable", "message": "the store is busy; retry"}}
    error = error_from_response(httpx.Response(503, json=body, headers={"Retry-After": "3"}))
    assert isinstance(error, Unavailable)
    assert (error.code, error.message) == ("store_unavailable", "the store is busy; retry")
    assert error.retry_after_seconds == 3


def test_coreapi_500_passes_its_incident_message_through() -> None:
    """A CoreAPI 500 keeps the CoreAPI's own (incident) message, as a CoreApiFailure."""
    body = {"error": {"code": "internal_error", "message": "internal error; the operator can find incident abc"}}
    error = error_from_response(httpx.Response(500, content=json.dumps(body).encode()))
    assert isinstance(error, CoreApiFailure)
    assert error.message == "internal error; the operator can find incident abc"


def test_base_url_without_key_is_a_configuration_error() -> None:
    """MEMORY_COREAPI_BASE_URL without MEMORY_COREAPI_KEY is refused with the settings, naming the missing setting
    (the start stops: no MCP request is needed to find out)."""
    with pytest.raises(ConfigurationError, match="MEMORY_COREAPI_KEY"):
        settings_from({"MEMORY_COREAPI_BASE_URL": "http://127.0.0.1:1/api", "MEMORY_AUTH_MODE": "key"})
    with pytest.raises(ConfigurationError, match="MEMORY_COREAPI_BASE_URL must be an http"):
        settings_from({"MEMORY_COREAPI_BASE_URL": "ftp://coreapi.example", "MEMORY_COREAPI_KEY": "k"})


def test_base_url_must_be_http() -> None:
    """A MEMORY_COREAPI_BASE_URL that is not http(s) is refused."""
    with pytest.raises(ConfigurationError, match="MEMORY_COREAPI_BASE_URL"):
        CoreApiBackend("ftp://coreapi.example", "key")


async def test_operation_id_reaches_the_coreapi_store(
    backend: CoreApiBackend, core_server: RunningServer, instance_id: str
) -> None:
    """X-OPERATION-ID provenance is sent with an append and stored by the CoreAPI."""
    upn = f"op-{uuid.uuid4().hex[:8]}@contoso.com"
    await backend.append(_target(instance_id, upn, operation_id="op-77"), Scope.USER, "- fact", None)
    store = SqliteMemoryStore(core_server.env["MEMORY_SQLITE_PATH"])
    try:
        (state,) = store.load([ProfileKey(instance_id, upn, Scope.USER)])
    finally:
        store.close()
    assert [e.operation_id for e in state.entries] == ["op-77"]


async def test_clear_pending_operator_approval_answers_the_pending_request(
    approval_server: RunningServer, instance_id: str
) -> None:
    """A CoreAPI 202 pending_approval answer to clear becomes PendingDeletionResponse; the scope reads empty."""
    client = CoreApiBackend(approval_server.api, USER_KEY)
    target = _target(instance_id)
    try:
        await client.append(target, Scope.USER, "- held", None)
        cleared = await client.clear(target, Scope.USER, confirm=True)
        read = await client.get(target, Scope.USER)
    finally:
        await client.aclose()
    assert isinstance(cleared, PendingDeletionResponse)
    assert cleared.status == "pending_approval" and cleared.request_id
    assert read.content_markdown == ""


@pytest.mark.alone
async def test_a_stalled_token_exchange_is_abandoned_at_the_callers_time_bound(instance_id: str) -> None:
    """An Entra caller's on-behalf-of exchange gives way when the caller's bound (McpHttpApp: 30 s) cancels it, as a
    stalled store call does: an identity provider that takes the connection and never answers (each MSAL request is
    allowed obo.TIMEOUT_SECONDS, and retried) no longer holds a 0.3 s bound until the exchange gives up.

    Entra ID's servers cannot be reached here: the authority is a loopback socket that listens and never answers (the
    TLS handshake and OIDC discovery stall on it), and the caller's token is a made-up string (the exchange never gets
    far enough to send it)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        exchange = OnBehalfOfExchange(tenant_id=TENANT_ID, client_id=OBO_CLIENT_ID, client_secret="not-used",
                                      scope=CORE_SCOPE, authority_host=f"https://127.0.0.1:{silent.getsockname()[1]}",
                                      timeout_seconds=3.0)
        client = CoreApiBackend("http://127.0.0.1:9/api", None, token_exchange=exchange)
        raw = identity(f"u-{uuid.uuid4().hex[:8]}@contoso.com")
        caller = parse_identity(raw)
        target = CallTarget(caller, raw, instance_id,
                            authentication=Authentication(caller, AuthMode.ENTRA, credential="a-made-up-user-token"))
        started = time.monotonic()
        try:
            with anyio.move_on_after(0.3) as bound:
                await client.get(target, Scope.USER)
        finally:
            await client.aclose()
        elapsed = time.monotonic() - started
    assert bound.cancelled_caught and elapsed < 1.0, elapsed
