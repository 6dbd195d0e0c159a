"""infra/teardown.sh against a fake az.

The fake az (tests/infra/fake_az.py) stands in for Azure's control plane, which
cannot run here: it records every invocation and answers as az would.
"""

from __future__ import annotations

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
