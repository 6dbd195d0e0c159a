#!/usr/bin/env python3
"""A fake Azure CLI for the infra tests.

Azure's control plane cannot run in the test environment, so this stands in for
the ``az`` commands that infra/*.sh use. It

* appends every invocation (its argv, JSON-encoded, one line each) to the file
  named by ``FAKE_AZ_LOG``;
* keeps the resources it has "created" in the JSON file named by
  ``FAKE_AZ_STATE``, so a second run sees what the first one made;
* answers ``show``/``list`` with JSON shaped like the real CLI's, and a missing
  resource with exit code 3 and a ``ResourceNotFound`` message, as az does;
* refuses, with exit code 2, any command or argument shape it does not know, so
  a script that drifts from what it emulates fails loudly instead of passing.

Only ``--output json`` and ``--output none`` are emulated; the scripts parse JSON
with python3 and never rely on ``--query`` / ``-o tsv``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import uuid
from pathlib import Path

SUBSCRIPTION = "11111111-2222-3333-4444-555555555555"
TENANT_ID = "99999999-8888-7777-6666-555555555555"
FAKE_STORAGE_KEY = "ZmFrZS1zdG9yYWdlLWtleQ=="

# Options that take no value.
FLAGS = {"--yes", "-y", "--no-wait", "--only-show-errors", "--debug", "--verbose", "--help", "-h",
         "--no-pretty-print"}
SHORT = {"-g": "--resource-group", "-n": "--name", "-o": "--output", "-l": "--location", "-y": "--yes"}


class AzError(Exception):
    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def not_found(what: str) -> AzError:
    return AzError(f"(ResourceNotFound) The Resource '{what}' was not found.\nCode: ResourceNotFound", 3)


# --------------------------------------------------------------------------- parsing
def parse(argv: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    words: list[str] = []
    opts: dict[str, list[str]] = {}
    i = 0
    while i < len(argv) and not argv[i].startswith("-"):
        words.append(argv[i])
        i += 1
    current = None
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("-"):  # no value the scripts pass starts with '-'
            name = SHORT.get(arg, arg)
            if "=" in name and name.startswith("--"):
                name, value = name.split("=", 1)
                opts.setdefault(name, []).append(value)
                current = None
            else:
                opts.setdefault(name, [])
                current = None if name in FLAGS else name
        elif current is None:
            raise AzError(f"unrecognized arguments: {arg}", 2)
        else:
            opts[current].append(arg)
        i += 1
    return words, opts


def one(opts: dict, name: str, required: bool = True, default=None):
    values = opts.get(name)
    if not values:
        if required:
            raise AzError(f"the following arguments are required: {name}", 2)
        return default
    if len(values) != 1:
        raise AzError(f"{name} expects one value, got {values}", 2)
    return values[0]


def expand_at(value: str):
    """az expands @file arguments to the file's content."""
    if value.startswith("@"):
        return Path(value[1:]).read_text(encoding="utf-8")
    return value


# --------------------------------------------------------------------------- state
class State:
    def __init__(self, path: Path):
        self.path = path
        if path.exists() and path.read_text().strip():
            self.data = json.loads(path.read_text())
        else:
            self.data = {}
        for key in ("groups", "workspaces", "components", "cosmos", "deployments", "storage", "apps",
                    "sql_role_assignments", "role_assignments", "identities"):
            self.data.setdefault(key, {})

    def save(self) -> None:
        self.path.write_text(json.dumps(self.data, indent=2, sort_keys=True))

    def __getitem__(self, key):
        return self.data[key]


def key(rg: str, name: str) -> str:
    return f"{rg.lower()}/{name.lower()}"


def rg_id(rg: str) -> str:
    return f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{rg}"


def tags_of(opts: dict) -> dict:
    """--tags KEY=VALUE ... as az stores them on a resource."""
    return dict(t.split("=", 1) for t in opts.get("--tags", []))


def need_group(state: State, rg: str) -> None:
    if rg.lower() not in state["groups"]:
        raise AzError(f"(ResourceGroupNotFound) Resource group '{rg}' could not be found.", 3)


# --------------------------------------------------------------------------- commands
def account_show(state, opts):
    if os.environ.get("FAKE_AZ_LOGGED_OUT"):
        raise AzError("Please run 'az login' to setup account.", 1)
    return {"id": SUBSCRIPTION, "name": "fake-subscription", "tenantId": TENANT_ID, "user": {"name": "tester"}}


def access_token(state, opts):
    """az account get-access-token --scope: a token for the signed-in user. The tests mint a real
    RS256 token (tests/auth/idp.py) and hand it over in FAKE_AZ_ACCESS_TOKEN."""
    scope = one(opts, "--scope")
    token = os.environ.get("FAKE_AZ_ACCESS_TOKEN")
    if not token:
        raise AzError(f"AADSTS500011: The resource principal named {scope} was not found in the tenant.", 1)
    with open(os.environ["FAKE_AZ_LOG"] + ".scopes", "a", encoding="utf-8") as fh:
        fh.write(scope + "\n")
    return {"accessToken": token, "expiresOn": "2099-01-01 00:00:00.000000", "subscription": SUBSCRIPTION,
            "tenant": TENANT_ID, "tokenType": "Bearer"}


