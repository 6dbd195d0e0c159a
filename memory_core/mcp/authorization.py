"""How an MCP client finds out how to sign in: OAuth 2.0 protected resource metadata (RFC 9728).

With ``entra`` among MEMORY_AUTH_MODE, the MCP endpoint is an OAuth protected
resource whose authorization server is the tenant's Entra ID authority. Per the
MCP authorization spec a client learns this from the ``resource_metadata``
parameter of the ``WWW-Authenticate: Bearer`` challenge on a 401, then fetches
the metadata document from that URL.

Where the document lives: every HTTP function sits under the Functions route
prefix (``api`` in host.json), so the root-level well-known URL of RFC 9728
(``/.well-known/oauth-protected-resource/api/mcp``) is out of reach without
moving every route. The document is served at
``/api/.well-known/oauth-protected-resource/mcp`` instead, and every 401 names
that URL, which the MCP spec has clients use before any well-known guess.

- ``metadata_path``, ``metadata_url``: where the document is, for a request's origin;
- ``protected_resource_metadata``: the document (``None`` without entra mode);
- ``with_resource_metadata``: a 401 challenge extended with ``resource_metadata`` and ``scope``;
- ``oauth_protected_resource``: the HTTP function that serves it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import azure.functions as func

from memory_core.domain.errors import NotFound
from memory_core.edge import Access, Call, EndpointSpec, endpoint
from memory_core.identity.modes import AuthMode

if TYPE_CHECKING:  # pydantic-settings loads with the composition root, not with the routes (cold start)
    from memory_core.settings import Settings

METADATA_ROUTE = ".well-known/oauth-protected-resource/mcp"
"""The route (under the Functions route prefix) of the MCP endpoint's resource metadata."""

MCP_ROUTE = "mcp"


def entra_enabled(settings: Settings) -> bool:
    return AuthMode.ENTRA.value in settings.memory_auth_mode  # validated and lower-cased by Settings


def authorization_server(settings: Settings) -> str:
    """The tenant's Entra ID v2.0 authority: the issuer clients discover endpoints from."""
    host = settings.memory_entra_authority_host.rstrip("/")
    return f"{host}/{(settings.memory_entra_tenant_id or '').strip()}/v2.0"


def scopes(settings: Settings) -> list[str]:
    """The scopes a client asks for: MEMORY_ENTRA_SCOPES, else ``<first app ID URI>/.default``."""
    named = [s for s in settings.memory_entra_scopes if s]
    if named:
        return named
    accepted = [a.strip() for a in settings.memory_entra_audience if a.strip()]
    uris = [a for a in accepted if "://" in a] or list(accepted)
    return [f"{uris[0].rstrip('/')}/.default"] if uris else []


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of ``url``."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def metadata_path(prefix: str = "api") -> str:
    base = f"/{prefix.strip('/')}" if prefix.strip("/") else ""
    return f"{base}/{METADATA_ROUTE}"


def metadata_url(origin: str, prefix: str = "api") -> str:
    return f"{origin.rstrip('/')}{metadata_path(prefix)}"


def resource_url(origin: str, prefix: str = "api") -> str:
    """The MCP server's canonical URI, the ``resource`` clients request tokens for."""
    base = f"/{prefix.strip('/')}" if prefix.strip("/") else ""
    return f"{origin.rstrip('/')}{base}/{MCP_ROUTE}"


def protected_resource_metadata(settings: Settings, origin: str, prefix: str = "api") -> dict[str, Any] | None:
    """The RFC 9728 document for the MCP endpoint at ``origin``, or None when entra mode is off."""
    if not entra_enabled(settings):
        return None
    document: dict[str, Any] = {
        "resource": resource_url(origin, prefix),
        "authorization_servers": [authorization_server(settings)],
        "bearer_methods_supported": ["header"],
        "resource_name": "memory-core",
    }
    wanted = scopes(settings)
    if wanted:
        document["scopes_supported"] = wanted
    return document


def with_resource_metadata(challenge: str, settings: Settings, origin: str, prefix: str = "api") -> str:
    """``challenge`` with the Bearer part naming the metadata URL and the scopes (entra mode only).

    The other challenges (platform identity, API key) are kept as they are.
    """
    if not entra_enabled(settings):
        return challenge
    extra = f'resource_metadata="{metadata_url(origin, prefix)}"'
    wanted = scopes(settings)
    if wanted:
        extra += f', scope="{" ".join(wanted)}"'
    marker = "Bearer "
    at = challenge.find(marker)
    if at < 0:
        return f"Bearer {extra}, {challenge}" if challenge else f"Bearer {extra}"
    head_end = at + len(marker)
    rest = challenge[head_end:]
    return f"{challenge[:head_end]}{extra}, {rest}" if rest else f"{challenge[:head_end]}{extra}"


@endpoint(EndpointSpec(summary="OAuth protected resource metadata of the MCP endpoint (RFC 9728)", tag="mcp",
                       access=Access.PUBLIC, errors=(404,), in_openapi=False))
def oauth_protected_resource(call: Call) -> func.HttpResponse:
    """The ``oauth_protected_resource`` function: RFC 9728 metadata of /api/mcp.

    200 with the document when entra mode is on; ``NotFound`` (404) otherwise
    (there is no OAuth to discover). The ``resource`` is built from the
    request's own origin, whose Host the edge has already matched against the
    app's names.
    """
    document = protected_resource_metadata(call.runtime.settings, origin_of(call.request.url))
    if document is None:
        raise NotFound("OAuth is not enabled: MEMORY_AUTH_MODE does not include entra")
    return func.HttpResponse(
        json.dumps(document),
        status_code=200,
        mimetype="application/json",
        headers={"Cache-Control": "public, max-age=3600", "Access-Control-Allow-Origin": "*"},
    )
