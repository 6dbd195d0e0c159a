"""infra/deploy.sh checks what already exists before it changes anything.

Regions: every resource of a tenant lives in LOCATION, and Azure moves none of them, so an
existing resource elsewhere stops the run before its first changing call instead of leaving a
tenant half in one region and half in another. Consistency: the store needs session consistency
or stronger (docs/cosmos.md), so an existing Cosmos DB account set weaker stops the run, unless
deploy.sh made it for this tenant, in which case it is put back.

The fake az (tests/infra/fake_az.py) stands in for Azure's control plane, which cannot run here;
it reports locations as ARM does (Cosmos DB accounts with display names such as "East US 2").
"""

from __future__ import annotations

import pytest

from tests.infra.infra_support import command_words, is_changing, option

COSMOS = "rg-memory-acme/cosmos-memory-acme"


def _changing(azure) -> list[str]:
    return [" ".join(command_words(c)) for c in azure.calls() if is_changing(c)]


def _edit(azure, change) -> None:
    state = azure.state()
    change(state)
    azure.save_state(state)


# ------------------------------------------------------------------------------- regions
def test_resources_in_another_region_stop_the_run_before_any_change(deployed):
    """A tenant file whose LOCATION no longer matches the deployed tenant (here a tenant from before the
    user-assigned identity, which a run would create) stops before the first create, naming each
    resource and its region: no identity made in the new region beside an app in the old one."""
    azure = deployed
    _edit(azure, lambda state: state["identities"].clear())
    azure.write_tenant("acme", LOCATION="westeurope")
    proc = azure.deploy(check=False)
    assert proc.returncode != 0
    assert "another region than LOCATION=westeurope" in proc.stderr
    for name in ("cosmos-memory-acme", "func-memory-acme", "stmemoryacme822b33", "log-memory-acme", "appi-memory-acme"):
        assert f"{name} (" in proc.stderr, name
    assert "Nothing was changed" in proc.stderr
    assert _changing(azure) == []


def test_a_cosmos_account_in_another_region_stops_the_run_before_anything_is_made(azure):
    """A COSMOS_ACCOUNT that exists in another region (as ARM names it, "West Europe") is reported
    before the missing workspace, or anything else, is created."""
    azure.deploy("--no-code")
    _edit(azure, lambda state: state["cosmos"][COSMOS].update(location="West Europe"))
    _edit(azure, lambda state: state["workspaces"].clear())
    azure.reset_log()
    proc = azure.deploy("--no-code", check=False)
    assert proc.returncode != 0
    assert "cosmos-memory-acme (Microsoft.DocumentDB/databaseAccounts): West Europe" in proc.stderr
    assert _changing(azure) == []


def test_region_names_are_compared_as_arm_does(deployed):
    """A Cosmos DB account reported in "East US 2" is in LOCATION=eastus2: nothing is refused or changed."""
    azure = deployed
    _edit(azure, lambda state: state["cosmos"][COSMOS].update(location="East US 2"))
    azure.deploy()
    assert _changing(azure) == []


def test_a_group_in_another_region_is_reported_and_the_tenant_made_in_location(azure):
    """A resource group someone made in another region is usable (its region holds only its metadata):
    the run says so and creates every resource in LOCATION."""
    azure.save_state({"groups": {"rg-memory-acme": {"id": "/subscriptions/x/resourceGroups/rg-memory-acme",
                                                    "name": "rg-memory-acme", "location": "westeurope", "tags": {}}}})
    proc = azure.deploy("--no-code")
    assert "resource group rg-memory-acme is in westeurope, not LOCATION=eastus2" in proc.stderr
    assert azure.cosmos()["location"] == "eastus2"
    assert azure.app()["location"] == "eastus2"


def test_what_if_reports_another_region_as_a_run_would(deployed):
    """--what-if stops on the same check, and reads only."""
    azure = deployed
    azure.write_tenant("acme", LOCATION="westeurope")
    proc = azure.deploy("--what-if", check=False)
    assert proc.returncode != 0 and "another region than LOCATION=westeurope" in proc.stderr
    assert _changing(azure) == []


