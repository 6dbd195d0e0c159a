"""Identity fixtures: generated signing keys, loopback stand-ins for Entra ID, and servers per mode.

Entra ID's and the platform's servers cannot be reached here. ``JwksServer``
serves their signing keys over HTTP on loopback and ``AuthorityServer`` their
token endpoint over HTTPS on loopback (see tests/auth/idp.py); the keys are
generated in the test, so every signature check is real.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from memory_core.settings import Settings, settings_from
from tests.auth.idp import (
    CORE_AUDIENCE,
    CORE_SCOPE,
    MCP_AUDIENCE,
    OBO_CLIENT_ID,
    OBO_CLIENT_SECRET,
    OPERATOR_ROLE,
    PLATFORM_AUDIENCE,
    PLATFORM_ISSUER,
    TENANT_ID,
    AuthorityServer,
    JwksServer,
    SigningKey,
    entra_claims,
    mint,
    new_signing_key,
    platform_claims,
)
from tests.support.cosmos_server import make_localhost_cert
from tests.support.local_server import RunningServer, running_server

DEFAULT_INSTANCE = "auth-default-instance"
ALEX = "alex@contoso.com"
BOB = "bob@contoso.com"
OLIVIA = "olivia.operator@contoso.com"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass(frozen=True)
class Tokens:
    """Mints credentials signed by the stand-in issuers' keys."""

    entra_key: SigningKey
    platform_key: SigningKey

    def entra(self, upn: str | None = ALEX, **claims: Any) -> str:
        return mint(self.entra_key, entra_claims(upn, **claims))

    def operator(self, upn: str = OLIVIA, **claims: Any) -> str:
        return self.entra(upn, roles=(OPERATOR_ROLE,), **claims)

    def platform(self, upn: str | None = ALEX, **claims: Any) -> str:
        return mint(self.platform_key, platform_claims(upn, **claims))

    def bearer(self, upn: str | None = ALEX, **claims: Any) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.entra(upn, **claims)}"}

    def operator_bearer(self, upn: str = OLIVIA) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.operator(upn)}"}

    def platform_header(self, upn: str | None = ALEX, **claims: Any) -> dict[str, str]:
        return {"X-PLATFORM-IDENTITY": self.platform(upn, **claims)}


def client_principal(upn: str | None = ALEX, *, roles: tuple[str, ...] = (), name: str = "Alex") -> str:
    """An X-MS-CLIENT-PRINCIPAL value as App Service authentication injects it."""
    claims = [{"typ": "name", "val": name}, {"typ": "http://schemas.microsoft.com/identity/claims/objectidentifier",
                                              "val": "oid-1"}, {"typ": "groups", "val": "g-1"}]
    if upn is not None:
        claims.append({"typ": "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/upn", "val": upn})
    claims += [{"typ": "roles", "val": role} for role in roles]
    document = {
        "auth_typ": "aad",
        "name_typ": "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
        "role_typ": "roles",
        "claims": claims,
    }
    return base64.b64encode(json.dumps(document).encode()).decode()


@pytest.fixture(scope="session")
def entra_key() -> SigningKey:
    return new_signing_key("entra-key-1")


@pytest.fixture(scope="session")
def platform_key() -> SigningKey:
    return new_signing_key("platform-key-1")


@pytest.fixture(scope="session")
def tokens(entra_key: SigningKey, platform_key: SigningKey) -> Tokens:
    return Tokens(entra_key, platform_key)


@pytest.fixture(scope="session")
def jwks(entra_key: SigningKey, platform_key: SigningKey) -> Iterator[JwksServer]:
    """The issuers' JWKS over HTTP on loopback, standing in for Entra ID's and the platform's."""
    server = JwksServer()
    server.publish("entra", entra_key)
    server.publish("platform", platform_key)
    yield server
    server.close()


@pytest.fixture(scope="session")
def tls_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A loopback certificate that is its own trust anchor (cert path doubles as the CA bundle)."""
    return make_localhost_cert(tmp_path_factory.mktemp("authority-tls"))


@pytest.fixture(scope="session")
def authority(tls_cert: tuple[str, str], entra_key: SigningKey) -> Iterator[AuthorityServer]:
    """Entra ID's authority (discovery + OBO token endpoint) over HTTPS on loopback."""
    server = AuthorityServer(*tls_cert, entra_key)
    yield server
    server.close()


