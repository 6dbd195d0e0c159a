"""Cold start: ``import function_app`` in a fresh interpreter, and the first request of a fresh server.

Run from the project root:

    python bench/bench_cold_start.py [--runs 10]

- import: a new ``python -c`` process times ``import function_app`` alone
  (interpreter start-up excluded), ``--runs`` times, in wall-clock and in CPU
  time (the CPU figure is what a loaded, shared machine distorts least); what
  Azure Functions pays per instance before it can index the app. ``--baseline
  <commit>`` times the same import, and that commit's package with its bytecode,
  at another commit (extracted with ``git archive``) in the same run, interleaved.
- first request: ``python -m memory_core serve`` on a fresh SQLite file; once
  its port accepts connections (no request sent before), the first REST get
  (composition root, store schema, identity) and then the first MCP
  ``tools/call`` (the MCP SDK loads here) are timed, ``--runs`` times.

- the deployed package: the app zipped as ``infra/deploy.sh`` zips it (``infra/lib/helpers.py
  package``), with its bytecode for this Python and without it, each unzipped to a folder that a
  new interpreter never writes to (``PYTHONDONTWRITEBYTECODE``, as on Flex Consumption's read-only
  mount of the package). In each, ``--runs`` new processes time ``import function_app``, then
  the first REST get, the first MCP ``tools/call`` and the first REST append handed to the functions
  themselves (the composition root, the SQLite schema and every lazy import, the secret detectors
  with the append; no socket, no Functions host).

- ``--remote-build``: the package with its bytecode, then built as Azure's remote build builds it
  (``tests/infra/infra_support.replay_remote_build``: pip installs requirements.txt into
  ``.python_packages`` from PyPI, then the build is copied without modification times), once with
  ``SOURCE_DATE_EPOCH`` in the build's environment, as deploy.sh sets it, and once without. Those
  rows run with the dependencies from ``.python_packages`` alone (``python -S``), as the Functions
  worker finds them.

Every import is timed with ``PYTHONDONTWRITEBYTECODE=1``, so a run never leaves bytecode behind
for the next one to find: the working tree's rows include compiling what has no ``__pycache__``.

Targets (issue #15): import under 0.3 s; first request under 1 s on the embedded store.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx

from tests.infra.infra_support import PACKAGES_DIR, SOURCE_DATE_EPOCH, build_package, replay_remote_build
from tests.support.local_server import USER_KEY, free_port, identity

PROBE = (
    "import time; t = time.perf_counter(); c = time.process_time(); import function_app; "
    "print(time.perf_counter() - t, time.process_time() - c)"
)


# In a new interpreter in an unzipped package: import, then the first REST get, the first MCP
# tools/call and the first REST append through the functions, as the Functions worker hands them requests.
FIRST_CALLS = r"""
import asyncio, json, os, sys, time
sys.path.insert(0, os.getcwd())
start = time.perf_counter()
import function_app
imported = time.perf_counter() - start
import azure.functions as func
from memory_core.api import rest
from memory_core.local.host import InvocationContext
from memory_core.mcp import transport
headers = {"x-api-key": os.environ["MEMORY_API_KEYS"], "x-user-identity": sys.argv[1], "host": "127.0.0.1"}
start = time.perf_counter()
answer = rest.get_memory(func.HttpRequest("GET", "http://127.0.0.1/api/instances/cold/memory", headers=headers,
                                          params={"scope": "user"}, route_params={"instanceId": "cold"}, body=b""))
assert answer.status_code == 200, answer.get_body()
rest_seconds = time.perf_counter() - start
call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_memory", "arguments": {"scope": "user"}}}
mcp_headers = {**headers, "content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2025-11-25", "x-instance-id": "cold"}
start = time.perf_counter()
answer = asyncio.run(transport.mcp(func.HttpRequest("POST", "http://127.0.0.1/api/mcp", headers=mcp_headers,
                                                    body=json.dumps(call).encode()), InvocationContext("1", "mcp")))
assert answer.status_code == 200 and b'"isError":false' in answer.get_body().replace(b" ", b""), answer.get_body()
mcp_seconds = time.perf_counter() - start
append = {"scope": "user", "content_markdown": "- prefers green tea"}
start = time.perf_counter()
answer = rest.append_memory(func.HttpRequest("POST", "http://127.0.0.1/api/instances/cold/memory/append",
                                             headers={**headers, "content-type": "application/json"},
                                             route_params={"instanceId": "cold"}, body=json.dumps(append).encode()))
assert answer.status_code == 200, answer.get_body()
print(imported, rest_seconds, mcp_seconds, time.perf_counter() - start)
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "COSMOS_"))}
    env.update({"PYTHONDONTWRITEBYTECODE": "1", **extra})
    return env


def import_seconds(root: Path = ROOT) -> tuple[float, float]:
    """(wall, CPU) seconds of ``import function_app`` in a fresh interpreter in ``root``."""
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=root, env=_env(), capture_output=True, text=True,
                            check=True)
    wall, cpu = result.stdout.split()
    return float(wall), float(cpu)


def _cold_env(data: Path) -> dict[str, str]:
    """A new process's environment: its own SQLite file in ``data``, the bench's key and instance."""
    return _env(MEMORY_SQLITE_PATH=str(data / "memory.sqlite3"), MEMORY_API_KEYS=USER_KEY,
                MEMORY_DEFAULT_INSTANCE_ID="cold", WEBSITE_HOSTNAME="")


