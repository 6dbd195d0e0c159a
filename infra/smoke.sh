#!/usr/bin/env bash
# Proof of life for a deployed tenant: the OpenAPI document, an authenticated append / read /
# clear round trip on a throwaway instance id, and MCP discover and tools/list in the 2026-07-28
# and 2025-06-18 protocol eras, each with its latency. deploy.sh runs it last (unless --no-smoke).
#
#   infra/smoke.sh --tenant NAME [--base-url URL] [--timeout SECONDS]
#
# The keys are read from the app's settings with az and handed to infra/lib/smoke.py in a 0600
# file; they never reach a command line or the output. See docs/deploy.md.
set -euo pipefail

# shellcheck source=lib/common.sh source-path=SCRIPTDIR
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

usage() {
  cat <<'USAGE'
Usage: infra/smoke.sh --tenant NAME [--base-url URL] [--timeout SECONDS]

  --tenant NAME     check the tenant described by infra/tenants/NAME.env
  --base-url URL    call this URL instead of https://<the app's host name> (a custom domain,
                    a gateway, or a local server)
  --timeout SECONDS per request (default 60: the first call may wait for a cold start)
USAGE
}

# MEMORY_SMOKE_BASE_URL stands in for --base-url, also when deploy.sh runs the smoke test
# (an app behind a gateway or custom domain).
tenant_arg="" base_url=${MEMORY_SMOKE_BASE_URL:-} timeout=60
while (( $# )); do
  case $1 in
    --tenant) tenant_arg=${2:-}; shift 2 || die "--tenant needs a value" ;;
    --tenant=*) tenant_arg=${1#*=}; shift ;;
    --base-url) base_url=${2:-}; shift 2 || die "--base-url needs a value" ;;
    --timeout) timeout=${2:-}; shift 2 || die "--timeout needs a value" ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[[ -n $tenant_arg ]] || { usage >&2; die "--tenant is required"; }
[[ $timeout =~ ^[0-9]+$ ]] || die "--timeout must be a whole number of seconds"

require_tools
load_tenant "$tenant_arg"
init_tmp

if [[ -z $base_url ]]; then
  az_show functionapp show --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP" ||
    die "function app $FUNCTION_APP does not exist: deploy the tenant first"
  base_url="https://$(jget defaultHostName)"
fi

credentials="$TMP_DIR/smoke-credentials.json"
if [[ ,$MEMORY_AUTH_MODE, == *,key,* ]]; then
  az_json '[]' functionapp config appsettings list --resource-group "$RESOURCE_GROUP" --name "$FUNCTION_APP"
  printf '%s' "$AZ_OUT" | helper smoke-credentials "$credentials" ||
    die "the app has no MEMORY_API_KEYS to call it with: run infra/deploy.sh --tenant $TENANT"
elif [[ ,$MEMORY_AUTH_MODE, == *,entra,* ]]; then
  # No key mode: an Entra ID token for the app's audience, as the signed-in az user
  # (az account get-access-token --scope; the user needs access to the app registration).
  az_json '{}' account get-access-token --scope "${MEMORY_ENTRA_AUDIENCE%%,*}/.default"
  printf '%s' "$AZ_OUT" | helper smoke-bearer "$credentials"
else
  # platform and easyauth callers hold tokens that only the platform (or App Service) issues: the
  # smoke test has none, so it makes the public checks and says which it skipped.
  note "MEMORY_AUTH_MODE=$MEMORY_AUTH_MODE gives the smoke test no credential (it has one for key and entra):" \
    "the authenticated checks are skipped"
  credentials=""
fi

step "Smoke test of $base_url"
if [[ -n $credentials ]]; then
  python3 -S "$INFRA_DIR/lib/smoke.py" --base-url "$base_url" --credentials "$credentials" --timeout "$timeout"
else
  python3 -S "$INFRA_DIR/lib/smoke.py" --base-url "$base_url" --public-only --timeout "$timeout"
fi
