"""infra/teardown.sh against a fake az.

The fake az (tests/infra/fake_az.py) stands in for Azure's control plane, which
cannot run here: it records every invocation and answers as az would.
"""

from __future__ import annotations

import hashlib

from tests.infra.infra_support import command_words, is_changing


def test_teardown_deletes_the_tagged_resource_group(deployed):
    """A group that deploy.sh created (tag memory-core-tenant=acme) is deleted whole."""
    azure = deployed
    azure.run("teardown.sh", "--tenant", "acme", "--yes")
    changing = [c for c in azure.calls() if is_changing(c)]
    assert [command_words(c) for c in changing] == [["group", "delete"]]
    assert "rg-memory-acme" not in azure.state()["groups"]


def test_teardown_of_untagged_group_deletes_only_the_tenant_resources(deployed):
    """In a group deploy.sh did not create, only the tenant's own resources are deleted."""
    azure = deployed
    state = azure.state()
    state["groups"]["rg-memory-acme"]["tags"] = {}
    azure.save_state(state)
    azure.run("teardown.sh", "--tenant", "acme", "--yes")
    state = azure.state()
    assert "rg-memory-acme" in state["groups"]
    assert not any(state[t] for t in ("apps", "cosmos", "storage", "components", "workspaces", "identities"))
    assert not azure.find("group", "delete")


def test_teardown_twice_is_a_no_op(deployed):
    """Tearing down a tenant that is already gone succeeds and changes nothing."""
    azure = deployed
    azure.run("teardown.sh", "--tenant", "acme", "--yes")
    azure.reset_log()
    proc = azure.run("teardown.sh", "--tenant", "acme", "--yes")
    assert "nothing to remove" in proc.stderr
    assert not [c for c in azure.calls() if is_changing(c)]


def test_teardown_needs_confirmation(deployed):
    """Without --yes and without a terminal, teardown refuses and deletes nothing."""
    azure = deployed
    proc = azure.run("teardown.sh", "--tenant", "acme", check=False)
    assert proc.returncode != 0 and "--yes" in proc.stderr
    assert not [c for c in azure.calls() if is_changing(c)]


def test_teardown_what_if_runs_nothing(deployed):
    """teardown --what-if prints the delete and calls az not once."""
    azure = deployed
    proc = azure.run("teardown.sh", "--tenant", "acme", "--what-if")
    assert "az group delete --name rg-memory-acme --yes" in proc.stdout
    assert azure.calls() == []
    assert "rg-memory-acme" in azure.state()["groups"]


def test_redeploy_after_teardown_recreates_the_tenant(deployed):
    """After teardown, deploy builds the tenant again from nothing."""
    azure = deployed
    azure.run("teardown.sh", "--tenant", "acme", "--yes")
    azure.deploy("--no-code")
    assert azure.cosmos()["databases"]["memory"]["containers"]["Memories"]


def test_teardown_of_a_group_shared_with_another_tenant_keeps_the_group_and_the_other_tenant(azure):
    """RESOURCE_GROUP may be shared (docs/deploy.md): tearing down the tenant whose deploy created (and
    tagged) the group deletes that tenant's resources one by one and leaves the group and the other
    tenant's resources (its Cosmos DB account with its memories) in place."""
    azure.write_tenant("alpha", RESOURCE_GROUP="rg-shared")
    azure.write_tenant("beta", RESOURCE_GROUP="rg-shared")
    azure.deploy("--no-code", tenant="alpha")
    azure.deploy("--no-code", tenant="beta")
    azure.reset_log()
    proc = azure.run("teardown.sh", "--tenant", "alpha", "--yes")
    state = azure.state()
    assert "rg-shared" in state["groups"] and not azure.find("group", "delete")
    left = {k for t in ("apps", "cosmos", "storage", "identities", "components", "workspaces") for k in state[t]}
    assert left == {"rg-shared/func-memory-beta", "rg-shared/cosmos-memory-beta", f"rg-shared/stmemorybeta{hashlib.sha256(b'beta').hexdigest()[:6]}",
                    "rg-shared/id-memory-beta", "rg-shared/appi-memory-beta", "rg-shared/log-memory-beta"}
    assert "cosmos-memory-beta (Microsoft.DocumentDB/databaseAccounts): tagged memory-core-tenant=beta" in proc.stderr


def test_teardown_keeps_a_cosmos_account_another_tenant_file_names(azure):
    """Two tenants of an older deploy.sh (no resource tags) share one Cosmos DB account in an untagged
    group: the teardown of one leaves the account, which the other tenant file names, in place."""
    azure.write_tenant("alpha", RESOURCE_GROUP="rg-shared", COSMOS_ACCOUNT="cosmos-shared", COSMOS_DATABASE="alpha")
    azure.write_tenant("beta", RESOURCE_GROUP="rg-shared", COSMOS_ACCOUNT="cosmos-shared", COSMOS_DATABASE="beta")
    azure.deploy("--no-code", tenant="alpha")
    azure.deploy("--no-code", tenant="beta")
    state = azure.state()
    state["groups"]["rg-shared"]["tags"] = {}
    for table in ("apps", "cosmos", "storage", "identities", "components", "workspaces"):
        for item in state[table].values():
            item.pop("tags", None)
    azure.save_state(state)
    azure.run("teardown.sh", "--tenant", "beta", "--yes")
    state = azure.state()
    assert "rg-shared/cosmos-shared" in state["cosmos"]
    assert "rg-shared/func-memory-beta" not in state["apps"] and "rg-shared/func-memory-alpha" in state["apps"]
    assert not azure.find("cosmosdb", "delete")


def test_teardown_keeps_a_tagged_group_that_holds_someone_elses_resource(deployed):
    """A resource nobody's tenant file names (put into the group by hand) keeps the group from being deleted."""
    azure = deployed
    state = azure.state()
    state["storage"]["rg-memory-acme/stsomeoneelse"] = {
        "id": "/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg-memory-acme/providers/"
              "Microsoft.Storage/storageAccounts/stsomeoneelse", "name": "stsomeoneelse"}
    azure.save_state(state)
    azure.run("teardown.sh", "--tenant", "acme", "--yes")
    state = azure.state()
    assert "rg-memory-acme" in state["groups"] and list(state["storage"]) == ["rg-memory-acme/stsomeoneelse"]
    assert not state["apps"] and not state["cosmos"]
