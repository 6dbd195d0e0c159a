#!/usr/bin/env python3
"""Small JSON / packaging helpers for the infra/*.sh scripts.

The shell scripts call the Azure CLI with ``-o json`` and hand the output to
this file on stdin, so nothing depends on jq or on JMESPath ``--query``
behaviour. Secrets (MEMORY_API_KEYS, MEMORY_OPERATOR_KEYS) are generated and
rewritten here and written to files with mode 0600, so they never appear on a
command line or in the scripts' output (except the one new key that
``rotate-add`` hands to the operator on purpose).

Usage: helpers.py COMMAND [ARGS...]; see the functions below.
"""

from __future__ import annotations

import json
import os
import sys

# hashlib, secrets, zipfile and pathlib are imported where they are used: most calls only
# read JSON, and start-up time adds up over the ~20 calls of a deployment.

# Files and folders never shipped in the app package, even inside an included folder.
PACKAGE_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git", ".venv", "venv"}
PACKAGE_SKIP_FILES = {"local.settings.json", ".DS_Store"}
PACKAGE_SKIP_SUFFIXES = (".pyc", ".pyo")
# A fixed timestamp keeps the zip byte-identical for identical sources, so its
# SHA-256 only changes when the code does.
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def _die(msg: str, code: int = 2) -> None:
    print(f"helpers.py: {msg}", file=sys.stderr)
    sys.exit(code)


def _stdin_json():
    text = sys.stdin.read()
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:  # pragma: no cover - reported to the operator
        _die(f"expected JSON on stdin: {exc}")
    return None


def _write_private_json(path: str, data) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh)


def _settings_dict(data) -> dict:
    """`az functionapp config appsettings list -o json` -> {name: value}."""
    if not data:
        return {}
    if isinstance(data, dict):
        return {str(k): "" if v is None else str(v) for k, v in data.items()}
    return {str(item["name"]): "" if item.get("value") is None else str(item["value"]) for item in data}


def _fingerprint(key: str) -> str:
    import hashlib

    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _split_keys(value: str) -> list[str]:
    return [k.strip() for k in (value or "").split(",") if k.strip()]


# --------------------------------------------------------------------- JSON reads
def cmd_get(args: list[str]) -> None:
    """get PATH [DEFAULT]: print a dotted path of the JSON on stdin (booleans as true/false)."""
    if not args:
        _die("get PATH [DEFAULT]")
    default = args[1] if len(args) > 1 else ""
    node = _stdin_json()
    for part in args[0].split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            node = None
            break
    if node is None:
        print(default)
    elif isinstance(node, bool):
        print("true" if node else "false")
    elif isinstance(node, (dict, list)):
        print(json.dumps(node))
    else:
        print(node)


def cmd_has_capability(args: list[str]) -> None:
    """has-capability NAME: exit 0 when the Cosmos account JSON on stdin has that capability."""
    account = _stdin_json() or {}
    names = {str(c.get("name", "")).lower() for c in account.get("capabilities") or []}
    sys.exit(0 if args[0].lower() in names else 1)


def cmd_capabilities(args: list[str]) -> None:
    """capabilities: the Cosmos account JSON on stdin -> its capability names, space-separated."""
    account = _stdin_json() or {}
    print(" ".join(str(c.get("name", "")) for c in account.get("capabilities") or [] if c.get("name")))


def cmd_pk_matches(args: list[str]) -> None:
    """pk-matches PATHS KIND VERSION: exit 0 when the container JSON on stdin has that partition key."""
    paths, kind, version = args[0].split(","), args[1], int(args[2])
    container = _stdin_json() or {}
    resource = container.get("resource") or container
    pk = resource.get("partitionKey") or {}
    actual = (list(pk.get("paths") or []), pk.get("kind"), pk.get("version") or 1)
    if actual == (paths, kind, version):
        sys.exit(0)
    print(json.dumps(pk), file=sys.stderr)
    sys.exit(1)


def cmd_has_sql_role(args: list[str]) -> None:
    """has-sql-role PRINCIPAL ROLE_GUID SCOPE: exit 0 when the Cosmos SQL role assignment list on stdin has it."""
    principal, role, scope = args[0].lower(), args[1].lower(), args[2].rstrip("/").lower()
    for item in _stdin_json() or []:
        if (
            str(item.get("principalId", "")).lower() == principal
            and str(item.get("roleDefinitionId", "")).lower().rstrip("/").endswith("/" + role)
            and str(item.get("scope", "")).rstrip("/").lower() == scope
        ):
            sys.exit(0)
    sys.exit(1)


