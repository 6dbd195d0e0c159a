"""Helpers for talking to the MCP endpoint with the official mcp client over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, InitializeResult

from tests.support.local_server import identity

AGENT_A = "/instances/i/providers/FoundationaLLM.Agent/agents/benefits-assistant"
AGENT_B = "/instances/i/providers/FoundationaLLM.Agent/agents/travel-assistant"

#: The headers of a raw JSON-RPC POST to /api/mcp (a test's own request, without the official client).
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
#: A raw initialize request at the handshake era's current version, id 1.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
}


def mcp_headers(
    key: str | None,
    upn: str | None = "alex@contoso.com",
    *,
    agent: str | None = None,
    agent_name: str | None = None,
    instance: str | None = None,
    **extra: str,
) -> dict[str, str]:
    """The headers a configured MCP client tool sends (None leaves a header out)."""
    headers: dict[str, str] = {}
    if key is not None:
        headers["X-API-KEY"] = key
    if upn is not None:
        headers["X-USER-IDENTITY"] = identity(upn)
    if agent is not None:
        headers["X-AGENT-OBJECT-ID"] = agent
    if agent_name is not None:
        headers["X-AGENT-NAME"] = agent_name
    if instance is not None:
        headers["X-INSTANCE-ID"] = instance
    headers.update({k.replace("_", "-"): v for k, v in extra.items()})
    return headers


@asynccontextmanager
async def mcp_session(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    """An initialized official-client session over streamable HTTP."""
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def initialize(url: str, headers: dict[str, str]) -> InitializeResult:
    """The server's answer to initialize."""
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                return await session.initialize()


async def call(url: str, headers: dict[str, str], tool: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
    """One tools/call in a fresh session."""
    async with mcp_session(url, headers) as session:
        return await session.call_tool(tool, arguments or {})


def text(result: CallToolResult) -> str:
    """The text of a result's single text block."""
    assert len(result.content) == 1
    return result.content[0].text  # type: ignore[union-attr]
