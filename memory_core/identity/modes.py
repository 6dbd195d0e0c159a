"""MEMORY_AUTH_MODE: which credential paths a deployment accepts.

The setting itself is parsed and validated by ``memory_core.settings`` (which
imports nothing of identity); this module gives the names their meaning.
"""

from __future__ import annotations

from enum import StrEnum


class AuthMode(StrEnum):
    """One accepted credential path (a value of MEMORY_AUTH_MODE)."""

    LOCAL = "local"
    """Loopback only: one local user, no headers."""
    KEY = "key"
    """X-USER-IDENTITY trusted with a service key in X-API-KEY (the default)."""
    ENTRA = "entra"
    """Authorization: Bearer <Entra ID access token>."""
    PLATFORM = "platform"
    """X-PLATFORM-IDENTITY: <JWT identity context issued by the platform>."""
    EASYAUTH = "easyauth"
    """X-MS-CLIENT-PRINCIPAL from App Service authentication."""


PRECEDENCE: tuple[AuthMode, ...] = (
    AuthMode.ENTRA,
    AuthMode.PLATFORM,
    AuthMode.EASYAUTH,
    AuthMode.KEY,
    AuthMode.LOCAL,
)
"""The order paths are tried in; the first whose credential is present decides (the same order as
``memory_core.settings.AUTH_MODE_PRECEDENCE``, which validates the setting; a test keeps them equal)."""
