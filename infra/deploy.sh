#!/usr/bin/env bash
# Deploy (or update) one tenant of memory-core with the Azure CLI alone.
#
#   infra/deploy.sh --tenant NAME [--what-if] [--app-dir DIR] [--no-code]
#
# The tenant's parameters come from infra/tenants/NAME.env. Every step checks what
# already exists first, so a second run with nothing changed issues no changing call.
# See docs/deploy.md.
set -euo pipefail

# shellcheck source=lib/common.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() {
  cat <<'EOF'
Usage: infra/deploy.sh --tenant NAME [--what-if] [--app-dir DIR] [--no-code]

  --tenant NAME   deploy the tenant described by infra/tenants/NAME.env
  --what-if       print every az command the deployment would run, and run none
  --app-dir DIR   folder holding function_app.py, host.json, requirements.txt
                  (default: the repository root)
  --no-code       provision and configure only; skip the zip deploy
EOF
}

tenant_arg="" app_dir=$REPO_ROOT deploy_code=1
while (( $# )); do
  case $1 in
    --tenant) tenant_arg=${2:-}; shift 2 || die "--tenant needs a value" ;;
    --tenant=*) tenant_arg=${1#*=}; shift ;;
    --what-if) WHAT_IF=1; shift ;;
    --app-dir) app_dir=${2:-}; shift 2 || die "--app-dir needs a value" ;;
    --no-code) deploy_code=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[[ -n $tenant_arg ]] || { usage >&2; die "--tenant is required"; }

require_tools
load_tenant "$tenant_arg"
validate_tenant
init_tmp

if (( WHAT_IF )); then
  printf '# what-if: tenant %s from %s\n' "$TENANT" "$TENANT_FILE"
  printf '# Nothing below is run. Every existence check is shown as failing, so each create appears;\n'
  printf '# values Azure would return are shown as <placeholders>; secrets are never shown.\n'
else
  step "Tenant $TENANT ($TENANT_FILE)"
fi
az_json '{}' account show
note "subscription $(jget name "<your subscription>") ($(jget id "<subscription id>"))"
# az monitor app-insights lives in an extension; a non-interactive az will not install it by itself.
if (( WHAT_IF )); then
  print_cmd extension show --name application-insights --output none
elif ! az extension show --name application-insights --output none >/dev/null 2>&1; then
  die "the Azure CLI extension application-insights is missing: az extension add --name application-insights"
fi

# ----------------------------------------------------------------------------- resource group
step "Resource group $RESOURCE_GROUP"
if az_show group show --name "$RESOURCE_GROUP"; then
  note "exists"
else
  az_run group create --name "$RESOURCE_GROUP" --location "$LOCATION" \
    --tags "$TENANT_TAG=$TENANT" "managed-by=memory-core-infra"
fi

# ----------------------------------------------------------------------------- monitoring
step "Log Analytics workspace $LOG_ANALYTICS_WORKSPACE"
if az_show monitor log-analytics workspace show --resource-group "$RESOURCE_GROUP" --workspace-name "$LOG_ANALYTICS_WORKSPACE"; then
  note "exists"
else
  az_run monitor log-analytics workspace create --resource-group "$RESOURCE_GROUP" \
    --workspace-name "$LOG_ANALYTICS_WORKSPACE" --location "$LOCATION"
  az_show monitor log-analytics workspace show --resource-group "$RESOURCE_GROUP" --workspace-name "$LOG_ANALYTICS_WORKSPACE" || true
fi
workspace_id=$(jget id "<id of workspace $LOG_ANALYTICS_WORKSPACE>")

step "Application Insights $APP_INSIGHTS"
if az_show monitor app-insights component show --resource-group "$RESOURCE_GROUP" --app "$APP_INSIGHTS"; then
  note "exists"
else
  az_run monitor app-insights component create --resource-group "$RESOURCE_GROUP" --app "$APP_INSIGHTS" \
    --location "$LOCATION" --workspace "$workspace_id" --application-type web --kind web
  az_show monitor app-insights component show --resource-group "$RESOURCE_GROUP" --app "$APP_INSIGHTS" || true
