"""infra/deploy.sh against a fake az.

The fake az (tests/infra/fake_az.py) stands in for Azure's control plane, which
cannot run here: it records every invocation and answers as az would, keeping
what was created in a state file so that a second run sees the first one's work.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import zipfile

from tests.infra.infra_support import INFRA, command_words, is_changing, option

COSMOS_ROLE = "00000000-0000-0000-0000-000000000002"
STORAGE_BLOB_DATA_OWNER = "b7e6dc6d-f1e8-4753-8033-0f276bb0955b"
HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _first_index(calls, *words):
    for i, argv in enumerate(calls):
        if command_words(argv) == list(words) and "--help" not in argv:
            return i
    raise AssertionError(f"no 'az {' '.join(words)}' call in {[' '.join(command_words(c)) for c in calls]}")


# ------------------------------------------------------------------------------- order
def test_container_is_created_before_the_app_is_deployed(deployed_twice):
    """The ARM deployment that makes the Memories container runs before the function app
    exists and before the code is zip-deployed, so the container exists before the first request."""
    calls = deployed_twice["first_calls"]
    container = _first_index(calls, "deployment", "group", "create")
    assert container < _first_index(calls, "functionapp", "create")
    assert container < _first_index(calls, "functionapp", "deployment", "source", "config-zip")


def test_app_settings_are_in_place_before_the_code_is_deployed(deployed_twice):
    """The app's configuration (endpoint, keys) is set before the zip deploy starts the app."""
    calls = deployed_twice["first_calls"]
    settings = [i for i, c in enumerate(calls) if command_words(c) == ["functionapp", "config", "appsettings", "set"]]
    zip_deploy = _first_index(calls, "functionapp", "deployment", "source", "config-zip")
    assert settings and settings[0] < zip_deploy
    assert _first_index(calls, "cosmosdb", "sql", "role", "assignment", "create") < zip_deploy


# ------------------------------------------------------------------------------- Cosmos DB
def test_container_has_hierarchical_partition_key(deployed_twice):
    """The container Azure ends up with has paths /instance_id, /upn, kind MultiHash, version 2."""
    azure = deployed_twice["azure"]
    container = azure.cosmos()["databases"]["memory"]["containers"]["Memories"]
    assert container["resource"]["partitionKey"] == {"paths": ["/instance_id", "/upn"], "kind": "MultiHash", "version": 2}


def test_container_comes_from_the_arm_template(deployed_twice):
    """The container is made by `az deployment group create` with infra/arm/cosmos-sql.json,
    never by `az cosmosdb sql container create` (which cannot make a hierarchical key)."""
    calls = deployed_twice["first_calls"]
    deployment = calls[_first_index(calls, "deployment", "group", "create")]
    assert option(deployment, "--template-file")[0].endswith("infra/arm/cosmos-sql.json")
    params = dict(p.split("=", 1) for p in option(deployment, "--parameters"))
    assert params["containerName"] == "Memories" and params["databaseName"] == "memory"
    assert not [c for c in calls if command_words(c)[:4] == ["cosmosdb", "sql", "container", "create"]]


def test_cosmos_account_is_serverless_by_default(deployed_twice):
    """Without COSMOS_CAPACITY_MODE the account is created with the EnableServerless capability."""
    calls = deployed_twice["first_calls"]
    create = calls[_first_index(calls, "cosmosdb", "create")]
    assert option(create, "--capabilities") == ["EnableNoSQLFullTextSearch", "EnableServerless"]
    params = dict(p.split("=", 1) for p in option(calls[_first_index(calls, "deployment", "group", "create")], "--parameters"))
    assert params["capacityMode"] == "serverless"


def test_existing_account_gains_the_full_text_capability(deployed):
    """An account made before full-text search gets EnableNoSQLFullTextSearch added, its own
    capabilities kept (az cosmosdb update --capabilities replaces the list)."""
    azure = deployed
    state = azure.state()
    state["cosmos"]["rg-memory-acme/cosmos-memory-acme"]["capabilities"] = [{"name": "EnableServerless"}]
    azure.save_state(state)
    azure.deploy()
    changing = [c for c in azure.calls() if is_changing(c)]
    assert [command_words(c) for c in changing] == [["cosmosdb", "update"]]
    assert option(changing[0], "--capabilities") == ["EnableServerless", "EnableNoSQLFullTextSearch"]
    assert {c["name"] for c in azure.cosmos()["capabilities"]} == {"EnableServerless", "EnableNoSQLFullTextSearch"}


