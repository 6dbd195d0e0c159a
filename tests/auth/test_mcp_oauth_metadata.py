"""OAuth discovery for the MCP endpoint (RFC 9728 protected resource metadata, MCP authorization spec).

A client that knows nothing of FoundationaLLM headers POSTs to /api/mcp, gets a
401 whose ``WWW-Authenticate: Bearer`` names ``resource_metadata``, fetches that
document and learns the Entra authority, the scopes and the resource to ask a
token for. The client side is the official mcp SDK's own OAuth discovery code
(``mcp.client.auth.utils``). Entra ID itself cannot be reached here, so the
flow stops at the document, which names the real authority.
"""

from __future__ import annotations

import httpx
import httpx2
import pytest
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    handle_protected_resource_response,
)

from memory_core.mcp.authorization import with_resource_metadata
from tests.auth.conftest import identity_settings, settings_of
from tests.auth.idp import CORE_AUDIENCE, TENANT_ID
from tests.support.local_server import RunningServer

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "vscode", "version": "0"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_a_client_with_no_credential_discovers_how_to_sign_in(identity_server: RunningServer) -> None:
    """401 -> resource_metadata -> the document naming the Entra authority, the scopes and this MCP URL."""
    url = f"{identity_server.api}/mcp"
    async with httpx2.AsyncClient(timeout=10) as http:
        refused = await http.post(url, json=INITIALIZE, headers=ACCEPT)
        assert refused.status_code == 401
        found = extract_resource_metadata_from_www_auth(refused)
        assert found == f"{identity_server.api}/.well-known/oauth-protected-resource/mcp"
        assert extract_scope_from_www_auth(refused) == f"{CORE_AUDIENCE}/.default"
        first = build_protected_resource_metadata_discovery_urls(found, url)[0]
        metadata = await handle_protected_resource_response(await http.get(first))
    assert metadata is not None
    assert str(metadata.resource) == url
    assert [str(a) for a in metadata.authorization_servers] == [f"https://login.microsoftonline.com/{TENANT_ID}/v2.0"]
    assert metadata.scopes_supported == [f"{CORE_AUDIENCE}/.default"]
    assert metadata.bearer_methods_supported == ["header"]


async def test_every_kind_of_401_names_the_metadata(identity_server: RunningServer) -> None:
    """Missing, malformed and unsigned credentials all answer 401 with the same resource_metadata."""
    url = f"{identity_server.api}/mcp"
    expected = f'resource_metadata="{identity_server.api}/.well-known/oauth-protected-resource/mcp"'
    attempts = [{}, {"Authorization": "Bearer not-a-jwt"}, {"X-API-KEY": "wrong"}, {"X-PLATFORM-IDENTITY": "x.y.z"}]
    async with httpx.AsyncClient(timeout=10) as http:
        for headers in attempts:
            refused = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **headers})
            assert refused.status_code == 401, headers
            assert expected in refused.headers["www-authenticate"], headers


def test_metadata_is_not_served_without_entra(easyauth_server: RunningServer) -> None:
    """Without entra mode there is no OAuth to discover: 404, and 401s carry no resource_metadata."""
    assert httpx.get(f"{easyauth_server.api}/.well-known/oauth-protected-resource/mcp", timeout=10).status_code == 404
    refused = httpx.post(f"{easyauth_server.api}/mcp", json=INITIALIZE, headers=ACCEPT, timeout=10)
    assert refused.status_code == 401 and "resource_metadata" not in refused.headers["www-authenticate"]


def test_named_scopes_replace_the_default(jwks: object) -> None:
    """MEMORY_ENTRA_SCOPES names the scopes published; the Bearer challenge keeps its other parameters."""
    settings = settings_of(identity_settings(jwks, MEMORY_ENTRA_SCOPES="api://memory-core/Memory.ReadWrite"))  # type: ignore[arg-type]
    challenge = with_resource_metadata('Bearer realm="memory-core", ApiKey header="X-API-KEY"', settings,
                                       "https://func.example.net")
    assert challenge == (
        'Bearer resource_metadata="https://func.example.net/api/.well-known/oauth-protected-resource/mcp", '
        'scope="api://memory-core/Memory.ReadWrite", realm="memory-core", ApiKey header="X-API-KEY"'
    )