fi
appinsights_connection=$(jget connectionString "<connection string of $APP_INSIGHTS>")

# ----------------------------------------------------------------------------- Cosmos DB
step "Cosmos DB account $COSMOS_ACCOUNT ($COSMOS_CAPACITY_MODE)"
if az_show cosmosdb show --resource-group "$RESOURCE_GROUP" --name "$COSMOS_ACCOUNT"; then
  if printf '%s' "$AZ_OUT" | helper has-capability EnableServerless; then existing_mode=serverless; else existing_mode=autoscale; fi
  [[ $existing_mode == "$COSMOS_CAPACITY_MODE" ]] ||
    die "Cosmos DB account $COSMOS_ACCOUNT is $existing_mode but the tenant file asks for $COSMOS_CAPACITY_MODE; the capacity mode cannot be switched in place"
  note "exists"
  # Full-text indexes need the account capability (the container's full-text policy in
  # infra/arm/cosmos-sql.json). az cosmosdb update --capabilities replaces the whole list, so
  # the account's own capabilities are sent back with it.
  if ! printf '%s' "$AZ_OUT" | helper has-capability "$FULL_TEXT_CAPABILITY"; then
    read -r -a account_capabilities <<<"$(printf '%s' "$AZ_OUT" | helper capabilities)"
    az_run cosmosdb update --resource-group "$RESOURCE_GROUP" --name "$COSMOS_ACCOUNT" \
      --capabilities ${account_capabilities[@]+"${account_capabilities[@]}"} "$FULL_TEXT_CAPABILITY"
  fi
else
  cosmos_create=(cosmosdb create --resource-group "$RESOURCE_GROUP" --name "$COSMOS_ACCOUNT" --kind GlobalDocumentDB
    --locations "regionName=$LOCATION" failoverPriority=0 isZoneRedundant=False
    --default-consistency-level "$COSMOS_CONSISTENCY_LEVEL" --capabilities "$FULL_TEXT_CAPABILITY")
  if [[ $COSMOS_CAPACITY_MODE == serverless ]]; then cosmos_create+=(EnableServerless); fi
  az_run "${cosmos_create[@]}"
  az_show cosmosdb show --resource-group "$RESOURCE_GROUP" --name "$COSMOS_ACCOUNT" || true
fi
cosmos_id=$(jget id "<id of Cosmos DB account $COSMOS_ACCOUNT>")
cosmos_endpoint=$(jget documentEndpoint "https://$COSMOS_ACCOUNT.documents.azure.com:443/")
if [[ $COSMOS_DISABLE_LOCAL_AUTH == true && $(jget disableLocalAuth) != true ]]; then
  az_run resource update --ids "$cosmos_id" --set properties.disableLocalAuth=true
fi

step "Cosmos DB database $COSMOS_DATABASE and container $COSMOS_CONTAINER (ARM template)"
template="$INFRA_DIR/arm/cosmos-sql.json"
arm_params=("accountName=$COSMOS_ACCOUNT" "databaseName=$COSMOS_DATABASE" "containerName=$COSMOS_CONTAINER"
  "capacityMode=$COSMOS_CAPACITY_MODE" "autoscaleMaxThroughput=$COSMOS_AUTOSCALE_MAX_THROUGHPUT")
arm_digest=$(helper digest "file:$template" "${arm_params[@]}")
deployment_name="memory-cosmos-${arm_digest:0:12}"
pk_paths="/instance_id,/upn" pk_kind=MultiHash pk_version=2
container_ok=0
if az_show cosmosdb sql container show --resource-group "$RESOURCE_GROUP" --account-name "$COSMOS_ACCOUNT" \
  --database-name "$COSMOS_DATABASE" --name "$COSMOS_CONTAINER"; then
  printf '%s' "$AZ_OUT" | helper pk-matches "$pk_paths" "$pk_kind" "$pk_version" ||
    die "container $COSMOS_CONTAINER exists with a different partition key (above); a partition key cannot change: migrate the data to a new container"
  container_ok=1