def test_autoscale_mode_provisions_throughput(azure):
    """COSMOS_CAPACITY_MODE=autoscale creates a provisioned account and passes the autoscale
    maximum to the template."""
    azure.write_tenant("acme", COSMOS_CAPACITY_MODE="autoscale", COSMOS_AUTOSCALE_MAX_THROUGHPUT="4000")
    azure.deploy()
    calls = azure.calls()
    assert option(calls[_first_index(calls, "cosmosdb", "create")], "--capabilities") == ["EnableNoSQLFullTextSearch"]
    params = dict(p.split("=", 1) for p in option(calls[_first_index(calls, "deployment", "group", "create")], "--parameters"))
    assert params["capacityMode"] == "autoscale" and params["autoscaleMaxThroughput"] == "4000"


def test_capacity_mode_cannot_switch_in_place(deployed):
    """An existing serverless account with a tenant file asking for autoscale stops the run
    before anything is changed."""
    azure = deployed
    azure.write_tenant("acme", COSMOS_CAPACITY_MODE="autoscale")
    proc = azure.deploy(check=False)
    assert proc.returncode != 0 and "capacity mode cannot be switched" in proc.stderr
    assert not [c for c in azure.calls() if is_changing(c)]


def test_existing_container_with_other_partition_key_stops_the_run(deployed):
    """A container that already exists with another partition key is reported and not
    redeployed, and no code is deployed on top of it."""
    azure = deployed
    state = azure.state()
    container = state["cosmos"]["rg-memory-acme/cosmos-memory-acme"]["databases"]["memory"]["containers"]["Memories"]
    container["resource"]["partitionKey"] = {"paths": ["/instance_id"], "kind": "Hash", "version": 2}
    azure.save_state(state)
    proc = azure.deploy(check=False)
    assert proc.returncode != 0 and "different partition key" in proc.stderr
    assert not azure.find("deployment", "group", "create")
    assert not azure.find("functionapp", "deployment", "source", "config-zip")


# ------------------------------------------------------------------------------- identity & roles
MONITORING_METRICS_PUBLISHER = "3913510d-42f4-4e42-8a64-420c390055eb"


def _identity(azure):
    return azure.state()["identities"]["rg-memory-acme/id-memory-acme"]


def test_function_app_is_flex_consumption_python_311_with_user_assigned_identity(deployed_twice):
    """The app is created on Flex Consumption, Python 3.11, with the tenant's user-assigned
    identity, which also reaches the deployment storage (the Flex identity sample's shape)."""
    azure = deployed_twice["azure"]
    calls = deployed_twice["first_calls"]
    create = calls[_first_index(calls, "functionapp", "create")]
    identity_id = _identity(azure)["id"]
    assert option(create, "--flexconsumption-location") == ["eastus2"]
    assert option(create, "--runtime") == ["python"] and option(create, "--runtime-version") == ["3.11"]
    assert option(create, "--assign-identity") == [identity_id]
    assert option(create, "--deployment-storage-auth-type") == ["UserAssignedIdentity"]
    assert option(create, "--deployment-storage-auth-value") == [identity_id]
    assert identity_id in azure.app()["identity"]["userAssignedIdentities"]


def test_identity_holds_every_role_before_the_app_exists(deployed_twice):
    """The identity is created and granted Cosmos DB data access, Storage Blob Data Owner and
    Monitoring Metrics Publisher before `functionapp create`, so the host never starts
    before its role assignments were made (no 403 race)."""
    calls = deployed_twice["first_calls"]
    app_created = _first_index(calls, "functionapp", "create")
    assert _first_index(calls, "identity", "create") < app_created
    assert _first_index(calls, "cosmosdb", "sql", "role", "assignment", "create") < app_created
    roles = [option(c, "--role")[0] for c in calls[:app_created] if command_words(c) == ["role", "assignment", "create"]]
    assert sorted(roles) == sorted([STORAGE_BLOB_DATA_OWNER, MONITORING_METRICS_PUBLISHER])


