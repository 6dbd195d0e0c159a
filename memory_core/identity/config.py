"""Building the authenticator from settings, and refusing unusable identity settings at start.

Every refusal is a ``ConfigurationError`` naming the settings to fix.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from memory_core.domain.errors import ConfigurationError
from memory_core.identity.authenticator import Authenticator
from memory_core.identity.easyauth import EasyAuthPath
from memory_core.identity.keys import KeyPath
from memory_core.identity.local import LocalPath, is_loopback, listen_address
from memory_core.identity.model import CredentialPath
from memory_core.identity.modes import AuthMode, parse_modes
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

_GUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def _refuse(message: str) -> ConfigurationError:
    return ConfigurationError(f"invalid configuration: {message}")


def auth_modes(settings: Settings) -> frozenset[AuthMode]:
    """The enabled modes (MEMORY_AUTH_MODE, already validated by Settings)."""
    try:
        return parse_modes(settings.memory_auth_mode)
    except ValueError as error:
        raise _refuse(f"MEMORY_AUTH_MODE: {error}") from None


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


def _deployed_host(settings: Settings) -> str | None:
    """WEBSITE_HOSTNAME when it names a host other than this machine (the app runs in Azure)."""
    raw = (settings.website_hostname or "").strip().lower()
    if not raw:
        return None
    name = raw.split("://", 1)[-1].split("/", 1)[0]
    host = name[1 : name.find("]")] if name.startswith("[") else name.rsplit(":", 1)[0]
    return None if host in ("localhost", "127.0.0.1", "::1") else raw


def _entra_path(settings: Settings) -> EntraPath:
    tenant = (settings.memory_entra_tenant_id or "").strip()
    accepted = audiences(settings.memory_entra_audience)
    if not tenant or not accepted:
        raise _refuse("MEMORY_AUTH_MODE=entra needs MEMORY_ENTRA_TENANT_ID and MEMORY_ENTRA_AUDIENCE")
    if not _GUID.match(tenant):
        raise _refuse("MEMORY_ENTRA_TENANT_ID must be the directory (tenant) ID, a GUID")
    jwks = check_fetch_url("MEMORY_ENTRA_JWKS_URL", settings.memory_entra_jwks_url or entra_jwks_url(tenant))
    policy = TokenPolicy(issuers=entra_issuers(tenant.lower()), audiences=accepted)
    return EntraPath(JwtVerifier(jwks, policy, ssl_context=ssl_context_for(_check_ca_bundle(settings))))


def _platform_path(settings: Settings) -> PlatformPath:
    issuer = (settings.memory_platform_issuer or "").strip()
    jwks = (settings.memory_platform_jwks_url or "").strip()
    if not issuer or not jwks:
        raise _refuse("MEMORY_AUTH_MODE=platform needs MEMORY_PLATFORM_ISSUER and MEMORY_PLATFORM_JWKS_URL")
    jwks = check_fetch_url("MEMORY_PLATFORM_JWKS_URL", jwks)
    audience = (settings.memory_platform_audience or "").strip()
    policy = TokenPolicy(issuers=(issuer,), audiences=(audience,) if audience else ())
    return PlatformPath(JwtVerifier(jwks, policy, ssl_context=ssl_context_for(_check_ca_bundle(settings))))


def _easyauth_path(settings: Settings) -> EasyAuthPath:
    if (settings.website_auth_enabled or "").strip().lower() != "true":
        raise _refuse(
            "MEMORY_AUTH_MODE=easyauth needs App Service authentication turned on for this app "
            "(WEBSITE_AUTH_ENABLED is not true): without it X-MS-CLIENT-PRINCIPAL could be sent by anyone"
        )
    return EasyAuthPath()


def _local_path(settings: Settings) -> LocalPath:
    deployed = _deployed_host(settings)
    if deployed:
        raise _refuse(f"MEMORY_AUTH_MODE=local is refused on a deployed app (WEBSITE_HOSTNAME={deployed})")
    address = listen_address()
    if address is None:
        raise _refuse(
            "MEMORY_AUTH_MODE=local is accepted only under `python -m memory_core serve` on a loopback address"
        )
    if not is_loopback(address):
        raise _refuse(f"MEMORY_AUTH_MODE=local is refused: the server listens on {address}, not on loopback")
    return LocalPath()


def onward_problems(settings: Settings, modes: frozenset[AuthMode]) -> list[str]:
    """What the MCP endpoint lacks to call a remote CoreAPI (MEMORY_COREAPI_BASE_URL) for these modes."""
    if not settings.memory_coreapi_base_url:
        return []
    problems = []
    if AuthMode.ENTRA in modes:
        missing = [
            name
            for name, value in (
                ("MEMORY_OBO_CLIENT_ID", settings.memory_obo_client_id),
                ("MEMORY_OBO_CLIENT_SECRET", settings.memory_obo_client_secret),
                ("MEMORY_COREAPI_SCOPE", settings.memory_coreapi_scope),
            )
            if not value
        ]
        if missing:
            problems.append(
                f"MEMORY_AUTH_MODE=entra with MEMORY_COREAPI_BASE_URL needs {', '.join(missing)} "
                "(the token is exchanged on behalf of the user, never passed through)"
            )
        if not (settings.memory_entra_authority_host or "").lower().startswith("https://"):
            problems.append("MEMORY_ENTRA_AUTHORITY_HOST must be an https URL")
    return problems


def build_authenticator(settings: Settings) -> Authenticator:
    """The authenticator MEMORY_AUTH_MODE selects. ``ConfigurationError`` for unusable settings."""
    modes = auth_modes(settings)
    builders: dict[AuthMode, Callable[[Settings], CredentialPath]] = {
        AuthMode.ENTRA: _entra_path,
        AuthMode.PLATFORM: _platform_path,
        AuthMode.EASYAUTH: _easyauth_path,
        AuthMode.KEY: lambda s: KeyPath(s.memory_api_keys),
        AuthMode.LOCAL: _local_path,
    }
    paths: list[CredentialPath] = [builders[mode](settings) for mode in sorted(modes, key=lambda m: m.value)]
    problems = onward_problems(settings, modes)
    if problems:
        raise _refuse("; ".join(problems))
    return Authenticator(
        paths,
        api_keys=settings.memory_api_keys,
        operator_keys=settings.memory_operator_keys,
        operator_role=settings.memory_operator_role.strip(),
    )
