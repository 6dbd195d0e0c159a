"""Caller authentication shared by every entry point (REST, MCP): kept for its importers.

The implementation lives in ``memory_core.identity`` (docs/identity.md). The
caller's identity comes only from trusted credentials: X-USER-IDENTITY is
believed only when X-API-KEY matches a configured key (compared in constant
time), or from a verified Entra ID token, platform identity context or App
Service principal, as MEMORY_AUTH_MODE allows.
"""

from __future__ import annotations

from memory_core.identity import (
    API_KEY_HEADER,
    USER_IDENTITY_HEADER,
    Authentication,
    Authenticator,
    KeyAuthenticator,
    UserIdentityHeader,
    build_authenticator,
    key_matches,
    parse_identity,
)

__all__ = [
    "API_KEY_HEADER",
    "USER_IDENTITY_HEADER",
    "Authentication",
    "Authenticator",
    "KeyAuthenticator",
    "UserIdentityHeader",
    "build_authenticator",
    "key_matches",
    "parse_identity",
]