def test_role_assignment_is_data_contributor_at_account_scope(deployed_twice):
    """The identity gets Cosmos DB Built-in Data Contributor (…0002) with the account's
    resource id as scope, through `az cosmosdb sql role assignment create`."""
    azure = deployed_twice["azure"]
    calls = deployed_twice["first_calls"]
    create = calls[_first_index(calls, "cosmosdb", "sql", "role", "assignment", "create")]
    assert option(create, "--role-definition-id") == [COSMOS_ROLE]
    assert option(create, "--scope") == [azure.cosmos()["id"]]
    assert option(create, "--principal-id") == [_identity(azure)["principalId"]]


def test_storage_and_monitoring_roles_go_to_the_identity(deployed_twice):
    """Storage Blob Data Owner on the storage account (identity-based AzureWebJobsStorage and
    deployment storage) and Monitoring Metrics Publisher on Application Insights (Entra
    ingestion), both to the identity's principal."""
    azure = deployed_twice["azure"]
    state = azure.state()
    principal = _identity(azure)["principalId"]
    scopes = {a["roleDefinitionId"].rsplit("/", 1)[1]: a["scope"] for a in state["role_assignments"].values()
              if a["principalId"] == principal}
    assert scopes == {
        STORAGE_BLOB_DATA_OWNER: state["storage"]["rg-memory-acme/stmemoryacme822b33"]["id"],
        MONITORING_METRICS_PUBLISHER: state["components"]["rg-memory-acme/appi-memory-acme"]["id"],
    }


def test_storage_role_of_another_principal_does_not_count(deployed):
    """A Storage Blob Data Owner assignment for some other principal on the same account does
    not stand in for the identity's own: the run assigns the role to the identity."""
    azure = deployed
    state = azure.state()
    for assignment in state["role_assignments"].values():
        if assignment["roleDefinitionId"].endswith(STORAGE_BLOB_DATA_OWNER):
            assignment["principalId"] = "00000000-aaaa-bbbb-cccc-000000000000"
    azure.save_state(state)
    azure.deploy()
    changing = [c for c in azure.calls() if is_changing(c)]
    assert [command_words(c) for c in changing] == [["role", "assignment", "create"]]
    assert option(changing[0], "--assignee-object-id") == [_identity(azure)["principalId"]]
    assert option(changing[0], "--role") == [STORAGE_BLOB_DATA_OWNER]


# ------------------------------------------------------------------------------- settings
def test_no_account_key_in_app_settings(deployed_twice):
    """No setting holds a Cosmos DB or storage account key: COSMOS_KEY is never set, the
    key-based AzureWebJobsStorage connection string that `functionapp create` adds is removed,
    and no az call carries a key."""
    settings = deployed_twice["azure"].settings()
    assert "COSMOS_KEY" not in settings
    assert "AzureWebJobsStorage" not in settings
    assert settings["AzureWebJobsStorage__accountName"] == "stmemoryacme822b33"
    assert not [k for k, v in settings.items() if "AccountKey=" in v]
    for argv in deployed_twice["first_calls"] + deployed_twice["second_calls"]:
        assert not [a for a in argv if "COSMOS_KEY" in a or "AccountKey=" in a], argv


def test_storage_shared_key_access_is_turned_off(deployed_twice):
    """Once the host uses its identity for storage, shared-key access on the account is off."""
    storage = deployed_twice["azure"].state()["storage"]["rg-memory-acme/stmemoryacme822b33"]
    assert storage["allowSharedKeyAccess"] is False


def test_app_settings_point_at_cosmos_with_defaults(deployed_twice):
    """The app gets MEMORY_STORE=cosmos, the account endpoint, names, and the documented
    defaults for modes and schedules (the NCRONTAB value kept intact)."""
    azure = deployed_twice["azure"]
    settings = azure.settings()
    expected = {
        "MEMORY_STORE": "cosmos",
        "COSMOS_ENDPOINT": "https://cosmos-memory-acme.documents.azure.com:443/",
        "COSMOS_DATABASE": "memory",
        "COSMOS_CONTAINER": "Memories",
        "MEMORY_DEFAULT_INSTANCE_ID": "acme",
        "MEMORY_DELETION_MODE": "operator_approval",
        "MEMORY_SWEEP_SCHEDULE": "0 */5 * * * *",
        "MEMORY_AUTH_MODE": "key",
        "MEMORY_SHARING_DEFAULT_POLICY": "private",
        "MEMORY_SHARING_ALLOW_OVERRIDE": "false",
        "MEMORY_MAX_WRITE_BYTES": "65536",
        "MEMORY_READ_CACHE_MB": "256",
    }
    assert {k: settings.get(k) for k in expected} == expected
    assert settings["COSMOS_ENDPOINT"] == azure.cosmos()["documentEndpoint"]
    assert settings["APPLICATIONINSIGHTS_CONNECTION_STRING"].startswith("InstrumentationKey=")


