"""Shared helpers for the infra tests: a sandbox around the fake az.

Azure's control plane cannot run here, so the scripts in infra/ run against
tests/infra/fake_az.py, put on PATH as ``az``: it records each invocation and
answers from a JSON state file the way the Azure CLI would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INFRA = REPO / "infra"
FAKE_AZ = Path(__file__).resolve().with_name("fake_az.py")
HELPERS = INFRA / "lib" / "helpers.py"
# What deploy.sh packages when a tenant file names nothing else (PACKAGE_INCLUDE's default in common.sh).
PACKAGE_ENTRIES = tuple(
    re.search(r'PACKAGE_INCLUDE:=([^}"]*)', (INFRA / "lib" / "common.sh").read_text()).group(1).split()
)

# Command words that change something in Azure.
CHANGING_WORDS = {"create", "assign", "update", "set", "delete", "config-zip", "deploy", "regenerate"}

APP_FILES = {
    "function_app.py": "import azure.functions as func\napp = func.FunctionApp()\n",
    "host.json": '{"version": "2.0"}\n',
    "requirements.txt": "azure-functions\nazure-cosmos\nazure-identity\n",
    "memory_core/__init__.py": "",
    "memory_core/store.py": "STORE = 'cosmos'\n",
    "memory_core/__pycache__/store.cpython-311.pyc": "compiled",
    "memory_core/local.settings.json": '{"Values": {"COSMOS_KEY": "local-only"}}\n',
    "local.settings.json": '{"Values": {"COSMOS_KEY": "local-only"}}\n',
    "tests/test_something.py": "def test_x():\n    pass\n",
    "docs/notes.md": "notes\n",
    "README.md": "readme\n",
}


def command_words(argv: list[str]) -> list[str]:
    words = []
    for arg in argv:
        if arg.startswith("-"):
            break
        words.append(arg)
    return words


def option(argv: list[str], name: str) -> list[str]:
    """Values given to an option in one recorded az invocation."""
    if name not in argv:
        return []
    values = []
    for arg in argv[argv.index(name) + 1:]:
        if arg.startswith("-"):
            break
        values.append(arg)
    return values


def is_changing(argv: list[str]) -> bool:
    """Whether a recorded call changes Azure (`--help` and `what-if` only read)."""
    return "--help" not in argv and bool(CHANGING_WORDS & set(command_words(argv)))


class AzureEnv:
    """A sandbox: fake az on PATH, a state file, a call log, tenant files and an app folder."""

    def __init__(self, root: Path):
        self.root = root
        self.bin = root / "bin"
        self.tenants = root / "tenants"
        self.app_dir = root / "app"
        self.log = root / "az-calls.jsonl"
        self.state_file = root / "az-state.json"
        self.deployed_zip = root / "deployed.zip"
        for folder in (self.bin, self.tenants, self.app_dir):
            folder.mkdir(parents=True, exist_ok=True)
        (self.bin / "python3").symlink_to(sys.executable)
        az = self.bin / "az"
        az.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "{FAKE_AZ}" "$@"\n')
        az.chmod(0o755)
        for rel, text in APP_FILES.items():
            path = self.app_dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        self.write_tenant("acme")

    # ----------------------------------------------------------------- setup
    def write_tenant(self, name: str, text: str = "", **settings: str) -> Path:
        lines = ["LOCATION=eastus2"] if "LOCATION" not in settings else []
        lines += [f"{k}={v}" for k, v in settings.items()]
        path = self.tenants / f"{name}.env"
        path.write_text("\n".join(lines) + "\n" + text)
        return path

    @property
    def env(self) -> dict:
        env = dict(os.environ)
        env.update(
            PATH=f"{self.bin}{os.pathsep}{env.get('PATH', '')}",
            FAKE_AZ_LOG=str(self.log),
            FAKE_AZ_STATE=str(self.state_file),
            FAKE_AZ_ZIP_COPY=str(self.deployed_zip),
            MEMORY_TENANTS_DIR=str(self.tenants),
            INFRA_RETRY_SLEEP="0",
            TMPDIR=str(self.root),
        )
        return env

    # ----------------------------------------------------------------- running
    def run(self, script: str, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
        cmd = ["bash", str(INFRA / script), *args]
        if script == "deploy.sh" and "--app-dir" not in args:
            cmd += ["--app-dir", str(self.app_dir)]
        proc = subprocess.run(cmd, env=self.env, text=True, capture_output=True, timeout=300,
                              input=stdin if stdin is not None else "")
        if check and proc.returncode != 0:
            raise AssertionError(f"{script} {' '.join(args)} exited {proc.returncode}\n"
                                 f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
        return proc

    def deploy(self, *args: str, tenant: str = "acme", check: bool = True, smoke: bool = False) -> subprocess.CompletedProcess:
        """deploy.sh; the smoke test is skipped unless asked for (it needs a server to call)."""
        extra = () if smoke else ("--no-smoke",)
        return self.run("deploy.sh", "--tenant", tenant, *args, *extra, check=check)

    # ----------------------------------------------------------------- inspecting
    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def reset_log(self) -> None:
        if self.log.exists():
            self.log.unlink()

    def state(self) -> dict:
        return json.loads(self.state_file.read_text())

    def save_state(self, state: dict) -> None:
        self.state_file.write_text(json.dumps(state))

    def app(self, name: str = "func-memory-acme", rg: str = "rg-memory-acme") -> dict:
        return self.state()["apps"][f"{rg}/{name}"]

    def settings(self, **kw) -> dict:
        return self.app(**kw)["settings"]

    def cosmos(self, name: str = "cosmos-memory-acme", rg: str = "rg-memory-acme") -> dict:
        return self.state()["cosmos"][f"{rg}/{name}"]

    def find(self, *words: str, calls: list[list[str]] | None = None) -> list[int]:
        """Indexes of the recorded calls whose command words are exactly `words`."""
        calls = self.calls() if calls is None else calls
        return [i for i, argv in enumerate(calls) if command_words(argv) == list(words) and "--help" not in argv]


def build_package(out: Path, *python: str, app_dir: Path = REPO, hash_seed: str = "0") -> subprocess.CompletedProcess[str]:
    """``helpers.py package [--python X.Y]`` of ``app_dir``'s default entries into ``out``, as deploy.sh runs it
    (``hash_seed``: the helper's own PYTHONHASHSEED)."""
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    return subprocess.run([sys.executable, "-S", str(HELPERS), "package", *python, str(app_dir), str(out), *PACKAGE_ENTRIES],
                          env=env, capture_output=True, text=True, timeout=120)


# The start of a ``python -c`` probe: from here on, ``compiled`` lists (relative to the working folder) each
# module the new interpreter compiles from source rather than loads from bytecode.
COUNTING_COMPILES = r"""
import importlib._bootstrap_external as external, os
compiled = []
source_to_code = external.SourceLoader.source_to_code
def counted(self, data, path, *, _optimize=-1):
    compiled.append(os.path.relpath(path))
    return source_to_code(self, data, path, _optimize=_optimize)
external.SourceLoader.source_to_code = counted
"""

PACKAGES_DIR = ".python_packages/lib/site-packages"
"""Where a remote build installs a function app's dependencies, and where the Python worker looks for them."""

# The value deploy.sh gives the app setting SOURCE_DATE_EPOCH (any value makes py_compile check bytecode by hash).
SOURCE_DATE_EPOCH = re.search(r"\[SOURCE_DATE_EPOCH\]=(\d+)", (INFRA / "deploy.sh").read_text()).group(1)


def replay_remote_build(app: Path, out: Path, requirements: list[str], settings: Mapping[str, str]) -> None:
    """The two steps of Azure's remote build (Oryx's Python build of a function app) that decide whether the
    dependencies' bytecode stays usable, replayed on ``app`` with the real pip and rsync (Oryx cannot run here).

    As microsoft/Oryx writes them (``src/BuildScriptGenerator/Python/PythonBashBuildSnippet.sh.tpl`` and
    ``BaseBashBuildScript.sh.tpl``): ``pip install --target .python_packages/lib/site-packages`` in the build
    folder, which compiles the dependencies' bytecode, then the copy of the build folder to the output ``out``
    with ``rsync -rcE --links``, which keeps no modification times. ``requirements`` is what pip installs (e.g.
    ``["-r", "requirements.txt"]``). The build's environment is this process's with ``settings`` (the app
    settings) added; without this process's PYTHONDONTWRITEBYTECODE or SOURCE_DATE_EPOCH, which a build
    machine has only if ``settings`` give them. Raises CalledProcessError if either step fails.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "SOURCE_DATE_EPOCH")}
    env.update(settings)
    subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q", "--prefer-binary",
                    *requirements, f"--target={PACKAGES_DIR}", "--upgrade"],
                   cwd=app, env=env, check=True, capture_output=True, text=True, timeout=600)
    # On Azure the rest of the build runs between the two steps; here the copy is made to land in a later
    # second than the install, so the replay does not depend on how fast this machine is.
    time.sleep(1.05 - time.time() % 1)
    subprocess.run(["rsync", "-rcE", "--links", ".", str(out)], cwd=app, check=True, capture_output=True, text=True,
                   timeout=600)
