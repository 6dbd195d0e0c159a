"""Settings: every environment variable the service reads, validated once at start.

Nothing reads the environment anywhere else. ``load_settings`` turns a bad value
into a ``ConfigurationError`` whose message names the variable.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from memory_core.domain.errors import ConfigurationError

CommaList = Annotated[tuple[str, ...], NoDecode]


def _split(value: object) -> object:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


class Settings(BaseSettings):
    """The service's configuration; field names are the environment variable names."""

    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", frozen=True)

    memory_store: Literal["sqlite", "cosmos"] = "sqlite"
    memory_sqlite_path: str = ".data/memory.sqlite3"
    memory_api_keys: CommaList = Field(default=(), repr=False)
    memory_operator_keys: CommaList = Field(default=(), repr=False)
    memory_max_write_bytes: int = Field(default=64 * 1024, gt=0, le=16 * 1024 * 1024)
    memory_default_instance_id: str | None = None
    memory_deletion_mode: Literal["operator_approval", "immediate"] = "operator_approval"
    memory_sweep_schedule: str = "0 */5 * * * *"
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

    memory_allowed_hosts: CommaList = ()
    memory_mcp_allowed_hosts: CommaList = ()  # the older name of MEMORY_ALLOWED_HOSTS, still read
    website_hostname: str | None = None
    memory_coreapi_base_url: str | None = None
    memory_coreapi_key: SecretStr | None = None

    # Identity (memory_core.identity; docs/identity.md). Cross-setting checks run when the
    # authenticator is built (memory_core.identity.config), still at start.
    memory_auth_mode: CommaList = ("key",)
    memory_entra_tenant_id: str | None = None
    memory_entra_audience: CommaList = ()
    memory_entra_jwks_url: str | None = None
    memory_entra_authority_host: str = "https://login.microsoftonline.com"
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

    @field_validator("memory_auth_mode", "memory_entra_audience", mode="before")
    @classmethod
    def _identity_lists(cls, value: object) -> object:
        return _split(value)

    @field_validator("memory_auth_mode")
    @classmethod
    def _auth_modes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from memory_core.identity.modes import ordered, parse_modes

        return tuple(mode.value for mode in ordered(parse_modes(value)))

    @field_validator("memory_sweep_schedule")
    @classmethod
    def _ncrontab(cls, value: str) -> str:
        if len(value.split()) != 6:
            raise ValueError("must be an NCRONTAB expression with six fields: second minute hour day month weekday")
        return value

    @field_validator("memory_store", "memory_deletion_mode", "memory_sharing_default_policy", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value


    @property
    def allowed_hosts(self) -> tuple[str, ...]:
        """The app's extra host names: MEMORY_ALLOWED_HOSTS, then MEMORY_MCP_ALLOWED_HOSTS."""
        return tuple(dict.fromkeys((*self.memory_allowed_hosts, *self.memory_mcp_allowed_hosts)))


def load_settings() -> Settings:
    """Read and validate the environment. Raises ``ConfigurationError`` naming the setting."""
    try:
        settings = Settings()
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']).upper()}: {err['msg']}" for err in e.errors()
        )
        raise ConfigurationError(f"invalid configuration: {problems}") from None
    if settings.memory_store == "cosmos" and not settings.cosmos_endpoint:
        raise ConfigurationError("invalid configuration: COSMOS_ENDPOINT is required when MEMORY_STORE=cosmos")
    if settings.memory_store == "cosmos":
        # Standard library only: the item layout's limits, not the Cosmos SDK.
        from memory_core.adapters.cosmos_documents import COSMOS_MAX_WRITE_BYTES

        if settings.memory_max_write_bytes > COSMOS_MAX_WRITE_BYTES:
            raise ConfigurationError(
                f"invalid configuration: MEMORY_MAX_WRITE_BYTES={settings.memory_max_write_bytes} is more than a "
                f"Cosmos DB item can hold with MEMORY_STORE=cosmos: at most {COSMOS_MAX_WRITE_BYTES} "
                "(2 MB per item, content escaped at worst, the other fields)"
            )
    return settings