def test_tenant_file_values_reach_app_settings(azure):
    """Values in the tenant file override the defaults, and optional settings appear."""
    azure.write_tenant(
        "acme",
        MEMORY_DELETION_MODE="immediate",
        MEMORY_SWEEP_SCHEDULE="0 0 * * * *",
        MEMORY_AUTH_MODE="key,entra",
        MEMORY_ENTRA_TENANT_ID="72f988bf-0000-0000-0000-000000000000",
        MEMORY_ENTRA_AUDIENCE="api://memory",
        MEMORY_MCP_ALLOWED_HOSTS="memory.contoso.com",
        MEMORY_SHARING_DEFAULT_POLICY="team",
        MEMORY_SHARING_ALLOW_OVERRIDE="true",
        MEMORY_MAX_WRITE_BYTES="1024",
        MEMORY_READ_CACHE_MB="64",
        MEMORY_DEFAULT_INSTANCE_ID="acme-prod",
        COSMOS_READ_TIMEOUT="45",
    )
    azure.deploy()
    s = azure.settings()
    assert s["COSMOS_READ_TIMEOUT"] == "45"
    assert (s["MEMORY_DELETION_MODE"], s["MEMORY_SWEEP_SCHEDULE"], s["MEMORY_AUTH_MODE"]) == ("immediate", "0 0 * * * *", "key,entra")
    assert (s["MEMORY_ENTRA_TENANT_ID"], s["MEMORY_ENTRA_AUDIENCE"]) == ("72f988bf-0000-0000-0000-000000000000", "api://memory")
    assert s["MEMORY_MCP_ALLOWED_HOSTS"] == "memory.contoso.com"
    assert (s["MEMORY_SHARING_DEFAULT_POLICY"], s["MEMORY_SHARING_ALLOW_OVERRIDE"]) == ("team", "true")
    assert (s["MEMORY_MAX_WRITE_BYTES"], s["MEMORY_DEFAULT_INSTANCE_ID"]) == ("1024", "acme-prod")
    assert s["MEMORY_READ_CACHE_MB"] == "64"


def test_optional_setting_removed_from_tenant_file_is_removed_from_app(azure):
    """An optional setting dropped from the tenant file is deleted from the app on the next run."""
    azure.write_tenant("acme", MEMORY_MCP_ALLOWED_HOSTS="memory.contoso.com")
    azure.deploy()
    azure.write_tenant("acme")
    azure.deploy()
    assert "MEMORY_MCP_ALLOWED_HOSTS" not in azure.settings()


def test_changed_setting_is_the_only_change_on_update(deployed):
    """Editing one value in the tenant file and re-running updates that setting and nothing else."""
    azure = deployed
    azure.write_tenant("acme", MEMORY_DELETION_MODE="immediate")
    azure.deploy()
    changing = [c for c in azure.calls() if is_changing(c)]
    assert len(changing) == 1
    assert command_words(changing[0]) == ["functionapp", "config", "appsettings", "set"]
    assert option(changing[0], "--settings") == ["MEMORY_DELETION_MODE=immediate"]


# ------------------------------------------------------------------------------- secrets
def test_keys_are_generated_on_first_deploy(deployed_twice):
    """MEMORY_API_KEYS and MEMORY_OPERATOR_KEYS are generated (64 hex characters, different)."""
    settings = deployed_twice["state_after_first"]["apps"]["rg-memory-acme/func-memory-acme"]["settings"]
    assert HEX64.match(settings["MEMORY_API_KEYS"]) and HEX64.match(settings["MEMORY_OPERATOR_KEYS"])
    assert settings["MEMORY_API_KEYS"] != settings["MEMORY_OPERATOR_KEYS"]


def test_keys_are_not_regenerated_on_second_run(deployed_twice):
    """A second run keeps the keys callers already hold."""
    before = deployed_twice["state_after_first"]["apps"]["rg-memory-acme/func-memory-acme"]["settings"]
    after = deployed_twice["azure"].settings()
    assert after["MEMORY_API_KEYS"] == before["MEMORY_API_KEYS"]
    assert after["MEMORY_OPERATOR_KEYS"] == before["MEMORY_OPERATOR_KEYS"]