fi
if (( container_ok )) && az_show deployment group show --resource-group "$RESOURCE_GROUP" --name "$deployment_name" &&
  [[ $(jget properties.provisioningState) == Succeeded ]]; then
  note "up to date (deployment $deployment_name)"
else
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
step "Storage account $STORAGE_ACCOUNT"
if az_show storage account show --resource-group "$RESOURCE_GROUP" --name "$STORAGE_ACCOUNT"; then
  note "exists"
else
  az_run storage account create --resource-group "$RESOURCE_GROUP" --name "$STORAGE_ACCOUNT" --location "$LOCATION" \
    --sku Standard_LRS --kind StorageV2 --allow-blob-public-access false --min-tls-version TLS1_2 --https-only true
  az_show storage account show --resource-group "$RESOURCE_GROUP" --name "$STORAGE_ACCOUNT" || true
fi
storage_id=$(jget id "<id of storage account $STORAGE_ACCOUNT>")
storage_shared_key=$(jget allowSharedKeyAccess)

# ----------------------------------------------------------------------------- function app
step "Function app $FUNCTION_APP (Flex Consumption, Python 3.11)"
if az_show functionapp show --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP"; then
  note "exists"
else
  az_run functionapp create --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" \
    --storage-account "$STORAGE_ACCOUNT" --flexconsumption-location "$LOCATION" \
    --runtime python --runtime-version 3.11 --functions-version 4 \
    --instance-memory "$FUNCTION_INSTANCE_MEMORY" --maximum-instance-count "$FUNCTION_MAX_INSTANCES" \
    --app-insights "$APP_INSIGHTS" --assign-identity '[system]' \
    --deployment-storage-auth-type SystemAssignedIdentity --https-only true
  az_show functionapp show --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" || true
fi
app_host=$(jget defaultHostName "$FUNCTION_APP.azurewebsites.net")

if ! az_show functionapp identity show --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" ||
  [[ -z $(jget principalId) ]]; then
  az_run functionapp identity assign --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP"
  az_show functionapp identity show --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" || true
fi
principal_id=$(jget principalId "<principalId of $FUNCTION_APP>")
[[ -n $principal_id ]] || die "function app $FUNCTION_APP has no system-assigned identity"

# ----------------------------------------------------------------------------- role assignments
step "Cosmos DB Built-in Data Contributor for the app's identity"
az_json '[]' cosmosdb sql role assignment list --resource-group "$RESOURCE_GROUP" --account-name "$COSMOS_ACCOUNT"
if printf '%s' "$AZ_OUT" | helper has-sql-role "$principal_id" "$COSMOS_DATA_CONTRIBUTOR_ROLE" "$cosmos_id"; then
  note "assigned"
else
  az_run cosmosdb sql role assignment create --resource-group "$RESOURCE_GROUP" --account-name "$COSMOS_ACCOUNT" \
    --role-definition-id "$COSMOS_DATA_CONTRIBUTOR_ROLE" --principal-id "$principal_id" --scope "$cosmos_id"
fi

step "Storage Blob Data Owner on $STORAGE_ACCOUNT for the app's identity"
# Listed by role and scope and filtered here: --assignee would need Microsoft Graph read rights.
az_json '[]' role assignment list --role "$STORAGE_BLOB_DATA_OWNER_ROLE" --scope "$storage_id"
if printf '%s' "$AZ_OUT" | helper has-principal "$principal_id"; then
  note "assigned"