def extension_show(state, opts):
    name = one(opts, "--name")
    if name not in ("application-insights",):
        raise AzError(f"The extension {name} is not installed.", 1)
    return {"name": name, "version": "1.2.3", "extensionType": "whl"}


def group_show(state, opts):
    rg = one(opts, "--name")
    group = state["groups"].get(rg.lower())
    if not group:
        raise AzError(f"(ResourceGroupNotFound) Resource group '{rg}' could not be found.", 3)
    return group


def group_create(state, opts):
    rg, location = one(opts, "--name"), one(opts, "--location")
    tags = dict(t.split("=", 1) for t in opts.get("--tags", []))
    group = {"id": rg_id(rg), "name": rg, "location": location, "tags": tags,
             "properties": {"provisioningState": "Succeeded"}}
    state["groups"][rg.lower()] = group
    return group


def group_delete(state, opts):
    rg = one(opts, "--name")
    if "--yes" not in opts:
        raise AzError("Are you sure you want to perform this operation? (y/n): can't prompt without --yes", 1)
    need_group(state, rg)
    del state["groups"][rg.lower()]
    for table in ("workspaces", "components", "cosmos", "deployments", "storage", "apps", "identities"):
        for k in [k for k in state[table] if k.startswith(rg.lower() + "/")]:
            del state[table][k]
    return None


def workspace_show(state, opts):
    rg, name = one(opts, "--resource-group"), one(opts, "--workspace-name")
    item = state["workspaces"].get(key(rg, name))
    if not item:
        raise not_found(f"Microsoft.OperationalInsights/workspaces/{name}")
    return item


def workspace_create(state, opts):
    rg, name = one(opts, "--resource-group"), one(opts, "--workspace-name")
    need_group(state, rg)
    item = {"id": f"{rg_id(rg)}/providers/Microsoft.OperationalInsights/workspaces/{name}", "name": name,
            "location": one(opts, "--location"), "customerId": str(uuid.uuid4()), "tags": tags_of(opts)}
    state["workspaces"][key(rg, name)] = item
    return item


def workspace_delete(state, opts):
    rg, name = one(opts, "--resource-group"), one(opts, "--workspace-name")
    workspace_show(state, opts)
    del state["workspaces"][key(rg, name)]


def component_show(state, opts):
    rg, name = one(opts, "--resource-group"), one(opts, "--app")
    item = state["components"].get(key(rg, name))
    if not item:
        raise not_found(f"microsoft.insights/components/{name}")
    return item


def component_create(state, opts):
    rg, name = one(opts, "--resource-group"), one(opts, "--app")
    need_group(state, rg)
    workspace = one(opts, "--workspace")
    if not any(w["id"] == workspace for w in state["workspaces"].values()):
        raise AzError(f"workspace {workspace} not found", 1)
    ikey = str(uuid.uuid4())
    item = {"id": f"{rg_id(rg)}/providers/microsoft.insights/components/{name}", "name": name,
            "location": one(opts, "--location"), "instrumentationKey": ikey, "workspaceResourceId": workspace,
            "connectionString": f"InstrumentationKey={ikey};IngestionEndpoint=https://fake.in.applicationinsights.azure.com/",
            "tags": tags_of(opts)}
    state["components"][key(rg, name)] = item
    return item


def component_delete(state, opts):
    rg, name = one(opts, "--resource-group"), one(opts, "--app")
    component_show(state, opts)
    del state["components"][key(rg, name)]


def cosmos_account(state, rg, name):
    item = state["cosmos"].get(key(rg, name))
    if not item:
        raise not_found(f"Microsoft.DocumentDB/databaseAccounts/{name}")
    return item


def cosmos_public(item):
    return {k: v for k, v in item.items() if k != "databases"}


def cosmos_show(state, opts):
    return cosmos_public(cosmos_account(state, one(opts, "--resource-group"), one(opts, "--name")))


def cosmos_create(state, opts):
    rg, name = one(opts, "--resource-group"), one(opts, "--name")
    if "--disable-local-auth" in opts and os.environ.get("FAKE_AZ_OLD_CLI"):
        raise AzError("unrecognized arguments: --disable-local-auth", 2)
    need_group(state, rg)
    locations = opts.get("--locations") or []
    region = next((loc.split("=", 1)[1] for loc in locations if loc.startswith("regionName=")), None)
    if not region:
        raise AzError("--locations needs regionName=...", 2)
    caps = [{"name": c} for c in opts.get("--capabilities", [])]
    item = {"id": f"{rg_id(rg)}/providers/Microsoft.DocumentDB/databaseAccounts/{name}", "name": name,
            "kind": one(opts, "--kind", required=False, default="GlobalDocumentDB"),
            "documentEndpoint": f"https://{name}.documents.azure.com:443/", "capabilities": caps,
            "consistencyPolicy": {"defaultConsistencyLevel": one(opts, "--default-consistency-level", False, "Session")},
            "location": region, "locations": [{"locationName": region, "failoverPriority": 0}],
            "disableLocalAuth": one(opts, "--disable-local-auth", False, "false") == "true",
            "provisioningState": "Succeeded", "databases": {}, "tags": tags_of(opts)}
    state["cosmos"][key(rg, name)] = item
    return cosmos_public(item)