# ------------------------------------------------------------------------------- consistency
@pytest.mark.parametrize("level", ["Eventual", "ConsistentPrefix"])
def test_an_account_weaker_than_session_stops_the_run_before_any_change(deployed, level):
    """An existing account that is not tagged for this tenant, with a default consistency weaker than
    Session, stops the run before its first changing call (here the workspace a run would create),
    saying why and how to raise it; deploy.sh does not change a consistency others may rely on."""
    azure = deployed

    def change(state):
        state["cosmos"][COSMOS]["consistencyPolicy"] = {"defaultConsistencyLevel": level}
        state["cosmos"][COSMOS]["tags"] = {}
        state["workspaces"].clear()

    _edit(azure, change)
    proc = azure.deploy(check=False)
    assert proc.returncode != 0
    assert f"default consistency {level}" in proc.stderr and "Session or stronger" in proc.stderr
    assert "not tagged" in proc.stderr
    assert "az cosmosdb update -g rg-memory-acme -n cosmos-memory-acme --default-consistency-level Session" in proc.stderr
    assert _changing(azure) == []
    assert azure.cosmos()["consistencyPolicy"]["defaultConsistencyLevel"] == level


def test_another_tenants_weak_account_is_not_changed(deployed):
    """An account tagged for another tenant is refused the same way, naming its owner."""
    azure = deployed

    def change(state):
        state["cosmos"][COSMOS]["consistencyPolicy"] = {"defaultConsistencyLevel": "Eventual"}
        state["cosmos"][COSMOS]["tags"] = {"memory-core-tenant": "globex"}

    _edit(azure, change)
    proc = azure.deploy(check=False)
    assert proc.returncode != 0 and "tagged memory-core-tenant=globex" in proc.stderr
    assert _changing(azure) == []


def test_the_tenants_own_account_set_weaker_is_put_back(deployed):
    """The tenant's own account (tagged by deploy.sh) set to Eventual by hand is put back to
    COSMOS_CONSISTENCY_LEVEL with one `az cosmosdb update`, shown as an update with the difference."""
    azure = deployed
    _edit(azure, lambda state: state["cosmos"][COSMOS].update(consistencyPolicy={"defaultConsistencyLevel": "Eventual"}))
    proc = azure.deploy()
    assert _changing(azure) == ["cosmosdb update"]
    update = azure.calls()[azure.find("cosmosdb", "update")[0]]
    assert option(update, "--default-consistency-level") == ["Session"]
    assert "--capabilities" not in update
    assert "defaultConsistencyLevel: Eventual -> Session" in proc.stderr
    assert azure.cosmos()["consistencyPolicy"]["defaultConsistencyLevel"] == "Session"


def test_what_if_shows_the_consistency_it_would_put_back(deployed):
    azure = deployed
    _edit(azure, lambda state: state["cosmos"][COSMOS].update(consistencyPolicy={"defaultConsistencyLevel": "Eventual"}))
    proc = azure.deploy("--what-if")
    assert "# update:   Cosmos DB account cosmos-memory-acme (defaultConsistencyLevel: Eventual -> Session)" in proc.stdout
    assert [line for line in proc.stdout.splitlines() if line.startswith("az ")] == [
        "az cosmosdb update --resource-group rg-memory-acme --name cosmos-memory-acme "
        "--default-consistency-level Session --output none"]
    assert _changing(azure) == []


@pytest.mark.parametrize("level", ["Session", "BoundedStaleness", "Strong"])
def test_session_or_stronger_is_left_as_it_is(deployed, level):
    """Session and the levels stronger than it are what the store needs: never changed, whatever
    COSMOS_CONSISTENCY_LEVEL (the level of a new account) says."""
    azure = deployed
    _edit(azure, lambda state: state["cosmos"][COSMOS].update(consistencyPolicy={"defaultConsistencyLevel": level}))
    azure.write_tenant("acme", COSMOS_CONSISTENCY_LEVEL="Strong")
    azure.deploy()
    assert _changing(azure) == []