def cmd_has_principal(args: list[str]) -> None:
    """has-principal PRINCIPAL: exit 0 when the role assignment list on stdin has one for PRINCIPAL."""
    principal = args[0].lower()
    items = _stdin_json() or []
    sys.exit(0 if any(str(i.get("principalId", "")).lower() == principal for i in items) else 1)


def cmd_user_identities(args: list[str]) -> None:
    """user-identities: function app JSON on stdin -> resource ids of its user-assigned identities."""
    app = _stdin_json() or {}
    identities = (app.get("identity") or {}).get("userAssignedIdentities") or {}
    print(" ".join(sorted(identities)))


def _region(name) -> str:
    """A region as ARM compares it: Cosmos DB reports "East US 2" where the others report "eastus2"."""
    return "".join(str(name or "").split()).lower()


def cmd_misplaced(args: list[str]) -> None:
    """misplaced LOCATION TYPE=NAME...: `az resource list` JSON on stdin -> one line "NAME (TYPE): REGION" per
    listed resource that is one of the TYPE=NAME pairs (case-insensitive) and lies in another region than
    LOCATION (indented, for a message); nothing when none does."""
    location = _region(args[0])
    wanted = {tuple(pair.lower().split("=", 1)) for pair in args[1:]}
    for resource in _stdin_json() or []:
        name, rtype = str(resource.get("name", "")), str(resource.get("type", ""))
        if (rtype.lower(), name.lower()) in wanted and _region(resource.get("location")) != location:
            print(f"  {name} ({rtype}): {resource.get('location')}")


def cmd_deployment_auth(args: list[str]) -> None:
    """deployment-auth: `az functionapp deployment config show` JSON on stdin (or the functionAppConfig
    holding it) -> "AUTH_TYPE IDENTITY_ID STORAGE_ACCOUNT" of the Flex deployment storage, "-" where absent
    (STORAGE_ACCOUNT from the blob container URL)."""
    config = _stdin_json() or {}
    config = config.get("deployment", config)
    storage = config.get("storage") or {}
    auth = storage.get("authentication") or {}
    host = str(storage.get("value") or "").split("://", 1)[-1].split("/", 1)[0]
    account = host.split(".", 1)[0] if "." in host else ""  # ACCOUNT.blob.core.windows.net (or another cloud's)
    values = (auth.get("type"), auth.get("userAssignedIdentityResourceId"), account)
    print(" ".join(str(v) if v else "-" for v in values))


def cmd_scale_state(args: list[str]) -> None:
    """scale-state: `az functionapp scale config show` JSON on stdin ->
    "MEMORY_MB MAX_INSTANCES HTTP_CONCURRENCY ALWAYS_READY_HTTP" ("default" where Azure has no value)."""
    scale = _stdin_json() or {}
    scale = scale.get("scaleAndConcurrency", scale)  # the whole functionAppConfig also works
    http = ((scale.get("triggers") or {}).get("http") or {}).get("perInstanceConcurrency")
    ready = next((r.get("instanceCount", 0) for r in scale.get("alwaysReady") or [] if r.get("name") == "http"), 0)
    values = (scale.get("instanceMemoryMB"), scale.get("maximumInstanceCount"), http, ready)
    print(" ".join("default" if v is None else str(v) for v in values))


def _short(value) -> str:
    text = "null" if value is None else json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= 90 else text[:87] + "..."


def _deltas(items, prefix: str = ""):
    for item in items or []:
        path = f"{prefix}{item.get('path', '')}"
        kind = item.get("propertyChangeType", "")
        if item.get("children"):
            yield from _deltas(item["children"], path + ".")
        elif kind != "NoEffect":
            yield f"{path}: {_short(item.get('before'))} -> {_short(item.get('after'))}"


def cmd_what_if_plan(args: list[str]) -> None:
    """what-if-plan: `az deployment group what-if --no-pretty-print -o json` on stdin -> one plan line per resource;
    exit 0 when something would change, 1 when nothing would.

    changeType (https://learn.microsoft.com/azure/azure-resource-manager/templates/deploy-what-if#change-types):
    Create -> create, Modify -> update with each property difference, NoChange/Ignore -> unchanged,
    Delete -> delete (never with the Incremental mode deploy.sh uses), Deploy/Unsupported -> update, unknown.
    """
    result = _stdin_json() or {}
    if result.get("status") not in (None, "Succeeded"):
        error = (result.get("error") or {}).get("message", "")
        print(f"# what-if failed: {result.get('status')} {error}")
        return  # unknown: treated as a change, so the deployment runs and reports the error
    names = {"Create": "create", "Modify": "update", "NoChange": "unchanged", "Ignore": "unchanged",
             "Delete": "delete", "Deploy": "update", "Unsupported": "update"}
    changed = False
    for change in result.get("changes") or []:
        rid = change.get("resourceId", "")
        parts = rid.split("/")
        what = "/".join(parts[-4:]) if "/providers/" in rid else rid
        action = names.get(change.get("changeType", ""), "update")
        detail = "; ".join(_deltas(change.get("delta"))) if action == "update" else ""
        if change.get("changeType") in ("Deploy", "Unsupported"):
            detail = "ARM cannot predict the difference"
        changed = changed or action != "unchanged"
        print(f"# {action + ':':<9} {what}" + (f" ({detail})" if detail else ""))
    sys.exit(0 if changed else 1)


