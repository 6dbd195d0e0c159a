"""The MCP transport: POST-only stateless streamable HTTP, DNS-rebinding protection, JSON-RPC errors."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from memory_core.domain.errors import Unavailable
from memory_core.mcp.context import CURRENT_GUIDANCE
from memory_core.mcp.front import McpHttpApp
from memory_core.mcp.guidance import AgentGuidance
from memory_core.mcp.transport import is_local, security_settings
from memory_core.settings import Settings
from tests.mcp.client import ACCEPT, INITIALIZE, mcp_headers, mcp_session
from tests.support.local_server import OPERATOR_KEY, USER_KEY, RunningServer


def _settings(**values: object) -> Settings:
    base: dict[str, object] = {"website_hostname": None, "memory_mcp_allowed_hosts": ()}
    return Settings(**{**base, **values})  # type: ignore[arg-type]


def _post(server: RunningServer, body: object, path: str = "/mcp", **headers: str) -> httpx.Response:
    sent = {**ACCEPT, **mcp_headers(USER_KEY), **headers}
    if isinstance(body, bytes):
        return httpx.post(f"{server.api}{path}", content=body, headers=sent, timeout=10)
    return httpx.post(f"{server.api}{path}", json=body, headers=sent, timeout=10)


# -- allowed hosts -------------------------------------------------------------


def test_local_accepts_localhost_and_loopback_with_and_without_port() -> None:
    """Without WEBSITE_HOSTNAME, localhost, 127.0.0.1 and [::1] are accepted, with or without a port."""
    settings = security_settings(_settings())
    for host in ("localhost", "127.0.0.1", "[::1]"):
        assert host in settings.allowed_hosts and f"{host}:*" in settings.allowed_hosts
    assert "http://localhost:*" in settings.allowed_origins
    assert settings.enable_dns_rebinding_protection


def test_deployed_accepts_only_its_own_host_names() -> None:
    """With WEBSITE_HOSTNAME set, that name and MEMORY_MCP_ALLOWED_HOSTS are accepted, localhost is not."""
    settings = security_settings(
        _settings(
            website_hostname="memory.azurewebsites.net", memory_mcp_allowed_hosts=("https://Memory.Contoso.com/",)
        )
    )
    assert settings.allowed_hosts == [
        "memory.azurewebsites.net", "memory.azurewebsites.net:*", "memory.contoso.com", "memory.contoso.com:*"
    ]
    assert settings.allowed_origins == [
        "https://memory.azurewebsites.net", "https://memory.azurewebsites.net:*",
        "https://memory.contoso.com", "https://memory.contoso.com:*",
    ]


def test_core_tools_localhost_website_hostname_counts_as_local() -> None:
    """WEBSITE_HOSTNAME=localhost:7071 (as Core Tools set it) still accepts 127.0.0.1."""
    settings = _settings(website_hostname="localhost:7071")
    assert is_local(settings)
    assert "127.0.0.1:*" in security_settings(settings).allowed_hosts


# -- over HTTP ------------------------------------------------------------------


def test_get_answers_405_at_once(core_server: RunningServer) -> None:
    """GET (even asking for an event stream) answers 405 with Allow: POST and a JSON-RPC error, without waiting."""
    started = time.monotonic()
    response = httpx.get(f"{core_server.api}/mcp", headers={"Accept": "text/event-stream"}, timeout=5)
    assert time.monotonic() - started < 5
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.json()["error"]["message"].startswith("Method Not Allowed")


def test_delete_answers_405(core_server: RunningServer) -> None:
    """DELETE (session termination) answers 405: a stateless server has no session to end."""
    response = httpx.delete(f"{core_server.api}/mcp", headers=mcp_headers(USER_KEY), timeout=5)
    assert response.status_code == 405
    assert response.json()["jsonrpc"] == "2.0"


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
def test_other_methods_answer_405_naming_post_alone(core_server: RunningServer, method: str) -> None:
    """PUT and PATCH answer the endpoint's own 405 with Allow: POST (the host's 405 named GET and DELETE, which
    always answer 405 too)."""
    response = httpx.request(method, f"{core_server.api}/mcp", headers=mcp_headers(USER_KEY), timeout=5)
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert response.json()["jsonrpc"] == "2.0"


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_initialize_agrees_to_every_handshake_revision_docs_mcp_names(core_server: RunningServer, version: str) -> None:
    """docs/mcp.md names each handshake revision the endpoint serves: initialize with it answers it back."""
    body = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": version}}  # type: ignore[dict-item]
    response = _post(core_server, body)
    assert response.status_code == 200 and response.json()["result"]["protocolVersion"] == version


def test_post_answers_json_without_a_session(core_server: RunningServer) -> None:
    """initialize answers application/json and issues no Mcp-Session-Id (any instance answers any request)."""
    response = _post(core_server, INITIALIZE)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in response.headers
    assert response.json()["result"]["serverInfo"]["name"] == "memory-core"


def test_trailing_slash_is_accepted(core_server: RunningServer) -> None:
    """POST /api/mcp/ answers like /api/mcp."""
    assert _post(core_server, INITIALIZE, path="/mcp/").status_code == 200


def test_wrong_host_is_refused(core_server: RunningServer) -> None:
    """A Host that is not this app's answers 421 (DNS-rebinding protection)."""
    response = _post(core_server, INITIALIZE, Host="evil.example")
    assert response.status_code == 421