CONSISTENCY_LEVELS = ("Eventual", "ConsistentPrefix", "Session", "BoundedStaleness", "Strong")


def cosmos_update(state, opts):
    """--capabilities, which replaces the account's whole list, as az does, and --default-consistency-level."""
    item = cosmos_account(state, one(opts, "--resource-group"), one(opts, "--name"))
    caps = opts.get("--capabilities")
    level = one(opts, "--default-consistency-level", required=False)
    if not caps and level is None:
        raise AzError("fake az: only cosmosdb update --capabilities / --default-consistency-level are emulated", 2)
    if caps:
        if "EnableServerless" in [c["name"] for c in item["capabilities"]] and "EnableServerless" not in caps:
            raise AzError("(BadRequest) Capability EnableServerless cannot be removed from an account.", 1)
        item["capabilities"] = [{"name": c} for c in caps]
    if level is not None:
        if level not in CONSISTENCY_LEVELS:
            raise AzError(f"argument --default-consistency-level: invalid choice: '{level}'", 2)
        item["consistencyPolicy"] = {**item.get("consistencyPolicy", {}), "defaultConsistencyLevel": level}
    return cosmos_public(item)


def cosmos_delete(state, opts):
    rg, name = one(opts, "--resource-group"), one(opts, "--name")
    cosmos_account(state, rg, name)
    del state["cosmos"][key(rg, name)]


def container_show(state, opts):
    rg, acc = one(opts, "--resource-group"), one(opts, "--account-name")
    db, name = one(opts, "--database-name"), one(opts, "--name")
    account = cosmos_account(state, rg, acc)
    database = account["databases"].get(db)
    if database is None:
        raise AzError(f"(NotFound) Owner resource does not exist. Database '{db}'", 3)
    container = database["containers"].get(name)
    if container is None:
        raise AzError(f"(NotFound) Resource Not Found. Container '{name}'", 3)
    return container


def sql_role_list(state, opts):
    rg, acc = one(opts, "--resource-group"), one(opts, "--account-name")
    account_id = cosmos_account(state, rg, acc)["id"]
    return [a for a in state["sql_role_assignments"].values() if a["scope"].startswith(account_id)]


def sql_role_create(state, opts):
    rg, acc = one(opts, "--resource-group"), one(opts, "--account-name")
    account = cosmos_account(state, rg, acc)
    role = one(opts, "--role-definition-id")
    principal, scope = one(opts, "--principal-id"), one(opts, "--scope")
    if not role.startswith("/"):
        role = f"{account['id']}/sqlRoleDefinitions/{role}"
    if scope == "/":
        scope = account["id"]
    if not scope.startswith(account["id"]):
        raise AzError(f"scope {scope} is not inside account {account['id']}", 1)
    name = str(uuid.uuid4())
    item = {"id": f"{account['id']}/sqlRoleAssignments/{name}", "name": name, "principalId": principal,
            "roleDefinitionId": role, "scope": scope, "resourceGroup": rg}
    state["sql_role_assignments"][name] = item
    return item


def _template_value(value, params):
    """Resolve [parameters('x')] anywhere in a template value (the only expression emulated inside resources)."""
    if isinstance(value, dict):
        return {k: _template_value(v, params) for k, v in value.items()}
    if isinstance(value, list):
        return [_template_value(v, params) for v in value]
    if isinstance(value, str) and value.startswith("[parameters('") and value.endswith("')]"):
        return params[value[len("[parameters('"):-len("')]")]]
    return value


def _load_template(opts):
    """The --template-file and its --parameters, checked as ARM checks them."""
    template = json.loads(Path(one(opts, "--template-file")).read_text())
    if not template.get("$schema", "").endswith("deploymentTemplate.json#"):
        raise AzError("InvalidTemplate: missing deployment template $schema", 1)
    params = {p: spec.get("defaultValue") for p, spec in template.get("parameters", {}).items()}
    for pair in opts.get("--parameters", []):
        pname, value = pair.split("=", 1)
        if pname not in params:
            raise AzError(f"InvalidTemplate: unknown parameter {pname}", 1)
        spec = template["parameters"][pname]
        params[pname] = int(value) if spec["type"] == "int" else value
        if "allowedValues" in spec and params[pname] not in spec["allowedValues"]:
            raise AzError(f"InvalidTemplate: {pname}={value} is not allowed", 1)
    missing = [p for p, v in params.items() if v is None]
    if missing:
        raise AzError(f"InvalidTemplate: missing parameters {missing}", 1)
    return template, params


