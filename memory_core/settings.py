"""Settings: every environment variable the service reads, validated once at start.

Nothing reads the environment anywhere else. Each value is checked on its own
(field validators) and every rule between settings is checked in the model
(``Settings._cross_checks``), so a ``Settings`` object is usable as it is.
``load_settings`` and ``settings_from`` turn a bad value into a
``ConfigurationError`` whose message names the variables.

This module imports nothing of memory_core but the domain's error family and its
grammar of identifiers and host names: identity, the stores and the edge depend on it, never the reverse.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from memory_core.domain.errors import ConfigurationError
from memory_core.domain.host_names import host_name
from memory_core.domain.identity import INSTANCE_ID_PATTERN
from memory_core.wire.field_names import field_name

CommaList = Annotated[tuple[str, ...], NoDecode]

AUTH_MODES: tuple[str, ...] = ("local", "key", "entra", "platform", "easyauth")
"""The values of MEMORY_AUTH_MODE (memory_core.identity.modes.AuthMode)."""
AUTH_MODE_PRECEDENCE: tuple[str, ...] = ("entra", "platform", "easyauth", "key", "local")
"""The order credential paths are tried in; the first whose credential is present decides."""
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
SERVE_SQLITE_PATH = ".data/memory.sqlite3"
"""`serve`'s SQLite file when MEMORY_SQLITE_PATH is unset: relative to the folder it is started in."""
STDIO_SQLITE_NAME = ("memory-core", "memory.db")
"""`mcp`'s SQLite file when MEMORY_SQLITE_PATH is unset, under the user's data folder (``UserFolders``)."""

_GUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def parse_auth_modes(values: tuple[str, ...]) -> tuple[str, ...]:
    """The named modes in precedence order, lower case. ``ValueError`` for an unknown or empty list."""
    known = ", ".join(AUTH_MODES)
    chosen: set[str] = set()
    for raw in values:
        name = raw.strip().lower()
        if not name:
            continue
        if name not in AUTH_MODES:
            raise ValueError(f"unknown mode {raw.strip()[:40]!r}; use a comma list of {known}")
        chosen.add(name)
    if not chosen:
        raise ValueError(f"name at least one mode: a comma list of {known}")
    return tuple(m for m in AUTH_MODE_PRECEDENCE if m in chosen)


def _split(value: object) -> object:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