def cmd_settings_nul(args: list[str]) -> None:
    """settings-nul: app settings list on stdin -> NAME=VALUE records separated by NUL."""
    out = sys.stdout
    for name, value in sorted(_settings_dict(_stdin_json()).items()):
        out.write(f"{name}={value}\0")


# --------------------------------------------------------------------- secrets
def cmd_gen_secrets(args: list[str]) -> None:
    """gen-secrets OUTFILE NAME...: write {NAME: 64 hex chars} to OUTFILE (mode 0600)."""
    import secrets

    outfile, names = args[0], args[1:]
    _write_private_json(outfile, {name: secrets.token_hex(32) for name in names})


def cmd_rotate_add(args: list[str]) -> None:
    """rotate-add SETTING MARKER OUT_SETTINGS OUT_KEY: add a new key next to the old ones.

    Reads the app settings list on stdin. Writes {SETTING: "old,...,new", MARKER: fingerprint(new)}
    to OUT_SETTINGS and the new key alone to OUT_KEY (both mode 0600).
    """
    import secrets

    setting, marker, out_settings, out_key = args
    current = _settings_dict(_stdin_json())
    if current.get(marker):
        _die(
            f"a rotation of {setting} is already in progress (new key {current[marker]}); "
            "finish it with --step remove-old first",
            3,
        )
    keys = _split_keys(current.get(setting, ""))
    new_key = secrets.token_hex(32)
    _write_private_json(out_settings, {setting: ",".join([*keys, new_key]), marker: _fingerprint(new_key)})
    fd = os.open(out_key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(new_key + "\n")
    print(f"{setting}: {len(keys)} old key(s) kept, new key fingerprint {_fingerprint(new_key)}", file=sys.stderr)


def cmd_rotate_finish(args: list[str]) -> None:
    """rotate-finish SETTING MARKER OUT_SETTINGS: keep only the key the marker names."""
    setting, marker, out_settings = args
    current = _settings_dict(_stdin_json())
    wanted = current.get(marker, "")
    if not wanted:
        _die(f"no rotation of {setting} is in progress; run --step add first", 3)
    keys = _split_keys(current.get(setting, ""))
    kept = [k for k in keys if _fingerprint(k) == wanted]
    if not kept:
        _die(f"the new key (fingerprint {wanted}) is no longer in {setting}; refusing to remove every key", 3)
    _write_private_json(out_settings, {setting: ",".join(kept)})
    print(f"{setting}: removed {len(keys) - len(kept)} old key(s), kept {wanted}", file=sys.stderr)


def cmd_rotate_status(args: list[str]) -> None:
    """rotate-status SETTING MARKER: print key fingerprints (never the keys)."""
    setting, marker = args
    current = _settings_dict(_stdin_json())
    keys = _split_keys(current.get(setting, ""))
    print(f"{setting}: {len(keys)} key(s)")
    for key in keys:
        print(f"  fingerprint {_fingerprint(key)}")
    if current.get(marker):
        print(f"rotation in progress: new key {current[marker]}; run --step remove-old once every caller uses it")
    else:
        print("no rotation in progress")


def cmd_smoke_credentials(args: list[str]) -> None:
    """smoke-credentials OUTFILE: app settings on stdin -> {api_key, operator_key} (first of each
    list) in OUTFILE (mode 0600); exit 3 when the app has no caller key."""
    current = _settings_dict(_stdin_json())
    api = _split_keys(current.get("MEMORY_API_KEYS", ""))
    operator = _split_keys(current.get("MEMORY_OPERATOR_KEYS", ""))
    _write_private_json(args[0], {"api_key": api[0] if api else "", "operator_key": operator[0] if operator else ""})
    if not api:
        sys.exit(3)


def cmd_smoke_bearer(args: list[str]) -> None:
    """smoke-bearer OUTFILE: `az account get-access-token` JSON on stdin -> bearer added to OUTFILE (0600)."""
    token = (_stdin_json() or {}).get("accessToken")
    if not token:
        _die("az account get-access-token returned no accessToken", 3)
    try:
        with open(args[0], encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        data = {}
    data["bearer"] = token
    _write_private_json(args[0], data)


# --------------------------------------------------------------------- hashing & package
def cmd_digest(args: list[str]) -> None:
    """digest ITEM...: SHA-256 over files (file:PATH) and literal strings (anything else)."""
    import hashlib
    from pathlib import Path

    h = hashlib.sha256()
    for item in args:
        if item.startswith("file:"):
            h.update(Path(item[5:]).read_bytes())
        else:
            h.update(item.encode("utf-8"))
        h.update(b"\0")
    print(h.hexdigest())


def _iter_package_files(app_dir, includes: list[str]):
    from pathlib import Path

    root_dir = Path(app_dir).resolve()
    for entry in includes:
        path = app_dir / entry
        if not path.exists():
            _die(f"package entry '{entry}' not found in {app_dir}")
        # Names in the zip are relative to the app folder: an entry outside it (../x, /etc, a symlink
        # out) would be packaged under a name that unzips outside the app's folder.
        if Path(entry).is_absolute() or not path.resolve().is_relative_to(root_dir):
            _die(f"package entry '{entry}' is outside the app folder {app_dir}: PACKAGE_INCLUDE names paths inside it")
        if path.is_file():
            yield path
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in PACKAGE_SKIP_DIRS and not d.endswith(".egg-info"))
            for name in sorted(files):
                if name in PACKAGE_SKIP_FILES or name.endswith(PACKAGE_SKIP_SUFFIXES):
                    continue
                yield Path(root) / name


# Run by the app's Python version: bytecode for each module, beside it as the import system looks
# for it. Checked against the source's hash, not its modification time, which unzipping does not
# keep; made with a fixed hash seed, since set constants are ordered by string hashes and the zip
# must stay byte-identical for identical sources.
_COMPILE_BYTECODE = r"""
import importlib.util, os, py_compile, sys
app_dir, out_dir = sys.argv[1], sys.argv[2]
for source in sys.argv[3:]:
    cached = importlib.util.cache_from_source(source)
    try:
        py_compile.compile(os.path.join(app_dir, source), cfile=os.path.join(out_dir, cached), dfile=source,
                           doraise=True, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    except py_compile.PyCompileError as error:
        sys.exit(error.msg)
    print(cached)
"""


def _python_for(version: str) -> str | None:
    """An interpreter of ``version`` ("3.11"): this one, or a pythonX.Y on PATH that runs as that
    version (a version manager's shim may not); None without one."""
    import shutil
    import subprocess

    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if found is None:
        return None
    probe = subprocess.run([found, "-S", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True)
    return found if probe.returncode == 0 and probe.stdout.strip() == version else None


def _bytecode(version: str, app_dir, sources: list[str]) -> dict[str, bytes]:
    """The bytecode of ``sources`` (paths relative to ``app_dir``) for Python ``version``, by package path.

    Empty, with a note on stderr, when no such interpreter is here: the package then works as
    before, and each new instance compiles the app's modules as it imports them.
    """
    import subprocess
    import tempfile
    from pathlib import Path

    python = _python_for(version)
    if python is None:
        print(f"helpers.py: no Python {version} here (python{version} on PATH): the package carries no bytecode, "
              "so each new instance compiles the app's modules as it imports them", file=sys.stderr)
        return {}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "PYTHONOPTIMIZE")}
    env["PYTHONHASHSEED"] = "0"
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run([python, "-S", "-c", _COMPILE_BYTECODE, str(app_dir), out, *sources],
                              env=env, capture_output=True, text=True)
        if done.returncode != 0:
            _die(f"could not compile the app with Python {version}:\n{done.stderr.strip()}")
        return {cached: (Path(out) / cached).read_bytes() for cached in done.stdout.split()}


