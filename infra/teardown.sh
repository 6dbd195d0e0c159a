#!/usr/bin/env bash
# Remove one tenant of memory-core: every resource deploy.sh made for it, memories included.
#
#   infra/teardown.sh --tenant NAME [--yes] [--what-if]
#
# When the resource group carries the tag memory-core-tenant=NAME (deploy.sh created it) and
# holds nothing but this tenant's resources, the whole group is deleted. Otherwise (a group
# someone else made, or one shared with other tenants or other resources) only this tenant's
# resources are deleted, one by one; a resource tagged for another tenant, or named in another
# tenant file for the same group (a shared Cosmos DB account), is left alone. Running it again is a no-op.
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

# The names other tenant files give to resources in this same group: never deleted from here.
other_tenant_names() {
  local file other
  for file in "${MEMORY_TENANTS_DIR:-$INFRA_DIR/tenants}"/*.env; do
    [[ -f $file ]] || continue
    other=$(basename "$file" .env)
    [[ $other == "$TENANT" ]] && continue
    # shellcheck disable=SC2030,SC2031  # load_tenant runs in a subshell on purpose: this tenant's values stay
    (load_tenant "$other" && [[ ${RESOURCE_GROUP,,} == "${1,,}" ]] &&
      printf '%s ' "$FUNCTION_APP" "$COSMOS_ACCOUNT" "$STORAGE_ACCOUNT" "$MANAGED_IDENTITY" "$APP_INSIGHTS" \
        "$LOG_ANALYTICS_WORKSPACE") 2>/dev/null || true
  done
}
own_names="$FUNCTION_APP $COSMOS_ACCOUNT $STORAGE_ACCOUNT $MANAGED_IDENTITY $APP_INSIGHTS $LOG_ANALYTICS_WORKSPACE"
other_names=$(other_tenant_names "$RESOURCE_GROUP")
# What the group holds besides this tenant's resources (another tenant's, or anyone's): the group
# is deleted whole only when that is nothing, and those resources are never deleted.
az_json '[]' resource list --resource-group "$RESOURCE_GROUP"
foreign=$(printf '%s' "$AZ_OUT" | helper foreign-resources "$TENANT_TAG" "$TENANT" "$own_names" "$other_names")
delete_group=0
if [[ $owned_by_tenant == "$TENANT" && -z $foreign ]]; then delete_group=1; fi
if (( WHAT_IF )); then
  note "shown for a group tagged $TENANT_TAG=$TENANT holding only this tenant's resources; otherwise one delete per tenant resource instead"
fi
if [[ -n $foreign ]]; then
  log "    resource group $RESOURCE_GROUP holds resources that are not tenant $TENANT's; they are left alone:"
  while IFS= read -r line; do log "      $line"; done <<<"$foreign"
fi

if (( ! WHAT_IF && ! assume_yes )); then
  [[ -t 0 ]] || die "refusing to delete tenant $TENANT without --yes (no terminal to confirm on)"
  printf 'This deletes tenant %s: resource group %s%s, including every stored memory.\n' "$TENANT" "$RESOURCE_GROUP" \
    "$( (( delete_group )) && printf ' and everything in it' || printf "'s resources of this tenant")" >&2
  read -r -p "Type the tenant name to confirm: " answer
  [[ $answer == "$TENANT" ]] || die "not confirmed; nothing deleted"
fi

# True when NAME is one of the resources listed as not this tenant's.
is_foreign() { [[ -n $foreign ]] && grep -qiF -- "$1 (" <<<"$foreign"; }
# delete_own NAME SHOW_ARGS... -- DELETE_ARGS...: delete one of the tenant's resources if it exists
# and is the tenant's.
delete_own() {
  local name=$1 show=() del=()
  shift
  while [[ $1 != -- ]]; do show+=("$1"); shift; done
  shift
  del=("$@")
  if is_foreign "$name"; then
    note "left alone: $name (not this tenant's, above)"
  elif az_show "${show[@]}"; then
    az_run "${del[@]}"
  fi
}

if (( delete_group )); then
  step "Delete resource group $RESOURCE_GROUP (tagged $TENANT_TAG=$TENANT, nothing else in it)"
  az_run group delete --name "$RESOURCE_GROUP" --yes
else
  if [[ $owned_by_tenant == "$TENANT" ]]; then
    step "Resource group $RESOURCE_GROUP holds other resources: deleting the tenant's resources only, the group stays"
  else
    step "Resource group $RESOURCE_GROUP is not tagged $TENANT_TAG=$TENANT: deleting the tenant's resources only"
  fi
  rg=(--resource-group "$RESOURCE_GROUP")
  delete_own "$FUNCTION_APP" functionapp show "${rg[@]}" --name "$FUNCTION_APP" -- \
    functionapp delete "${rg[@]}" --name "$FUNCTION_APP"
  delete_own "$COSMOS_ACCOUNT" cosmosdb show "${rg[@]}" --name "$COSMOS_ACCOUNT" -- \
    cosmosdb delete "${rg[@]}" --name "$COSMOS_ACCOUNT" --yes
  delete_own "$STORAGE_ACCOUNT" storage account show "${rg[@]}" --name "$STORAGE_ACCOUNT" -- \
    storage account delete "${rg[@]}" --name "$STORAGE_ACCOUNT" --yes
  # The account of the default name before it carried a hash: the tenant's only when tagged so (deploy.sh
  # tags it), since another tenant's old default may be the same name.
  if [[ -n $STORAGE_ACCOUNT_LEGACY ]] && ! is_foreign "$STORAGE_ACCOUNT_LEGACY" &&
    az_show storage account show "${rg[@]}" --name "$STORAGE_ACCOUNT_LEGACY" && [[ $(jget "tags.$TENANT_TAG") == "$TENANT" ]]; then
    az_run storage account delete "${rg[@]}" --name "$STORAGE_ACCOUNT_LEGACY" --yes
  fi
  delete_own "$MANAGED_IDENTITY" identity show "${rg[@]}" --name "$MANAGED_IDENTITY" -- \
    identity delete "${rg[@]}" --name "$MANAGED_IDENTITY"
  delete_own "$APP_INSIGHTS" monitor app-insights component show "${rg[@]}" --app "$APP_INSIGHTS" -- \
    monitor app-insights component delete "${rg[@]}" --app "$APP_INSIGHTS"
  delete_own "$LOG_ANALYTICS_WORKSPACE" monitor log-analytics workspace show "${rg[@]}" \
    --workspace-name "$LOG_ANALYTICS_WORKSPACE" -- \
    monitor log-analytics workspace delete "${rg[@]}" --workspace-name "$LOG_ANALYTICS_WORKSPACE" --force true --yes
fi

if (( WHAT_IF )); then
  printf '# end of what-if: no az command was run\n'
else
  step "Tenant $TENANT removed"
fi
