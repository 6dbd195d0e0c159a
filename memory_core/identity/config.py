"""Building the authenticator from settings, refusing at start what only building can find out.

Every refusal is a ``ConfigurationError`` naming the settings to fix. Rules
between settings are the settings model's own (``memory_core.settings``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from memory_core.domain.errors import ConfigurationError
from memory_core.identity.authenticator import Authenticator
from memory_core.identity.easyauth import EasyAuthPath
from memory_core.identity.keys import KeyPath
from memory_core.identity.local import LocalPath, is_loopback
from memory_core.identity.model import CredentialPath
from memory_core.identity.modes import AuthMode
from memory_core.identity.tokens import (
    EntraPath,
    JwtVerifier,
    PlatformPath,
    TokenPolicy,
    audiences,
    entra_issuers,
    entra_jwks_url,
    ssl_context_for,
)

if TYPE_CHECKING:  # pydantic-settings loads with the composition root, not at import (cold start)
    from memory_core.settings import Settings

def _refuse(message: str) -> ConfigurationError:
    return ConfigurationError(f"invalid configuration: {message}")


def auth_modes(settings: Settings) -> frozenset[AuthMode]:
    """The enabled modes (MEMORY_AUTH_MODE, already validated by Settings)."""
    return frozenset(AuthMode(mode) for mode in settings.memory_auth_mode)


def check_fetch_url(name: str, url: str) -> str:
    """``url`` when it is https, or http on a loopback host (tests); else ``ConfigurationError`` naming ``name``."""
    parts = urlsplit(url.strip())
    if parts.scheme == "https" and parts.hostname:
        return url.strip()
    if parts.scheme == "http" and parts.hostname and is_loopback(parts.hostname):
        return url.strip()
    raise _refuse(f"{name} must be an https URL (http is accepted only on a loopback address)")


def _check_ca_bundle(settings: Settings) -> str | None:
    path = settings.memory_identity_ca_bundle
    if path and not os.path.isfile(path):
        raise _refuse("MEMORY_IDENTITY_CA_BUNDLE names no readable file")
    return path or None


# The rules between settings (a mode's required settings, local mode off a deployed app, the
# on-behalf-of settings) are checked by Settings itself; what is left here needs the file
# system, the network or the process: URLs to fetch keys from, the CA bundle, the listen address.


def _entra_path(settings: Settings) -> EntraPath:
    tenant = (settings.memory_entra_tenant_id or "").strip()
    jwks = check_fetch_url("MEMORY_ENTRA_JWKS_URL", settings.memory_entra_jwks_url or entra_jwks_url(tenant))
    policy = TokenPolicy(issuers=entra_issuers(tenant.lower()), audiences=audiences(settings.memory_entra_audience))
    return EntraPath(JwtVerifier(jwks, policy, ssl_context=ssl_context_for(_check_ca_bundle(settings))))


def _platform_path(settings: Settings) -> PlatformPath:
    issuer = (settings.memory_platform_issuer or "").strip()
    jwks = check_fetch_url("MEMORY_PLATFORM_JWKS_URL", (settings.memory_platform_jwks_url or "").strip())
    audience = (settings.memory_platform_audience or "").strip()
    policy = TokenPolicy(issuers=(issuer,), audiences=(audience,) if audience else ())
    return PlatformPath(JwtVerifier(jwks, policy, ssl_context=ssl_context_for(_check_ca_bundle(settings))))


def _local_path(listen_address: str | None, stdio: bool) -> LocalPath:
    if stdio:
        return LocalPath()  # no socket listens: only the process that launched this one can reach it
    if listen_address is None:
        raise _refuse(
            "MEMORY_AUTH_MODE=local is accepted only under `python -m memory_core serve` on a loopback address "
            "or `python -m memory_core mcp` (stdio)"
        )
    if not is_loopback(listen_address):
        raise _refuse(f"MEMORY_AUTH_MODE=local is refused: the server listens on {listen_address}, not on loopback")
    return LocalPath()


def build_authenticator(
    settings: Settings, *, listen_address: str | None = None, stdio: bool = False
) -> Authenticator:
    """The authenticator MEMORY_AUTH_MODE selects. ``ConfigurationError`` for unusable settings.

    ``listen_address``: where `python -m memory_core serve` listens (None under any other host);
    ``stdio``: this process is `python -m memory_core mcp`, reached only over its own stdin and
    stdout. Local mode is accepted only on a loopback listen address or over stdio.
    """
    builders: dict[AuthMode, Callable[[Settings], CredentialPath]] = {
        AuthMode.ENTRA: _entra_path,
        AuthMode.PLATFORM: _platform_path,
        AuthMode.EASYAUTH: lambda _: EasyAuthPath(),
        AuthMode.KEY: lambda s: KeyPath(s.memory_api_keys),
        AuthMode.LOCAL: lambda _: _local_path(listen_address, stdio),
    }
    modes = sorted(auth_modes(settings), key=lambda m: m.value)
    paths: list[CredentialPath] = [builders[mode](settings) for mode in modes]
    return Authenticator(
        paths,
        api_keys=settings.memory_api_keys,
        operator_keys=settings.memory_operator_keys,
        operator_role=settings.memory_operator_role.strip(),
    )
