"""infra/deploy.sh for production: keyless from creation, sized for MCP traffic, Entra telemetry.

The fake az (tests/infra/fake_az.py) stands in for Azure's control plane, which cannot
run here; it answers as the Azure CLI does (shapes from the CLI reference and the Flex
Consumption identity sample) and refuses what Azure would refuse, such as a function app
whose deployment storage needs a shared key on an account that has none.
"""

from __future__ import annotations

from tests.infra.infra_support import command_words, is_changing, option


def _changing(azure) -> list[str]:
    return [" ".join(command_words(c)) for c in azure.calls() if is_changing(c)]


# ------------------------------------------------------------------------------- keyless from the first second
def test_cosmos_and_storage_are_created_without_keys(azure):
    """The Cosmos DB account is created with local auth off and the storage account with
    shared-key access off: no later switch, so no window in which keys work and no failure
    under a deny policy."""
    azure.deploy("--no-code")
    calls = azure.calls()
    cosmos = next(c for c in calls if command_words(c) == ["cosmosdb", "create"] and "--help" not in c)
    storage = next(c for c in calls if command_words(c) == ["storage", "account", "create"])
    assert option(cosmos, "--disable-local-auth") == ["true"]
    assert option(storage, "--allow-shared-key-access") == ["false"]
    assert not azure.find("resource", "update") and not azure.find("storage", "account", "update")
    assert azure.cosmos()["disableLocalAuth"] is True
    assert azure.state()["storage"]["rg-memory-acme/stmemoryacme822b33"]["allowSharedKeyAccess"] is False


def test_older_cli_falls_back_to_switching_local_auth_off_at_once(azure, monkeypatch):
    """An az without `cosmosdb create --disable-local-auth` (before Azure/azure-cli#32530)
    creates the account and switches local auth off right after, with a warning to upgrade."""
    monkeypatch.setenv("FAKE_AZ_OLD_CLI", "1")  # read by the fake az through AzureEnv.env
    proc = azure.deploy("--no-code")
    cosmos = next(c for c in azure.calls() if command_words(c) == ["cosmosdb", "create"] and "--help" not in c)
    assert "--disable-local-auth" not in cosmos
    update = azure.calls()[azure.find("resource", "update")[0]]
    assert option(update, "--set") == ["properties.disableLocalAuth=true"]
    assert azure.cosmos()["disableLocalAuth"] is True
    assert "az upgrade" in proc.stderr


def test_existing_account_with_keys_on_is_switched_off(deployed):
    """An account from an earlier deploy (local auth on) is reconciled: one resource update."""
    azure = deployed
    state = azure.state()
    state["cosmos"]["rg-memory-acme/cosmos-memory-acme"]["disableLocalAuth"] = False
    azure.save_state(state)
    azure.deploy()
    assert _changing(azure) == ["resource update"]
    assert azure.cosmos()["disableLocalAuth"] is True


def test_keys_can_stay_on_when_the_tenant_asks(azure):
    """COSMOS_DISABLE_LOCAL_AUTH=false creates the account with local auth on, on purpose."""
    azure.write_tenant("acme", COSMOS_DISABLE_LOCAL_AUTH="false")
    azure.deploy("--no-code")
    assert azure.cosmos()["disableLocalAuth"] is False


def test_host_telemetry_and_cosmos_use_the_user_assigned_identity(deployed_twice):
    """The app settings point the host's storage, DefaultAzureCredential (Cosmos DB) and
    Application Insights at the identity's client id, with Entra-authenticated ingestion;
    no key-based storage connection string is left."""
    azure = deployed_twice["azure"]
    settings = azure.settings()
    client_id = azure.state()["identities"]["rg-memory-acme/id-memory-acme"]["clientId"]
    assert settings["AzureWebJobsStorage__accountName"] == "stmemoryacme822b33"
    assert settings["AzureWebJobsStorage__credential"] == "managedidentity"
    assert settings["AzureWebJobsStorage__clientId"] == client_id
    assert settings["AZURE_CLIENT_ID"] == client_id
    assert settings["APPLICATIONINSIGHTS_AUTHENTICATION_STRING"] == f"ClientId={client_id};Authorization=AAD"
    assert "AzureWebJobsStorage" not in settings


def test_app_from_an_earlier_deploy_is_moved_to_the_identity(deployed):
    """An app made with a system-assigned identity gets the user-assigned one added, and its
    settings switch over; the system identity is left in place."""
    azure = deployed
    state = azure.state()
    app = state["apps"]["rg-memory-acme/func-memory-acme"]
    app["identity"] = {"type": "SystemAssigned", "principalId": "0000-system", "tenantId": "t"}
    del app["settings"]["AZURE_CLIENT_ID"]
    azure.save_state(state)
    azure.deploy()
    assert _changing(azure) == ["functionapp identity assign", "functionapp config appsettings set"]
    identity = azure.app()["identity"]
    assert identity["type"] == "SystemAssigned, UserAssigned" and identity["userAssignedIdentities"]


