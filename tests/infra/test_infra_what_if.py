"""infra/deploy.sh --what-if reads Azure and changes nothing.

The fake az (tests/infra/fake_az.py) stands in for Azure's control plane, which cannot
run here. Its `deployment group what-if` answers in the shape of
`az deployment group what-if --no-pretty-print` (changes with changeType and a delta of
propertyChanges), computed from its own state, as ARM computes it from the real one.
"""

from __future__ import annotations

import re

from tests.infra.infra_support import command_words, is_changing, option

PLAN = re.compile(r"^# (create|update|unchanged|delete):\s+(.*)$")


def _plan(stdout: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in map(PLAN.match, stdout.splitlines()) if m]


def _commands(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("az ")]


def test_what_if_changes_nothing(azure):
    """On an empty subscription --what-if makes read calls only and leaves Azure as it was."""
    proc = azure.deploy("--what-if")
    assert proc.returncode == 0
    assert azure.calls(), "what-if reads Azure"
    assert [c for c in azure.calls() if is_changing(c)] == []
    state = azure.state()
    assert not any(state[t] for t in ("groups", "cosmos", "apps", "storage", "identities"))


def test_what_if_plans_a_first_deployment(azure):
    """With nothing in Azure every resource is a create, and the changing commands follow in
    the order a run would issue them; every command is complete, with --output."""
    proc = azure.deploy("--what-if")
    plan = _plan(proc.stdout)
    creates = [what for action, what in plan if action == "create"]
    for expected in ("resource group rg-memory-acme", "Cosmos DB account cosmos-memory-acme",
                     "Cosmos DB database memory and container Memories", "storage account stmemoryacme822b33",
                     "user-assigned identity id-memory-acme", "function app func-memory-acme"):
        assert any(what.startswith(expected) for what in creates), (expected, plan)
    lines = _commands(proc.stdout)
    expected_order = [
        "az group create", "az monitor log-analytics workspace create", "az monitor app-insights component create",
        "az cosmosdb create", "az deployment group create", "az storage account create", "az identity create",
        "az cosmosdb sql role assignment create", "az role assignment create", "az functionapp create",
        "az functionapp scale config set", "az functionapp config appsettings set",
        "az functionapp deployment source config-zip",
    ]
    positions = [next(i for i, line in enumerate(lines) if line.startswith(prefix + " ")) for prefix in expected_order]
    assert positions == sorted(positions)
    assert all("--output" in line for line in lines)
    assert not [line for line in lines if " list " in line or " show " in line], "reads are run, not printed"


def test_what_if_on_a_deployed_tenant_is_unchanged_throughout(deployed):
    """Against a tenant as a deploy left it, every resource is unchanged and no command is listed."""
    proc = deployed.deploy("--what-if")
    plan = _plan(proc.stdout)
    assert plan and {action for action, _ in plan} == {"unchanged"}, plan
    assert _commands(proc.stdout) == []
    assert any(what.endswith("containers/Memories") for _, what in plan)


def test_what_if_asks_arm_about_the_container(deployed):
    """The Cosmos step uses `az deployment group what-if` with the template and its parameters."""
    deployed.deploy("--what-if")
    calls = deployed.calls()
    what_if = [c for c in calls if command_words(c) == ["deployment", "group", "what-if"]]
    assert len(what_if) == 1
    assert option(what_if[0], "--template-file")[0].endswith("infra/arm/cosmos-sql.json")
    assert "containerName=Memories" in option(what_if[0], "--parameters")


def test_what_if_shows_drift_with_the_difference(deployed):
    """Changes made outside deploy.sh show up per resource as updates with the difference:
    the container's indexing policy (through ARM's what-if), an app setting, the scale
    configuration and the storage account's shared-key access. Nothing is changed."""
    azure = deployed
    state = azure.state()
    container = state["cosmos"]["rg-memory-acme/cosmos-memory-acme"]["databases"]["memory"]["containers"]["Memories"]
    container["resource"]["indexingPolicy"]["includedPaths"] = [{"path": "/*"}]
    container["resource"]["defaultTtl"] = 3600
    app = state["apps"]["rg-memory-acme/func-memory-acme"]
    app["settings"]["MEMORY_DELETION_MODE"] = "immediate"
    app["functionAppConfig"]["scaleAndConcurrency"]["triggers"] = {"http": {"perInstanceConcurrency": 1}}
    state["storage"]["rg-memory-acme/stmemoryacme822b33"]["allowSharedKeyAccess"] = True
    azure.save_state(state)
    proc = azure.deploy("--what-if")
    plan = {what.split(" (")[0]: (action, what) for action, what in _plan(proc.stdout)}
    action, line = plan["sqlDatabases/memory/containers/Memories"]
    assert action == "update"
    assert "properties.resource.indexingPolicy.includedPaths" in line and "properties.resource.defaultTtl: 3600 -> -1" in line
    assert plan["app settings of func-memory-acme"] == (
        "update", "app settings of func-memory-acme (MEMORY_DELETION_MODE: immediate -> operator_approval)")
    assert plan["scale configuration of func-memory-acme"][0] == "update"
    assert "http perInstanceConcurrency: 1 -> 16" in plan["scale configuration of func-memory-acme"][1]
    assert plan["storage account stmemoryacme822b33"] == ("update", "storage account stmemoryacme822b33 (allowSharedKeyAccess: true -> false)")
    assert plan["resource group rg-memory-acme"] == ("unchanged", "resource group rg-memory-acme")
    assert [c for c in azure.calls() if is_changing(c)] == []
    assert azure.state() == state


def test_a_run_puts_the_drift_back(deployed):
    """What --what-if showed is what a run does: the container's policy is redeployed."""
    azure = deployed
    state = azure.state()
    container = state["cosmos"]["rg-memory-acme/cosmos-memory-acme"]["databases"]["memory"]["containers"]["Memories"]
    container["resource"]["indexingPolicy"]["includedPaths"] = [{"path": "/*"}]
    azure.save_state(state)
    azure.deploy()
    assert [" ".join(command_words(c)) for c in azure.calls() if is_changing(c)] == ["deployment group create"]
    fixed = azure.cosmos()["databases"]["memory"]["containers"]["Memories"]["resource"]["indexingPolicy"]
    assert {"path": "/*"} in fixed["excludedPaths"]


def test_what_if_shows_no_secret(azure):
    """--what-if output names the key settings but carries no key value."""
    proc = azure.deploy("--what-if")
    assert "MEMORY_API_KEYS" in proc.stdout
    package_sha = re.search(r"MEMORY_PACKAGE_SHA256=([0-9a-f]{64})", proc.stdout).group(1)
    assert not re.search(r"[0-9a-f]{32}", proc.stdout.replace(package_sha, ""))


def test_what_if_on_a_deployed_tenant_shows_no_key(deployed):
    """Reading the app's settings for the plan never prints the keys it finds there."""
    keys = [deployed.settings()[k] for k in ("MEMORY_API_KEYS", "MEMORY_OPERATOR_KEYS")]
    proc = deployed.deploy("--what-if")
    for key in keys:
        assert key not in proc.stdout and key not in proc.stderr
