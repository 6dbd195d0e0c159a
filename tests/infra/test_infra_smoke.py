"""infra/smoke.sh against a real `python -m memory_core serve` (tests/support/local_server.py).

The app's settings come from the fake az (tests/infra/fake_az.py), which stands in for
Azure's control plane: a deploy into it generates the keys, and the local server is started
with the same keys, so smoke.sh reads them from "Azure" exactly as it would from a real
tenant. The HTTP calls, the MCP protocol eras and the custody round trip are all real.
Entra ID's servers cannot run here: tests/auth/idp.py mints real RS256 tokens and serves
their JWKS on loopback.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.auth.idp import CORE_AUDIENCE, TENANT_ID, JwksServer, entra_claims, mint, new_signing_key
from tests.infra.infra_support import AzureEnv, command_words
from tests.support.local_server import running_server

CHECK = re.compile(r"^(ok|FAIL)\s+(\d+) ms\s+(.*)$")
EXPECTED_CHECKS = [
    "OpenAPI document", "append (authenticated)", "read back", "clear", "read after clear",
    "MCP server/discover (2026-07-28)", "MCP tools/list (2026-07-28)", "MCP tools/call get_memory (2026-07-28)",
    "MCP initialize (2025-06-18)", "MCP tools/list (2025-06-18)",
]


def _checks(stdout: str) -> list[tuple[str, int, str]]:
    return [(m.group(1), int(m.group(2)), m.group(3)) for m in map(CHECK.match, stdout.splitlines()) if m]


@pytest.fixture(scope="module")
def tenant(tmp_path_factory) -> AzureEnv:
    """Tenant acme provisioned (no code) into a fake Azure; its keys are in the app settings."""
    azure = AzureEnv(tmp_path_factory.mktemp("smoke-tenant"))
    azure.deploy("--no-code")
    return azure


def _server_env(azure: AzureEnv, **extra: str) -> dict[str, str]:
    settings = azure.settings()
    return {"MEMORY_API_KEYS": settings["MEMORY_API_KEYS"], "MEMORY_OPERATOR_KEYS": settings["MEMORY_OPERATOR_KEYS"],
            **extra}


def test_smoke_test_passes_against_a_working_app(tenant, tmp_path: Path):
    """Every check passes against a real server holding the tenant's keys, each with its latency;
    the throwaway memory is approved and swept away, and no key appears in the output."""
    with running_server(tmp_path, _server_env(tenant)) as server:
        proc = tenant.run("smoke.sh", "--tenant", "acme", "--base-url", server.base_url)
    checks = _checks(proc.stdout)
    assert [name.split(":")[0] for _, _, name in checks] == EXPECTED_CHECKS
    assert all(status == "ok" for status, _, _ in checks), proc.stdout
    assert "approved and swept" in proc.stdout and "smoke test passed" in proc.stdout
    for key in _server_env(tenant).values():
        assert key not in proc.stdout + proc.stderr
        assert key not in str(tenant.calls())


def test_smoke_test_fails_loudly_when_the_keys_do_not_match(tenant, tmp_path: Path):
    """An app whose keys differ from its settings (a broken rotation) fails the authenticated
    checks with the HTTP status, and the script exits non-zero; the OpenAPI check still passes."""
    with running_server(tmp_path, {"MEMORY_API_KEYS": "other-key", "MEMORY_OPERATOR_KEYS": "other-op"}) as server:
        proc = tenant.run("smoke.sh", "--tenant", "acme", "--base-url", server.base_url, check=False)
    checks = {name.split(":")[0]: status for status, _, name in _checks(proc.stdout)}
    assert proc.returncode == 1
    assert checks["OpenAPI document"] == "ok"
    assert checks["append (authenticated)"] == "FAIL" and checks["MCP tools/call get_memory (2026-07-28)"] == "FAIL"
    assert "HTTP 401" in proc.stdout and "smoke test FAILED" in proc.stdout


def test_smoke_test_reports_an_unreachable_app(tenant, tmp_path: Path):
    """Nothing listening: every check fails with the connection error, quickly."""
    proc = tenant.run("smoke.sh", "--tenant", "acme", "--base-url", "http://127.0.0.1:9", "--timeout", "5", check=False)
    assert proc.returncode == 1
    assert {status for status, _, _ in _checks(proc.stdout)} == {"FAIL"}


def test_deploy_ends_with_the_smoke_test(tmp_path: Path, monkeypatch):
    """deploy.sh runs the smoke test last (the app's URL overridden to the local server), and
    its failure fails the deploy; --no-smoke skips it."""
    azure = AzureEnv(tmp_path / "azure")
    azure.deploy("--no-code")
    with running_server(tmp_path, _server_env(azure)) as server:
        monkeypatch.setenv("MEMORY_SMOKE_BASE_URL", server.base_url)
        proc = azure.deploy(smoke=True)
        assert "smoke test passed" in proc.stdout
        assert _checks(proc.stdout)[-1][2].startswith("MCP tools/list (2025-06-18)")
        skipped = azure.deploy()
        assert "smoke test" not in skipped.stdout
    monkeypatch.setenv("MEMORY_SMOKE_BASE_URL", "http://127.0.0.1:9")
    failed = azure.deploy(smoke=True, check=False)
    assert failed.returncode != 0 and "the smoke test failed" in failed.stderr


def test_what_if_names_the_smoke_test_without_running_it(tmp_path: Path):
    """--what-if lists the smoke test as the last step and calls nothing."""
    azure = AzureEnv(tmp_path)
    proc = azure.deploy("--what-if", smoke=True)
    assert proc.stdout.splitlines()[-2] == "infra/smoke.sh --tenant acme"


def test_entra_only_tenant_is_checked_with_a_token(tmp_path: Path, monkeypatch):
    """A tenant without key mode is checked with an Entra ID token for its audience, asked of
    the signed-in az user; the server verifies it against the JWKS like a deployed app."""
    key = new_signing_key()
    jwks = JwksServer()
    try:
        jwks_url = jwks.publish("entra", key)
        azure = AzureEnv(tmp_path / "azure")
        azure.write_tenant("acme", MEMORY_AUTH_MODE="entra", MEMORY_ENTRA_TENANT_ID=TENANT_ID,
                           MEMORY_ENTRA_AUDIENCE=CORE_AUDIENCE)
        azure.deploy("--no-code")
        monkeypatch.setenv("FAKE_AZ_ACCESS_TOKEN", mint(key, entra_claims("smoke@contoso.com")))
        env = {"MEMORY_AUTH_MODE": "entra", "MEMORY_ENTRA_TENANT_ID": TENANT_ID,
               "MEMORY_ENTRA_AUDIENCE": CORE_AUDIENCE, "MEMORY_ENTRA_JWKS_URL": jwks_url}
        with running_server(tmp_path, env) as server:
            proc = azure.run("smoke.sh", "--tenant", "acme", "--base-url", server.base_url, check=False)
    finally:
        jwks.close()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pending operator approval" in proc.stdout
    token_calls = [c for c in azure.calls() if command_words(c) == ["account", "get-access-token"]]
    assert len(token_calls) == 1 and f"{CORE_AUDIENCE}/.default" in token_calls[0]


def test_smoke_test_follows_no_redirect_so_keys_stay_with_the_app(tenant):
    """A 3xx (a gateway, a login page) fails the check and names its Location; the keys are never sent
    to the host it points at."""
    import http.server
    import threading

    seen: list[dict[str, str]] = []

    class Foreign(http.server.BaseHTTPRequestHandler):
        def _any(self) -> None:
            seen.append({k.lower(): v for k, v in self.headers.items()})
            self.send_response(404)
            self.end_headers()

        do_GET = do_POST = _any  # noqa: N815 - BaseHTTPRequestHandler's method names

        def log_message(self, *args) -> None:
            pass

    foreign = http.server.HTTPServer(("127.0.0.1", 0), Foreign)

    class Gateway(Foreign):
        def _any(self) -> None:
            self.send_response(302)
            self.send_header("Location", f"http://localhost:{foreign.server_port}/login")
            self.end_headers()

        do_GET = do_POST = _any  # noqa: N815 - BaseHTTPRequestHandler's method names

    gateway = http.server.HTTPServer(("127.0.0.1", 0), Gateway)
    for server in (foreign, gateway):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proc = tenant.run("smoke.sh", "--tenant", "acme", "--base-url", f"http://127.0.0.1:{gateway.server_port}",
                          "--timeout", "5", check=False)
    finally:
        gateway.shutdown()
        foreign.shutdown()
    assert proc.returncode == 1
    assert seen == []
    assert f"redirected (HTTP 302) to http://localhost:{foreign.server_port}/login" in proc.stdout


def test_smoke_test_refuses_plain_http_to_another_host(tenant):
    """The keys travel only over https (plain http only to this machine)."""
    proc = tenant.run("smoke.sh", "--tenant", "acme", "--base-url", "http://memory.contoso.example", check=False)
    assert proc.returncode != 0
    assert "https URLs only" in proc.stderr


def test_smoke_test_of_a_platform_tenant_makes_the_public_checks_and_says_what_it_skipped(tmp_path: Path):
    """A tenant in platform (or easyauth) mode gives the smoke test no credential: it checks the OpenAPI
    document, notes that the authenticated checks were skipped, and passes, instead of failing every deploy."""
    azure = AzureEnv(tmp_path / "azure")
    azure.write_tenant("acme", MEMORY_AUTH_MODE="platform", MEMORY_PLATFORM_ISSUER="https://platform.example.com/",
                       MEMORY_PLATFORM_JWKS_URL="https://platform.example.com/jwks.json")
    azure.deploy("--no-code")
    with running_server(tmp_path) as server:
        proc = azure.run("smoke.sh", "--tenant", "acme", "--base-url", server.base_url, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [name.split(":")[0] for _, _, name in _checks(proc.stdout)] == ["OpenAPI document"]
    assert "authenticated checks skipped" in proc.stdout
