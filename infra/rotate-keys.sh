#!/usr/bin/env bash
# Rotate MEMORY_API_KEYS or MEMORY_OPERATOR_KEYS of one tenant, with overlap:
#
#   infra/rotate-keys.sh --tenant NAME --key api|operator --step add         # old and new key both work
#   ... hand the new key to every caller ...
#   infra/rotate-keys.sh --tenant NAME --key api|operator --step remove-old  # only the new key works
#   infra/rotate-keys.sh --tenant NAME --key api|operator --step status      # fingerprints, never keys
#
# The add step prints the new key, and only it, on stdout. The app setting
# INFRA_ROTATION_<SETTING> holds the new key's fingerprint (first 16 hex digits of its
# SHA-256) between the two steps, so remove-old knows which key to keep.
set -euo pipefail

# shellcheck source=lib/common.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() {
  cat <<'EOF'
Usage: infra/rotate-keys.sh --tenant NAME --key api|operator --step add|remove-old|status [--what-if]

  --key api        rotate MEMORY_API_KEYS (callers' X-API-KEY)
  --key operator   rotate MEMORY_OPERATOR_KEYS (operator endpoints' X-API-KEY)
  --step add         add a new key next to the current ones; prints the new key on stdout
  --step remove-old  keep only the key added by the last add step
  --step status      show how many keys there are and their fingerprints
  --what-if        print every az command the step would run, and run none
EOF
}

tenant_arg="" which_key="" rotation_step=""
while (( $# )); do
  case $1 in
    --tenant) tenant_arg=${2:-}; shift 2 || die "--tenant needs a value" ;;
    --tenant=*) tenant_arg=${1#*=}; shift ;;
    --key) which_key=${2:-}; shift 2 || die "--key needs a value" ;;
    --step) rotation_step=${2:-}; shift 2 || die "--step needs a value" ;;
    --what-if) WHAT_IF=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[[ -n $tenant_arg ]] || { usage >&2; die "--tenant is required"; }
case $which_key in
  api) setting=MEMORY_API_KEYS ;;
  operator) setting=MEMORY_OPERATOR_KEYS ;;
  *) usage >&2; die "--key must be api or operator" ;;
esac
case $rotation_step in
  add | remove-old | status) ;;
  *) usage >&2; die "--step must be add, remove-old or status" ;;
esac
marker="INFRA_ROTATION_$setting"

require_tools
load_tenant "$tenant_arg"
init_tmp

if (( WHAT_IF )); then
  printf '# what-if: %s of %s for tenant %s; nothing below is run and no key is shown\n' "$rotation_step" "$setting" "$TENANT"
fi

az_json '[]' functionapp config appsettings list --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP"
current_settings="$TMP_DIR/current-settings.json"
printf '%s' "$AZ_OUT" >"$current_settings"
AZ_OUT=""

case $rotation_step in
  status)
    if (( ! WHAT_IF )); then helper rotate-status "$setting" "$marker" <"$current_settings"; fi
    ;;
  add)
    new_settings="$TMP_DIR/rotation-settings.json"
    new_key_file="$TMP_DIR/new-key"
    if (( ! WHAT_IF )); then
      helper rotate-add "$setting" "$marker" "$new_settings" "$new_key_file" <"$current_settings" ||
        die "nothing changed"
    fi
    az_run functionapp config appsettings set --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" \
      --settings "@$new_settings"
    if (( WHAT_IF )); then
      note "the new key would be printed here, once"
    else
      log "Both the old and the new key are accepted now (the app restarts to pick up the change)."
      log "Give the new key (stdout) to every caller, then run: infra/rotate-keys.sh --tenant $TENANT --key $which_key --step remove-old"
      cat "$new_key_file"
    fi
    ;;
  remove-old)
    new_settings="$TMP_DIR/rotation-settings.json"
    if (( ! WHAT_IF )); then
      helper rotate-finish "$setting" "$marker" "$new_settings" <"$current_settings" || die "nothing changed"
    fi
    az_run functionapp config appsettings set --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" \
      --settings "@$new_settings"
    az_run functionapp config appsettings delete --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" \
      --setting-names "$marker"
    if (( ! WHAT_IF )); then log "Only the new key is accepted now."; fi
    ;;
esac
