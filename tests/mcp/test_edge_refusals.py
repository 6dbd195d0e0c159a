"""What an MCP client reads when the edge refuses a request before the protocol runs.

The edge (``memory_core.edge``) refuses a body over the route's limit (413), a body not sent as JSON
(415), a foreign Host (421) or Origin (403) before the MCP app is reached. On ``/api/mcp`` each
refusal keeps its status and headers but is a JSON-RPC error, the only error body an MCP client
reads: the official client surfaces its message, where any other body becomes a generic
``-32603 Server returned an error response``. Real ``serve``, real sockets, the official client.
"""

from __future__ import annotations

import json

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.mcp.client import ACCEPT, mcp_headers, mcp_session
from tests.mcp.conftest import McpTarget
from tests.support.local_server import USER_KEY, RunningServer

PING = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}).encode()
TOO_LARGE = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"pad":"' + b"x" * 2_000_000 + b'"}}}'


@pytest.mark.parametrize(("status", "body", "headers"), [
    (413, TOO_LARGE, {}),
    (415, PING, {"Content-Type": "text/plain"}),
    (421, PING, {"Host": "evil.example"}),
    (403, PING, {"Origin": "https://evil.example"}),
], ids=["body-over-the-limit", "not-json", "foreign-host", "foreign-origin"])
def test_an_edge_refusal_is_a_json_rpc_error_with_its_status(core_server: RunningServer, status: int, body: bytes,
                                                             headers: dict[str, str]) -> None:
    """Status as REST answers it; body ``{"jsonrpc": "2.0", "id": null, "error": {-32600, message}}``."""
    sent = {**ACCEPT, **mcp_headers(USER_KEY), **headers}
    response = httpx.post(f"{core_server.api}/mcp", content=body, headers=sent, timeout=30)
    document = response.json()
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json")
    assert document["jsonrpc"] == "2.0" and document["id"] is None
    assert document["error"]["code"] == -32600 and document["error"]["message"]


def test_rest_refusals_keep_the_rest_error_body(core_server: RunningServer, instance_id: str) -> None:
    """The REST routes' refusals are unchanged: ``{"error": {"code", "message"}}``."""
    response = httpx.post(f"{core_server.api}/instances/{instance_id}/memory/append", content=b"x",
                          headers={**mcp_headers(USER_KEY), "Content-Type": "text/plain"}, timeout=30)
    assert response.status_code == 415 and response.json()["error"]["code"] == "unsupported_media_type"


@pytest.mark.anyio
async def test_the_official_client_reads_why_an_oversized_call_was_refused(mcp_target: McpTarget) -> None:
    """A tool call past the body limit raises MCPError carrying the edge's message, not a generic internal error."""
    async with mcp_session(mcp_target.url, mcp_headers(mcp_target.key)) as session:
        with pytest.raises(MCPError) as refused:
            await session.call_tool("append_memory", {"scope": "user", "memory": "y" * 500_000})
        assert not (await session.call_tool("get_memory", {"scope": "user", "max_chars": 10})).is_error
    assert refused.value.error.code == -32600
    assert "request body is larger than this endpoint accepts" in refused.value.error.message