def test_keys_never_appear_in_output_or_command_lines(deployed_twice):
    """The generated keys are in no az argv and in none of the script's output."""
    settings = deployed_twice["azure"].settings()
    keys = [settings["MEMORY_API_KEYS"], settings["MEMORY_OPERATOR_KEYS"]]
    text = "".join(p.stdout + p.stderr for p in (deployed_twice["first"], deployed_twice["second"]))
    argv_text = json.dumps(deployed_twice["first_calls"] + deployed_twice["second_calls"])
    for key in keys:
        assert key not in text and key not in argv_text


# ------------------------------------------------------------------------------- idempotency
def test_second_run_issues_no_creating_call(deployed_twice):
    """Run twice with nothing changed, the second run only reads: no create, assign, update,
    set, delete, ARM deployment or zip deploy."""
    changing = [c for c in deployed_twice["second_calls"] if is_changing(c)]
    assert changing == []
    assert deployed_twice["second_calls"], "the second run should still check what exists"


def test_second_run_leaves_azure_unchanged(deployed_twice):
    """The fake Azure's state after the second run equals the state after the first."""
    assert deployed_twice["azure"].state() == deployed_twice["state_after_first"]


def test_changed_code_is_redeployed_alone(deployed):
    """When only the app's code changes, the re-run zip-deploys once and records the new
    package hash, creating nothing."""
    azure = deployed
    (azure.app_dir / "memory_core" / "store.py").write_text("STORE = 'cosmos'  # changed\n")
    azure.deploy()
    changing = [" ".join(command_words(c)) for c in azure.calls() if is_changing(c)]
    assert changing == ["functionapp deployment source config-zip", "functionapp config appsettings set"]
    assert azure.app()["deployments"] == 2
    assert azure.settings()["MEMORY_PACKAGE_SHA256"] == azure.app()["package_sha256"]


def test_missing_role_assignment_is_restored(deployed):
    """If the data-plane role assignment disappears, the next run re-creates only it."""
    azure = deployed
    state = azure.state()
    state["sql_role_assignments"] = {}
    azure.save_state(state)
    azure.deploy()
    changing = [" ".join(command_words(c)) for c in azure.calls() if is_changing(c)]
    assert changing == ["cosmosdb sql role assignment create"]


# ------------------------------------------------------------------------------- package
def test_package_holds_the_app_its_bytecode_and_nothing_else(deployed_twice):
    """The zip has function_app.py, host.json, requirements.txt and memory_core/, each module's
    bytecode for the app's Python (3.11) beside it, and no tests, docs, local bytecode or
    local.settings.json (tests/infra/test_infra_package.py runs the real app from such a package)."""
    with zipfile.ZipFile(deployed_twice["azure"].deployed_zip) as zf:
        names = sorted(zf.namelist())
    assert names == [
        "__pycache__/function_app.cpython-311.pyc", "function_app.py", "host.json",
        "memory_core/__init__.py", "memory_core/__pycache__/__init__.cpython-311.pyc",
        "memory_core/__pycache__/store.cpython-311.pyc", "memory_core/store.py", "requirements.txt",
    ]
    with zipfile.ZipFile(deployed_twice["azure"].deployed_zip) as zf:
        shipped = zf.read("memory_core/__pycache__/store.cpython-311.pyc")
    # compiled by the package step (the app folder's own "compiled" placeholder is left out), checked by hash
    assert shipped[:4] == importlib.util.MAGIC_NUMBER
    assert int.from_bytes(shipped[4:8], "little") == 0b11


def test_package_is_deployed_with_remote_build(deployed_twice):
    """The zip deploy asks Flex Consumption to build remotely (pip install of requirements.txt)."""
    calls = deployed_twice["first_calls"]
    zip_call = calls[_first_index(calls, "functionapp", "deployment", "source", "config-zip")]
    assert option(zip_call, "--build-remote") == ["true"]


def test_no_code_skips_the_zip_deploy(azure):
    """--no-code provisions and configures without deploying the package."""
    azure.deploy("--no-code")
    assert not azure.find("functionapp", "deployment", "source", "config-zip")
    assert "MEMORY_PACKAGE_SHA256" not in azure.settings()


def test_missing_app_files_stop_the_run(azure):
    """An --app-dir without function_app.py fails instead of deploying an empty app."""
    (azure.app_dir / "function_app.py").unlink()
    proc = azure.deploy(check=False)
    assert proc.returncode != 0 and "function_app.py not found" in proc.stderr
    assert not azure.find("functionapp", "deployment", "source", "config-zip")