def deployment_show(state, opts):
    rg, name = one(opts, "--resource-group"), one(opts, "--name")
    item = state["deployments"].get(key(rg, name))
    if not item:
        raise AzError(f"(DeploymentNotFound) Deployment '{name}' could not be found.", 3)
    return item


def deployment_create(state, opts):
    """Apply the Cosmos SQL template: the only ARM template the scripts deploy."""
    rg, name = one(opts, "--resource-group"), one(opts, "--name")
    need_group(state, rg)
    template, params = _load_template(opts)
    account = cosmos_account(state, rg, params["accountName"])
    for res in template["resources"]:
        props = res["properties"]
        if res["type"] == "Microsoft.DocumentDB/databaseAccounts/sqlDatabases":
            db = _template_value(props["resource"]["id"], params)
            account["databases"].setdefault(db, {"id": db, "containers": {}})
        elif res["type"] == "Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers":
            db, cname = params["databaseName"], _template_value(props["resource"]["id"], params)
            if db not in account["databases"]:
                raise AzError("ParentResourceNotFound: database", 1)
            existing = account["databases"][db]["containers"].get(cname)
            pk = props["resource"]["partitionKey"]
            if existing and existing["resource"]["partitionKey"] != pk:
                raise AzError("BadRequest: Document collection partition key cannot be changed.", 1)
            resource = _template_value({k: v for k, v in props["resource"].items() if k != "id"}, params)
            if resource.get("fullTextPolicy") and not any(
                    c["name"] == "EnableNoSQLFullTextSearch" for c in account["capabilities"]):
                raise AzError("(BadRequest) Full text search is not enabled for this account.", 1)
            account["databases"][db]["containers"][cname] = {
                "id": f"{account['id']}/sqlDatabases/{db}/containers/{cname}", "name": cname,
                "resource": {"id": cname, **resource},
                "capacityMode": params["capacityMode"],
            }
        else:
            raise AzError(f"fake az: template resource type {res['type']} is not emulated", 2)
    item = {"id": f"{rg_id(rg)}/providers/Microsoft.Resources/deployments/{name}", "name": name,
            "properties": {"provisioningState": "Succeeded", "parameters": {k: {"value": v} for k, v in params.items()}}}
    state["deployments"][key(rg, name)] = item
    return item


