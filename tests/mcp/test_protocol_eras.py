"""Both protocol eras side by side, with the official mcp client over real HTTP against ``serve``.

- the handshake era: ``initialize`` at 2025-06-18 and at 2025-11-25 (the client's newest handshake);
- the stateless era: ``server/discover`` at 2026-07-28, whose requests carry
  ``Mcp-Method`` (and ``Mcp-Name`` for a tool call) headers.

In every era the server advertises tools only, with no change notifications,
and refuses ``subscriptions/listen`` at once instead of opening a stream that
never ends (the hang agent_framework's MCP tool ran into).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import listen
from mcp.shared.exceptions import MCPError

from memory_core.mcp.server import TOOL_NAMES
from tests.mcp.client import mcp_headers
from tests.mcp.conftest import McpTarget
from tests.support.local_server import USER_KEY, RunningServer

pytestmark = pytest.mark.anyio

HANDSHAKE_ERAS = ("2025-06-18", "2025-11-25")
MODERN = "2026-07-28"
TOOLS_ONLY = {"tools": {"listChanged": False}}


@asynccontextmanager
async def _session(url: str, headers: dict[str, str], sent: list[httpx2.Request]) -> AsyncIterator[ClientSession]:
    """An official-client session (not yet negotiated) that records every HTTP request it sends."""

    async def record(request: httpx2.Request) -> None:
        sent.append(request)

    async with httpx2.AsyncClient(
        headers=headers, timeout=httpx2.Timeout(10, read=20), event_hooks={"request": [record]}
    ) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                yield session


async def _handshake(session: ClientSession, version: str) -> types.InitializeResult:
    """The initialize handshake at ``version``: the client's own request, adopted as it adopts its default."""
    request = types.InitializeRequest(
        params=types.InitializeRequestParams(
            protocol_version=version,
            capabilities=types.ClientCapabilities(),
            client_info=types.Implementation(name="era-test", version="0"),
        )
    )
    result = await session.send_request(request, types.InitializeResult)
    session.adopt(result)
    await session.send_notification(types.InitializedNotification())
    return result


@pytest.mark.parametrize("era", HANDSHAKE_ERAS)
async def test_handshake_era_lists_and_calls_tools(mcp_target: McpTarget, instance_id: str, era: str) -> None:
    """initialize at ``era`` negotiates it, advertises tools only, and append then get round-trip."""
    sent: list[httpx2.Request] = []
    fact = f"- prefers aisle seats {uuid.uuid4().hex[:6]}"
    async with _session(mcp_target.url, mcp_headers(mcp_target.key, instance=instance_id), sent) as session:
        result = await _handshake(session, era)
        assert result.protocol_version == era
        assert result.capabilities.model_dump(by_alias=True, exclude_none=True) == TOOLS_ONLY
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert names == set(TOOL_NAMES)
        appended = await session.call_tool("append_memory", {"scope": "user", "memory": fact})
        assert not appended.is_error and fact in appended.structured_content["content_markdown"]
        got = await session.call_tool("get_memory", {"scope": "user"})
    assert fact in got.content[0].text  # type: ignore[union-attr]
    assert all(r.headers.get("mcp-protocol-version") in (None, era) for r in sent)
    assert not any("mcp-session-id" in r.headers for r in sent)


async def test_stateless_era_discovers_and_calls_tools_with_routing_headers(
    mcp_target: McpTarget, instance_id: str
) -> None:
    """server/discover at 2026-07-28 advertises tools only; every request names its method (and tool) in headers."""
    sent: list[httpx2.Request] = []
    fact = f"- likes window seats {uuid.uuid4().hex[:6]}"
    async with _session(mcp_target.url, mcp_headers(mcp_target.key, instance=instance_id), sent) as session:
        discovered = await session.discover()
        assert session.protocol_version == MODERN and MODERN in discovered.supported_versions
        assert discovered.capabilities.model_dump(by_alias=True, exclude_none=True) == TOOLS_ONLY
        assert "Use memory to personalize" in (discovered.instructions or "")
        await session.list_tools()
        appended = await session.call_tool("append_memory", {"scope": "user", "memory": fact})
        got = await session.call_tool("get_memory", {"scope": "user"})
    assert not appended.is_error and fact in got.content[0].text  # type: ignore[union-attr]
    routing = [(r.headers.get("mcp-method"), r.headers.get("mcp-name")) for r in sent]
    assert routing == [
        ("server/discover", None),
        ("tools/list", None),
        ("tools/call", "append_memory"),
        ("tools/call", "get_memory"),
    ]
    assert all(r.headers.get("mcp-protocol-version") == MODERN for r in sent)


@pytest.mark.alone
async def test_listen_is_refused_at_once_and_the_session_carries_on(mcp_target: McpTarget, instance_id: str) -> None:
    """subscriptions/listen answers method-not-found within a second; the same session then calls a tool."""
    sent: list[httpx2.Request] = []
    async with _session(mcp_target.url, mcp_headers(mcp_target.key, instance=instance_id), sent) as session:
        await session.discover()
        started = time.monotonic()
        with anyio.fail_after(10), pytest.raises(MCPError) as refused:
            async with listen(session, tools_list_changed=True):
                pass
        assert time.monotonic() - started < 1.0
        assert refused.value.error.code == types.METHOD_NOT_FOUND
        assert not (await session.call_tool("get_memory", {"scope": "user"})).is_error


def _post(server: RunningServer, body: dict[str, Any], **headers: str) -> httpx.Response:
    sent = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        **mcp_headers(USER_KEY),
        **headers,
    }
    return httpx.post(f"{server.api}/mcp", content=json.dumps(body), headers=sent, timeout=10)


def _meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }


@pytest.mark.alone
def test_raw_listen_is_a_404_method_not_found_not_a_stream(core_server: RunningServer) -> None:
    """On the wire: HTTP 404 with JSON-RPC -32601 as JSON, within a second, never an event stream."""
    body = {"jsonrpc": "2.0", "id": "l-1", "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": True}, "_meta": _meta()}}
    started = time.monotonic()
    response = _post(core_server, body, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"})
    assert time.monotonic() - started < 1.0
    assert response.status_code == 404 and response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["code"] == -32601 and response.json()["id"] == "l-1"


@pytest.mark.parametrize("method", ["prompts/list", "resources/list", "resources/subscribe", "resources/templates/list"])
def test_unadvertised_methods_are_method_not_found(core_server: RunningServer, method: str) -> None:
    """Prompts and resources are not offered, so their methods answer -32601 rather than empty lists."""
    response = _post(core_server, {"jsonrpc": "2.0", "id": 3, "method": method, "params": {"uri": "memory://x"}},
                     **{"MCP-Protocol-Version": "2025-11-25"})
    assert response.json()["error"]["code"] == -32601


def test_mismatched_routing_header_is_refused(core_server: RunningServer) -> None:
    """At 2026-07-28 an Mcp-Name that disagrees with the body is refused before any tool runs."""
    body = {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "get_memory", "arguments": {"scope": "user"}, "_meta": _meta()}}
    response = _post(core_server, body, **{"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                                           "Mcp-Name": "clear_memory"})
    assert response.status_code == 400 and "error" in response.json()