def cmd_package(args: list[str]) -> None:
    """package [--python X.Y] APP_DIR OUT_ZIP ENTRY...: deterministic zip of the app; prints its SHA-256.

    With ``--python``, each ``.py`` file's bytecode for that version goes beside it
    (``__pycache__/NAME.cpython-XY.pyc``): Flex Consumption runs the app from its package, read-only,
    so Python could never cache what it compiles, and every new instance would compile every module.
    """
    import hashlib
    import zipfile
    from pathlib import Path

    version = None
    if args[:1] == ["--python"]:
        version, args = args[1], args[2:]
    app_dir, out_zip, includes = Path(args[0]).resolve(), Path(args[1]), args[2:]
    for required in ("function_app.py", "host.json", "requirements.txt"):
        if not (app_dir / required).is_file():
            _die(f"{required} not found in {app_dir}: is --app-dir the repository root?")
    contents = {path.relative_to(app_dir).as_posix(): path.read_bytes()
                for path in set(_iter_package_files(app_dir, includes))}
    if version:
        contents.update(_bytecode(version, app_dir, sorted(name for name in contents if name.endswith(".py"))))
    with zipfile.ZipFile(out_zip, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(contents):
            info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, contents[name])
    print(hashlib.sha256(out_zip.read_bytes()).hexdigest())


