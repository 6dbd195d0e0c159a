"""Tenant files (infra/tenants/NAME.env): parsing and validation before any az call.

The fake az (tests/infra/fake_az.py) stands in for Azure's control plane, which
cannot run here; these tests check that a bad tenant file stops before it is called.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.infra.infra_support import INFRA, is_changing


@pytest.mark.parametrize("tenant", ["example", "example-entra"])
def test_example_tenant_files_are_valid(azure, tenant):
    """The example tenant files (key mode and entra mode) parse, validate and yield a what-if plan."""
    env = azure.env
    del env["MEMORY_TENANTS_DIR"]
    proc = subprocess.run(["bash", str(INFRA / "deploy.sh"), "--tenant", tenant, "--what-if",
                           "--app-dir", str(azure.app_dir)], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert f"az group create --name rg-memory-{tenant}" in proc.stdout
    assert not [c for c in azure.calls() if is_changing(c)]
    if tenant == "example-entra":
        assert "MEMORY_AUTH_MODE=entra,key" in proc.stdout and "MEMORY_ENTRA_AUDIENCE=api://memory-core" in proc.stdout


def test_every_identity_setting_of_the_app_is_a_tenant_option():
    """Each identity setting the app reads (memory_core/settings.py) is a tenant-file key or a
    secret the tenant file refuses, so a new identity setting cannot be forgotten here."""
    from memory_core.settings import Settings

    common = (INFRA / "lib" / "common.sh").read_text()
    identity_fields = [name.upper() for name in Settings.model_fields
                       if name.startswith(("memory_entra_", "memory_obo_", "memory_platform_", "memory_auth_",
                                           "memory_coreapi_", "memory_operator_role", "memory_identity_"))]
    assert "MEMORY_ENTRA_TENANT_ID" in identity_fields and "MEMORY_OBO_CLIENT_SECRET" in identity_fields
    for name in identity_fields:
        assert re.search(rf"\b{name}\b", common), f"{name} is neither a tenant option nor a refused secret"


@pytest.mark.parametrize(
    "setting",
    [
        {"MEMORY_AUTH_MODE": "local"},
        {"MEMORY_AUTH_MODE": "entra", "MEMORY_ENTRA_TENANT_ID": "72f988bf-86f1-41af-91ab-2d7cd011db47"},
        {"MEMORY_AUTH_MODE": "entra", "MEMORY_ENTRA_TENANT_ID": "contoso", "MEMORY_ENTRA_AUDIENCE": "api://m"},
        {"MEMORY_AUTH_MODE": "platform", "MEMORY_PLATFORM_ISSUER": "https://p.example.com/"},
        {"MEMORY_AUTH_MODE": "key", "MEMORY_PLATFORM_JWKS_URL": "http://p.example.com/jwks"},
        {"MEMORY_AUTH_MODE": "key", "MEMORY_OBO_CLIENT_ID": "not-a-guid"},
        {"MEMORY_AUTH_MODE": "entra,key", "MEMORY_ENTRA_TENANT_ID": "72f988bf-86f1-41af-91ab-2d7cd011db47",
         "MEMORY_ENTRA_AUDIENCE": "api://m", "MEMORY_COREAPI_BASE_URL": "https://core.example.com"},
        {"FUNCTION_HTTP_CONCURRENCY": "0"},
        {"FUNCTION_HTTP_CONCURRENCY": "1001"},
        {"FUNCTION_MAX_INSTANCES": "10"},
        {"FUNCTION_ALWAYS_READY": "many"},
    ],
    ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items())[:80],
)
def test_identity_and_scale_values_are_checked_like_the_app_checks_them(azure, setting):
    """Identity settings the app would refuse at start, and scale values Flex Consumption
    would refuse, stop the run before any az call, naming the setting at fault."""
    azure.write_tenant("acme", **setting)
    proc = azure.deploy(check=False)
    assert proc.returncode != 0
    assert re.search(r"MEMORY_\w+|FUNCTION_\w+", proc.stderr.split("error:", 1)[1])
    assert azure.calls() == []


@pytest.mark.parametrize("line", ["MEMORY_OBO_CLIENT_SECRET=abc", "AzureWebJobsStorage=DefaultEndpointsProtocol=https"])
def test_identity_secrets_are_refused_in_tenant_files(azure, line):
    """The OBO client secret and storage connection strings never go in a tenant file."""
    azure.write_tenant("acme", text=line + "\n")
    proc = azure.deploy(check=False)
    assert proc.returncode != 0 and "secret" in proc.stderr
    assert azure.calls() == []


@pytest.mark.parametrize("line", ["MEMORY_API_KEYS=abc", "MEMORY_OPERATOR_KEYS=abc", "COSMOS_KEY=abc",
                                  "MEMORY_COREAPI_KEY=abc"])
def test_secret_in_tenant_file_is_refused(azure, line):
    """A tenant file that carries a key is refused before az is called."""
    azure.write_tenant("acme", text=line + "\n")
    proc = azure.deploy(check=False)
    assert proc.returncode != 0 and "secret" in proc.stderr
    assert azure.calls() == []


@pytest.mark.parametrize(
    "setting",
    [
        {"MEMORY_DELETION_MODE": "later"},
        {"MEMORY_AUTH_MODE": "key,magic"},
        {"MEMORY_SHARING_DEFAULT_POLICY": "public"},
        {"MEMORY_SHARING_ALLOW_OVERRIDE": "yes"},
        {"MEMORY_MAX_WRITE_BYTES": "64k"},
        {"MEMORY_MAX_WRITE_BYTES": "20000000"},
        {"MEMORY_MAX_WRITE_BYTES": "262145"},
        {"MEMORY_READ_CACHE_MB": "0"},
        {"MEMORY_READ_CACHE_MB": "1025"},
        {"FUNCTION_INSTANCE_MEMORY": "512", "MEMORY_READ_CACHE_MB": "257"},
        {"COSMOS_READ_TIMEOUT": "soon"},
        {"MEMORY_SWEEP_SCHEDULE": "*/5 * * * *"},
        {"COSMOS_CAPACITY_MODE": "provisioned"},
        {"COSMOS_AUTOSCALE_MAX_THROUGHPUT": "1500"},
        {"STORAGE_ACCOUNT": "Not-Valid"},
        {"MEMORY_AUTH_MODE": "entra"},
    ],
    ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items()),
)
def test_invalid_value_is_refused_before_any_az_call(azure, setting):
    """An out-of-range value stops the run with a message naming the key, before az is called."""
    azure.write_tenant("acme", **setting)
    proc = azure.deploy(check=False)
    assert proc.returncode != 0 and next(iter(setting)) in proc.stderr
    assert azure.calls() == []


@pytest.mark.parametrize(
    "setting",
    [
        {"MEMORY_DEFAULT_INSTANCE_ID": "contoso/prod"},
        {"MEMORY_DEFAULT_INSTANCE_ID": "x" * 200},
        {"MEMORY_DEFAULT_INSTANCE_ID": "-leading-dash"},
        {"COSMOS_CONNECTION_TIMEOUT": "0"},
        {"COSMOS_CONNECTION_TIMEOUT": "121"},
        {"COSMOS_READ_TIMEOUT": "900"},
        {"COSMOS_OPERATION_TIMEOUT": "601"},
        {"MEMORY_AUDIT_RETENTION_DAYS": "0"},
        {"MEMORY_DELETION_RETENTION_DAYS": "36501"},
        {"MEMORY_CONSOLE_CLIENT_ID": "x" * 300},
    ],
    ids=lambda s: "-".join(f"{k}={v[:20]}" for k, v in s.items()),
)
def test_a_value_the_app_refuses_is_refused_before_any_az_call(azure, setting):
    """deploy.sh checks the tenant's app settings with the app's own rules (memory_core/settings.py):
    a value the app would refuse at start never reaches a running app."""
    azure.write_tenant("acme", **setting)
    proc = azure.deploy(check=False)
    assert proc.returncode != 0 and next(iter(setting)) in proc.stderr
    assert azure.calls() == []


def test_the_app_check_ignores_the_deploying_machines_environment(azure):
    """A MEMORY_* variable in the operator's shell does not decide what the app would accept."""
    azure.write_tenant("acme")
    env = {**azure.env, "COSMOS_READ_TIMEOUT": "900", "MEMORY_AUTH_MODE": "bogus"}
    proc = subprocess.run(["bash", str(INFRA / "deploy.sh"), "--tenant", "acme", "--what-if", "--no-smoke",
                           "--app-dir", str(azure.app_dir)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_unknown_key_is_refused(azure):
    """A misspelt key is an error, not silently ignored."""
    azure.write_tenant("acme", MEMORY_DELETON_MODE="immediate")
    proc = azure.deploy(check=False)
    assert proc.returncode != 0 and "unknown key MEMORY_DELETON_MODE" in proc.stderr


def test_missing_tenant_file_is_reported(azure):
    """--tenant with no matching file says which file it looked for."""
    proc = azure.deploy(tenant="nobody", check=False)
    assert proc.returncode != 0 and "nobody.env" in proc.stderr
    assert azure.calls() == []


def test_location_is_required(azure):
    """A tenant file without LOCATION is refused."""
    azure.write_tenant("acme", LOCATION="")
    proc = azure.deploy(check=False)
    assert proc.returncode != 0 and "LOCATION is required" in proc.stderr


def test_tenant_file_is_not_executed(azure, tmp_path):
    """Shell in a tenant file is data: a $(...) value is not run."""
    marker = tmp_path / "executed"
    azure.write_tenant("acme", MEMORY_DEFAULT_INSTANCE_ID=f"$(touch {marker})")
    azure.deploy("--what-if", check=False)
    assert not marker.exists()


def test_quotes_and_comments_are_understood(azure):
    """Quoted values and trailing comments are read as a person would expect."""
    azure.write_tenant("acme", text='MEMORY_SWEEP_SCHEDULE="0 0 */2 * * *"  # every two hours\n'
                                    "MEMORY_DELETION_MODE=immediate   # no approval\n")
    azure.deploy("--no-code")
    settings = azure.settings()
    assert settings["MEMORY_SWEEP_SCHEDULE"] == "0 0 */2 * * *"
    assert settings["MEMORY_DELETION_MODE"] == "immediate"


def test_write_limit_is_capped_at_what_a_cosmos_item_holds(azure):
    """MEMORY_MAX_WRITE_BYTES above the Cosmos DB cap is refused with the cap in the message;
    the cap itself is accepted, and it is the very value the app enforces at start."""
    from memory_core.adapters.cosmos_documents import COSMOS_MAX_WRITE_BYTES

    common = (INFRA / "lib" / "common.sh").read_text()
    assert f"COSMOS_MAX_WRITE_BYTES={COSMOS_MAX_WRITE_BYTES}\n" in common
    azure.write_tenant("acme", MEMORY_MAX_WRITE_BYTES=str(COSMOS_MAX_WRITE_BYTES + 1))
    proc = azure.deploy("--what-if", check=False)
    assert proc.returncode != 0
    assert "MEMORY_MAX_WRITE_BYTES" in proc.stderr and f"at most {COSMOS_MAX_WRITE_BYTES}" in proc.stderr
    azure.write_tenant("acme", MEMORY_MAX_WRITE_BYTES=str(COSMOS_MAX_WRITE_BYTES))
    assert azure.deploy("--what-if").returncode == 0


OPTIONAL_APP_SETTINGS = {
    "MEMORY_CONSOLE_CLIENT_ID": "11111111-2222-3333-4444-555555555555",
    "MEMORY_CONSOLE_API_SCOPE": "api://memory/Memory.ReadWrite",
    "MEMORY_AUDIT_RETENTION_DAYS": "365",
    "MEMORY_DELETION_RETENTION_DAYS": "90",
    "COSMOS_OPERATION_TIMEOUT": "40",
    "MEMORY_ALLOWED_HOSTS": "memory.contoso.com",
}


def test_settings_the_app_reads_can_be_deployed_and_removed(azure):
    """The console's sign-in, retention, COSMOS_OPERATION_TIMEOUT and MEMORY_ALLOWED_HOSTS are tenant-file keys:
    set on the app when given, removed when the tenant file no longer gives them."""
    azure.write_tenant("acme", **OPTIONAL_APP_SETTINGS)
    azure.deploy("--no-code")
    settings = azure.settings()
    assert {k: settings.get(k) for k in OPTIONAL_APP_SETTINGS} == OPTIONAL_APP_SETTINGS
    azure.write_tenant("acme")
    azure.deploy("--no-code")
    assert not set(OPTIONAL_APP_SETTINGS) & set(azure.settings())