@pytest.mark.anyio
async def test_official_client_with_wrong_host_cannot_connect(core_server: RunningServer) -> None:
    """The official client, sending a foreign Host, fails to initialize, and its error says why (the edge's 421 is a
    JSON-RPC error; it used to be REST's body, which the client replaced with "Server returned an error response")."""
    with pytest.raises(BaseExceptionGroup) as raised:
        async with mcp_session(f"{core_server.api}/mcp", {**mcp_headers(USER_KEY), "Host": "evil.example"}):
            pass
    assert raised.group_contains(MCPError, match="the Host header does not name this app", depth=None)


def test_wrong_origin_is_refused(core_server: RunningServer) -> None:
    """An Origin that is not this app's answers 403."""
    assert _post(core_server, INITIALIZE, Origin="https://evil.example").status_code == 403


def test_local_origin_is_accepted(core_server: RunningServer) -> None:
    """A localhost Origin is accepted when local."""
    assert _post(core_server, INITIALIZE, Origin="http://localhost:5173").status_code == 200


def test_unknown_method_is_a_json_rpc_error(core_server: RunningServer) -> None:
    """A JSON-RPC method the server does not have answers a method-not-found error."""
    message = {"jsonrpc": "2.0", "id": 7, "method": "memory/steal"}
    response = _post(core_server, message, **{"MCP-Protocol-Version": "2025-11-25"})
    assert response.json()["error"]["code"] == -32601
    assert response.json()["id"] == 7