def _what_if_delta(before, after, path=""):
    """ARM what-if's property changes between two JSON values (Create/Delete/Modify per leaf)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for k in sorted(set(before) | set(after)):
            sub = f"{path}.{k}" if path else k
            if k not in before:
                out.append({"path": sub, "propertyChangeType": "Create", "after": after[k]})
            elif k not in after:
                out.append({"path": sub, "propertyChangeType": "Delete", "before": before[k]})
            else:
                out.extend(_what_if_delta(before[k], after[k], sub))
        return out
    if before != after:
        return [{"path": path, "propertyChangeType": "Modify", "before": before, "after": after}]
    return []


def deployment_what_if(state, opts):
    """az deployment group what-if --no-pretty-print: the changes the Cosmos SQL template would make."""
    rg = one(opts, "--resource-group")
    need_group(state, rg)
    if "--no-pretty-print" not in opts:
        raise AzError("fake az: only --no-pretty-print (JSON) what-if output is emulated", 2)
    template, params = _load_template(opts)
    account = cosmos_account(state, rg, params["accountName"])
    changes = []
    for res in template["resources"]:
        props = _template_value(res["properties"], params)
        if res["type"] == "Microsoft.DocumentDB/databaseAccounts/sqlDatabases":
            db = props["resource"]["id"]
            rid = f"{account['id']}/sqlDatabases/{db}"
            exists = db in account["databases"]
            changes.append({"resourceId": rid, "changeType": "NoChange" if exists else "Create",
                            "after": {"properties": props}, "delta": []})
        else:
            db, cname = params["databaseName"], props["resource"]["id"]
            rid = f"{account['id']}/sqlDatabases/{db}/containers/{cname}"
            existing = account["databases"].get(db, {"containers": {}})["containers"].get(cname)
            if existing is None:
                changes.append({"resourceId": rid, "changeType": "Create", "after": {"properties": props}, "delta": []})
                continue
            before = {"resource": existing["resource"]}
            after = {"resource": props["resource"]}
            delta = _what_if_delta(before, after, "properties")
            changes.append({"resourceId": rid, "changeType": "Modify" if delta else "NoChange",
                            "before": {"properties": before}, "after": {"properties": after}, "delta": delta})
    return {"status": "Succeeded", "changes": changes}


def storage_show(state, opts):
    rg, name = one(opts, "--resource-group"), one(opts, "--name")
    item = state["storage"].get(key(rg, name))
    if not item:
        raise not_found(f"Microsoft.Storage/storageAccounts/{name}")
    return item


def storage_create(state, opts):
    rg, name = one(opts, "--resource-group"), one(opts, "--name")
    need_group(state, rg)
    item = {"id": f"{rg_id(rg)}/providers/Microsoft.Storage/storageAccounts/{name}", "name": name,
            "location": one(opts, "--location"), "sku": {"name": one(opts, "--sku")}, "kind": one(opts, "--kind"),
            "allowBlobPublicAccess": one(opts, "--allow-blob-public-access") == "true",
            "minimumTlsVersion": one(opts, "--min-tls-version"), "tags": tags_of(opts),
            # az reports null until allowSharedKeyAccess has been set explicitly.
            "allowSharedKeyAccess": (None if "--allow-shared-key-access" not in opts
                                     else one(opts, "--allow-shared-key-access") == "true")}
    state["storage"][key(rg, name)] = item
    return item


def storage_update(state, opts):
    item = storage_show(state, opts)
    if "--allow-shared-key-access" in opts:
        item["allowSharedKeyAccess"] = one(opts, "--allow-shared-key-access") == "true"
    for assignment in opts.get("--set") or []:
        path, value = assignment.split("=", 1)
        if not path.startswith("tags."):
            raise AzError(f"fake az: storage account update --set {path} is not emulated", 2)
        item.setdefault("tags", {})[path[len("tags."):]] = value
    return item


def storage_delete(state, opts):
    storage_show(state, opts)
    del state["storage"][key(one(opts, "--resource-group"), one(opts, "--name"))]


def identity_get(state, rg, name):
    item = state["identities"].get(key(rg, name))
    if not item:
        raise not_found(f"Microsoft.ManagedIdentity/userAssignedIdentities/{name}")
    return item


def uai_show(state, opts):
    return identity_get(state, one(opts, "--resource-group"), one(opts, "--name"))


def uai_create(state, opts):
    rg, name = one(opts, "--resource-group"), one(opts, "--name")
    need_group(state, rg)
    item = {"id": f"{rg_id(rg)}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/{name}", "name": name,
            "location": one(opts, "--location"), "principalId": str(uuid.uuid4()), "clientId": str(uuid.uuid4()),
            "tenantId": TENANT_ID, "resourceGroup": rg, "tags": tags_of(opts)}
    state["identities"][key(rg, name)] = item
    return item


def uai_delete(state, opts):
    uai_show(state, opts)
    del state["identities"][key(one(opts, "--resource-group"), one(opts, "--name"))]


def _uai_by_id(state, rid):
    for item in state["identities"].values():
        if item["id"].lower() == rid.lower():
            return item
    raise AzError(f"(ResourceNotFound) identity {rid} not found", 1)


def _add_user_identity(app, uai):
    identity = app["identity"] or {"type": "UserAssigned", "userAssignedIdentities": {}}
    if identity["type"] == "SystemAssigned":
        identity = {**identity, "type": "SystemAssigned, UserAssigned", "userAssignedIdentities": {}}
    identity.setdefault("userAssignedIdentities", {})[uai["id"]] = {"principalId": uai["principalId"],
                                                                    "clientId": uai["clientId"]}
    app["identity"] = identity


def app_get(state, opts):
    rg, name = one(opts, "--resource-group"), one(opts, "--name")
    item = state["apps"].get(key(rg, name))
    if not item:
        raise AzError(f"(ResourceNotFound) Function app '{name}' could not be found.", 3)
    return item


def app_public(item):
    return {k: v for k, v in item.items() if k not in ("settings", "package_sha256", "deployments")}


def functionapp_show(state, opts):
    return app_public(app_get(state, opts))


def functionapp_create(state, opts):
    rg, name = one(opts, "--resource-group"), one(opts, "--name")
    need_group(state, rg)
    storage = state["storage"].get(key(rg, one(opts, "--storage-account")))
    if not storage:
        raise AzError("Storage account not found", 1)
    location = one(opts, "--flexconsumption-location")
    if one(opts, "--runtime") != "python" or one(opts, "--runtime-version") not in ("3.10", "3.11", "3.12"):
        raise AzError("Invalid runtime for Flex Consumption", 1)
    settings = {
        "AzureWebJobsStorage": (f"DefaultEndpointsProtocol=https;EndpointSuffix=core.windows.net;"
                                f"AccountName={storage['name']};AccountKey={FAKE_STORAGE_KEY}"),
    }
    ai = one(opts, "--app-insights", required=False)
    if ai:
        component = state["components"].get(key(rg, ai))
        if not component:
            raise AzError(f"Application Insights {ai} not found", 1)
        settings["APPLICATIONINSIGHTS_CONNECTION_STRING"] = component["connectionString"]
    identity = None
    for assigned in opts.get("--assign-identity", []):
        if assigned == "[system]":
            identity = {"type": "SystemAssigned", "principalId": str(uuid.uuid4()), "tenantId": TENANT_ID}
    auth_type = one(opts, "--deployment-storage-auth-type", False, "StorageAccountConnectionString")
    auth_value = one(opts, "--deployment-storage-auth-value", False)
    if auth_type == "UserAssignedIdentity":
        # The CLI reference: the value is the user-assigned identity's resource id.
        if not auth_value or auth_value not in opts.get("--assign-identity", []):
            raise AzError("--deployment-storage-auth-value must name a user-assigned identity assigned to the app", 2)
        _uai_by_id(state, auth_value)
    elif auth_type == "StorageAccountConnectionString" and storage.get("allowSharedKeyAccess") is False:
        raise AzError("Key based authentication is not permitted on this storage account.", 1)
    item = {"id": f"{rg_id(rg)}/providers/Microsoft.Web/sites/{name}", "name": name, "kind": "functionapp,linux",
            "defaultHostName": f"{name}.azurewebsites.net", "location": location, "state": "Running", "identity": identity,
            "resourceGroup": rg, "settings": settings, "package_sha256": None, "deployments": 0, "tags": tags_of(opts),
            "functionAppConfig": {"runtime": {"name": "python", "version": one(opts, "--runtime-version")},
                                  "scaleAndConcurrency": {
                                      "instanceMemoryMB": int(one(opts, "--instance-memory", False, "2048")),
                                      "maximumInstanceCount": int(one(opts, "--maximum-instance-count", False, "100"))},
                                  "deployment": {"storage": {
                                      "type": "blobContainer",
                                      "value": f"https://{storage['name']}.blob.core.windows.net/app-package-{name}",
                                      "authentication": {
                                          "type": auth_type, "userAssignedIdentityResourceId": auth_value}}}}}
    for assigned in opts.get("--assign-identity", []):
        if assigned != "[system]":
            _add_user_identity(item, _uai_by_id(state, assigned))
    state["apps"][key(rg, name)] = item
    return app_public(item)


def deployment_config_show(state, opts):
    """az functionapp deployment config show: the app's functionAppConfig.deployment."""
    return app_get(state, opts)["functionAppConfig"]["deployment"]


