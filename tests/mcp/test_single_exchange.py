"""Handshake-era requests answered without a per-request SDK session answer exactly as the SDK's app does.

Two ``FunctionsMcpEndpoint``s share one runtime (one real SQLite store): one
with the single exchange (``memory_core.mcp.exchange``, the default), one that
sends every request through the SDK's streamable-HTTP app. The same requests go
to both, through the Functions bridge (``memory_core.mcp.functions_bridge``), and their replies must match.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import azure.functions as func
import httpx
import pytest
from mcp.server import streamable_http

from memory_core.composition import Runtime, build_runtime
from memory_core.mcp.exchange import SingleExchange
from memory_core.mcp.front import McpHttpApp
from memory_core.mcp.transport import FunctionsMcpEndpoint
from memory_core.settings import Settings
from tests.support.local_server import identity

pytestmark = pytest.mark.anyio

KEY = "exchange-key"
URL = "http://localhost:7071/api/mcp"
ALEX = identity("alex@contoso.com")


@pytest.fixture
def runtime(tmp_path: Path) -> Any:
    rt = build_runtime(Settings(
        memory_store="sqlite", memory_sqlite_path=str(tmp_path / "m.sqlite3"), memory_api_keys=(KEY,),
        memory_default_instance_id="exchange", website_hostname=None, memory_mcp_allowed_hosts=(),
        memory_coreapi_base_url=None, memory_coreapi_key=None, memory_deletion_mode="immediate",
    ))
    yield rt
    rt.store.close()


@pytest.fixture
async def endpoints(runtime: Runtime) -> Any:
    fast = FunctionsMcpEndpoint(lambda: runtime)
    sdk = FunctionsMcpEndpoint(lambda: runtime, single_exchange=False)
    yield fast, sdk
    await fast.aclose()
    await sdk.aclose()


def _request(body: object, *, version: str | None = "2025-11-25", accept: str = "application/json, text/event-stream",
             user: str = ALEX, **headers: str) -> func.HttpRequest:
    sent = {"host": "localhost:7071", "content-type": "application/json", "accept": accept, "x-api-key": KEY,
            "x-user-identity": user, **headers}
    if version is not None:
        sent["mcp-protocol-version"] = version
    return func.HttpRequest(method="POST", url=URL, headers=sent, body=json.dumps(body).encode())


def _call(name: str, arguments: dict[str, Any], request_id: int | str = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def _answer(response: func.HttpResponse) -> tuple[int, str, Any]:
    body = response.get_body()
    return response.status_code, response.mimetype, json.loads(body) if body else None


REQUESTS: list[tuple[str, object, dict[str, Any]]] = [
    ("initialize", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}, {}),
    ("initialize proposing an unknown version", {"jsonrpc": "2.0", "id": "a", "method": "initialize", "params": {
        "protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}, {}),
    ("ping", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, {}),
    ("tools/list", {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, {}),
    ("tools/list for an agent with guidance headers", {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
     {"x-agent-object-id": "/agents/a", "x-instance-id": "exchange"}),
    ("get_memory", _call("get_memory", {"scope": "user"}), {}),
    ("get_memory with a budget", _call("get_memory", {"scope": "user", "max_chars": 60}), {}),
    ("get_memory of an agent scope without an agent", _call("get_memory", {"scope": "agent"}), {}),
    ("search_memory", _call("search_memory", {"query": "tables", "scope": "user"}), {}),
    ("an unknown tool", _call("drop_tables", {}), {}),
    ("arguments of the wrong type", _call("get_memory", {"scope": 42}), {}),
    ("an identity smuggled in the arguments", _call("get_memory", {"scope": "user", "upn": "bea@contoso.com"}), {}),
    ("a method nobody serves", {"jsonrpc": "2.0", "id": 4, "method": "prompts/list"}, {}),
    ("a made-up method", {"jsonrpc": "2.0", "id": 5, "method": "memory/steal"}, {}),
    ("tools/call without params", {"jsonrpc": "2.0", "id": 6, "method": "tools/call"}, {}),
    ("no protocol version header", _call("get_memory", {"scope": "user"}), {"__version": ""}),
]


@pytest.mark.parametrize(("label", "message", "headers"), REQUESTS, ids=[r[0] for r in REQUESTS])
async def test_a_handshake_era_request_gets_the_sdks_own_reply(
    endpoints: tuple[FunctionsMcpEndpoint, FunctionsMcpEndpoint], label: str, message: object,
    headers: dict[str, str],
) -> None:
    fast, sdk = endpoints
    seed = _call("append_memory", {"scope": "user", "memory": "- Prefers Markdown tables for comparisons"})
    assert (await fast(_request(seed))).status_code == 200
    extra = {k: v for k, v in headers.items() if not k.startswith("__")}
    version = None if "__version" in headers else "2025-11-25"
    ours = _answer(await fast(_request(message, version=version, **extra)))
    theirs = _answer(await sdk(_request(message, version=version, **extra)))
    assert ours == theirs, label


async def test_an_append_through_either_path_is_stored_once_and_answered_alike(
    endpoints: tuple[FunctionsMcpEndpoint, FunctionsMcpEndpoint],
) -> None:
    fast, sdk = endpoints
    replies = []
    for endpoint, text in ((fast, "- first, fast path"), (sdk, "- second, SDK path")):
        status, _, body = _answer(await endpoint(_request(_call("append_memory", {"scope": "user", "memory": text}))))
        assert status == 200 and body["result"]["isError"] is False
        replies.append(body["result"]["structuredContent"])
    assert replies[0].keys() == replies[1].keys()
    _, _, read = _answer(await sdk(_request(_call("get_memory", {"scope": "user"}))))
    text = read["result"]["content"][0]["text"]
    assert text.count("- first, fast path") == 1 and text.count("- second, SDK path") == 1


async def test_the_caller_comes_from_the_headers_on_the_fast_path(
    endpoints: tuple[FunctionsMcpEndpoint, FunctionsMcpEndpoint],
) -> None:
    fast, _ = endpoints
    await fast(_request(_call("append_memory", {"scope": "user", "memory": "- Alex's secret plan"})))
    _, _, bea = _answer(await fast(_request(_call("get_memory", {"scope": "user"}), user=identity("bea@contoso.com"))))
    assert "secret plan" not in json.dumps(bea)
    refused = await fast(_request(_call("get_memory", {"scope": "user"}), **{"x-api-key": "wrong"}))
    assert refused.status_code == 401 and "secret plan" not in refused.get_body().decode()


async def test_a_tool_call_builds_no_per_request_sdk_transport(
    endpoints: tuple[FunctionsMcpEndpoint, FunctionsMcpEndpoint], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The point of the single exchange: no streamable-HTTP transport, dispatcher or task group per call."""
    built: list[object] = []
    original = streamable_http.StreamableHTTPServerTransport.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(streamable_http.StreamableHTTPServerTransport, "__init__", counting)
    fast, sdk = endpoints
    for _ in range(3):
        assert (await fast(_request(_call("get_memory", {"scope": "user"})))).status_code == 200
    assert built == []
    assert (await sdk(_request(_call("get_memory", {"scope": "user"})))).status_code == 200
    assert len(built) == 1  # the comparison path still builds one per request