def identity_settings(jwks: JwksServer, **overrides: Any) -> dict[str, str]:
    """Environment for a server accepting Entra tokens for the CoreAPI, platform contexts and keys."""
    env = {
        "MEMORY_AUTH_MODE": "entra,platform,key",
        "MEMORY_ENTRA_TENANT_ID": TENANT_ID,
        "MEMORY_ENTRA_AUDIENCE": CORE_AUDIENCE,
        "MEMORY_ENTRA_JWKS_URL": jwks.url("entra"),
        "MEMORY_PLATFORM_ISSUER": PLATFORM_ISSUER,
        "MEMORY_PLATFORM_JWKS_URL": jwks.url("platform"),
        "MEMORY_PLATFORM_AUDIENCE": PLATFORM_AUDIENCE,
        "MEMORY_DEFAULT_INSTANCE_ID": DEFAULT_INSTANCE,
        "MEMORY_MCP_ALLOWED_HOSTS": "",
        "WEBSITE_HOSTNAME": "",
        "MEMORY_STORE": "sqlite",
        "MEMORY_COREAPI_BASE_URL": "",
    }
    env.update(overrides)
    return env


def settings_of(env: dict[str, str]) -> Settings:
    """Settings from an environment dict (names as environment variables); ``ConfigurationError`` as at start."""
    return settings_from(env)


@pytest.fixture(scope="session")
def identity_server(jwks: JwksServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """memory-core with MEMORY_AUTH_MODE=entra,platform,key (the CoreAPI audience), stores in process."""
    with running_server(tmp_path_factory.mktemp("identity-server"), identity_settings(jwks)) as server:
        yield server


@pytest.fixture(scope="session")
def mcp_front(
    identity_server: RunningServer,
    jwks: JwksServer,
    authority: AuthorityServer,
    tls_cert: tuple[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RunningServer]:
    """An MCP front (entra,platform; its own audience) whose tools call identity_server's CoreAPI,
    exchanging Entra tokens on behalf of the user at the loopback authority. No CoreAPI key."""
    env = identity_settings(
        jwks,
        MEMORY_AUTH_MODE="entra,platform",
        MEMORY_ENTRA_AUDIENCE=MCP_AUDIENCE,
        MEMORY_COREAPI_BASE_URL=identity_server.api,
        MEMORY_COREAPI_KEY="",
        MEMORY_COREAPI_SCOPE=CORE_SCOPE,
        MEMORY_OBO_CLIENT_ID=OBO_CLIENT_ID,
        MEMORY_OBO_CLIENT_SECRET=OBO_CLIENT_SECRET,
        MEMORY_ENTRA_AUTHORITY_HOST=authority.authority_host,
        MEMORY_IDENTITY_CA_BUNDLE=tls_cert[0],
        MEMORY_API_KEYS="",
    )
    with running_server(tmp_path_factory.mktemp("mcp-front"), env) as server:
        yield server


@pytest.fixture(scope="session")
def easyauth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """memory-core with MEMORY_AUTH_MODE=easyauth, as if App Service authentication were on."""
    env = {"MEMORY_AUTH_MODE": "easyauth", "WEBSITE_AUTH_ENABLED": "True", "WEBSITE_HOSTNAME": ""}
    with running_server(tmp_path_factory.mktemp("easyauth-server"), env) as server:
        yield server


@pytest.fixture(scope="session")
def local_mode_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """memory-core with MEMORY_AUTH_MODE=local on 127.0.0.1."""
    env = {"MEMORY_AUTH_MODE": "local", "WEBSITE_HOSTNAME": "", "MEMORY_DEFAULT_INSTANCE_ID": DEFAULT_INSTANCE,
           "MEMORY_MCP_ALLOWED_HOSTS": ""}
    with running_server(tmp_path_factory.mktemp("local-mode-server"), env) as server:
        yield server