def deployment_config_set(state, opts):
    """az functionapp deployment config set: only the authentication options are emulated. As at creation,
    UserAssignedIdentity takes the resource id of a user-assigned identity the app already has."""
    app = app_get(state, opts)
    if "--deployment-storage-name" in opts or "--deployment-storage-container-name" in opts:
        raise AzError("fake az: only the deployment storage's authentication is emulated", 2)
    auth_type = one(opts, "--deployment-storage-auth-type")
    auth_value = one(opts, "--deployment-storage-auth-value", required=False)
    authentication = {"type": auth_type, "userAssignedIdentityResourceId": None}
    if auth_type == "UserAssignedIdentity":
        assigned = {k.lower() for k in ((app.get("identity") or {}).get("userAssignedIdentities") or {})}
        if not auth_value or auth_value.lower() not in assigned:
            raise AzError("--deployment-storage-auth-value must name a user-assigned identity assigned to the app", 2)
        authentication["userAssignedIdentityResourceId"] = auth_value
    elif auth_value:
        raise AzError(f"--deployment-storage-auth-value is only for UserAssignedIdentity, not {auth_type}", 2)
    app["functionAppConfig"]["deployment"]["storage"]["authentication"] = authentication
    return app["functionAppConfig"]["deployment"]


def functionapp_delete(state, opts):
    app_get(state, opts)
    del state["apps"][key(one(opts, "--resource-group"), one(opts, "--name"))]


def identity_show(state, opts):
    return app_get(state, opts)["identity"]  # None -> no output, as az prints nothing


def identity_assign(state, opts):
    app = app_get(state, opts)
    if opts.get("--identities"):
        for rid in opts["--identities"]:
            _add_user_identity(app, _uai_by_id(state, rid))
        return app["identity"]
    if not app["identity"]:
        app["identity"] = {"type": "SystemAssigned", "principalId": str(uuid.uuid4()), "tenantId": TENANT_ID}
    return app["identity"]


def settings_list(app):
    return [{"name": k, "slotSetting": False, "value": v} for k, v in sorted(app["settings"].items())]


def appsettings_list(state, opts):
    return settings_list(app_get(state, opts))


def appsettings_set(state, opts):
    app = app_get(state, opts)
    values = opts.get("--settings") or []
    if not values:
        raise AzError("Usage Error: --settings |--slot-settings", 2)
    for raw in values:
        if raw.startswith("@"):
            data = json.loads(expand_at(raw))
            if isinstance(data, list):
                data = {d["name"]: d["value"] for d in data}
            app["settings"].update({k: str(v) for k, v in data.items()})
        elif "=" in raw:
            name, value = raw.split("=", 1)
            app["settings"][name] = value
        else:
            raise AzError(f"invalid setting {raw!r}", 2)
    return settings_list(app)


