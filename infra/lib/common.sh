# shellcheck shell=bash
# shellcheck disable=SC2034  # variables set here are read by the scripts that source this file
#
# Shared by infra/deploy.sh, infra/teardown.sh and infra/rotate-keys.sh; sourced, never run.
# Needs bash 4+, python3 and the Azure CLI (az) on PATH.

INFRA_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO_ROOT=$(cd "$INFRA_DIR/.." && pwd)
HELPERS="$INFRA_DIR/lib/helpers.py"

WHAT_IF=0      # 1: print every changing az command instead of running it
WHAT_IF_READS=0  # 1 (deploy.sh --what-if): read-only show/list calls still run, so the plan compares with Azure
AZ_OUT=""      # JSON output of the last az_show / az_json call
AZ_EXTRA=()    # appended to every az call (--subscription ...)
TMP_DIR=""

# App settings whose values are secrets: generated, never printed, never put on a command line.
SECRET_SETTINGS=(MEMORY_API_KEYS MEMORY_OPERATOR_KEYS)
# Secrets the operator sets on the app once (docs/deploy.md); a tenant file refuses them.
OPERATOR_SECRETS=(COSMOS_KEY MEMORY_COREAPI_KEY MEMORY_OBO_CLIENT_SECRET AzureWebJobsStorage)

# The app's identity settings (memory_core/settings.py, docs/identity.md): optional app settings,
# set when the tenant file gives a value and removed when it no longer does.
IDENTITY_SETTINGS=(
  MEMORY_ENTRA_TENANT_ID MEMORY_ENTRA_AUDIENCE MEMORY_ENTRA_JWKS_URL MEMORY_ENTRA_AUTHORITY_HOST MEMORY_ENTRA_SCOPES
  MEMORY_OBO_CLIENT_ID MEMORY_COREAPI_SCOPE
  MEMORY_PLATFORM_ISSUER MEMORY_PLATFORM_JWKS_URL MEMORY_PLATFORM_AUDIENCE
  MEMORY_OPERATOR_ROLE MEMORY_IDENTITY_CA_BUNDLE
)

# Optional app settings: set when the tenant file gives a value, removed when it no longer does.
OPTIONAL_APP_SETTINGS=(
  MEMORY_ALLOWED_HOSTS MEMORY_MCP_ALLOWED_HOSTS MEMORY_COREAPI_BASE_URL
  COSMOS_CONNECTION_TIMEOUT COSMOS_READ_TIMEOUT COSMOS_OPERATION_TIMEOUT
  MEMORY_AUDIT_RETENTION_DAYS MEMORY_DELETION_RETENTION_DAYS MEMORY_CONSOLE_CLIENT_ID MEMORY_CONSOLE_API_SCOPE
  "${IDENTITY_SETTINGS[@]}"
)

# Keys a tenant file may set. Everything else is refused, and so are secrets.
TENANT_KEYS=(
  SUBSCRIPTION LOCATION RESOURCE_GROUP
  COSMOS_ACCOUNT STORAGE_ACCOUNT FUNCTION_APP APP_INSIGHTS LOG_ANALYTICS_WORKSPACE
  COSMOS_CAPACITY_MODE COSMOS_AUTOSCALE_MAX_THROUGHPUT COSMOS_CONSISTENCY_LEVEL COSMOS_DISABLE_LOCAL_AUTH
  COSMOS_DATABASE COSMOS_CONTAINER
  FUNCTION_INSTANCE_MEMORY FUNCTION_MAX_INSTANCES FUNCTION_HTTP_CONCURRENCY FUNCTION_ALWAYS_READY
  MANAGED_IDENTITY STORAGE_DISABLE_SHARED_KEY PACKAGE_INCLUDE
  MEMORY_DEFAULT_INSTANCE_ID MEMORY_DELETION_MODE MEMORY_SWEEP_SCHEDULE MEMORY_AUTH_MODE
  MEMORY_SHARING_DEFAULT_POLICY MEMORY_SHARING_ALLOW_OVERRIDE MEMORY_MAX_WRITE_BYTES MEMORY_READ_CACHE_MB
  "${OPTIONAL_APP_SETTINGS[@]}"
)