def _earlier_app(azure, **deployment_storage) -> None:
    """The app as an earlier deploy.sh made it: system-assigned identity only, which also reaches the
    deployment storage (`functionapp create --deployment-storage-auth-type SystemAssignedIdentity`)."""
    state = azure.state()
    app = state["apps"]["rg-memory-acme/func-memory-acme"]
    app["identity"] = {"type": "SystemAssigned", "principalId": "0000-system", "tenantId": "t"}
    storage = app["functionAppConfig"]["deployment"]["storage"]
    storage["authentication"] = {"type": "SystemAssignedIdentity", "userAssignedIdentityResourceId": None}
    storage.update(deployment_storage)
    azure.save_state(state)


def test_deployment_storage_of_an_earlier_app_moves_to_the_identity(deployed):
    """The Flex deployment storage of an earlier app is switched to the user-assigned identity with one
    `functionapp deployment config set`, after the identity is on the app; --what-if shows it first,
    and the run after changes nothing (the system identity is then needed by nothing deploy.sh sets)."""
    azure = deployed
    _earlier_app(azure)
    plan = azure.deploy("--what-if").stdout
    assert "# update:   deployment storage of func-memory-acme (authentication: SystemAssignedIdentity ->" in plan
    assert not [c for c in azure.calls() if is_changing(c)]
    azure.reset_log()
    azure.deploy()
    assert _changing(azure) == ["functionapp identity assign", "functionapp deployment config set"]
    identity_id = azure.state()["identities"]["rg-memory-acme/id-memory-acme"]["id"]
    move = azure.calls()[azure.find("functionapp", "deployment", "config", "set")[0]]
    assert option(move, "--deployment-storage-auth-type") == ["UserAssignedIdentity"]
    assert option(move, "--deployment-storage-auth-value") == [identity_id]
    auth = azure.app()["functionAppConfig"]["deployment"]["storage"]["authentication"]
    assert auth == {"type": "UserAssignedIdentity", "userAssignedIdentityResourceId": identity_id}
    azure.reset_log()
    azure.deploy()
    assert _changing(azure) == []


def test_deployment_storage_in_another_account_is_left_with_a_warning(deployed):
    """Deployment storage in an account where the identity holds no role is not moved (the next deploy
    would fail there): the run says so and leaves it."""
    azure = deployed
    _earlier_app(azure, value="https://stelsewhere.blob.core.windows.net/app-package")
    proc = azure.deploy()
    assert _changing(azure) == ["functionapp identity assign"]
    assert "deployment storage of func-memory-acme is in storage account stelsewhere" in proc.stderr
    assert azure.app()["functionAppConfig"]["deployment"]["storage"]["authentication"]["type"] == "SystemAssignedIdentity"


# ------------------------------------------------------------------------------- scale and concurrency
def test_new_app_is_sized_for_mcp_traffic(deployed_twice):
    """A new app gets 16 concurrent HTTP requests per instance (Python's Flex default is 1),
    2048 MB instances, at most 100 instances, and as many worker threads as requests."""
    azure = deployed_twice["azure"]
    scale = azure.app()["functionAppConfig"]["scaleAndConcurrency"]
    assert scale["triggers"] == {"http": {"perInstanceConcurrency": 16}}
    assert (scale["instanceMemoryMB"], scale["maximumInstanceCount"]) == (2048, 100)
    assert not scale.get("alwaysReady")
    assert azure.settings()["PYTHON_THREADPOOL_THREAD_COUNT"] == "16"


def test_scale_changes_are_reconciled_on_existing_apps(deployed):
    """Instance memory, maximum instances and concurrency are not fixed at creation: a changed
    tenant file sends one `scale config set` with exactly the changed values, and the settings that
    follow them (the worker threads, and the read cache unless the tenant file sets it)."""
    azure = deployed
    azure.write_tenant("acme", FUNCTION_INSTANCE_MEMORY="4096", FUNCTION_HTTP_CONCURRENCY="32")
    azure.deploy()
    calls = [c for c in azure.calls() if is_changing(c)]
    assert [" ".join(command_words(c)) for c in calls] == [
        "functionapp scale config set", "functionapp config appsettings set"]
    assert option(calls[0], "--instance-memory") == ["4096"]
    assert option(calls[0], "--trigger-settings") == ["perInstanceConcurrency=32"]
    assert "--maximum-instance-count" not in calls[0]
    assert sorted(option(calls[1], "--settings")) == ["MEMORY_READ_CACHE_MB=512", "PYTHON_THREADPOOL_THREAD_COUNT=32"]
    scale = azure.app()["functionAppConfig"]["scaleAndConcurrency"]
    assert scale["instanceMemoryMB"] == 4096 and scale["triggers"]["http"]["perInstanceConcurrency"] == 32


