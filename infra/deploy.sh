#!/usr/bin/env bash
# Deploy (or update) one tenant of memory-core with the Azure CLI alone.
#
#   infra/deploy.sh --tenant NAME [--what-if] [--app-dir DIR] [--no-code] [--no-smoke]
#
# The tenant's parameters come from infra/tenants/NAME.env. Every step checks what
# already exists first, so a second run with nothing changed issues no changing call.
# See docs/deploy.md.
set -euo pipefail

# shellcheck source=lib/common.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() {
  cat <<'EOF'
Usage: infra/deploy.sh --tenant NAME [--what-if] [--app-dir DIR] [--no-code] [--no-smoke]

  --tenant NAME   deploy the tenant described by infra/tenants/NAME.env
  --what-if       read what exists in Azure, print per resource whether it would be
                  created, updated (with the difference) or left unchanged, and the
                  az commands that would change it; change nothing
  --app-dir DIR   folder holding function_app.py, host.json, requirements.txt
                  (default: the repository root)
  --no-code       provision and configure only; skip the zip deploy (and the smoke test)
  --no-smoke      skip infra/smoke.sh after the deployment
EOF
}

tenant_arg="" app_dir=$REPO_ROOT deploy_code=1 run_smoke=1
while (( $# )); do
  case $1 in
    --tenant) tenant_arg=${2:-}; shift 2 || die "--tenant needs a value" ;;
    --tenant=*) tenant_arg=${1#*=}; shift ;;
    --what-if) WHAT_IF=1; shift ;;
    --app-dir) app_dir=${2:-}; shift 2 || die "--app-dir needs a value" ;;
    --no-code) deploy_code=0; shift ;;
    --no-smoke) run_smoke=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[[ -n $tenant_arg ]] || { usage >&2; die "--tenant is required"; }

# deploy.sh's what-if reads Azure for real (show/list) and changes nothing.
WHAT_IF_READS=$WHAT_IF
require_tools
load_tenant "$tenant_arg"
validate_tenant
init_tmp

if (( WHAT_IF )); then
  command -v az >/dev/null 2>&1 || die "--what-if reads Azure: the Azure CLI (az) is required"
  printf '# what-if: tenant %s from %s\n' "$TENANT" "$TENANT_FILE"
  printf '# Read-only show/list calls run; nothing is changed. Each resource is marked create, update (with\n'
  printf '# the difference) or unchanged; the az commands that would change it follow, unrun. Values of\n'
  printf '# resources still to be created are <placeholders>; secrets are never shown.\n'
else
  step "Tenant $TENANT ($TENANT_FILE)"
fi
az_json '{}' account show
note "subscription $(jget name "<your subscription>") ($(jget id "<subscription id>"))"
# az monitor app-insights lives in an extension; a non-interactive az will not install it by itself.
if ! az extension show --name application-insights --output none >/dev/null 2>&1; then
  die "the Azure CLI extension application-insights is missing: az extension add --name application-insights"
fi