def test_signed_out_cli_stops_before_any_change(azure):
    """When az is not signed in, the run stops at `az account show` with az's message."""
    env = azure.env
    env["FAKE_AZ_LOGGED_OUT"] = "1"
    proc = subprocess.run(["bash", str(INFRA / "deploy.sh"), "--tenant", "acme", "--app-dir", str(azure.app_dir)],
                          env=env, capture_output=True, text=True)
    assert proc.returncode != 0 and "az login" in proc.stderr
    assert not [c for c in azure.calls() if is_changing(c)]


def test_subscription_from_tenant_file_is_passed_to_every_call(azure):
    """SUBSCRIPTION in the tenant file pins every az call to that subscription (local
    `az extension` calls take no subscription)."""
    azure.write_tenant("acme", SUBSCRIPTION="11111111-2222-3333-4444-555555555555")
    azure.deploy()
    resource_calls = [c for c in azure.calls() if command_words(c)[0] != "extension" and "--help" not in c]
    assert resource_calls
    assert all(option(c, "--subscription") == ["11111111-2222-3333-4444-555555555555"] for c in resource_calls)


# ------------------------------------------------------------------------------- storage account name
def test_tenants_whose_names_start_alike_get_their_own_storage_accounts(azure):
    """The default storage account name carries a hash of the whole tenant name, so two tenants whose
    names share their first 16 letters and digits do not land on one (global) account."""
    for tenant in ("contoso-research-team-east", "contoso-research-team-west"):
        azure.write_tenant(tenant, RESOURCE_GROUP="rg-contoso")
        azure.deploy("--no-code", tenant=tenant)
    accounts = {azure.settings(name=f"func-memory-contoso-research-team-{side}", rg="rg-contoso")
                ["AzureWebJobsStorage__accountName"] for side in ("east", "west")}
    assert len(accounts) == 2
    assert all(re.fullmatch(r"[a-z0-9]{3,24}", name) for name in accounts)


def test_deploy_refuses_a_storage_account_it_did_not_create_for_the_tenant(azure):
    """An existing storage account tagged for another tenant (or not tagged at all) is refused with a
    message saying how to go on; the app is not created on it."""
    azure.write_tenant("alpha", STORAGE_ACCOUNT="stshared")
    azure.deploy("--no-code", tenant="alpha")
    azure.write_tenant("beta", RESOURCE_GROUP="rg-memory-alpha", STORAGE_ACCOUNT="stshared")
    proc = azure.deploy("--no-code", tenant="beta", check=False)
    assert proc.returncode != 0
    assert "storage account stshared exists but tenant beta did not create it" in proc.stderr
    assert "memory-core-tenant=alpha" in proc.stderr
    assert "rg-memory-alpha/func-memory-beta" not in azure.state()["apps"]


def test_a_tenant_on_the_old_default_storage_name_keeps_its_account(deployed):
    """A tenant deployed before the default name carried a hash (stmemory + 16 letters and digits, no tag
    on the account) keeps the account its app runs on: no second account, the old one tagged for it."""
    azure = deployed
    state = azure.state()
    new_name = azure.settings()["AzureWebJobsStorage__accountName"]
    account = state["storage"].pop(f"rg-memory-acme/{new_name}")
    account["id"] = account["id"].replace(new_name, "stmemoryacme")
    account["name"] = "stmemoryacme"
    account.pop("tags", None)
    state["storage"]["rg-memory-acme/stmemoryacme"] = account
    state["apps"]["rg-memory-acme/func-memory-acme"]["settings"]["AzureWebJobsStorage__accountName"] = "stmemoryacme"
    for assignment in state["role_assignments"].values():
        assignment["scope"] = assignment["scope"].replace(new_name, "stmemoryacme")
    azure.save_state(state)
    proc = azure.deploy()
    assert list(azure.state()["storage"]) == ["rg-memory-acme/stmemoryacme"]
    assert azure.state()["storage"]["rg-memory-acme/stmemoryacme"]["tags"] == {"memory-core-tenant": "acme"}
    assert azure.settings()["AzureWebJobsStorage__accountName"] == "stmemoryacme"
    assert "keeping storage account stmemoryacme" in proc.stderr
    assert not azure.find("storage", "account", "create")
