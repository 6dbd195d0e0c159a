#!/usr/bin/env bash
# Remove one tenant of memory-core: every resource deploy.sh made for it, memories included.
#
#   infra/teardown.sh --tenant NAME [--yes] [--what-if]
#
# When the resource group carries the tag memory-core-tenant=NAME (deploy.sh created it),
# the whole group is deleted. Otherwise (a group someone else made) only the resources
# named in the tenant file (the managed identity included) are deleted, one by one. Running it again is a no-op.
set -euo pipefail

# shellcheck source=lib/common.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() {
  cat <<'EOF'
Usage: infra/teardown.sh --tenant NAME [--yes] [--what-if]

  --tenant NAME   remove the tenant described by infra/tenants/NAME.env
  --yes           do not ask; without it the tenant name must be typed to confirm
  --what-if       print every az command teardown would run, and run none
EOF
}

tenant_arg="" assume_yes=0
while (( $# )); do
  case $1 in
    --tenant) tenant_arg=${2:-}; shift 2 || die "--tenant needs a value" ;;
    --tenant=*) tenant_arg=${1#*=}; shift ;;
    --yes | -y) assume_yes=1; shift ;;
    --what-if) WHAT_IF=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[[ -n $tenant_arg ]] || { usage >&2; die "--tenant is required"; }

require_tools
load_tenant "$tenant_arg"
init_tmp

if (( WHAT_IF )); then
  printf '# what-if: teardown of tenant %s from %s; nothing below is run\n' "$TENANT" "$TENANT_FILE"
fi

step "Resource group $RESOURCE_GROUP"
if ! az_show group show --name "$RESOURCE_GROUP"; then
  if (( ! WHAT_IF )); then
    note "does not exist: nothing to remove"
    exit 0
  fi
fi
owned_by_tenant=$(jget "tags.$TENANT_TAG" "$TENANT")
if (( WHAT_IF )); then
  note "shown for a group tagged $TENANT_TAG=$TENANT; an untagged group gets one delete per tenant resource instead"
fi

if (( ! WHAT_IF && ! assume_yes )); then
  [[ -t 0 ]] || die "refusing to delete tenant $TENANT without --yes (no terminal to confirm on)"
  printf 'This deletes tenant %s: resource group %s%s, including every stored memory.\n' "$TENANT" "$RESOURCE_GROUP" \
    "$([[ $owned_by_tenant == "$TENANT" ]] && printf ' and everything in it')" >&2
  read -r -p "Type the tenant name to confirm: " answer
  [[ $answer == "$TENANT" ]] || die "not confirmed; nothing deleted"
fi

if [[ $owned_by_tenant == "$TENANT" ]]; then
  step "Delete resource group $RESOURCE_GROUP (tagged $TENANT_TAG=$TENANT)"
  az_run group delete --name "$RESOURCE_GROUP" --yes
else
  step "Resource group $RESOURCE_GROUP is not tagged $TENANT_TAG=$TENANT: deleting the tenant's resources only"
  if az_show functionapp show --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP"; then
    az_run functionapp delete --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP"
  fi
  if az_show cosmosdb show --resource-group "$RESOURCE_GROUP" --name "$COSMOS_ACCOUNT"; then
    az_run cosmosdb delete --resource-group "$RESOURCE_GROUP" --name "$COSMOS_ACCOUNT" --yes
  fi
  if az_show storage account show --resource-group "$RESOURCE_GROUP" --name "$STORAGE_ACCOUNT"; then
    az_run storage account delete --resource-group "$RESOURCE_GROUP" --name "$STORAGE_ACCOUNT" --yes
  fi
  if az_show identity show --resource-group "$RESOURCE_GROUP" --name "$MANAGED_IDENTITY"; then
    az_run identity delete --resource-group "$RESOURCE_GROUP" --name "$MANAGED_IDENTITY"
  fi
  if az_show monitor app-insights component show --resource-group "$RESOURCE_GROUP" --app "$APP_INSIGHTS"; then
    az_run monitor app-insights component delete --resource-group "$RESOURCE_GROUP" --app "$APP_INSIGHTS"
  fi
  if az_show monitor log-analytics workspace show --resource-group "$RESOURCE_GROUP" --workspace-name "$LOG_ANALYTICS_WORKSPACE"; then
    az_run monitor log-analytics workspace delete --resource-group "$RESOURCE_GROUP" \
      --workspace-name "$LOG_ANALYTICS_WORKSPACE" --force true --yes
  fi
fi

if (( WHAT_IF )); then
  printf '# end of what-if: no az command was run\n'
else
  step "Tenant $TENANT removed"
fi
