"""MEMORY_AUTH_MODE: which credential paths a deployment accepts.

Kept free of heavy imports: ``memory_core.settings`` validates the setting with
``parse_modes`` while the environment is read.
"""

from __future__ import annotations

from collections.abc import Iterable
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
"""The order paths are tried in; the first whose credential is present decides."""


def parse_modes(values: Iterable[str]) -> frozenset[AuthMode]:
    """The modes named in ``values`` (case-insensitive). ``ValueError`` for an unknown or empty list."""
    modes: set[AuthMode] = set()
    known = ", ".join(m.value for m in AuthMode)
    for raw in values:
        name = raw.strip().lower()
        if not name:
            continue
        try:
            modes.add(AuthMode(name))
        except ValueError:
            raise ValueError(f"unknown mode {raw.strip()[:40]!r}; use a comma list of {known}") from None
    if not modes:
        raise ValueError(f"name at least one mode: a comma list of {known}")
    return frozenset(modes)


def ordered(modes: Iterable[AuthMode]) -> tuple[AuthMode, ...]:
    """``modes`` in precedence order."""
    chosen = set(modes)
    return tuple(m for m in PRECEDENCE if m in chosen)