def test_malformed_json_is_a_json_rpc_parse_error(core_server: RunningServer) -> None:
    """A body that is not JSON answers 400 with a JSON-RPC parse error and no stack trace."""
    response = _post(core_server, b"{not json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700
    assert "Traceback" not in response.text


# -- before the protocol runs --------------------------------------------------


def test_no_policy_instructions_reach_a_caller_without_a_credential(core_server: RunningServer) -> None:
    """The agent's policy_instructions answer only an authenticated initialize; without a key it is 401 and nothing."""
    instance, agent = f"guard-{uuid.uuid4().hex[:8]}", f"/agents/guarded-{uuid.uuid4().hex[:6]}"
    policy = f"Confidential policy {uuid.uuid4().hex}"
    put = httpx.put(f"{core_server.api}/instances/{instance}/operator/agent-settings", params={"agentObjectId": agent},
                    headers={"X-API-KEY": OPERATOR_KEY}, json={"policy_instructions": policy}, timeout=10)
    assert put.status_code == 200, put.text
    agent_headers = {"X-AGENT-OBJECT-ID": agent, "X-INSTANCE-ID": instance}
    stranger = httpx.post(f"{core_server.api}/mcp", json=INITIALIZE, headers={**ACCEPT, **agent_headers}, timeout=10)
    assert stranger.status_code == 401 and policy not in stranger.text
    caller = _post(core_server, INITIALIZE, **agent_headers)
    assert caller.status_code == 200 and policy in caller.json()["result"]["instructions"]


@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "2.0", "id": 1, "method": 12345, "params": {"token": "sk-live-SECRET-1"}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": "sk-live-SECRET-2"},
        [{"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"x": "sk-live-SECRET-3"}}],
        {"jsonrpc": "1.0", "id": 4, "method": "sk-live-SECRET-4"},
    ],
)
def test_json_that_is_not_json_rpc_is_refused_without_echoing_values(core_server: RunningServer, body: object) -> None:
    """A malformed JSON-RPC message answers 400 -32600 naming where it is wrong, never the values it holds."""
    response = _post(core_server, body, **{"MCP-Protocol-Version": "2025-11-25"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32600
    assert "SECRET" not in response.text and "input_value" not in response.text


@pytest.mark.parametrize("request_id", [None, 1.5, True, {"token": "sk-live-SECRET-5"}, ["sk-live-SECRET-6"]])
def test_a_request_whose_id_is_not_a_string_or_integer_is_refused_not_ignored(
    core_server: RunningServer, request_id: object
) -> None:
    """A request with an id MCP does not allow answers 400 -32600 with id null, never echoing the id.

    The SDK's notification model would take it for a notification (its unknown "id" member
    ignored), answered by nothing: the client would wait for its timeout.
    """
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}
    response = _post(core_server, body, **{"MCP-Protocol-Version": "2025-11-25"})
    assert response.status_code == 400
    document = response.json()
    assert document["id"] is None and document["error"]["code"] == -32600
    assert "id must be a string or an integer" in document["error"]["message"]
    assert "SECRET" not in response.text


def test_a_notification_carrying_a_null_id_is_still_taken_as_a_notification(core_server: RunningServer) -> None:
    """The SDKs accept a notification that carries "id": null (some clients send one); so does the front."""
    body = {"jsonrpc": "2.0", "id": None, "method": "notifications/initialized"}
    response = _post(core_server, body, **{"MCP-Protocol-Version": "2025-11-25"})
    assert response.status_code == 202, response.text


@pytest.mark.alone
@pytest.mark.anyio
async def test_a_request_that_outlives_the_bound_is_answered_and_cancelled() -> None:
    """Past the time limit the request answers 503 (JSON-RPC internal error, its id) and the work is cancelled."""
    cancelled = anyio.Event()

    async def never_answers(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    app = McpHttpApp(never_answers, time_limit=0.3)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        started = time.monotonic()
        response = await http.post("/api/mcp", json={**INITIALIZE, "id": 42}, headers=ACCEPT)
    assert time.monotonic() - started < 2
    assert response.status_code == 503 and response.headers["retry-after"] == "1"
    assert response.json()["id"] == 42 and response.json()["error"]["code"] == -32603
    assert cancelled.is_set()


@pytest.mark.anyio
async def test_an_oversized_body_is_refused_before_it_is_parsed() -> None:
    """A body over the limit answers 413 as a JSON-RPC error, and the SDK never sees it."""
    reached: list[bool] = []

    async def inner(scope: dict[str, Any], receive: Any, send: Any) -> None:
        reached.append(True)

    app = McpHttpApp(inner, max_body_bytes=1000)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        response = await http.post("/api/mcp", content=b"x" * 1001, headers=ACCEPT)
    assert response.status_code == 413 and response.json()["error"]["code"] == -32600
    assert reached == []


GUIDED = AgentGuidance("Remember seat preferences only.", True, "agent")
CALL = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "get_memory", "arguments": {}}}


@pytest.mark.anyio
@pytest.mark.parametrize(("label", "body", "reads_guidance"), [
    ("initialize", INITIALIZE, True),
    ("server/discover", {"jsonrpc": "2.0", "id": 2, "method": "server/discover"}, True),
    ("tools/list", {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, True),
    ("tools/call", CALL, False),
    ("ping", {"jsonrpc": "2.0", "id": 4, "method": "ping"}, False),
    ("a notification", {"jsonrpc": "2.0", "method": "notifications/initialized"}, False),
])
async def test_the_agents_settings_are_read_only_for_answers_that_carry_them(
    label: str, body: object, reads_guidance: bool
) -> None:
    """initialize, server/discover and tools/list see the agent's guidance; a tools/call or a ping does not
    read the agent's settings at all (one store read and one worker-thread hop fewer per call)."""
    reads: list[dict[str, str]] = []
    seen: list[AgentGuidance | None] = []

    async def guidance(headers: Any) -> AgentGuidance:
        reads.append(dict(headers))
        return GUIDED

    async def inner(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(CURRENT_GUIDANCE.get())
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"{}"})

    app = McpHttpApp(inner, guidance=guidance)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        response = await http.post("/api/mcp", json=body, headers={**ACCEPT, "X-Agent-Object-Id": "/agents/a"})
    assert response.status_code == 200, label
    assert len(reads) == (1 if reads_guidance else 0), label
    assert seen == [GUIDED if reads_guidance else None], label
    assert CURRENT_GUIDANCE.get() is None  # reset after the request


PING = {"jsonrpc": "2.0", "id": 5, "method": "ping"}


async def _answers_json(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"jsonrpc": "2.0", "id": 5, "result": {}}'})


@pytest.mark.anyio
async def test_a_slow_authentication_holds_up_no_other_request() -> None:
    """Authentication may block (a token naming an unknown key makes the verifier fetch the key set, up to its
    timeout): it runs off the event loop, so another caller's request meanwhile is answered at once."""

    def authenticate(headers: Any) -> Any:
        if headers.get("authorization") == "Bearer token-with-an-unknown-kid":
            time.sleep(1.5)  # the key-set fetch, in the verifier's synchronous HTTP client
        return None

    app = McpHttpApp(_answers_json, authenticate=authenticate)
    answered: list[float] = []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        started = time.monotonic()

        async def other_caller() -> None:
            await anyio.sleep(0.2)  # while the slow authentication runs
            assert (await http.post("/api/mcp", json=PING, headers=ACCEPT)).status_code == 200
            answered.append(time.monotonic() - started)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(other_caller)
            slow = {**ACCEPT, "Authorization": "Bearer token-with-an-unknown-kid"}
            assert (await http.post("/api/mcp", json=PING, headers=slow)).status_code == 200
    assert answered[0] < 0.7, answered  # not after the slow one's 1.5 s


@pytest.mark.anyio
async def test_a_key_is_checked_on_the_event_loop_and_a_signed_token_off_it() -> None:
    """Only a signed token (Authorization, X-PLATFORM-IDENTITY) may need the network; a key or an identity header is
    checked where the request runs, without a thread's hop (0.1-0.2 ms on every call)."""
    threads: dict[str, int] = {}

    def authenticate(headers: Any) -> Any:
        threads[headers.get("x-case", "")] = threading.get_ident()
        return None

    app = McpHttpApp(_answers_json, authenticate=authenticate)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        loop_thread = threading.get_ident()
        for case, credential in (("key", {"X-API-KEY": "k"}), ("bearer", {"Authorization": "Bearer t"}),
                                 ("platform", {"X-PLATFORM-IDENTITY": "t"})):
            response = await http.post("/api/mcp", json=PING, headers={**ACCEPT, **credential, "X-Case": case})
            assert response.status_code == 200
    assert threads["key"] == loop_thread
    assert threads["bearer"] != loop_thread and threads["platform"] != loop_thread


@pytest.mark.alone
@pytest.mark.anyio
async def test_authentication_is_inside_the_time_bound() -> None:
    """An authentication that outlives the bound answers 503 (JSON-RPC internal error, Retry-After) at the bound."""

    def authenticate(headers: Any) -> Any:
        time.sleep(1.5)

    app = McpHttpApp(_answers_json, authenticate=authenticate, time_limit=0.3)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        started = time.monotonic()
        response = await http.post("/api/mcp", json={**PING, "id": 43}, headers={**ACCEPT, "Authorization": "Bearer t"})
    assert time.monotonic() - started < 1
    assert response.status_code == 503 and response.headers["retry-after"] == "1"
    assert response.json()["id"] == 43 and response.json()["error"]["code"] == -32603


@pytest.mark.anyio
async def test_signing_keys_that_cannot_be_fetched_answer_503_internal_error_with_retry_after() -> None:
    """A caller refused because the service cannot check credentials now (Unavailable) is told to retry: HTTP 503,
    JSON-RPC internal error (-32603, not invalid request), and the error's Retry-After, as the REST API answers."""

    def authenticate(headers: Any) -> Any:
        raise Unavailable("the identity provider's signing keys cannot be fetched; retry later", retry_after_seconds=7)

    app = McpHttpApp(_answers_json, authenticate=authenticate)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        response = await http.post("/api/mcp", json={**PING, "id": 44}, headers=ACCEPT)
    assert response.status_code == 503 and response.headers["retry-after"] == "7"
    assert response.json() == {"jsonrpc": "2.0", "id": 44, "error": {
        "code": -32603, "message": "the identity provider's signing keys cannot be fetched; retry later",
        "data": {"code": "unavailable"}}}


@pytest.mark.alone
@pytest.mark.anyio
async def test_a_stalled_guidance_read_falls_back_to_the_base_text_within_the_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The agent's settings are read inside the request's time bound: a read that stalls is given up (logged)
    and the request is answered with the base guidance (none), never held past the bound or refused for it."""
    seen: list[AgentGuidance | None] = []

    async def stalled(headers: Any) -> AgentGuidance:
        await anyio.sleep(5)
        return GUIDED

    async def inner(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(CURRENT_GUIDANCE.get())
        await _answers_json(scope, receive, send)

    app = McpHttpApp(inner, guidance=stalled, time_limit=0.6)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        started = time.monotonic()
        response = await http.post("/api/mcp", json=INITIALIZE, headers={**ACCEPT, "X-Agent-Object-Id": "/agents/a"})
    assert time.monotonic() - started < 0.6
    assert response.status_code == 200 and seen == [None]
    assert "agent settings not read within" in caplog.text