def appsettings_delete(state, opts):
    app = app_get(state, opts)
    for name in opts.get("--setting-names") or []:
        app["settings"].pop(name, None)
    return settings_list(app)


def config_zip(state, opts):
    app = app_get(state, opts)
    src = Path(one(opts, "--src"))
    if not src.is_file():
        raise AzError(f"Could not find file {src}", 1)
    if one(opts, "--build-remote", required=False) != "true":
        raise AzError("fake az: Flex Consumption Python apps need --build-remote true", 1)
    app["package_sha256"] = hashlib.sha256(src.read_bytes()).hexdigest()
    app["deployments"] += 1
    zip_copy = os.environ.get("FAKE_AZ_ZIP_COPY")
    if zip_copy:
        Path(zip_copy).write_bytes(src.read_bytes())
    return None


def _scale(app):
    return app["functionAppConfig"]["scaleAndConcurrency"]


def scale_show(state, opts):
    return _scale(app_get(state, opts))


def scale_set(state, opts):
    """az functionapp scale config set: only what is passed changes."""
    scale = _scale(app_get(state, opts))
    if "--instance-memory" in opts:
        memory = int(one(opts, "--instance-memory"))
        if memory not in (512, 2048, 4096):
            raise AzError(f"Invalid instance memory {memory}", 1)
        scale["instanceMemoryMB"] = memory
    if "--maximum-instance-count" in opts:
        scale["maximumInstanceCount"] = int(one(opts, "--maximum-instance-count"))
    if "--trigger-type" in opts:
        if one(opts, "--trigger-type") != "http":
            raise AzError("fake az: only --trigger-type http is emulated", 2)
        settings = dict(v.split("=", 1) for v in opts.get("--trigger-settings", []))
        if set(settings) != {"perInstanceConcurrency"}:
            raise AzError(f"fake az: trigger settings {sorted(settings)} are not emulated", 2)
        scale["triggers"] = {"http": {"perInstanceConcurrency": int(settings["perInstanceConcurrency"])}}
    return scale


def always_ready_set(state, opts):
    scale = _scale(app_get(state, opts))
    ready = {r["name"]: r for r in scale.get("alwaysReady") or []}
    for pair in opts.get("--settings", []):
        name, count = pair.split("=", 1)
        ready[name] = {"name": name, "instanceCount": int(count)}
    scale["alwaysReady"] = list(ready.values())
    return scale


def always_ready_delete(state, opts):
    scale = _scale(app_get(state, opts))
    names = set(opts.get("--setting-names", []))
    scale["alwaysReady"] = [r for r in scale.get("alwaysReady") or [] if r["name"] not in names]
    return scale


def role_list(state, opts):
    role, scope = one(opts, "--role"), one(opts, "--scope")
    assignee = one(opts, "--assignee", required=False)
    return [a for a in state["role_assignments"].values()
            if (assignee is None or a["principalId"] == assignee)
            and a["roleDefinitionId"].endswith("/" + role) and a["scope"] == scope]


