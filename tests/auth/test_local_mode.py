"""MEMORY_AUTH_MODE=local: one local user without headers, on a loopback server only."""

from __future__ import annotations

import httpx
import pytest

from tests.mcp.client import call, text
from tests.support.local_server import OPERATOR_KEY, RunningServer


def test_local_user_needs_no_headers(local_mode_server: RunningServer, instance_id: str) -> None:
    """Without any header a call is the local user's (local@localhost)."""
    with httpx.Client(base_url=local_mode_server.api) as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- local fact"}).raise_for_status()
        document = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()
    assert document["upn"] == "local@localhost" and "- local fact" in document["content_markdown"]


def test_operator_routes_still_need_an_operator_key(local_mode_server: RunningServer, instance_id: str) -> None:
    """Local mode opens user routes only: an operator route without a key is 401, with the operator key 200."""
    url = f"{local_mode_server.api}/instances/{instance_id}/operator/deletions"
    assert httpx.get(url).status_code == 401
    assert httpx.get(url, headers={"X-API-KEY": OPERATOR_KEY}).status_code == 200


@pytest.mark.anyio
async def test_mcp_tools_serve_the_local_user(local_mode_server: RunningServer) -> None:
    """The MCP tools need no headers in local mode either."""
    url = f"{local_mode_server.api}/mcp"
    appended = await call(url, {}, "append_memory", {"scope": "user", "memory": "- from mcp, locally"})
    assert not appended.is_error and appended.structured_content["upn"] == "local@localhost"
    assert "- from mcp, locally" in text(await call(url, {}, "get_memory", {"scope": "user"}))