# The Functions Python version the app runs on; the package carries bytecode made by this version.
APP_PYTHON_VERSION="3.11"
# Cosmos DB Built-in Data Contributor (data plane).
COSMOS_DATA_CONTRIBUTOR_ROLE="00000000-0000-0000-0000-000000000002"
# Storage Blob Data Owner (Azure RBAC): identity-based AzureWebJobsStorage and deployment storage.
STORAGE_BLOB_DATA_OWNER_ROLE="b7e6dc6d-f1e8-4753-8033-0f276bb0955b"
# Monitoring Metrics Publisher (Azure RBAC): Entra-authenticated Application Insights ingestion
# (https://learn.microsoft.com/azure/azure-monitor/app/azure-ad-authentication).
MONITORING_METRICS_PUBLISHER_ROLE="3913510d-42f4-4e42-8a64-420c390055eb"
# The largest MEMORY_MAX_WRITE_BYTES on Cosmos DB: COSMOS_MAX_WRITE_BYTES in
# memory_core/adapters/cosmos_documents.py (the app refuses more at start; a test keeps the two equal).
COSMOS_MAX_WRITE_BYTES=262144
# Account capability that full-text indexes need (as the official azd Cosmos DB templates set it).
FULL_TEXT_CAPABILITY="EnableNoSQLFullTextSearch"
# Tag put on a resource group that deploy.sh created; teardown.sh deletes whole groups only when it matches.
TENANT_TAG="memory-core-tenant"

log()  { printf '%s\n' "$*" >&2; }
step() { printf '==> %s\n' "$*" >&2; }
die()  { printf 'error: %s\n' "$*" >&2; exit 1; }
note() { if (( WHAT_IF )); then printf '# %s\n' "$*"; else log "    $*"; fi; }
# plan ACTION WHAT [DIFFERENCE]: what a step does to one resource, on one line:
# create / update (with the difference) / unchanged. --what-if prints it on stdout.
plan() {
  local line
  printf -v line '%-9s %s%s' "$1:" "$2" "${3:+ ($3)}"
  if (( WHAT_IF )); then printf '# %s\n' "$line"; else log "    $line"; fi
}

# -S: the helpers need only the standard library, and skipping site start-up makes each call ~5x faster.
helper() { python3 -S "$HELPERS" "$@"; }

init_tmp() {
  umask 077
  TMP_DIR=$(mktemp -d "${TMPDIR:-/tmp}/memory-infra.XXXXXX")
  trap 'rm -rf "$TMP_DIR"' EXIT
}

require_tools() {
  command -v python3 >/dev/null 2>&1 || die "python3 is required"
  (( BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 4) )) ||
    die "bash 4.4 or later is required (found $BASH_VERSION)"
  if (( ! WHAT_IF )); then
    command -v az >/dev/null 2>&1 || die "the Azure CLI (az) is required: https://learn.microsoft.com/cli/azure/install-azure-cli"
  fi
}

is_secret_setting() {
  local s
  for s in "${SECRET_SETTINGS[@]}"; do [[ $1 == "$s" ]] && return 0; done
  return 1
}

# Quote one word for display so a printed command can be pasted back into a shell.
shell_quote() {
  if [[ $1 =~ ^[A-Za-z0-9_./:=@,+%-]+$ ]]; then
    printf '%s' "$1"
  else
    printf "'%s'" "${1//\'/\'\\\'\'}"
  fi
}

# Print an az command line; secret setting values are replaced by <hidden>.
print_cmd() {
  local line="az" word name
  for word in "$@"; do
    if [[ $word == *=* ]]; then
      name=${word%%=*}
      if is_secret_setting "$name"; then word="$name=<hidden>"; fi
    fi
    line+=" $(shell_quote "$word")"
  done
  printf '%s\n' "$line"
}

# Run a changing az command; in --what-if mode only print it.
az_run() {
  local args=("$@" ${AZ_EXTRA[@]+"${AZ_EXTRA[@]}"} --output none)
  if (( WHAT_IF )); then
    print_cmd "${args[@]}"
    return 0
  fi
  log "+ $(print_cmd "${args[@]}")"
  az "${args[@]}" || die "az command failed: $(print_cmd "${args[@]}")"
}

