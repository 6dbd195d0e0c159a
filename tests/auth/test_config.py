"""Identity settings are checked at start: an unusable combination stops the start, naming the setting."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core.domain.errors import ConfigurationError
from memory_core.identity import AuthMode, build_authenticator
from memory_core.identity.modes import PRECEDENCE
from memory_core.mcp.backend import CoreApiBackend
from memory_core.settings import AUTH_MODE_PRECEDENCE, AUTH_MODES, load_settings, settings_from
from tests.auth.conftest import identity_settings, settings_of
from tests.auth.idp import CORE_SCOPE, OBO_CLIENT_ID, OBO_CLIENT_SECRET, JwksServer
from tests.support.local_server import PROJECT_ROOT, free_port


def _refusal(env: dict[str, str], listen_address: str | None = None) -> str:
    with pytest.raises(ConfigurationError) as caught:
        build_authenticator(settings_of(env), listen_address=listen_address)
    return str(caught.value)


def test_default_mode_is_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without MEMORY_AUTH_MODE the service accepts keys only."""
    monkeypatch.delenv("MEMORY_AUTH_MODE", raising=False)
    assert build_authenticator(load_settings()).modes == {AuthMode.KEY}


@pytest.mark.parametrize("value", ["key,magic", "oauth", " , "])
def test_unknown_or_empty_mode_stops_the_start(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    """An unknown or empty MEMORY_AUTH_MODE is a ConfigurationError naming MEMORY_AUTH_MODE."""
    monkeypatch.setenv("MEMORY_AUTH_MODE", value)
    with pytest.raises(ConfigurationError, match="MEMORY_AUTH_MODE"):
        load_settings()


def test_modes_are_case_insensitive_and_combine(jwks: JwksServer) -> None:
    """MEMORY_AUTH_MODE=" Entra , KEY " enables both paths."""
    assert build_authenticator(settings_of(identity_settings(jwks, MEMORY_AUTH_MODE=" Entra , KEY "))).modes == {
        AuthMode.ENTRA,
        AuthMode.KEY,
    }


@pytest.mark.parametrize("missing", ["MEMORY_ENTRA_TENANT_ID", "MEMORY_ENTRA_AUDIENCE"])
def test_entra_without_tenant_or_audience_stops_the_start(jwks: JwksServer, missing: str) -> None:
    """Mode entra needs the tenant and the audience; the message names both."""
    message = _refusal(identity_settings(jwks, **{missing: ""}))
    assert "MEMORY_ENTRA_TENANT_ID" in message and "MEMORY_ENTRA_AUDIENCE" in message


def test_entra_tenant_must_be_the_tenant_id(jwks: JwksServer) -> None:
    """A domain name instead of the tenant GUID is refused (issuers carry the GUID)."""
    assert "MEMORY_ENTRA_TENANT_ID" in _refusal(identity_settings(jwks, MEMORY_ENTRA_TENANT_ID="contoso.com"))


def test_key_set_url_must_be_https_unless_loopback(jwks: JwksServer) -> None:
    """A plain-http JWKS URL is refused unless it is on loopback (as the tests' is)."""
    message = _refusal(identity_settings(jwks, MEMORY_ENTRA_JWKS_URL="http://keys.example.com/keys"))
    assert "MEMORY_ENTRA_JWKS_URL" in message


def test_default_key_set_url_is_the_tenants(jwks: JwksServer) -> None:
    """Without MEMORY_ENTRA_JWKS_URL the keys come from login.microsoftonline.com/{tenant}/discovery/v2.0/keys."""
    env = identity_settings(jwks, MEMORY_AUTH_MODE="entra")
    del env["MEMORY_ENTRA_JWKS_URL"]
    auth = build_authenticator(settings_of(env))
    verifier = auth._paths[0].verifier  # type: ignore[attr-defined]
    assert verifier.jwks_url == f"https://login.microsoftonline.com/{env['MEMORY_ENTRA_TENANT_ID']}/discovery/v2.0/keys"


@pytest.mark.parametrize("missing", ["MEMORY_PLATFORM_ISSUER", "MEMORY_PLATFORM_JWKS_URL"])
def test_platform_without_issuer_or_key_set_stops_the_start(jwks: JwksServer, missing: str) -> None:
    """Mode platform needs the issuer and its JWKS URL."""
    message = _refusal(identity_settings(jwks, **{missing: ""}))
    assert "MEMORY_PLATFORM_ISSUER" in message and "MEMORY_PLATFORM_JWKS_URL" in message


def test_easyauth_needs_app_service_authentication() -> None:
    """Mode easyauth is refused unless App Service reports authentication on (WEBSITE_AUTH_ENABLED)."""
    assert "WEBSITE_AUTH_ENABLED" in _refusal({"MEMORY_AUTH_MODE": "easyauth"})


def test_local_mode_is_refused_when_the_listen_address_is_unknown() -> None:
    """Outside `python -m memory_core serve` (the Functions host, Core Tools) local mode is refused."""
    assert "MEMORY_AUTH_MODE=local" in _refusal({"MEMORY_AUTH_MODE": "local"}, listen_address=None)


def test_local_mode_is_refused_off_loopback() -> None:
    """Local mode on 0.0.0.0 is refused."""
    assert "not on loopback" in _refusal({"MEMORY_AUTH_MODE": "local"}, listen_address="0.0.0.0")


def test_local_mode_is_refused_on_a_deployed_app() -> None:
    """With WEBSITE_HOSTNAME naming an Azure host, local mode is refused even on loopback (by the settings)."""
    env = {"MEMORY_AUTH_MODE": "local", "WEBSITE_HOSTNAME": "func-memory.azurewebsites.net"}
    assert "WEBSITE_HOSTNAME" in _refusal(env, listen_address="127.0.0.1")


def test_local_mode_is_accepted_on_loopback() -> None:
    """Local mode on 127.0.0.1 builds, and names the local user without headers."""
    auth = build_authenticator(settings_of({"MEMORY_AUTH_MODE": "local"}), listen_address="127.0.0.1")
    assert auth.user({}).upn == "local@localhost"


def test_auth_mode_names_and_precedence_agree_with_the_settings() -> None:
    """The settings model validates MEMORY_AUTH_MODE with the same names and order identity uses."""
    assert {m.value for m in AuthMode} == set(AUTH_MODES)
    assert tuple(m.value for m in PRECEDENCE) == AUTH_MODE_PRECEDENCE


def test_settings_import_nothing_of_identity() -> None:
    """The settings<->identity import cycle is gone: loading the settings loads no identity module."""
    code = "import sys\nimport memory_core.settings\nassert not [m for m in sys.modules if m.startswith('memory_core.identity')]"
    completed = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


def test_entra_with_a_remote_coreapi_needs_the_exchange_settings(jwks: JwksServer) -> None:
    """Entra callers and MEMORY_COREAPI_BASE_URL need the on-behalf-of client and scope (no passthrough)."""
    message = _refusal(identity_settings(jwks, MEMORY_COREAPI_BASE_URL="https://core.example.com/api"))
    assert all(name in message for name in ("MEMORY_OBO_CLIENT_ID", "MEMORY_OBO_CLIENT_SECRET", "MEMORY_COREAPI_SCOPE"))


def test_remote_coreapi_without_key_is_fine_when_no_key_callers(jwks: JwksServer) -> None:
    """A front accepting only tokens needs no MEMORY_COREAPI_KEY: it never forwards a raw identity header."""
    env = identity_settings(
        jwks, MEMORY_AUTH_MODE="entra,platform", MEMORY_COREAPI_BASE_URL="https://core.example.com/api",
        MEMORY_OBO_CLIENT_ID=OBO_CLIENT_ID, MEMORY_OBO_CLIENT_SECRET=OBO_CLIENT_SECRET, MEMORY_COREAPI_SCOPE=CORE_SCOPE,
    )
    CoreApiBackend.from_settings(settings_of(env))


def test_remote_coreapi_for_key_callers_still_needs_the_key(jwks: JwksServer) -> None:
    """With mode key on, MEMORY_COREAPI_BASE_URL still needs MEMORY_COREAPI_KEY."""
    env = identity_settings(jwks, MEMORY_AUTH_MODE="platform,key", MEMORY_COREAPI_BASE_URL="https://core.example.com/api")
    with pytest.raises(ConfigurationError, match="MEMORY_COREAPI_KEY"):
        CoreApiBackend.from_settings(settings_of(env))


def test_missing_ca_bundle_file_stops_the_start(jwks: JwksServer, tmp_path: Path) -> None:
    """MEMORY_IDENTITY_CA_BUNDLE must name a file."""
    message = _refusal(identity_settings(jwks, MEMORY_IDENTITY_CA_BUNDLE=str(tmp_path / "none.pem")))
    assert "MEMORY_IDENTITY_CA_BUNDLE" in message


def _serve(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return _run("serve", args, env)


def _run(command: str, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "COSMOS_", "WEBSITE_"))}
    return subprocess.run([sys.executable, "-m", "memory_core", command, *args], cwd=PROJECT_ROOT, check=False,
                          env={**clean, **env}, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


def test_serve_stops_on_an_unknown_mode(tmp_path: Path) -> None:
    """`serve` with MEMORY_AUTH_MODE=magic exits 2 naming MEMORY_AUTH_MODE."""
    result = _serve(["--port", str(free_port())], {"MEMORY_AUTH_MODE": "magic",
                                                   "MEMORY_SQLITE_PATH": str(tmp_path / "m.db")})
    assert result.returncode == 2 and "MEMORY_AUTH_MODE" in result.stderr


def test_serve_refuses_local_mode_on_a_non_loopback_address(tmp_path: Path) -> None:
    """`serve --host 0.0.0.0` with MEMORY_AUTH_MODE=local exits 2 before listening."""
    result = _serve(["--host", "0.0.0.0", "--port", str(free_port())],
                    {"MEMORY_AUTH_MODE": "local", "MEMORY_SQLITE_PATH": str(tmp_path / "m.db")})
    assert result.returncode == 2 and "not on loopback" in result.stderr


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_a_remote_coreapi_without_its_key_stops_the_start(tmp_path: Path, command: str) -> None:
    """MEMORY_COREAPI_BASE_URL for key callers without MEMORY_COREAPI_KEY stops `serve` and the stdio server (exit 2,
    naming the setting), rather than every MCP request answering 500 once started."""
    env = {"MEMORY_COREAPI_BASE_URL": "https://core.example.com/api", "MEMORY_SQLITE_PATH": str(tmp_path / "m.db"),
           "MEMORY_AUTH_MODE": "local" if command == "mcp" else "key"}
    result = _run(command, ["--port", str(free_port())] if command == "serve" else [], env)
    assert result.returncode == 2, result.stderr
    assert "MEMORY_COREAPI_KEY is required" in result.stderr and "Traceback" not in result.stderr


def test_a_default_instance_that_no_route_accepts_stops_the_start(tmp_path: Path) -> None:
    """MEMORY_DEFAULT_INSTANCE_ID must be an instance id: `serve` exits 2 naming it, not a tool error per call."""
    result = _serve(["--port", str(free_port())], {"MEMORY_DEFAULT_INSTANCE_ID": "bad id",
                                                   "MEMORY_SQLITE_PATH": str(tmp_path / "m.db")})
    assert result.returncode == 2 and "MEMORY_DEFAULT_INSTANCE_ID" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_key_that_is_both_a_user_key_and_an_operator_key_stops_the_start() -> None:
    """A user-facing integration holding such a key would open the operator routes: refused, naming both settings
    and never the key."""
    with pytest.raises(ConfigurationError, match="MEMORY_API_KEYS and MEMORY_OPERATOR_KEYS share 1 key") as refused:
        settings_from({"MEMORY_API_KEYS": "user-key,shared-key", "MEMORY_OPERATOR_KEYS": "shared-key,op-key"})
    assert "shared-key" not in str(refused.value)
    settings_from({"MEMORY_API_KEYS": "user-key", "MEMORY_OPERATOR_KEYS": "op-key"})


def test_a_store_path_that_cannot_be_opened_stops_the_start_in_one_line(tmp_path: Path) -> None:
    """MEMORY_SQLITE_PATH under a file (no directory can be made there): `serve` exits 2 with one line naming the
    setting; it ended in a traceback."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = _serve(["--port", str(free_port())], {"MEMORY_SQLITE_PATH": str(blocker / "memory.sqlite3")})
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert "MEMORY_SQLITE_PATH" in line and "cannot be opened" in line
