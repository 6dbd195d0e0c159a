"""The ARM JSON templates in infra/arm/, checked as JSON against their expected structure."""

from __future__ import annotations

import json
import re

import pytest

from tests.infra.infra_support import INFRA

TEMPLATES = sorted((INFRA / "arm").glob("*.json"))
PARAM_TYPES = {"string", "securestring", "int", "bool", "object", "secureObject", "array"}
CONTAINER_TYPE = "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers"
DATABASE_TYPE = "Microsoft.DocumentDB/databaseAccounts/sqlDatabases"


def _load(name: str) -> dict:
    return json.loads((INFRA / "arm" / name).read_text())


def _expressions(node):
    if isinstance(node, dict):
        for value in node.values():
            yield from _expressions(value)
    elif isinstance(node, list):
        for value in node:
            yield from _expressions(value)
    elif isinstance(node, str) and node.startswith("[") and not node.startswith("[["):
        yield node


def test_there_is_a_template():
    """infra/arm/ holds at least the Cosmos DB template."""
    assert [t.name for t in TEMPLATES] and (INFRA / "arm" / "cosmos-sql.json") in TEMPLATES


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_template_is_a_deployment_template(path):
    """Each template is valid JSON with the deployment-template schema, a contentVersion,
    typed parameters, and resources that each have type, apiVersion and name."""
    template = json.loads(path.read_text())
    assert template["$schema"] == "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#"
    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", template["contentVersion"])
    assert set(template) <= {"$schema", "contentVersion", "metadata", "parameters", "variables", "functions",
                             "resources", "outputs", "apiProfile"}
    for name, spec in template.get("parameters", {}).items():
        assert spec["type"] in PARAM_TYPES, name
        if "defaultValue" in spec and "allowedValues" in spec:
            assert spec["defaultValue"] in spec["allowedValues"], name
    assert isinstance(template["resources"], list) and template["resources"]
    for resource in template["resources"]:
        assert {"type", "apiVersion", "name"} <= set(resource), resource
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}(-preview)?", resource["apiVersion"])


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_template_expressions_reference_declared_names(path):
    """Every [parameters('x')] and [variables('x')] in a template names something it declares,
    and every expression has balanced brackets and parentheses."""
    template = json.loads(path.read_text())
    for expr in _expressions(template):
        assert expr.endswith("]") and expr.count("(") == expr.count(")"), expr
        for name in re.findall(r"parameters\('([^']+)'\)", expr):
            assert name in template.get("parameters", {}), expr
        for name in re.findall(r"variables\('([^']+)'\)", expr):
            assert name in template.get("variables", {}), expr


def test_memories_container_partition_key():
    """The container has the hierarchical partition key /instance_id then /upn, kind
    MultiHash, version 2, written literally (not a parameter), and is named by containerName
    (default Memories) inside databaseName (default memory)."""
    template = _load("cosmos-sql.json")
    containers = [r for r in template["resources"] if r["type"] == CONTAINER_TYPE]
    assert len(containers) == 1
    resource = containers[0]["properties"]["resource"]
    assert resource["partitionKey"] == {"paths": ["/instance_id", "/upn"], "kind": "MultiHash", "version": 2}
    assert resource["id"] == "[parameters('containerName')]"
    assert template["parameters"]["containerName"]["defaultValue"] == "Memories"
    assert template["parameters"]["databaseName"]["defaultValue"] == "memory"


def test_container_depends_on_its_database():
    """The database is a resource of the template and the container waits for it."""
    template = _load("cosmos-sql.json")
    databases = [r for r in template["resources"] if r["type"] == DATABASE_TYPE]
    container = next(r for r in template["resources"] if r["type"] == CONTAINER_TYPE)
    assert len(databases) == 1
    assert databases[0]["properties"]["resource"]["id"] == "[parameters('databaseName')]"
    assert any(DATABASE_TYPE in d for d in container["dependsOn"])


def test_throughput_follows_capacity_mode():
    """capacityMode is serverless (default) or autoscale; only autoscale sets autoscaleSettings."""
    template = _load("cosmos-sql.json")
    mode = template["parameters"]["capacityMode"]
    assert mode["allowedValues"] == ["serverless", "autoscale"] and mode["defaultValue"] == "serverless"
    assert template["parameters"]["autoscaleMaxThroughput"]["minValue"] == 1000
    container = next(r for r in template["resources"] if r["type"] == CONTAINER_TYPE)
    options = container["properties"]["options"]
    assert options == "[variables('throughputOptions')]"
    expr = template["variables"]["throughputOptions"]
    assert "equals(parameters('capacityMode'), 'autoscale')" in expr
    assert "createObject('autoscaleSettings', createObject('maxThroughput', parameters('autoscaleMaxThroughput')))" in expr


def test_no_secret_in_templates():
    """No template takes or emits a key: no secure parameters, no listKeys."""
    for path in TEMPLATES:
        text = path.read_text()
        assert "listKeys" not in text and "securestring" not in text.lower(), path.name