def role_create(state, opts):
    principal, role, scope = one(opts, "--assignee-object-id"), one(opts, "--role"), one(opts, "--scope")
    one(opts, "--assignee-principal-type")
    name = str(uuid.uuid4())
    item = {"id": f"{scope}/providers/Microsoft.Authorization/roleAssignments/{name}", "name": name,
            "principalId": principal, "principalType": "ServicePrincipal", "scope": scope,
            "roleDefinitionId": f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/{role}"}
    state["role_assignments"][name] = item
    return item


RESOURCE_TABLES = ("workspaces", "components", "cosmos", "storage", "apps", "identities")


def resource_list(state, opts):
    """az resource list --resource-group: every resource in the group as {id, name, type, location, tags}
    (the type from the id; tags null when a resource has none, as ARM reports)."""
    rg = one(opts, "--resource-group")
    need_group(state, rg)
    found = []
    for table in RESOURCE_TABLES:
        for k, item in sorted(state[table].items()):
            if k.startswith(rg.lower() + "/"):
                provider = item["id"].split("/providers/", 1)[1].rsplit("/", 1)[0]
                found.append({"id": item["id"], "name": item["name"], "type": provider,
                              "location": item.get("location"), "resourceGroup": rg, "tags": item.get("tags") or None})
    return found


def resource_update(state, opts):
    rid = one(opts, "--ids")
    for item in state["cosmos"].values():
        if item["id"] == rid:
            for assignment in opts.get("--set") or []:
                path, value = assignment.split("=", 1)
                if path != "properties.disableLocalAuth":
                    raise AzError(f"fake az: cannot set {path}", 2)
                item["disableLocalAuth"] = value == "true"
            return cosmos_public(item)
    raise not_found(rid)


COMMANDS = {
    ("account", "show"): account_show,
    ("extension", "show"): extension_show,
    ("account", "get-access-token"): access_token,
    ("group", "show"): group_show,
    ("group", "create"): group_create,
    ("group", "delete"): group_delete,
    ("monitor", "log-analytics", "workspace", "show"): workspace_show,
    ("monitor", "log-analytics", "workspace", "create"): workspace_create,
    ("monitor", "log-analytics", "workspace", "delete"): workspace_delete,
    ("monitor", "app-insights", "component", "show"): component_show,
    ("monitor", "app-insights", "component", "create"): component_create,
    ("monitor", "app-insights", "component", "delete"): component_delete,
    ("cosmosdb", "show"): cosmos_show,
    ("cosmosdb", "create"): cosmos_create,
    ("cosmosdb", "update"): cosmos_update,
    ("cosmosdb", "delete"): cosmos_delete,
    ("cosmosdb", "sql", "container", "show"): container_show,
    ("cosmosdb", "sql", "role", "assignment", "list"): sql_role_list,
    ("cosmosdb", "sql", "role", "assignment", "create"): sql_role_create,
    ("deployment", "group", "show"): deployment_show,
    ("deployment", "group", "create"): deployment_create,
    ("deployment", "group", "what-if"): deployment_what_if,
    ("identity", "show"): uai_show,
    ("identity", "create"): uai_create,
    ("identity", "delete"): uai_delete,
    ("functionapp", "scale", "config", "show"): scale_show,
    ("functionapp", "scale", "config", "set"): scale_set,
    ("functionapp", "scale", "config", "always-ready", "set"): always_ready_set,
    ("functionapp", "scale", "config", "always-ready", "delete"): always_ready_delete,
    ("storage", "account", "show"): storage_show,
    ("storage", "account", "create"): storage_create,
    ("storage", "account", "update"): storage_update,
    ("storage", "account", "delete"): storage_delete,
    ("functionapp", "show"): functionapp_show,
    ("functionapp", "create"): functionapp_create,
    ("functionapp", "delete"): functionapp_delete,
    ("functionapp", "identity", "show"): identity_show,
    ("functionapp", "identity", "assign"): identity_assign,
    ("functionapp", "config", "appsettings", "list"): appsettings_list,
    ("functionapp", "config", "appsettings", "set"): appsettings_set,
    ("functionapp", "config", "appsettings", "delete"): appsettings_delete,
    ("functionapp", "deployment", "source", "config-zip"): config_zip,
    ("functionapp", "deployment", "config", "show"): deployment_config_show,
    ("functionapp", "deployment", "config", "set"): deployment_config_set,
    ("role", "assignment", "list"): role_list,
    ("role", "assignment", "create"): role_create,
    ("resource", "list"): resource_list,
    ("resource", "update"): resource_update,
}

def help_text(words: list[str]) -> int:
    """`az ... --help`: the options of the emulated commands that the scripts probe for.

    ``az cosmosdb create --disable-local-auth`` arrived with Azure/azure-cli#32530;
    FAKE_AZ_OLD_CLI stands for a CLI from before it.
    """
    lines = [f"Command\n    az {' '.join(words)}\n\nArguments"]
    if words == ["cosmosdb", "create"]:
        lines += ["    --name -n", "    --resource-group -g", "    --capabilities", "    --locations"]
        if not os.environ.get("FAKE_AZ_OLD_CLI"):
            lines.append("    --disable-local-auth  : Disable local authentication (keys) for data plane access.")
    print("\n".join(lines))
    return 0


# Options every command accepts.
GLOBAL_OPTIONS = {"--output", "--subscription", "--only-show-errors", "--debug", "--verbose"}


def main(argv: list[str]) -> int:
    log_path = os.environ.get("FAKE_AZ_LOG")
    state_path = os.environ.get("FAKE_AZ_STATE")
    if not log_path or not state_path:
        print("fake az: FAKE_AZ_LOG and FAKE_AZ_STATE must be set", file=sys.stderr)
        return 2
    with open(log_path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(argv) + "\n")
    state = State(Path(state_path))
    try:
        words, opts = parse(argv)
        handler = COMMANDS.get(tuple(words))
        if handler is None:
            raise AzError(f"fake az: '{' '.join(words)}' is not emulated", 2)
        if "--help" in opts:
            return help_text(words)
        if words[0] == "extension" and "--subscription" in opts:
            raise AzError("unrecognized arguments: --subscription", 2)
        output = one(opts, "--output", required=False, default="json")
        if output not in ("json", "none"):
            raise AzError(f"fake az: --output {output} is not emulated (use json)", 2)
        sub = one(opts, "--subscription", required=False)
        if sub is not None and sub not in (SUBSCRIPTION, "fake-subscription"):
            raise AzError(f"The subscription '{sub}' doesn't exist in cloud 'AzureCloud'.", 1)
        result = handler(state, opts)
    except AzError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return exc.code
    state.save()
    if output == "json" and result is not None:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