def test_drift_made_in_the_portal_is_put_back(deployed):
    """Someone lowered the maximum instances by hand: the next run restores the tenant file's value."""
    azure = deployed
    state = azure.state()
    state["apps"]["rg-memory-acme/func-memory-acme"]["functionAppConfig"]["scaleAndConcurrency"]["maximumInstanceCount"] = 40
    azure.save_state(state)
    azure.deploy()
    assert _changing(azure) == ["functionapp scale config set"]
    assert azure.app()["functionAppConfig"]["scaleAndConcurrency"]["maximumInstanceCount"] == 100


def test_always_ready_instances_are_set_and_removed(deployed):
    """FUNCTION_ALWAYS_READY=2 keeps two HTTP instances warm; back to 0 removes the setting."""
    azure = deployed
    azure.write_tenant("acme", FUNCTION_ALWAYS_READY="2")
    azure.deploy()
    assert _changing(azure) == ["functionapp scale config always-ready set"]
    assert azure.app()["functionAppConfig"]["scaleAndConcurrency"]["alwaysReady"] == [{"name": "http", "instanceCount": 2}]
    azure.reset_log()
    azure.write_tenant("acme")
    azure.deploy()
    assert _changing(azure) == ["functionapp scale config always-ready delete"]
    assert azure.app()["functionAppConfig"]["scaleAndConcurrency"]["alwaysReady"] == []


# ------------------------------------------------------------------------------- identity modes
ENTRA = {
    "MEMORY_AUTH_MODE": "entra,key",
    "MEMORY_ENTRA_TENANT_ID": "72f988bf-86f1-41af-91ab-2d7cd011db47",
    "MEMORY_ENTRA_AUDIENCE": "api://memory-core,00000000-0000-0000-0000-0000000000aa",
    "MEMORY_OPERATOR_ROLE": "Memory.Operator",
}


def test_entra_and_platform_settings_reach_the_app(azure):
    """Every identity setting of the tenant file becomes an app setting of the same name."""
    azure.write_tenant("acme", **{**ENTRA, "MEMORY_AUTH_MODE": "entra,platform,key"},
                       MEMORY_PLATFORM_ISSUER="https://platform.example.com/",
                       MEMORY_PLATFORM_JWKS_URL="https://platform.example.com/.well-known/jwks.json",
                       MEMORY_PLATFORM_AUDIENCE="memory-core",
                       MEMORY_ENTRA_AUTHORITY_HOST="https://login.microsoftonline.us")
    azure.deploy("--no-code")
    settings = azure.settings()
    for name in ("MEMORY_ENTRA_TENANT_ID", "MEMORY_ENTRA_AUDIENCE", "MEMORY_OPERATOR_ROLE"):
        assert settings[name] == ENTRA[name]
    assert settings["MEMORY_AUTH_MODE"] == "entra,platform,key"
    assert settings["MEMORY_PLATFORM_ISSUER"] == "https://platform.example.com/"
    assert settings["MEMORY_ENTRA_AUTHORITY_HOST"] == "https://login.microsoftonline.us"


def test_obo_settings_for_a_remote_coreapi(azure):
    """entra with MEMORY_COREAPI_BASE_URL takes the OBO client id and scope from the tenant
    file; its secret stays out of it, and the run says how to set it."""
    azure.write_tenant("acme", **ENTRA, MEMORY_COREAPI_BASE_URL="https://core.example.com",
                       MEMORY_OBO_CLIENT_ID="11111111-1111-1111-1111-111111111111",
                       MEMORY_COREAPI_SCOPE="api://core/.default")
    proc = azure.deploy("--no-code")
    settings = azure.settings()
    assert settings["MEMORY_OBO_CLIENT_ID"] == "11111111-1111-1111-1111-111111111111"
    assert settings["MEMORY_COREAPI_SCOPE"] == "api://core/.default"
    assert "MEMORY_OBO_CLIENT_SECRET" in proc.stderr


def test_identity_setting_removed_from_the_tenant_file_is_removed_from_the_app(azure):
    """An identity setting dropped from the tenant file is deleted from the app."""
    azure.write_tenant("acme", **ENTRA)
    azure.deploy("--no-code")
    azure.write_tenant("acme", MEMORY_AUTH_MODE="key")
    azure.deploy("--no-code")
    settings = azure.settings()
    assert not [k for k in settings if k.startswith("MEMORY_ENTRA_")]