class Settings(BaseSettings):
    """The service's configuration; field names are the environment variable names."""

    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", frozen=True)

    memory_store: Literal["sqlite", "cosmos"] = "sqlite"
    memory_sqlite_path: str | None = None
    """The SQLite file; unset: chosen by how the process serves (``sqlite_path``)."""
    memory_api_keys: CommaList = Field(default=(), repr=False)
    memory_operator_keys: CommaList = Field(default=(), repr=False)
    memory_max_write_bytes: int = Field(default=64 * 1024, gt=0, le=16 * 1024 * 1024)
    memory_read_cache_mb: int = Field(default=128, ge=1, le=64 * 1024)
    """The most that everything reads keep in a process may hold together, in MiB (``domain.kept``)."""
    memory_default_instance_id: str | None = None
    memory_deletion_mode: Literal["operator_approval", "immediate"] = "operator_approval"
    memory_sweep_schedule: str = "0 */5 * * * *"
    # Retention (days; unset: keep forever). Audit events, and executed or rejected
    # deletion requests; memory, holds and undecided requests never expire.
    memory_audit_retention_days: int | None = Field(default=None, ge=1, le=36500)
    memory_deletion_retention_days: int | None = Field(default=None, ge=1, le=36500)
    memory_sharing_default_policy: Literal["private", "team", "legacy"] = "private"
    memory_sharing_allow_override: bool = False

    cosmos_endpoint: str | None = None
    cosmos_database: str = "memory"
    cosmos_container: str = "Memories"
    cosmos_key: SecretStr | None = None
    cosmos_ca_bundle: str | None = None
    cosmos_connection_timeout: float = Field(default=5.0, gt=0, le=120)
    cosmos_read_timeout: float = Field(default=30.0, gt=0, le=600)
    cosmos_operation_timeout: float = Field(default=20.0, gt=0, le=600)

    memory_mcp_request_timeout: float = Field(default=30.0, gt=0, le=600)
    """Seconds the hosted MCP endpoint answers a request within (``mcp.front.McpHttpApp``'s time bound)."""
    memory_mcp_queue_length: int = Field(default=40, ge=0, le=1000)
    """Calls of one user that may wait for a place in that user's share of the hosted MCP endpoint's worker threads
    (``mcp.stalled``), per process; past it a call is refused (429 ``too_many_calls``). 0: refused at once."""
    memory_mcp_queue_wait: float = Field(default=10.0, gt=0, le=600)
    """Seconds a call may wait in that line (and at most half of ``memory_mcp_request_timeout``, so that it has time
    left to run); past it the call is refused (429 ``too_many_calls``)."""

    memory_allowed_hosts: CommaList = ()
    memory_mcp_allowed_hosts: CommaList = ()  # the older name of MEMORY_ALLOWED_HOSTS, still read
    website_hostname: str | None = None
    memory_coreapi_base_url: str | None = None
    memory_coreapi_key: SecretStr | None = None

    # Identity (memory_core.identity; docs/identity.md); the rules between them are in _cross_checks.
    memory_auth_mode: CommaList = ("key",)
    memory_entra_tenant_id: str | None = None
    memory_entra_audience: CommaList = ()
    memory_entra_jwks_url: str | None = None
    memory_entra_authority_host: str = "https://login.microsoftonline.com"
    # Scopes MCP clients ask for, published in the MCP endpoint's OAuth metadata (memory_core.mcp.authorization)
    memory_entra_scopes: CommaList = ()
    memory_obo_client_id: str | None = None
    memory_obo_client_secret: SecretStr | None = None
    memory_coreapi_scope: str | None = None
    memory_platform_issuer: str | None = None
    memory_platform_jwks_url: str | None = None
    memory_platform_audience: str | None = None
    memory_operator_role: str = Field(default="Memory.Operator", min_length=1, max_length=256)
    memory_identity_ca_bundle: str | None = None
    website_auth_enabled: str | None = None

    # The web console (memory_core/console; docs/console.md). Public values only: the console's
    # SPA client ID and the API scope it requests in mode entra.
    memory_console_client_id: str | None = Field(default=None, max_length=256)
    memory_console_api_scope: str | None = Field(default=None, max_length=512)

    @field_validator(
        "memory_api_keys", "memory_operator_keys", "memory_allowed_hosts", "memory_mcp_allowed_hosts", mode="before"
    )
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        return _split(value)

    @field_validator("memory_allowed_hosts", "memory_mcp_allowed_hosts", "website_hostname")
    @classmethod
    def _host_names(cls, value: tuple[str, ...] | str | None) -> tuple[str, ...] | str | None:
        """Every name has the ASCII form a Host carries (``host_name``): one without it would never match."""
        for entry in (value,) if isinstance(value, str) else value or ():
            host_name(entry)  # ValueError naming the entry
        return value

    @field_validator("memory_auth_mode", "memory_entra_audience", "memory_entra_scopes", mode="before")
    @classmethod
    def _identity_lists(cls, value: object) -> object:
        return _split(value)

    @field_validator("memory_auth_mode")
    @classmethod
    def _auth_modes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return parse_auth_modes(value)

    @field_validator("memory_sweep_schedule")
    @classmethod
    def _ncrontab(cls, value: str) -> str:
        if len(value.split()) != 6:
            raise ValueError("must be an NCRONTAB expression with six fields: second minute hour day month weekday")
        return value

    @field_validator("memory_default_instance_id")
    @classmethod
    def _instance_id(cls, value: str | None) -> str | None:
        if value is not None and value.strip() and not re.match(INSTANCE_ID_PATTERN, value.strip()):
            raise ValueError("must be an instance id: 1-128 characters, letters, digits, '.', '_', ':' or '-'")
        return value

    @field_validator("memory_store", "memory_deletion_mode", "memory_sharing_default_policy", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value


    @model_validator(mode="after")
    def _cross_checks(self) -> Settings:
        """Every rule between settings; one ``ValueError`` listing all that are broken."""
        problems = [*self._store_problems(), *self._identity_problems(), *self.onward_problems()]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _store_problems(self) -> list[str]:
        if self.memory_store != "cosmos":
            return []
        if not self.cosmos_endpoint:
            return ["COSMOS_ENDPOINT is required when MEMORY_STORE=cosmos"]
        from memory_core.adapters.cosmos_documents import COSMOS_MAX_WRITE_BYTES  # standard library only

        if self.memory_max_write_bytes > COSMOS_MAX_WRITE_BYTES:
            return [
                f"MEMORY_MAX_WRITE_BYTES={self.memory_max_write_bytes} is more than a Cosmos DB item can hold with "
                f"MEMORY_STORE=cosmos: at most {COSMOS_MAX_WRITE_BYTES} (2 MB per item, content escaped at worst, "
                "the other fields)"
            ]
        return []

    def _identity_problems(self) -> list[str]:
        modes = set(self.memory_auth_mode)
        problems: list[str] = []
        if "entra" in modes:
            tenant = (self.memory_entra_tenant_id or "").strip()
            if not tenant or not any(a.strip() for a in self.memory_entra_audience):
                problems.append("MEMORY_AUTH_MODE=entra needs MEMORY_ENTRA_TENANT_ID and MEMORY_ENTRA_AUDIENCE")
            elif not _GUID.match(tenant):
                problems.append("MEMORY_ENTRA_TENANT_ID must be the directory (tenant) ID, a GUID")
        if "platform" in modes and not (
            (self.memory_platform_issuer or "").strip() and (self.memory_platform_jwks_url or "").strip()
        ):
            problems.append("MEMORY_AUTH_MODE=platform needs MEMORY_PLATFORM_ISSUER and MEMORY_PLATFORM_JWKS_URL")
        if "easyauth" in modes and (self.website_auth_enabled or "").strip().lower() != "true":
            problems.append(
                "MEMORY_AUTH_MODE=easyauth needs App Service authentication turned on for this app "
                "(WEBSITE_AUTH_ENABLED is not true): without it X-MS-CLIENT-PRINCIPAL could be sent by anyone"
            )
        both = set(filter(None, self.memory_api_keys)) & set(filter(None, self.memory_operator_keys))
        if both:  # a user-facing integration holding that key would open the operator routes
            problems.append(f"MEMORY_API_KEYS and MEMORY_OPERATOR_KEYS share {len(both)} key(s): an operator key "
                            "must never be a user key")
        deployed = self.deployed_host
        if "local" in modes and deployed:
            problems.append(f"MEMORY_AUTH_MODE=local is refused on a deployed app (WEBSITE_HOSTNAME={deployed})")
        return problems

    def onward_problems(self) -> list[str]:
        """What the MCP endpoint lacks to call a remote CoreAPI (MEMORY_COREAPI_BASE_URL) for its modes."""
        base_url = self.memory_coreapi_base_url or ""
        if not base_url:
            return []
        problems = []
        if not base_url.lower().startswith(("http://", "https://")):
            problems.append("MEMORY_COREAPI_BASE_URL must be an http(s) URL")
        modes = set(self.memory_auth_mode)
        key = self.memory_coreapi_key.get_secret_value() if self.memory_coreapi_key else ""
        if modes & {"key", "local"} and not key:
            problems.append(  # the identity header of key and local callers is forwarded with the CoreAPI's key
                f"MEMORY_COREAPI_KEY is required with MEMORY_COREAPI_BASE_URL when MEMORY_AUTH_MODE has "
                f"{' or '.join(sorted(modes & {'key', 'local'}))}"
            )
        if "entra" not in modes:
            return problems
        missing = [
            name
            for name, value in (
                ("MEMORY_OBO_CLIENT_ID", self.memory_obo_client_id),
                ("MEMORY_OBO_CLIENT_SECRET", self.memory_obo_client_secret),
                ("MEMORY_COREAPI_SCOPE", self.memory_coreapi_scope),
            )
            if not value
        ]
        if missing:
            problems.append(
                f"MEMORY_AUTH_MODE=entra with MEMORY_COREAPI_BASE_URL needs {', '.join(missing)} "
                "(the token is exchanged on behalf of the user, never passed through)"
            )
        if not (self.memory_entra_authority_host or "").lower().startswith("https://"):
            problems.append("MEMORY_ENTRA_AUTHORITY_HOST must be an https URL")
        return problems

    @property
    def deployed_host(self) -> str | None:
        """WEBSITE_HOSTNAME when it names a host other than this machine (the app runs in Azure)."""
        raw = (self.website_hostname or "").strip().lower()
        if not raw:
            return None
        name = raw.split("://", 1)[-1].split("/", 1)[0]
        host = name[1 : name.find("]")] if name.startswith("[") else name.rsplit(":", 1)[0]
        return None if host in LOOPBACK_HOSTS else raw

    @property
    def allowed_hosts(self) -> tuple[str, ...]:
        """The app's extra host names: MEMORY_ALLOWED_HOSTS, then MEMORY_MCP_ALLOWED_HOSTS."""
        return tuple(dict.fromkeys((*self.memory_allowed_hosts, *self.memory_mcp_allowed_hosts)))


def _problem(error: Any) -> str:
    where = field_name(error["loc"]).upper()
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


class UserFolders(BaseSettings):
    """The user's data folder by the platform's convention, read only to place `mcp`'s default store.

    XDG base directories: ``$XDG_DATA_HOME`` (ignored unless absolute, as the specification says), else
    ``~/.local/share``; on Windows ``%LOCALAPPDATA%``, else ``~/AppData/Local``.
    """

    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", frozen=True)

    xdg_data_home: str | None = None
    localappdata: str | None = None
    home: str | None = None

    def data_home(self, *, windows: bool = os.name == "nt") -> Path:
        """The folder; ``ConfigurationError`` when there is no home folder to put it in."""
        if windows and self.localappdata and Path(self.localappdata).is_absolute():
            return Path(self.localappdata)
        if not windows and self.xdg_data_home and Path(self.xdg_data_home).is_absolute():
            return Path(self.xdg_data_home)
        try:
            home = Path(self.home) if self.home and not windows else Path.home()
        except (RuntimeError, KeyError):  # no HOME and no entry in the password database
            raise ConfigurationError(
                "MEMORY_SQLITE_PATH is unset and this user has no home folder to keep memory in: set "
                "MEMORY_SQLITE_PATH to an absolute path") from None
        return home / "AppData" / "Local" if windows else home / ".local" / "share"


def sqlite_path(settings: Settings, *, stdio: bool, windows: bool = os.name == "nt") -> str:
    """The SQLite file a process keeps memory in: MEMORY_SQLITE_PATH when set; else, for `python -m memory_core mcp`
    (``stdio``), ``memory-core/memory.db`` in the user's data folder (``UserFolders``), absolute, because a client
    starts it in a folder of its own choosing (Claude Desktop: ``/``, read-only; Claude Code: each project), and
    every such start must find the same memory; for `serve` and the Functions host, ``SERVE_SQLITE_PATH``.
    ``ConfigurationError`` when the user's data folder cannot be told."""
    if settings.memory_sqlite_path:
        return settings.memory_sqlite_path
    if stdio:
        return str(UserFolders().data_home(windows=windows).joinpath(*STDIO_SQLITE_NAME))
    return SERVE_SQLITE_PATH


def settings_from(values: Mapping[str, Any] | None = None) -> Settings:
    """Settings from ``values`` (field names, any case) over the environment, or the environment alone.

    Raises ``ConfigurationError`` naming every broken setting.
    """
    try:
        return Settings(**{k.lower(): v for k, v in (values or {}).items()})
    except ValidationError as e:
        raise ConfigurationError(f"invalid configuration: {'; '.join(_problem(err) for err in e.errors())}") from None


def load_settings() -> Settings:
    """Read and validate the environment. Raises ``ConfigurationError`` naming the setting."""
    return settings_from()


class StdioLaunch(BaseSettings):
    """Who a ``python -m memory_core mcp`` process serves: its launching configuration (MEMORY_MCP_*).

    Each value stands in for the request header the hosted endpoint would get
    (``memory_core.mcp.stdio.LAUNCH_HEADERS``); none is ever taken from a message.
    Secrets are ``SecretStr`` (never printed) and come from the environment only,
    never from the command line.
    """

    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", frozen=True, env_prefix="MEMORY_MCP_")

    api_key: SecretStr | None = Field(default=None, repr=False)
    """X-API-KEY: a service key (MEMORY_API_KEYS), with ``user_identity``."""
    user_identity: str | None = None
    """X-USER-IDENTITY: the user's identity JSON, believed only with a valid ``api_key``."""
    bearer_token: SecretStr | None = Field(default=None, repr=False)
    """Authorization: Bearer <token> (mode entra)."""
    platform_identity: SecretStr | None = Field(default=None, repr=False)
    """X-PLATFORM-IDENTITY: the platform's signed identity context (mode platform)."""
    instance_id: str | None = None
    agent_object_id: str | None = None
    agent_name: str | None = None
    session_id: str | None = None
    memory_mode: str | None = None


def stdio_launch_from(values: Mapping[str, Any] | None = None) -> StdioLaunch:
    """The MEMORY_MCP_* launching configuration, from ``values`` (field names) over the environment.

    Raises ``ConfigurationError`` naming every broken value.
    """
    try:
        return StdioLaunch(**{k.lower(): v for k, v in (values or {}).items()})
    except ValidationError as e:
        problems = "; ".join(f"MEMORY_MCP_{_problem(err)}" for err in e.errors())
        raise ConfigurationError(f"invalid configuration: {problems}") from None