def unzipped_package(bytecode: bool, root: Path = ROOT) -> Path:
    """The app in ``root`` as ``infra/deploy.sh`` packages it (with bytecode for this Python, or none), unzipped."""
    folder = Path(tempfile.mkdtemp(prefix="memory-bench-package-"))
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    built = build_package(folder / "app.zip", *(["--python", version] if bytecode else []), app_dir=root)
    if built.returncode != 0:
        raise RuntimeError(f"could not package {root}: {built.stderr}")
    with zipfile.ZipFile(folder / "app.zip") as package:
        package.extractall(folder / "app")
    return folder / "app"


def remotely_built(app: Path, source_date_epoch: bool) -> Path:
    """The unzipped ``app`` after a replay of Azure's remote build, with or without ``SOURCE_DATE_EPOCH``
    (deploy.sh's value) in the build's environment."""
    out = Path(tempfile.mkdtemp(prefix="memory-bench-built-"))
    build = out.with_name(out.name + "-build")
    shutil.copytree(app, build)
    replay_remote_build(build, out, ["-r", "requirements.txt"],
                        {"SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH} if source_date_epoch else {})
    return out


def first_calls(app: Path) -> tuple[float, float, float, float]:
    """(import, first REST get, first MCP tools/call, first REST append) seconds of a new process in the
    unzipped ``app``; with its dependencies from its ``.python_packages`` alone when it has one."""
    env = _cold_env(Path(tempfile.mkdtemp(prefix="memory-bench-cold-")))
    isolated = []
    if (app / PACKAGES_DIR).is_dir():
        env["PYTHONPATH"] = str(app / PACKAGES_DIR)
        isolated = ["-S"]  # no site-packages of this machine's: the dependencies come from the build
    result = subprocess.run([sys.executable, *isolated, "-c", FIRST_CALLS, identity("cold@contoso.com")], cwd=app,
                            env=env, capture_output=True, text=True, check=True)
    imported, rest, mcp, append = result.stdout.split()
    return float(imported), float(rest), float(mcp), float(append)


def first_requests() -> tuple[float, float]:
    """(first REST get, first MCP tools/call) on a fresh server process, in seconds."""
    tmp = Path(tempfile.mkdtemp(prefix="memory-bench-cold-"))
    port = free_port()
    env = _cold_env(tmp)
    process = subprocess.Popen(
        [sys.executable, "-m", "memory_core", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # wait for the port without sending a request
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.02)
        headers = {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity("cold@contoso.com")}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/api", headers=headers, timeout=60) as http:
            start = time.perf_counter()
            http.get("/instances/cold/memory", params={"scope": "user"}).raise_for_status()
            rest = time.perf_counter() - start
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "get_memory", "arguments": {"scope": "user"}}}
            start = time.perf_counter()
            response = http.post("/mcp", json=call, headers={
                "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25",
                "X-INSTANCE-ID": "cold"})
            response.raise_for_status()
            mcp = time.perf_counter() - start
        return rest, mcp
    finally:
        process.terminate()
        process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--baseline", help="a commit to time the import and the package of as well, e.g. the one before a change")
    parser.add_argument("--remote-build", action="store_true",
                        help="also time the package after a replay of Azure's remote build (pip installs from PyPI)")
    args = parser.parse_args()
    baseline_root = None
    if args.baseline:
        baseline_root = Path(tempfile.mkdtemp(prefix="memory-bench-baseline-"))
        archive = subprocess.run(["git", "archive", args.baseline], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(baseline_root)], input=archive, check=True)
    packages = {"with its bytecode": unzipped_package(bytecode=True), "without bytecode": unzipped_package(bytecode=False)}
    if baseline_root is not None:
        packages[f"at {args.baseline}, with its bytecode"] = unzipped_package(bytecode=True, root=baseline_root)
    if args.remote_build:
        packages["remotely built, SOURCE_DATE_EPOCH set"] = remotely_built(packages["with its bytecode"], True)
        packages["remotely built, without SOURCE_DATE_EPOCH"] = remotely_built(packages["with its bytecode"], False)
    imports, baseline = [], []
    deployed: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in packages}
    for _ in range(args.runs):
        imports.append(import_seconds())
        if baseline_root is not None:
            baseline.append(import_seconds(baseline_root))
        for name, app in packages.items():
            deployed[name].append(first_calls(app))
    firsts = [first_requests() for _ in range(args.runs)]
    rest = [f[0] for f in firsts]
    mcp = [f[1] for f in firsts]
    print(f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}; {args.runs} fresh processes each\n")
    print("| measure | median s | min s | max s | target |")
    print("|---|---:|---:|---:|---|")
    rows = [("`import function_app`, wall clock", [w for w, _ in imports], "< 0.3 s"),
            ("`import function_app`, CPU time", [c for _, c in imports], "")]
    if baseline:
        rows += [(f"`import function_app` at {args.baseline}, wall clock", [w for w, _ in baseline], ""),
                 (f"`import function_app` at {args.baseline}, CPU time", [c for _, c in baseline], "")]
    rows += [("first REST get on a fresh server (SQLite)", rest, "< 1 s"),
             ("then its first MCP tools/call (SDK loads)", mcp, "")]
    for name, samples in deployed.items():
        rows += [(f"package {name}: `import function_app`", [s[0] for s in samples], "< 0.3 s"),
                 (f"package {name}: then the first REST get (SQLite)", [s[1] for s in samples], ""),
                 (f"package {name}: import and first REST get", [s[0] + s[1] for s in samples], "< 1 s"),
                 (f"package {name}: then the first MCP tools/call", [s[2] for s in samples], ""),
                 (f"package {name}: then the first REST append", [s[3] for s in samples], "")]
    for label, samples, target in rows:
        print(f"| {label} | {statistics.median(samples):.3f} | {min(samples):.3f} | {max(samples):.3f} | {target} |")


if __name__ == "__main__":
    main()