else
  az_run role assignment create --assignee-object-id "$principal_id" --assignee-principal-type ServicePrincipal \
    --role "$STORAGE_BLOB_DATA_OWNER_ROLE" --scope "$storage_id"
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
  [AzureWebJobsStorage__accountName]="$STORAGE_ACCOUNT"
  [APPLICATIONINSIGHTS_CONNECTION_STRING]="$appinsights_connection"
)
# Optional settings: set when the tenant file gives a value, removed when it no longer does.
optional=(MEMORY_MCP_ALLOWED_HOSTS MEMORY_ENTRA_TENANT_ID MEMORY_ENTRA_AUDIENCE
  MEMORY_COREAPI_BASE_URL COSMOS_CONNECTION_TIMEOUT COSMOS_READ_TIMEOUT)
# Key-based connections the managed identity replaces; never left on the app.
forbidden=(COSMOS_KEY AzureWebJobsStorage)

to_set=() to_delete=() missing_secrets=()
for name in "${optional[@]}"; do
  if [[ -n ${!name} ]]; then
    desired[$name]=${!name}
  elif [[ -v "current[$name]" ]]; then
    to_delete+=("$name")
  fi
done
while IFS= read -r name; do
  if [[ ! -v "current[$name]" || ${current[$name]} != "${desired[$name]}" ]]; then
    to_set+=("$name=${desired[$name]}")
  fi
done < <(printf '%s\n' "${!desired[@]}" | LC_ALL=C sort)
for name in "${forbidden[@]}"; do
  if [[ -v "current[$name]" ]]; then to_delete+=("$name"); fi
done
for name in "${SECRET_SETTINGS[@]}"; do
  if [[ -z ${current[$name]:-} ]]; then missing_secrets+=("$name"); fi
done

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
if (( ! ${#to_set[@]} && ! ${#missing_secrets[@]} && ! ${#to_delete[@]} )); then note "up to date"; fi
if [[ -n $MEMORY_COREAPI_BASE_URL && -z ${current[MEMORY_COREAPI_KEY]:-} ]]; then
  note "warning: MEMORY_COREAPI_BASE_URL is set but the app has no MEMORY_COREAPI_KEY; set it as docs/deploy.md shows"
fi

# Shared-key access goes off only after the host uses its identity for storage.
if [[ $STORAGE_DISABLE_SHARED_KEY == true && $storage_shared_key != false ]]; then
  step "Disable shared-key access on $STORAGE_ACCOUNT"
  az_run storage account update --resource-group "$RESOURCE_GROUP" --name "$STORAGE_ACCOUNT" --allow-shared-key-access false
fi

# ----------------------------------------------------------------------------- code
if (( deploy_code )); then
  step "Code package from $app_dir"
  read -r -a package_entries <<<"$PACKAGE_INCLUDE"
  package="$TMP_DIR/app.zip"
  if package_sha=$(helper package "$app_dir" "$package" "${package_entries[@]}"); then
    :
  elif (( WHAT_IF )); then
    package_sha="<sha256 of the package>"
    note "the package could not be built from $app_dir (see above); a real run stops here"
  else
    die "could not build the app package from $app_dir"
  fi
  if [[ ${current[MEMORY_PACKAGE_SHA256]:-} == "$package_sha" ]]; then
    note "package $package_sha is already deployed"
  else
    note "package sha256 $package_sha"
    az_run_retry 3 functionapp deployment source config-zip --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" \
      --src "$package" --build-remote true --timeout 900
    az_run functionapp config appsettings set --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" \
      --settings "MEMORY_PACKAGE_SHA256=$package_sha"
  fi
fi

# ----------------------------------------------------------------------------- summary
if (( WHAT_IF )); then
  printf '# end of what-if: no az command was run\n'
else
  step "Done"
  cat <<EOF
tenant:            $TENANT
resource group:    $RESOURCE_GROUP
MCP endpoint:      https://$app_host/api/mcp
REST base:         https://$app_host/api/instances/$MEMORY_DEFAULT_INSTANCE_ID/memory
operator base:     https://$app_host/api/instances/$MEMORY_DEFAULT_INSTANCE_ID/operator
keys:              az functionapp config appsettings list -g $RESOURCE_GROUP -n $FUNCTION_APP --query "[?name=='MEMORY_API_KEYS'].value" -o tsv
EOF
fi