@pytest.mark.parametrize(("message", "headers", "taken"), [
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"accept": "application/json"}, True),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"accept": "*/*"}, True),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"accept": "application/json",
                                                           "mcp-protocol-version": "2024-11-05"}, True),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"accept": "text/event-stream"}, False),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {}, False),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"accept": "application/json",
                                                           "mcp-protocol-version": "2026-07-28"}, False),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"accept": "application/json",
                                                           "mcp-protocol-version": "2099-01-01"}, False),
    ({"jsonrpc": "2.0", "method": "notifications/initialized"}, {"accept": "application/json"}, False),
    ({"jsonrpc": "2.0", "id": 1, "result": {}}, {"accept": "application/json"}, False),
    ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], {"accept": "application/json"}, False),
    ({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen"}, {"accept": "application/json"}, False),
])
def test_only_single_handshake_era_requests_from_json_clients_are_taken(
    message: object, headers: dict[str, str], taken: bool,
) -> None:
    assert SingleExchange.accepts(message, headers) is taken


@pytest.mark.alone
async def test_the_fast_path_is_bound_in_time_too() -> None:
    """A call answered by the exchange that outlives the bound answers 503 and its work is cancelled."""
    cancelled = anyio.Event()

    class Stuck(SingleExchange):
        def __init__(self) -> None:
            pass

        async def answer(self, message: dict[str, Any], headers: Any, scope: Any) -> bytes:
            try:
                await anyio.sleep_forever()
            finally:
                cancelled.set()
            raise AssertionError("unreachable")

    async def sdk_app(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        raise AssertionError("the request should have taken the fast path")

    app = McpHttpApp(sdk_app, time_limit=0.3, exchange=Stuck())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        started = time.monotonic()
        response = await http.post("/api/mcp", json=_call("get_memory", {}, 9),
                                   headers={"accept": "application/json", "content-type": "application/json"})
    assert time.monotonic() - started < 2
    assert response.status_code == 503 and response.json()["id"] == 9
    assert cancelled.is_set()


@pytest.mark.parametrize("path", ["single exchange", "SDK app"])
async def test_the_credential_is_checked_once_per_call(
    endpoints: tuple[FunctionsMcpEndpoint, FunctionsMcpEndpoint], runtime: Runtime, monkeypatch: pytest.MonkeyPatch,
    path: str,
) -> None:
    """The front authenticates; the tool reuses that caller instead of verifying the credential again."""
    endpoint = endpoints[0] if path == "single exchange" else endpoints[1]
    checks: list[str] = []
    authenticate = runtime.auth.authenticate

    def counting(headers: Any) -> Any:
        checks.append("checked")
        return authenticate(headers)

    monkeypatch.setattr(runtime.auth, "authenticate", counting)
    await endpoint(_request(_call("append_memory", {"scope": "user", "memory": "- once"})))
    checks.clear()
    status, _, body = _answer(await endpoint(_request(_call("get_memory", {"scope": "user"}))))
    assert status == 200 and "- once" in body["result"]["content"][0]["text"]
    assert checks == ["checked"]