# Resources Azure makes by itself next to the ones deploy.sh creates (the Flex Consumption plan of
# the function app, Application Insights' Smart Detection rule and action group): never tagged, and
# counted as the tenant's own. A group shared with another tenant still holds that tenant's app or
# component, which keeps the group from being deleted.
AZURE_BYPRODUCT_TYPES = ("microsoft.web/serverfarms", "microsoft.alertsmanagement/smartdetectoralertrules",
                         "microsoft.insights/actiongroups")


def cmd_foreign_resources(args: list[str]) -> None:
    """foreign-resources TAG TENANT OWN_NAMES OTHER_NAMES: `az resource list` JSON on stdin -> one line
    "NAME (TYPE): REASON" per resource that is not this tenant's; nothing when all are.

    A resource is the tenant's when its TAG is TENANT, or when it has no TAG and is named in OWN_NAMES
    (space-separated; resources of an older deploy.sh carry no tag) and not in OTHER_NAMES (the names
    other tenant files give in the same group), or is one of AZURE_BYPRODUCT_TYPES without a TAG.
    """
    tag, tenant = args[0], args[1]
    own = {n.lower() for n in args[2].split()}
    others = {n.lower() for n in args[3].split()}
    for resource in _stdin_json() or []:
        name, rtype = resource.get("name", ""), resource.get("type", "")
        owner = (resource.get("tags") or {}).get(tag)
        if owner == tenant:
            continue
        if owner:
            reason = f"tagged {tag}={owner}"
        elif name.lower() in others:
            reason = "named in another tenant file for this resource group"
        elif name.lower() in own or rtype.lower() in AZURE_BYPRODUCT_TYPES:
            continue
        else:
            reason = f"not tagged {tag}={tenant} and not named in the tenant file"
        print(f"{name} ({rtype}): {reason}")


def cmd_app_check(args: list[str]) -> None:
    """app-check REPO NAME=VALUE...: check app settings with the app's own rules (memory_core.settings in REPO),
    as the app checks them at start. Exit 0 when it would start, 1 with the app's message when not, 3 when
    memory_core or its dependencies cannot be imported here. Run without -S (it needs site-packages)."""
    sys.path.insert(0, args[0])
    values = dict(arg.split("=", 1) for arg in args[1:])
    try:
        from memory_core.domain.errors import ConfigurationError
        from memory_core.settings import Settings
    except ImportError as error:
        print(f"{error}", file=sys.stderr)
        sys.exit(3)
    from memory_core.settings import settings_from

    # Only these values: never the deploying machine's environment, which the app will not have.
    for name in [n for n in os.environ if n.lower() in Settings.model_fields]:
        del os.environ[name]
    try:
        settings_from(values)
    except ConfigurationError as error:
        print(str(error), file=sys.stderr)
        sys.exit(1)


COMMANDS = {
    "get": cmd_get,
    "app-check": cmd_app_check,
    "foreign-resources": cmd_foreign_resources,
    "has-capability": cmd_has_capability,
    "capabilities": cmd_capabilities,
    "pk-matches": cmd_pk_matches,
    "has-sql-role": cmd_has_sql_role,
    "has-principal": cmd_has_principal,
    "settings-nul": cmd_settings_nul,
    "user-identities": cmd_user_identities,
    "scale-state": cmd_scale_state,
    "misplaced": cmd_misplaced,
    "deployment-auth": cmd_deployment_auth,
    "what-if-plan": cmd_what_if_plan,
    "gen-secrets": cmd_gen_secrets,
    "rotate-add": cmd_rotate_add,
    "rotate-finish": cmd_rotate_finish,
    "rotate-status": cmd_rotate_status,
    "smoke-credentials": cmd_smoke_credentials,
    "smoke-bearer": cmd_smoke_bearer,
    "digest": cmd_digest,
    "package": cmd_package,
}


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in COMMANDS:
        _die("command must be one of: " + ", ".join(sorted(COMMANDS)))
    COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