# ----------------------------------------------------------------------------- before any change
# What would otherwise stop a run halfway, with part of a tenant made, is checked while nothing is
# changed yet: the tenant's existing resources must lie in LOCATION (Azure moves none of them, and an
# app in one region on a Cosmos DB account in another pays the distance on every request), and an
# existing Cosmos DB account must give at least session consistency (docs/cosmos.md, "How it stays
# exact": a read's query must see what its stamp read saw).
step "Existing resources of $TENANT: regions and Cosmos DB consistency"
existing_group="" existing_cosmos="" raise_consistency=0
if az_show group show --name "$RESOURCE_GROUP"; then
  existing_group=$AZ_OUT
  group_location=$(jget location)
  group_location=${group_location,,}
  if [[ ${group_location// /} != "$LOCATION" ]]; then
    # A group's region holds only its metadata: resources are created in LOCATION whatever it is.
    note "warning: resource group $RESOURCE_GROUP is in $group_location, not LOCATION=$LOCATION; the tenant's resources are created in $LOCATION"
  fi
  az_json '[]' resource list --resource-group "$RESOURCE_GROUP"
  misplaced=$(printf '%s' "$AZ_OUT" | helper misplaced "$LOCATION" \
    "Microsoft.DocumentDB/databaseAccounts=$COSMOS_ACCOUNT" "Microsoft.Storage/storageAccounts=$STORAGE_ACCOUNT" \
    ${STORAGE_ACCOUNT_LEGACY:+"Microsoft.Storage/storageAccounts=$STORAGE_ACCOUNT_LEGACY"} \
    "Microsoft.Web/sites=$FUNCTION_APP" "Microsoft.ManagedIdentity/userAssignedIdentities=$MANAGED_IDENTITY" \
    "Microsoft.OperationalInsights/workspaces=$LOG_ANALYTICS_WORKSPACE" "Microsoft.Insights/components=$APP_INSIGHTS")
  [[ -z $misplaced ]] ||
    die "tenant $TENANT has resources in another region than LOCATION=$LOCATION, and Azure cannot move them:
$misplaced
Nothing was changed. Set LOCATION in $TENANT_FILE to their region (a tenant lives in one region), or give the tenant new resource names there and move the data over."
  if az_show cosmosdb show --resource-group "$RESOURCE_GROUP" --name "$COSMOS_ACCOUNT"; then
    existing_cosmos=$AZ_OUT
    consistency=$(jget consistencyPolicy.defaultConsistencyLevel)
    case ${consistency,,} in
      session | boundedstaleness | strong) ;;
      *)
        # Weaker than session (Eventual, ConsistentPrefix). Changing it changes what every client of the
        # account reads and pays, so only an account deploy.sh made for this tenant is put back.
        cosmos_owner=$(jget "tags.$TENANT_TAG")
        [[ $cosmos_owner == "$TENANT" ]] ||
          die "Cosmos DB account $COSMOS_ACCOUNT has default consistency ${consistency:-unknown}, and memory-core needs Session or stronger (Session, BoundedStaleness or Strong; docs/cosmos.md). Nothing was changed: deploy.sh raises it only on an account it created for this tenant (tagged $TENANT_TAG=$TENANT), and this one is ${cosmos_owner:+tagged $TENANT_TAG=$cosmos_owner}${cosmos_owner:-not tagged}. If every client of the account can take it: az cosmosdb update -g $RESOURCE_GROUP -n $COSMOS_ACCOUNT --default-consistency-level $COSMOS_CONSISTENCY_LEVEL, then run deploy.sh again"
        raise_consistency=1 ;;
    esac
  fi
fi

# ----------------------------------------------------------------------------- resource group
step "Resource group $RESOURCE_GROUP"
if [[ -n $existing_group ]]; then
  plan unchanged "resource group $RESOURCE_GROUP"
else
  plan create "resource group $RESOURCE_GROUP" "$LOCATION"
  az_run group create --name "$RESOURCE_GROUP" --location "$LOCATION" \
    --tags "$TENANT_TAG=$TENANT" "managed-by=memory-core-infra"
fi

# ----------------------------------------------------------------------------- monitoring
step "Log Analytics workspace $LOG_ANALYTICS_WORKSPACE"
if az_show monitor log-analytics workspace show --resource-group "$RESOURCE_GROUP" --workspace-name "$LOG_ANALYTICS_WORKSPACE"; then
  plan unchanged "Log Analytics workspace $LOG_ANALYTICS_WORKSPACE"
else
  plan create "Log Analytics workspace $LOG_ANALYTICS_WORKSPACE"
  az_run monitor log-analytics workspace create --resource-group "$RESOURCE_GROUP" \
    --workspace-name "$LOG_ANALYTICS_WORKSPACE" --location "$LOCATION" --tags "$TENANT_TAG=$TENANT"
  az_show monitor log-analytics workspace show --resource-group "$RESOURCE_GROUP" --workspace-name "$LOG_ANALYTICS_WORKSPACE" || true
fi
workspace_id=$(jget id "<id of workspace $LOG_ANALYTICS_WORKSPACE>")

step "Application Insights $APP_INSIGHTS"
if az_show monitor app-insights component show --resource-group "$RESOURCE_GROUP" --app "$APP_INSIGHTS"; then
  plan unchanged "Application Insights $APP_INSIGHTS"
else
  plan create "Application Insights $APP_INSIGHTS"
  az_run monitor app-insights component create --resource-group "$RESOURCE_GROUP" --app "$APP_INSIGHTS" \
    --location "$LOCATION" --workspace "$workspace_id" --application-type web --kind web --tags "$TENANT_TAG=$TENANT"
  az_show monitor app-insights component show --resource-group "$RESOURCE_GROUP" --app "$APP_INSIGHTS" || true
fi
appinsights_id=$(jget id "<id of Application Insights $APP_INSIGHTS>")
appinsights_connection=$(jget connectionString "<connection string of $APP_INSIGHTS>")

# ----------------------------------------------------------------------------- Cosmos DB
step "Cosmos DB account $COSMOS_ACCOUNT ($COSMOS_CAPACITY_MODE)"
if [[ -n $existing_cosmos ]]; then
  AZ_OUT=$existing_cosmos  # read before any change (above)
  if printf '%s' "$AZ_OUT" | helper has-capability EnableServerless; then existing_mode=serverless; else existing_mode=autoscale; fi
  [[ $existing_mode == "$COSMOS_CAPACITY_MODE" ]] ||
    die "Cosmos DB account $COSMOS_ACCOUNT is $existing_mode but the tenant file asks for $COSMOS_CAPACITY_MODE; the capacity mode cannot be switched in place"
  cosmos_diff=()
  local_auth_off=$(jget disableLocalAuth)
  [[ -n $local_auth_off ]] || local_auth_off=false
  if [[ $local_auth_off != "$COSMOS_DISABLE_LOCAL_AUTH" ]]; then cosmos_diff+=("disableLocalAuth: $local_auth_off -> $COSMOS_DISABLE_LOCAL_AUTH"); fi
  if (( raise_consistency )); then cosmos_diff+=("defaultConsistencyLevel: ${consistency:-none} -> $COSMOS_CONSISTENCY_LEVEL"); fi
  # Full-text indexes need the account capability (the container's full-text policy in
  # infra/arm/cosmos-sql.json). az cosmosdb update --capabilities replaces the whole list, so
  # the account's own capabilities are sent back with it.
  has_full_text=1
  printf '%s' "$AZ_OUT" | helper has-capability "$FULL_TEXT_CAPABILITY" || has_full_text=0
  if (( ! has_full_text )); then cosmos_diff+=("capabilities: + $FULL_TEXT_CAPABILITY"); fi
  read -r -a account_capabilities <<<"$(printf '%s' "$AZ_OUT" | helper capabilities)"
  account_id=$(jget id)
  if (( ${#cosmos_diff[@]} )); then
    plan update "Cosmos DB account $COSMOS_ACCOUNT" "$(printf '%s; ' "${cosmos_diff[@]}" | sed 's/; $//')"
  else
    plan unchanged "Cosmos DB account $COSMOS_ACCOUNT"
  fi
  if (( ! has_full_text )); then
    az_run cosmosdb update --resource-group "$RESOURCE_GROUP" --name "$COSMOS_ACCOUNT" \
      --capabilities ${account_capabilities[@]+"${account_capabilities[@]}"} "$FULL_TEXT_CAPABILITY"
  fi
  if (( raise_consistency )); then
    # This tenant's own account, set weaker than session by hand since deploy.sh made it: put back.
    az_run cosmosdb update --resource-group "$RESOURCE_GROUP" --name "$COSMOS_ACCOUNT" \
      --default-consistency-level "$COSMOS_CONSISTENCY_LEVEL"
  fi
  if [[ $local_auth_off != "$COSMOS_DISABLE_LOCAL_AUTH" ]]; then
    # An account created before keyless creation (or by hand): reconciled through ARM, which
    # every CLI version can do (how-to-disable-key-based-authentication in the Cosmos DB docs).
    az_run resource update --ids "$account_id" --set "properties.disableLocalAuth=$COSMOS_DISABLE_LOCAL_AUTH"
  fi
  az_show cosmosdb show --resource-group "$RESOURCE_GROUP" --name "$COSMOS_ACCOUNT" || true
else
  plan create "Cosmos DB account $COSMOS_ACCOUNT" "$COSMOS_CAPACITY_MODE, local auth $([[ $COSMOS_DISABLE_LOCAL_AUTH == true ]] && printf off || printf on)"
  cosmos_create=(cosmosdb create --resource-group "$RESOURCE_GROUP" --name "$COSMOS_ACCOUNT" --kind GlobalDocumentDB
    --locations "regionName=$LOCATION" failoverPriority=0 isZoneRedundant=False
    --default-consistency-level "$COSMOS_CONSISTENCY_LEVEL" --tags "$TENANT_TAG=$TENANT" --capabilities "$FULL_TEXT_CAPABILITY")
  if [[ $COSMOS_CAPACITY_MODE == serverless ]]; then cosmos_create+=(EnableServerless); fi
  # Keyless from the first second: az cosmosdb create --disable-local-auth, in the CLI since
  # Azure/azure-cli#32530 (December 2025). Older CLIs lack the flag; for them, and only for them,
  # the account is created with keys on and switched off at once, which leaves keys usable for
  # those seconds and fails where a deny policy on local auth exists: upgrade az (az upgrade).
  legacy_local_auth=0
  if [[ $COSMOS_DISABLE_LOCAL_AUTH == false ]] || az cosmosdb create --help 2>/dev/null | grep -q -- '--disable-local-auth'; then
    cosmos_create+=(--disable-local-auth "$COSMOS_DISABLE_LOCAL_AUTH")
  else
    legacy_local_auth=1
    note "warning: this az has no 'cosmosdb create --disable-local-auth' (added by Azure/azure-cli#32530); local auth is switched off right after creation instead: run az upgrade"
  fi
  az_run "${cosmos_create[@]}"
  az_show cosmosdb show --resource-group "$RESOURCE_GROUP" --name "$COSMOS_ACCOUNT" || true
  if (( legacy_local_auth )); then
    az_run resource update --ids "$(jget id "<id of Cosmos DB account $COSMOS_ACCOUNT>")" --set properties.disableLocalAuth=true
  fi
fi
cosmos_id=$(jget id "<id of Cosmos DB account $COSMOS_ACCOUNT>")
cosmos_endpoint=$(jget documentEndpoint "https://$COSMOS_ACCOUNT.documents.azure.com:443/")

step "Cosmos DB database $COSMOS_DATABASE and container $COSMOS_CONTAINER (ARM template)"
template="$INFRA_DIR/arm/cosmos-sql.json"
arm_params=("accountName=$COSMOS_ACCOUNT" "databaseName=$COSMOS_DATABASE" "containerName=$COSMOS_CONTAINER"
  "capacityMode=$COSMOS_CAPACITY_MODE" "autoscaleMaxThroughput=$COSMOS_AUTOSCALE_MAX_THROUGHPUT")
arm_digest=$(helper digest "file:$template" "${arm_params[@]}")
deployment_name="memory-cosmos-${arm_digest:0:12}"
pk_paths="/instance_id,/upn" pk_kind=MultiHash pk_version=2
container_exists=0
if az_show cosmosdb sql container show --resource-group "$RESOURCE_GROUP" --account-name "$COSMOS_ACCOUNT" \
  --database-name "$COSMOS_DATABASE" --name "$COSMOS_CONTAINER"; then
  printf '%s' "$AZ_OUT" | helper pk-matches "$pk_paths" "$pk_kind" "$pk_version" ||
    die "container $COSMOS_CONTAINER exists with a different partition key (above); a partition key cannot change: migrate the data to a new container"
  container_exists=1
fi
cosmos_changes=1
if (( container_exists )); then
  # ARM's own comparison of the template with what exists (az deployment group what-if,
  # https://learn.microsoft.com/azure/azure-resource-manager/templates/deploy-what-if): a read,
  # so a run with nothing changed stays read-only, and a policy changed by hand shows up as
  # drift and is put back.
  az_json '{}' deployment group what-if --resource-group "$RESOURCE_GROUP" --name "$deployment_name" \
    --template-file "$template" --parameters "${arm_params[@]}" --result-format FullResourcePayloads --no-pretty-print
  what_if_result=$AZ_OUT
  printf '%s' "$what_if_result" | helper what-if-plan >"$TMP_DIR/what-if.txt" || cosmos_changes=0
  if (( WHAT_IF )); then cat "$TMP_DIR/what-if.txt"; else sed 's/^# /    /' "$TMP_DIR/what-if.txt" >&2; fi
else
  plan create "Cosmos DB database $COSMOS_DATABASE and container $COSMOS_CONTAINER" "deployment $deployment_name"
fi
if (( cosmos_changes )); then
  az_run deployment group create --resource-group "$RESOURCE_GROUP" --name "$deployment_name" \
    --template-file "$template" --mode Incremental --parameters "${arm_params[@]}"
  if (( ! WHAT_IF )); then
    az_show cosmosdb sql container show --resource-group "$RESOURCE_GROUP" --account-name "$COSMOS_ACCOUNT" \
      --database-name "$COSMOS_DATABASE" --name "$COSMOS_CONTAINER" ||
      die "the ARM deployment finished but container $COSMOS_CONTAINER is not there"
    printf '%s' "$AZ_OUT" | helper pk-matches "$pk_paths" "$pk_kind" "$pk_version" ||
      die "container $COSMOS_CONTAINER has an unexpected partition key"
  fi
fi

# ----------------------------------------------------------------------------- storage
# The storage account this tenant's app already runs on (none for a new app): an account from an
# earlier deploy.sh carries no tag, and one named by the old default (STORAGE_ACCOUNT_LEGACY) is kept.
app_storage=""
if az_show functionapp show --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP"; then
  az_json '[]' functionapp config appsettings list --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP"
  app_storage=$(printf '%s' "$AZ_OUT" | helper settings-nul | tr '\0' '\n' |
    sed -nE 's/^AzureWebJobsStorage__accountName=//p; s/^AzureWebJobsStorage=.*AccountName=([a-z0-9]+).*/\1/p' | head -n 1)
fi
if [[ -n $STORAGE_ACCOUNT_LEGACY && $app_storage == "$STORAGE_ACCOUNT_LEGACY" && $STORAGE_ACCOUNT != "$STORAGE_ACCOUNT_LEGACY" ]]; then
  note "keeping storage account $STORAGE_ACCOUNT_LEGACY, which $FUNCTION_APP runs on (the default name before $STORAGE_ACCOUNT)"
  STORAGE_ACCOUNT=$STORAGE_ACCOUNT_LEGACY
fi
step "Storage account $STORAGE_ACCOUNT"
if az_show storage account show --resource-group "$RESOURCE_GROUP" --name "$STORAGE_ACCOUNT"; then
  # Never share another tenant's (or anyone's) account: teardown would delete it with this tenant.
  storage_owner=$(jget "tags.$TENANT_TAG")
  if [[ $storage_owner != "$TENANT" ]]; then
    [[ -z $storage_owner && $app_storage == "$STORAGE_ACCOUNT" ]] ||
      die "storage account $STORAGE_ACCOUNT exists but tenant $TENANT did not create it (${storage_owner:+it is tagged $TENANT_TAG=$storage_owner}${storage_owner:-no tag $TENANT_TAG=$TENANT}): set another STORAGE_ACCOUNT in $TENANT_FILE, or, if it is meant for this tenant alone, tag it: az storage account update -g $RESOURCE_GROUP -n $STORAGE_ACCOUNT --tags $TENANT_TAG=$TENANT"
  fi
  if [[ -z $storage_owner ]]; then
    # The account of an earlier deploy.sh, which tagged only the group: tagged now, so teardown knows it.
    plan update "storage account $STORAGE_ACCOUNT" "tags: + $TENANT_TAG=$TENANT"
    az_run storage account update --resource-group "$RESOURCE_GROUP" --name "$STORAGE_ACCOUNT" --set "tags.$TENANT_TAG=$TENANT"
  fi
  storage_shared_key=$(jget allowSharedKeyAccess)
  if [[ $STORAGE_DISABLE_SHARED_KEY == true && $storage_shared_key != false ]]; then
    # An account from an earlier deploy.sh (shared keys on at creation): switched off here,
    # before the app is configured, since the host already reaches storage with its identity.
    plan update "storage account $STORAGE_ACCOUNT" "allowSharedKeyAccess: ${storage_shared_key:-null} -> false"
    az_run storage account update --resource-group "$RESOURCE_GROUP" --name "$STORAGE_ACCOUNT" --allow-shared-key-access false
  else
    plan unchanged "storage account $STORAGE_ACCOUNT"
  fi
else
  # Keyless from the first second, as the Flex identity sample creates it (azure-cli-samples
  # azure-functions/create-function-app-flex-plan-identities): where a deny policy on shared keys
  # exists, a create with keys on would fail outright.
  plan create "storage account $STORAGE_ACCOUNT" "shared-key access off"
  storage_create=(storage account create --resource-group "$RESOURCE_GROUP" --name "$STORAGE_ACCOUNT" --location "$LOCATION"
    --sku Standard_LRS --kind StorageV2 --allow-blob-public-access false --min-tls-version TLS1_2 --https-only true
    --tags "$TENANT_TAG=$TENANT")
  if [[ $STORAGE_DISABLE_SHARED_KEY == true ]]; then storage_create+=(--allow-shared-key-access false); fi
  az_run "${storage_create[@]}"
  az_show storage account show --resource-group "$RESOURCE_GROUP" --name "$STORAGE_ACCOUNT" || true
fi
storage_id=$(jget id "<id of storage account $STORAGE_ACCOUNT>")

# ----------------------------------------------------------------------------- identity and its roles
# A user-assigned identity, created and granted every role before the function app exists
# (the Flex identity sample's order): the app starts with roles that have had the time the
# rest of the deployment takes to apply, instead of racing fresh assignments into 403s.
step "Managed identity $MANAGED_IDENTITY"
if az_show identity show --resource-group "$RESOURCE_GROUP" --name "$MANAGED_IDENTITY"; then
  plan unchanged "user-assigned identity $MANAGED_IDENTITY"
else
  plan create "user-assigned identity $MANAGED_IDENTITY"
  az_run identity create --resource-group "$RESOURCE_GROUP" --name "$MANAGED_IDENTITY" --location "$LOCATION" \
    --tags "$TENANT_TAG=$TENANT"
  az_show identity show --resource-group "$RESOURCE_GROUP" --name "$MANAGED_IDENTITY" || true
fi
identity_id=$(jget id "<id of identity $MANAGED_IDENTITY>")
principal_id=$(jget principalId "<principalId of $MANAGED_IDENTITY>")
client_id=$(jget clientId "<clientId of $MANAGED_IDENTITY>")
[[ -n $principal_id && -n $client_id ]] || die "identity $MANAGED_IDENTITY has no principalId or clientId"

step "Cosmos DB Built-in Data Contributor for $MANAGED_IDENTITY"
az_json '[]' cosmosdb sql role assignment list --resource-group "$RESOURCE_GROUP" --account-name "$COSMOS_ACCOUNT"
if printf '%s' "$AZ_OUT" | helper has-sql-role "$principal_id" "$COSMOS_DATA_CONTRIBUTOR_ROLE" "$cosmos_id"; then
  plan unchanged "Cosmos DB data-plane role assignment"
else
  plan create "Cosmos DB data-plane role assignment" "Built-in Data Contributor at $COSMOS_ACCOUNT"
  az_run cosmosdb sql role assignment create --resource-group "$RESOURCE_GROUP" --account-name "$COSMOS_ACCOUNT" \
    --role-definition-id "$COSMOS_DATA_CONTRIBUTOR_ROLE" --principal-id "$principal_id" --scope "$cosmos_id"
fi

# Azure RBAC assignments are listed by role and scope and filtered here: --assignee would need
# Microsoft Graph read rights.
ensure_role() {
  local role=$1 scope=$2 what=$3
  step "$what for $MANAGED_IDENTITY"
  az_json '[]' role assignment list --role "$role" --scope "$scope"
  if printf '%s' "$AZ_OUT" | helper has-principal "$principal_id"; then
    plan unchanged "role assignment $what"
  else
    plan create "role assignment $what"
    az_run role assignment create --assignee-object-id "$principal_id" --assignee-principal-type ServicePrincipal \
      --role "$role" --scope "$scope"
  fi
}
ensure_role "$STORAGE_BLOB_DATA_OWNER_ROLE" "$storage_id" "Storage Blob Data Owner on $STORAGE_ACCOUNT"
ensure_role "$MONITORING_METRICS_PUBLISHER_ROLE" "$appinsights_id" "Monitoring Metrics Publisher on $APP_INSIGHTS"

# ----------------------------------------------------------------------------- function app
step "Function app $FUNCTION_APP (Flex Consumption, Python $APP_PYTHON_VERSION)"
if az_show functionapp show --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP"; then
  app_identities=$(printf '%s' "$AZ_OUT" | helper user-identities)
  app_host=$(jget defaultHostName "$FUNCTION_APP.azurewebsites.net")
  if [[ " ${app_identities,,} " == *" ${identity_id,,} "* ]]; then
    plan unchanged "function app $FUNCTION_APP"
  else
    # An app from an earlier deploy.sh (system-assigned identity): the user-assigned one is added
    # and the settings below switch the host, Cosmos DB and App Insights over to it.
    plan update "function app $FUNCTION_APP" "identity: + $MANAGED_IDENTITY"
    az_run functionapp identity assign --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" --identities "$identity_id"
  fi
  # The package container (Flex deployment storage) of an app from an earlier deploy.sh is reached with
  # the system-assigned identity: moved to the user-assigned one, which holds Storage Blob Data Owner on
  # the tenant's storage account, so the system identity is no longer needed for deployments.
  az_json '{}' functionapp deployment config show --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP"
  read -r deploy_auth deploy_identity deploy_account <<<"$(printf '%s' "$AZ_OUT" | helper deployment-auth)"
  if [[ ${deploy_auth,,} == userassignedidentity && ${deploy_identity,,} == "${identity_id,,}" ]]; then
    plan unchanged "deployment storage of $FUNCTION_APP" "reached with $MANAGED_IDENTITY"
  elif [[ $deploy_account == - ]]; then
    note "warning: az functionapp deployment config show names no deployment storage for $FUNCTION_APP: its authentication is left as it is ($deploy_auth)"
  elif [[ $deploy_account != "$STORAGE_ACCOUNT" ]]; then
    note "warning: the deployment storage of $FUNCTION_APP is in storage account $deploy_account, where $MANAGED_IDENTITY holds no role: left as it is ($deploy_auth)"
  else
    plan update "deployment storage of $FUNCTION_APP" "authentication: $deploy_auth -> UserAssignedIdentity $MANAGED_IDENTITY"
    az_run functionapp deployment config set --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" \
      --deployment-storage-auth-type UserAssignedIdentity --deployment-storage-auth-value "$identity_id"
  fi
else
  plan create "function app $FUNCTION_APP" "Flex Consumption, ${FUNCTION_INSTANCE_MEMORY} MB, at most $FUNCTION_MAX_INSTANCES instances"
  # --deployment-storage-auth-value takes the identity's resource id (az functionapp create reference).
  az_run functionapp create --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" \
    --storage-account "$STORAGE_ACCOUNT" --flexconsumption-location "$LOCATION" \
    --runtime python --runtime-version "$APP_PYTHON_VERSION" --functions-version 4 \
    --instance-memory "$FUNCTION_INSTANCE_MEMORY" --maximum-instance-count "$FUNCTION_MAX_INSTANCES" \
    --app-insights "$APP_INSIGHTS" --assign-identity "$identity_id" \
    --deployment-storage-auth-type UserAssignedIdentity --deployment-storage-auth-value "$identity_id" --https-only true \
    --tags "$TENANT_TAG=$TENANT"
  az_show functionapp show --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" || true
  app_host=$(jget defaultHostName "$FUNCTION_APP.azurewebsites.net")
fi

# ----------------------------------------------------------------------------- scale and concurrency
# Reconciled on every run: none of these is fixed at creation (az functionapp scale config set).
# Python's default per-instance HTTP concurrency on Flex Consumption is 1, so parallel MCP calls
# would each start an instance and pay a cold start.
step "Scale: ${FUNCTION_INSTANCE_MEMORY} MB instances, at most $FUNCTION_MAX_INSTANCES, $FUNCTION_HTTP_CONCURRENCY HTTP requests each, $FUNCTION_ALWAYS_READY always ready"
az_json '{}' functionapp scale config show --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP"
scale_now=$(printf '%s' "$AZ_OUT" | helper scale-state)
read -r now_memory now_max now_concurrency now_ready <<<"$scale_now"
scale_set=() scale_diff=()
if [[ $now_memory != "$FUNCTION_INSTANCE_MEMORY" ]]; then
  scale_set+=(--instance-memory "$FUNCTION_INSTANCE_MEMORY"); scale_diff+=("instanceMemoryMB: $now_memory -> $FUNCTION_INSTANCE_MEMORY")
fi
if [[ $now_max != "$FUNCTION_MAX_INSTANCES" ]]; then
  scale_set+=(--maximum-instance-count "$FUNCTION_MAX_INSTANCES"); scale_diff+=("maximumInstanceCount: $now_max -> $FUNCTION_MAX_INSTANCES")
fi
if [[ $now_concurrency != "$FUNCTION_HTTP_CONCURRENCY" ]]; then
  scale_set+=(--trigger-type http --trigger-settings "perInstanceConcurrency=$FUNCTION_HTTP_CONCURRENCY")
  scale_diff+=("http perInstanceConcurrency: $now_concurrency -> $FUNCTION_HTTP_CONCURRENCY")
fi
if (( ${#scale_set[@]} )); then
  plan update "scale configuration of $FUNCTION_APP" "$(IFS=';'; printf '%s' "${scale_diff[*]}" | sed 's/;/; /g')"
  az_run functionapp scale config set --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" "${scale_set[@]}"
else
  plan unchanged "scale configuration of $FUNCTION_APP"
fi
if [[ $now_ready != "$FUNCTION_ALWAYS_READY" ]]; then
  plan update "always-ready instances of $FUNCTION_APP" "http: $now_ready -> $FUNCTION_ALWAYS_READY"
  if (( FUNCTION_ALWAYS_READY > 0 )); then
    az_run functionapp scale config always-ready set --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" \
      --settings "http=$FUNCTION_ALWAYS_READY"
  else
    az_run functionapp scale config always-ready delete --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" \
      --setting-names http
  fi
else
  plan unchanged "always-ready instances of $FUNCTION_APP"
fi

# ----------------------------------------------------------------------------- app settings
step "App settings"
az_json '[]' functionapp config appsettings list --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP"
declare -A current=()
while IFS= read -r -d '' kv; do
  current[${kv%%=*}]=${kv#*=}
done < <(printf '%s' "$AZ_OUT" | helper settings-nul)

declare -A desired=(
  [MEMORY_STORE]=cosmos
  [COSMOS_ENDPOINT]="$cosmos_endpoint"
  [COSMOS_DATABASE]="$COSMOS_DATABASE"
  [COSMOS_CONTAINER]="$COSMOS_CONTAINER"
  [MEMORY_DEFAULT_INSTANCE_ID]="$MEMORY_DEFAULT_INSTANCE_ID"
  [MEMORY_DELETION_MODE]="$MEMORY_DELETION_MODE"
  [MEMORY_SWEEP_SCHEDULE]="$MEMORY_SWEEP_SCHEDULE"
  [MEMORY_AUTH_MODE]="$MEMORY_AUTH_MODE"
  [MEMORY_SHARING_DEFAULT_POLICY]="$MEMORY_SHARING_DEFAULT_POLICY"
  [MEMORY_SHARING_ALLOW_OVERRIDE]="$MEMORY_SHARING_ALLOW_OVERRIDE"
  [MEMORY_MAX_WRITE_BYTES]="$MEMORY_MAX_WRITE_BYTES"
  [MEMORY_READ_CACHE_MB]="$MEMORY_READ_CACHE_MB"
  # The host's storage through the user-assigned identity (identity-based AzureWebJobsStorage).
  [AzureWebJobsStorage__accountName]="$STORAGE_ACCOUNT"
  [AzureWebJobsStorage__credential]=managedidentity
  [AzureWebJobsStorage__clientId]="$client_id"
  # DefaultAzureCredential picks the user-assigned identity for Cosmos DB from AZURE_CLIENT_ID.
  [AZURE_CLIENT_ID]="$client_id"
  [APPLICATIONINSIGHTS_CONNECTION_STRING]="$appinsights_connection"
  # Entra-authenticated telemetry (Monitoring Metrics Publisher, granted above).
  [APPLICATIONINSIGHTS_AUTHENTICATION_STRING]="ClientId=$client_id;Authorization=AAD"
  # Synchronous handlers run on the worker's thread pool: as many threads as concurrent requests.
  [PYTHON_THREADPOOL_THREAD_COUNT]="$FUNCTION_HTTP_CONCURRENCY"
  # The remote build compiles the dependencies' bytecode, then copies the build without modification
  # times, which leaves bytecode checked against them stale: every new instance would compile the
  # dependencies again. With this set, pip and uv compile bytecode checked against the source's hash
  # (docs/deploy.md, "Code package"). Set before the code is deployed, so the first build sees it too.
  [SOURCE_DATE_EPOCH]=315532800
)
# Optional settings: set when the tenant file gives a value, removed when it no longer does.
optional=("${OPTIONAL_APP_SETTINGS[@]}")
# Key-based connections the managed identity replaces; never left on the app.
forbidden=(COSMOS_KEY AzureWebJobsStorage)

to_set=() to_delete=() missing_secrets=() setting_diff=()
for name in "${optional[@]}"; do
  if [[ -n ${!name} ]]; then
    desired[$name]=${!name}
  elif [[ -v "current[$name]" ]]; then
    to_delete+=("$name")
  fi
done
while IFS= read -r name; do
  if [[ ! -v "current[$name]" ]]; then
    to_set+=("$name=${desired[$name]}"); setting_diff+=("+$name")
  elif [[ ${current[$name]} != "${desired[$name]}" ]]; then
    to_set+=("$name=${desired[$name]}"); setting_diff+=("$name: ${current[$name]} -> ${desired[$name]}")
  fi
done < <(printf '%s\n' "${!desired[@]}" | LC_ALL=C sort)
for name in "${forbidden[@]}"; do
  if [[ -v "current[$name]" ]]; then to_delete+=("$name"); fi
done
# The code on the app was built remotely without the build setting this run gives it: forgetting its
# recorded hash makes the code step deploy, and so build, again (on this run, or the next if that fails).
if [[ ${current[SOURCE_DATE_EPOCH]:-} != "${desired[SOURCE_DATE_EPOCH]}" && -v "current[MEMORY_PACKAGE_SHA256]" ]]; then
  to_delete+=(MEMORY_PACKAGE_SHA256)
  unset 'current[MEMORY_PACKAGE_SHA256]'
fi
for name in "${to_delete[@]}"; do setting_diff+=("-$name"); done
for name in "${SECRET_SETTINGS[@]}"; do
  if [[ -z ${current[$name]:-} ]]; then missing_secrets+=("$name"); setting_diff+=("+$name (generated)"); fi
done

if (( ${#setting_diff[@]} )); then
  plan update "app settings of $FUNCTION_APP" "$(printf '%s; ' "${setting_diff[@]}" | sed 's/; $//')"
else
  plan unchanged "app settings of $FUNCTION_APP"
fi
if (( ${#to_set[@]} )); then
  az_run functionapp config appsettings set --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" --settings "${to_set[@]}"
fi
if (( ${#missing_secrets[@]} )); then
  secrets_file="$TMP_DIR/generated-secrets.json"
  note "generating ${missing_secrets[*]} (64 hex characters each); the values are never printed"
  if (( ! WHAT_IF )); then helper gen-secrets "$secrets_file" "${missing_secrets[@]}"; fi
  az_run functionapp config appsettings set --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" --settings "@$secrets_file"
fi
if (( ${#to_delete[@]} )); then
  az_run functionapp config appsettings delete --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" --setting-names "${to_delete[@]}"
fi
if [[ -n $MEMORY_COREAPI_BASE_URL && -z ${current[MEMORY_COREAPI_KEY]:-} ]]; then
  note "warning: MEMORY_COREAPI_BASE_URL is set but the app has no MEMORY_COREAPI_KEY; set it as docs/deploy.md shows"
fi
if [[ -n $MEMORY_COREAPI_BASE_URL && ,$MEMORY_AUTH_MODE, == *,entra,* && -z ${current[MEMORY_OBO_CLIENT_SECRET]:-} ]]; then
  note "warning: entra mode with MEMORY_COREAPI_BASE_URL needs MEMORY_OBO_CLIENT_SECRET on the app; set it as docs/deploy.md shows"
fi
if [[ ,$MEMORY_AUTH_MODE, == *,easyauth,* ]]; then
  note "easyauth mode: turn on App Service authentication for $FUNCTION_APP (az webapp auth update); the app refuses to start without it"
fi

# ----------------------------------------------------------------------------- code
if (( deploy_code )); then
  step "Code package from $app_dir"
  read -r -a package_entries <<<"$PACKAGE_INCLUDE"
  package="$TMP_DIR/app.zip"
  if package_sha=$(helper package --python "$APP_PYTHON_VERSION" "$app_dir" "$package" "${package_entries[@]}"); then
    :
  elif (( WHAT_IF )); then
    package_sha="<sha256 of the package>"
    note "the package could not be built from $app_dir (see above); a real run stops here"
  else
    die "could not build the app package from $app_dir"
  fi
  if [[ ${current[MEMORY_PACKAGE_SHA256]:-} == "$package_sha" ]]; then
    plan unchanged "code package" "sha256 $package_sha"
  else
    plan update "code package" "sha256 ${current[MEMORY_PACKAGE_SHA256]:-none} -> $package_sha"
    az_run_retry 3 functionapp deployment source config-zip --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" \
      --src "$package" --build-remote true --timeout 900
    az_run functionapp config appsettings set --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" \
      --settings "MEMORY_PACKAGE_SHA256=$package_sha"
  fi
fi

# ----------------------------------------------------------------------------- summary and smoke test
if (( WHAT_IF )); then
  if (( deploy_code && run_smoke )); then printf 'infra/smoke.sh --tenant %s\n' "$TENANT"; fi
  printf '# end of what-if: no changing az command was run\n'
  exit 0
fi
step "Done"
cat <<EOF
tenant:            $TENANT
resource group:    $RESOURCE_GROUP
MCP endpoint:      https://$app_host/api/mcp
REST base:         https://$app_host/api/instances/$MEMORY_DEFAULT_INSTANCE_ID/memory
operator base:     https://$app_host/api/instances/$MEMORY_DEFAULT_INSTANCE_ID/operator
keys:              az functionapp config appsettings list -g $RESOURCE_GROUP -n $FUNCTION_APP --query "[?name=='MEMORY_API_KEYS'].value" -o tsv
EOF
if (( deploy_code && run_smoke )); then
  step "Smoke test (infra/smoke.sh; --no-smoke skips it)"
  "$INFRA_DIR/smoke.sh" --tenant "$TENANT" || die "the smoke test failed (above): the app is deployed but not answering as it should"
fi