# az_run, retried (role assignments can take minutes to reach the data plane).
az_run_retry() {
  local attempts=$1 n=1
  shift
  local args=("$@" ${AZ_EXTRA[@]+"${AZ_EXTRA[@]}"} --output none)
  if (( WHAT_IF )); then
    print_cmd "${args[@]}"
    return 0
  fi
  while :; do
    log "+ $(print_cmd "${args[@]}")"
    if az "${args[@]}"; then return 0; fi
    (( n >= attempts )) && die "az command failed $attempts times: $(print_cmd "${args[@]}")"
    log "    attempt $n failed; retrying in ${INFRA_RETRY_SLEEP:-30}s"
    sleep "${INFRA_RETRY_SLEEP:-30}"
    n=$((n + 1))
  done
}

# True when a read in --what-if mode should really run: deploy.sh's what-if reads Azure,
# except where an argument is a <placeholder> for something the plan would create first.
reads_for_real() {
  local word
  (( ! WHAT_IF )) && return 0
  (( WHAT_IF_READS )) || return 1
  for word in "$@"; do [[ $word == *"<"*">"* ]] && return 1; done
  return 0
}

# Read a resource that may not exist. Returns 0 and sets AZ_OUT to its JSON when it
# exists, 1 when Azure says it does not; any other failure stops the script.
# In --what-if mode the read runs when reads_for_real allows; otherwise the resource is
# treated as missing.
az_show() {
  local args=("$@" ${AZ_EXTRA[@]+"${AZ_EXTRA[@]}"} --output json) rc=0
  AZ_OUT=""
  if ! reads_for_real "${args[@]}"; then
    if (( ! WHAT_IF_READS )); then print_cmd "${args[@]}"; fi  # reads of what is still to be created: not shown
    return 1
  fi
  AZ_OUT=$(az "${args[@]}" 2>"$TMP_DIR/az.err") || rc=$?
  if (( rc == 0 )); then
    [[ -n ${AZ_OUT//[[:space:]]/} && $AZ_OUT != "null" && $AZ_OUT != "{}" ]] && return 0
    AZ_OUT=""
    return 1
  fi
  AZ_OUT=""
  if (( rc == 3 )) || grep -qiE 'not ?found|could not be found|does not exist' "$TMP_DIR/az.err"; then
    return 1
  fi
  cat "$TMP_DIR/az.err" >&2
  die "az command failed (exit $rc): $(print_cmd "${args[@]}")"
}

# Read something that must succeed. az_json DEFAULT ARGS...: sets AZ_OUT (DEFAULT in --what-if mode).
az_json() {
  local default=$1
  shift
  local args=("$@" ${AZ_EXTRA[@]+"${AZ_EXTRA[@]}"} --output json) rc=0
  if ! reads_for_real "${args[@]}"; then
    if (( ! WHAT_IF_READS )); then print_cmd "${args[@]}"; fi
    AZ_OUT=$default
    return 0
  fi
  AZ_OUT=$(az "${args[@]}" 2>"$TMP_DIR/az.err") || rc=$?
  if (( rc != 0 && WHAT_IF )) && { (( rc == 3 )) || grep -qiE 'not ?found|could not be found|does not exist' "$TMP_DIR/az.err"; }; then
    AZ_OUT=$default  # what-if: the parent is still to be created, so there is nothing to list yet
    return 0
  fi
  if (( rc != 0 )); then
    cat "$TMP_DIR/az.err" >&2
    die "az command failed (exit $rc): $(print_cmd "${args[@]}")"
  fi
}

# jget PATH [PLACEHOLDER]: value at PATH in $AZ_OUT; in --what-if mode PLACEHOLDER stands in for it.
jget() {
  local value
  value=$(printf '%s' "$AZ_OUT" | helper get "$1")
  if [[ -z $value && $WHAT_IF == 1 && -n ${2:-} ]]; then value=$2; fi
  printf '%s' "$value"
}

# ----------------------------------------------------------------------------- tenant file
TENANT=""
TENANT_FILE=""

tenant_file_path() {
  printf '%s/%s.env' "${MEMORY_TENANTS_DIR:-$INFRA_DIR/tenants}" "$1"
}

# tenant_hash NAME: the first 6 hex digits of NAME's SHA-256 (part of default resource names).
tenant_hash() {
  python3 -S -c 'import hashlib, sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest()[:6])' "$1"
}

# load_tenant NAME: read infra/tenants/NAME.env (KEY=VALUE lines, # comments) without executing it,
# then apply defaults. Values from the caller's environment are ignored on purpose.
load_tenant() {
  local name=$1 key value line n=0 k known
  [[ $name =~ ^[a-z0-9][a-z0-9-]{0,29}$ ]] ||
    die "tenant name '$name' must be 1-30 characters of lower-case letters, digits and '-'"
  TENANT=$name
  TENANT_FILE=$(tenant_file_path "$name")
  [[ -f $TENANT_FILE ]] || die "no tenant file $TENANT_FILE (start from infra/tenants/example.env)"
  for k in "${TENANT_KEYS[@]}"; do printf -v "$k" '%s' ""; done
  while IFS= read -r line || [[ -n $line ]]; do
    n=$((n + 1))
    line=${line%$'\r'}
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    [[ $line =~ ^[[:space:]]*([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*=(.*)$ ]] ||
      die "$TENANT_FILE:$n: expected KEY=VALUE"
    key=${BASH_REMATCH[1]}
    value=${BASH_REMATCH[2]}
    value=${value#"${value%%[![:space:]]*}"}
    if [[ $value =~ ^\"([^\"]*)\"([[:space:]]+#.*)?[[:space:]]*$ || $value =~ ^\'([^\']*)\'([[:space:]]+#.*)?[[:space:]]*$ ]]; then
      value=${BASH_REMATCH[1]}
    else
      if [[ $value == \#* ]]; then value=""; fi
      value=${value%%[[:space:]]#*}
      value=${value%"${value##*[![:space:]]}"}
    fi
    if is_secret_setting "$key" || [[ " ${OPERATOR_SECRETS[*]} " == *" $key "* ]]; then
      die "$TENANT_FILE:$n: $key is a secret and must not be in a tenant file (deploy.sh generates keys; rotate them with infra/rotate-keys.sh)"
    fi
    known=0
    for k in "${TENANT_KEYS[@]}"; do [[ $k == "$key" ]] && known=1; done
    (( known )) || die "$TENANT_FILE:$n: unknown key $key (see docs/deploy.md for the keys a tenant file takes)"
    printf -v "$key" '%s' "$value"
  done <"$TENANT_FILE"

  local alnum=${name//-/}
  : "${RESOURCE_GROUP:=rg-memory-$name}"
  : "${COSMOS_ACCOUNT:=cosmos-memory-$name}"
  # Storage account names are global and at most 24 characters: the start of the tenant name and a
  # hash of all of it, so tenants whose names differ only after the start get different accounts.
  # Before the hash the default was stmemory + the first 16 letters and digits (STORAGE_ACCOUNT_LEGACY):
  # deploy.sh keeps that account for a tenant whose app already runs on it (docs/deploy.md).
  STORAGE_ACCOUNT_LEGACY=""
  if [[ -z $STORAGE_ACCOUNT ]]; then
    STORAGE_ACCOUNT="stmemory${alnum:0:10}$(tenant_hash "$name")"
    STORAGE_ACCOUNT_LEGACY="stmemory${alnum:0:16}"
  fi
  : "${FUNCTION_APP:=func-memory-$name}"
  : "${APP_INSIGHTS:=appi-memory-$name}"
  : "${LOG_ANALYTICS_WORKSPACE:=log-memory-$name}"
  : "${COSMOS_CAPACITY_MODE:=serverless}"
  : "${COSMOS_AUTOSCALE_MAX_THROUGHPUT:=1000}"
  : "${COSMOS_CONSISTENCY_LEVEL:=Session}"
  : "${COSMOS_DISABLE_LOCAL_AUTH:=true}"
  : "${COSMOS_DATABASE:=memory}"
  : "${COSMOS_CONTAINER:=Memories}"
  : "${FUNCTION_INSTANCE_MEMORY:=2048}"
  : "${FUNCTION_MAX_INSTANCES:=100}"
  : "${FUNCTION_HTTP_CONCURRENCY:=16}"
  : "${FUNCTION_ALWAYS_READY:=0}"
  : "${MANAGED_IDENTITY:=id-memory-$name}"
  : "${STORAGE_DISABLE_SHARED_KEY:=true}"
  : "${PACKAGE_INCLUDE:=function_app.py host.json requirements.txt memory_core}"
  : "${MEMORY_DEFAULT_INSTANCE_ID:=$name}"
  : "${MEMORY_DELETION_MODE:=operator_approval}"
  : "${MEMORY_SWEEP_SCHEDULE:=0 */5 * * * *}"
  : "${MEMORY_AUTH_MODE:=key}"
  : "${MEMORY_SHARING_DEFAULT_POLICY:=private}"
  : "${MEMORY_SHARING_ALLOW_OVERRIDE:=false}"
  : "${MEMORY_MAX_WRITE_BYTES:=65536}"
  # What reads keep in each instance's memory: an eighth of the instance (checked below: at most half).
  if [[ -z ${MEMORY_READ_CACHE_MB:-} && $FUNCTION_INSTANCE_MEMORY =~ ^[0-9]+$ ]]; then
    MEMORY_READ_CACHE_MB=$(( FUNCTION_INSTANCE_MEMORY / 8 ))
  fi

  AZ_EXTRA=()
  if [[ -n $SUBSCRIPTION ]]; then AZ_EXTRA=(--subscription "$SUBSCRIPTION"); fi
}

# Stop with a message naming the tenant file when a value is out of range.
check() {
  local what=$1 value=$2 pattern=$3 hint=$4
  [[ $value =~ $pattern ]] || die "$TENANT_FILE: $what='$value' is not valid: $hint"
}

validate_tenant() {
  local bool='^(true|false)$' int='^[0-9]+$' mode
  [[ -n $LOCATION ]] || die "$TENANT_FILE: LOCATION is required (a region with Flex Consumption: az functionapp list-flexconsumption-locations)"
  check LOCATION "$LOCATION" '^[a-z0-9]+$' "an Azure region name such as eastus2"
  check RESOURCE_GROUP "$RESOURCE_GROUP" '^[-A-Za-z0-9_.()]{1,90}$' "1-90 letters, digits, - _ . ( )"
  check COSMOS_ACCOUNT "$COSMOS_ACCOUNT" '^[a-z0-9][a-z0-9-]{1,42}[a-z0-9]$' "3-44 lower-case letters, digits and -"
  check STORAGE_ACCOUNT "$STORAGE_ACCOUNT" '^[a-z0-9]{3,24}$' "3-24 lower-case letters and digits"
  check FUNCTION_APP "$FUNCTION_APP" '^[a-z0-9][a-z0-9-]{0,58}[a-z0-9]$' "2-60 lower-case letters, digits and -"
  check APP_INSIGHTS "$APP_INSIGHTS" '^[-A-Za-z0-9_.()]{1,255}$' "letters, digits, - _ . ( )"
  check LOG_ANALYTICS_WORKSPACE "$LOG_ANALYTICS_WORKSPACE" '^[A-Za-z0-9][-A-Za-z0-9]{2,62}$' "4-63 letters, digits and -"
  check COSMOS_CAPACITY_MODE "$COSMOS_CAPACITY_MODE" '^(serverless|autoscale)$' "serverless or autoscale"
  check COSMOS_AUTOSCALE_MAX_THROUGHPUT "$COSMOS_AUTOSCALE_MAX_THROUGHPUT" '^[1-9][0-9]*000$' "a multiple of 1000, at least 1000"
  # Read snapshots need a stamp read and the query after it to see the same writes (docs/cosmos.md).
  check COSMOS_CONSISTENCY_LEVEL "$COSMOS_CONSISTENCY_LEVEL" '^(Session|Strong)$' "Session or Strong (read snapshots need at least session consistency)"
  check COSMOS_DISABLE_LOCAL_AUTH "$COSMOS_DISABLE_LOCAL_AUTH" "$bool" "true or false"
  check COSMOS_DATABASE "$COSMOS_DATABASE" '^[A-Za-z0-9_-]{1,255}$' "letters, digits, _ and -"
  check COSMOS_CONTAINER "$COSMOS_CONTAINER" '^[A-Za-z0-9_-]{1,255}$' "letters, digits, _ and -"
  check FUNCTION_INSTANCE_MEMORY "$FUNCTION_INSTANCE_MEMORY" '^(512|2048|4096)$' "512, 2048 or 4096"
  # Flex Consumption limits: 40-1000 instances, HTTP concurrency 1-1000 per instance
  # (https://learn.microsoft.com/azure/azure-functions/flex-consumption-how-to#set-http-concurrency-limits).
  check FUNCTION_MAX_INSTANCES "$FUNCTION_MAX_INSTANCES" "$int" "a whole number from 40 to 1000"
  (( FUNCTION_MAX_INSTANCES >= 40 && FUNCTION_MAX_INSTANCES <= 1000 )) ||
    die "$TENANT_FILE: FUNCTION_MAX_INSTANCES=$FUNCTION_MAX_INSTANCES is not valid: a whole number from 40 to 1000"
  check FUNCTION_HTTP_CONCURRENCY "$FUNCTION_HTTP_CONCURRENCY" '^[1-9][0-9]{0,3}$' "a whole number from 1 to 1000"
  (( FUNCTION_HTTP_CONCURRENCY <= 1000 )) ||
    die "$TENANT_FILE: FUNCTION_HTTP_CONCURRENCY=$FUNCTION_HTTP_CONCURRENCY is not valid: a whole number from 1 to 1000"
  check FUNCTION_ALWAYS_READY "$FUNCTION_ALWAYS_READY" '^[0-9]{1,3}$' "a whole number of instances, 0 for none"
  (( FUNCTION_ALWAYS_READY <= FUNCTION_MAX_INSTANCES )) ||
    die "$TENANT_FILE: FUNCTION_ALWAYS_READY=$FUNCTION_ALWAYS_READY is more than FUNCTION_MAX_INSTANCES=$FUNCTION_MAX_INSTANCES"
  check MANAGED_IDENTITY "$MANAGED_IDENTITY" '^[A-Za-z0-9][-A-Za-z0-9_]{2,127}$' "3-128 letters, digits, - and _"
  check STORAGE_DISABLE_SHARED_KEY "$STORAGE_DISABLE_SHARED_KEY" "$bool" "true or false"
  # The app's INSTANCE_ID_PATTERN (memory_core/domain/identity.py).
  check MEMORY_DEFAULT_INSTANCE_ID "$MEMORY_DEFAULT_INSTANCE_ID" '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' "an instance id: 1-128 characters, letters, digits, '.', '_', ':' or '-', starting with a letter or digit"
  check MEMORY_DELETION_MODE "$MEMORY_DELETION_MODE" '^(operator_approval|immediate)$' "operator_approval or immediate"
  check MEMORY_SWEEP_SCHEDULE "$MEMORY_SWEEP_SCHEDULE" '^[^[:space:]]+( [^[:space:]]+){5}$' "an NCRONTAB expression with six fields, e.g. '0 */5 * * * *'"
  check MEMORY_AUTH_MODE "$MEMORY_AUTH_MODE" '^(local|key|entra|platform|easyauth)(,(local|key|entra|platform|easyauth))*$' "a comma list of key, entra, platform, easyauth"
  check MEMORY_SHARING_DEFAULT_POLICY "$MEMORY_SHARING_DEFAULT_POLICY" '^(private|team|legacy)$' "private, team or legacy"
  check MEMORY_SHARING_ALLOW_OVERRIDE "$MEMORY_SHARING_ALLOW_OVERRIDE" "$bool" "true or false"
  check MEMORY_MAX_WRITE_BYTES "$MEMORY_MAX_WRITE_BYTES" '^[1-9][0-9]{0,7}$' "a positive whole number of bytes, at most $COSMOS_MAX_WRITE_BYTES"
  (( MEMORY_MAX_WRITE_BYTES <= COSMOS_MAX_WRITE_BYTES )) ||
    die "$TENANT_FILE: MEMORY_MAX_WRITE_BYTES=$MEMORY_MAX_WRITE_BYTES is more than a Cosmos DB item can hold: at most $COSMOS_MAX_WRITE_BYTES (2 MB per item, content escaped at worst, the other fields; see docs/deploy.md)"
  check MEMORY_READ_CACHE_MB "$MEMORY_READ_CACHE_MB" '^[1-9][0-9]{0,4}$' "a positive whole number of MiB, at most half of FUNCTION_INSTANCE_MEMORY"
  (( MEMORY_READ_CACHE_MB <= FUNCTION_INSTANCE_MEMORY / 2 )) ||
    die "$TENANT_FILE: MEMORY_READ_CACHE_MB=$MEMORY_READ_CACHE_MB leaves too little of a ${FUNCTION_INSTANCE_MEMORY} MB instance for the runtime and requests: at most $(( FUNCTION_INSTANCE_MEMORY / 2 )) (half of FUNCTION_INSTANCE_MEMORY)"
  if [[ -n $MEMORY_COREAPI_BASE_URL ]]; then
    check MEMORY_COREAPI_BASE_URL "$MEMORY_COREAPI_BASE_URL" '^https?://[^[:space:],]+$' "an http(s) URL"
  fi
  # The package holds paths relative to the app folder (helpers.py package refuses the rest too).
  local entry
  for entry in $PACKAGE_INCLUDE; do
    [[ $entry != /* && /$entry/ != */../* ]] ||
      die "$TENANT_FILE: PACKAGE_INCLUDE entry '$entry' is outside the app folder: name files and folders inside it"
  done
  local timeout
  for timeout in COSMOS_CONNECTION_TIMEOUT COSMOS_READ_TIMEOUT COSMOS_OPERATION_TIMEOUT; do
    if [[ -n ${!timeout} ]]; then check "$timeout" "${!timeout}" '^[0-9]+(\.[0-9]+)?$' "a number of seconds"; fi
  done
  local name
  for name in MEMORY_ALLOWED_HOSTS MEMORY_MCP_ALLOWED_HOSTS; do
    if [[ -n ${!name} ]]; then check "$name" "${!name}" '^[A-Za-z0-9.:*-]+(,[A-Za-z0-9.:*-]+)*$' "a comma list of host names"; fi
  done
  # Retention in days, 1-36500 (memory_core/settings.py); unset keeps forever.
  for name in MEMORY_AUDIT_RETENTION_DAYS MEMORY_DELETION_RETENTION_DAYS; do
    if [[ -n ${!name} ]]; then check "$name" "${!name}" '^[1-9][0-9]{0,4}$' "a whole number of days from 1 to 36500"; fi
  done
  for name in MEMORY_CONSOLE_CLIENT_ID MEMORY_CONSOLE_API_SCOPE; do
    if [[ -n ${!name} ]]; then check "$name" "${!name}" '^[^[:space:],]+$' "one value without spaces or commas"; fi
  done
  validate_identity
  validate_with_app
}

# The app settings a tenant file gives (deploy.sh sets them; the optional ones only when given).
APP_SETTINGS_FROM_TENANT=(
  COSMOS_DATABASE COSMOS_CONTAINER MEMORY_DEFAULT_INSTANCE_ID MEMORY_DELETION_MODE MEMORY_SWEEP_SCHEDULE
  MEMORY_AUTH_MODE MEMORY_SHARING_DEFAULT_POLICY MEMORY_SHARING_ALLOW_OVERRIDE MEMORY_MAX_WRITE_BYTES MEMORY_READ_CACHE_MB
)

# The tenant's app settings checked by the app's own rules (memory_core/settings.py, as the app checks them at
# start), so a value the app would refuse stops here, before any change, not as an app that no longer starts.
# What deploy.sh fills in (endpoint, generated keys) and the secrets the operator sets on the app stand in
# as placeholders; deploy.sh warns about missing operator secrets itself.
validate_with_app() {
  local name values=() rc=0 out
  for name in "${APP_SETTINGS_FROM_TENANT[@]}" "${OPTIONAL_APP_SETTINGS[@]}"; do
    if [[ -n ${!name} ]]; then values+=("$name=${!name}"); fi
  done
  values+=(MEMORY_STORE=cosmos "COSMOS_ENDPOINT=https://$COSMOS_ACCOUNT.documents.azure.com:443/"
    "WEBSITE_HOSTNAME=$FUNCTION_APP.azurewebsites.net" MEMORY_API_KEYS=placeholder-user MEMORY_OPERATOR_KEYS=placeholder-operator
    MEMORY_COREAPI_KEY=placeholder MEMORY_OBO_CLIENT_SECRET=placeholder WEBSITE_AUTH_ENABLED=true)
  out=$(python3 "$HELPERS" app-check "$REPO_ROOT" "${values[@]}" 2>&1) || rc=$?
  case $rc in
    0) ;;
    3) log "warning: memory_core's settings cannot be imported here ($out); the tenant file was checked by" \
         "deploy.sh's own rules only (pip install -r $REPO_ROOT/requirements.txt to check it as the app does)" ;;
    *) die "$TENANT_FILE: the app would refuse these settings and not start: $out" ;;
  esac
}

# The identity settings, checked as the app checks them at start (memory_core/identity/config.py),
# so a tenant that the app would refuse never gets deployed.
validate_identity() {
  local guid='^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
  local https='^https://[^[:space:],/]+(/[^[:space:],]*)?$' word='^[^[:space:],]+$' list='^[^[:space:],]+(,[^[:space:],]+)*$'
  local name mode
  if [[ -n $MEMORY_ENTRA_TENANT_ID ]]; then check MEMORY_ENTRA_TENANT_ID "$MEMORY_ENTRA_TENANT_ID" "$guid" "the directory (tenant) ID, a GUID"; fi
  if [[ -n $MEMORY_ENTRA_AUDIENCE ]]; then check MEMORY_ENTRA_AUDIENCE "$MEMORY_ENTRA_AUDIENCE" "$list" "a comma list of audiences, e.g. api://memory"; fi
  if [[ -n $MEMORY_OBO_CLIENT_ID ]]; then check MEMORY_OBO_CLIENT_ID "$MEMORY_OBO_CLIENT_ID" "$guid" "the application (client) ID, a GUID"; fi
  for name in MEMORY_ENTRA_JWKS_URL MEMORY_ENTRA_AUTHORITY_HOST MEMORY_PLATFORM_JWKS_URL; do
    if [[ -n ${!name} ]]; then check "$name" "${!name}" "$https" "an https URL"; fi
  done
  for name in MEMORY_COREAPI_SCOPE MEMORY_PLATFORM_ISSUER MEMORY_PLATFORM_AUDIENCE MEMORY_IDENTITY_CA_BUNDLE; do
    if [[ -n ${!name} ]]; then check "$name" "${!name}" "$word" "one value without spaces or commas"; fi
  done
  if [[ -n $MEMORY_OPERATOR_ROLE ]]; then
    check MEMORY_OPERATOR_ROLE "$MEMORY_OPERATOR_ROLE" '^[^[:space:],]{1,256}$' "an app role name, 1-256 characters"
  fi
  for mode in ${MEMORY_AUTH_MODE//,/ }; do
    case $mode in
      local)
        die "$TENANT_FILE: MEMORY_AUTH_MODE=local is refused on Azure (the app trusts loopback callers only under python -m memory_core serve)" ;;
      entra)
        [[ -n $MEMORY_ENTRA_TENANT_ID && -n $MEMORY_ENTRA_AUDIENCE ]] ||
          die "$TENANT_FILE: MEMORY_AUTH_MODE includes entra, so MEMORY_ENTRA_TENANT_ID and MEMORY_ENTRA_AUDIENCE are required"
        if [[ -n $MEMORY_COREAPI_BASE_URL ]]; then
          [[ -n $MEMORY_OBO_CLIENT_ID && -n $MEMORY_COREAPI_SCOPE ]] ||
            die "$TENANT_FILE: MEMORY_AUTH_MODE=entra with MEMORY_COREAPI_BASE_URL needs MEMORY_OBO_CLIENT_ID and MEMORY_COREAPI_SCOPE (and MEMORY_OBO_CLIENT_SECRET set on the app, see docs/deploy.md)"
        fi ;;
      platform)
        [[ -n $MEMORY_PLATFORM_ISSUER && -n $MEMORY_PLATFORM_JWKS_URL ]] ||
          die "$TENANT_FILE: MEMORY_AUTH_MODE includes platform, so MEMORY_PLATFORM_ISSUER and MEMORY_PLATFORM_JWKS_URL are required" ;;
    esac
  done
}
