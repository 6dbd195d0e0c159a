"""The app package infra/deploy.sh builds (``helpers.py package``), run as Flex Consumption runs it.

Flex Consumption runs an app from its deployment package, mounted read-only, so Python can never
cache the bytecode it compiles: without bytecode in the package, every new instance compiles every
module it imports. These tests build the package from this repository, unzip it, and import the
real app from it in new interpreters that write no bytecode (``PYTHONDONTWRITEBYTECODE``, as a
read-only mount would; Azure's mount itself cannot run here).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.infra.infra_support import COUNTING_COMPILES, REPO, build_package, is_changing

VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}"

# Imports the app and then every module of memory_core (the lazily loaded ones too), and prints the
# app's modules that were compiled from source rather than loaded from bytecode.
IMPORT_EVERYTHING = COUNTING_COMPILES + r"""
import importlib, json, os, pkgutil, sys
sys.path.insert(0, os.getcwd())
import function_app
import memory_core
for module in pkgutil.walk_packages(memory_core.__path__, "memory_core."):
    importlib.import_module(module.name)
print(json.dumps({"functions": len(function_app.app.get_functions()),
                  "compiled": sorted(p for p in compiled if not p.startswith(".."))}))
"""


def unzipped(tmp_path: Path, *python: str) -> Path:
    done = build_package(tmp_path / "app.zip", *python)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(tmp_path / "app.zip") as zf:
        zf.extractall(tmp_path / "app")
    return tmp_path / "app"


def import_everything(app: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "COSMOS_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run([sys.executable, "-c", IMPORT_EVERYTHING], cwd=app, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_app_runs_from_its_package_without_compiling_a_module(tmp_path: Path) -> None:
    """Every module of the app, function_app.py and the lazily loaded ones alike, loads from the
    bytecode the package carries, and the app still registers its functions."""
    ran = import_everything(unzipped(tmp_path, "--python", VERSION))
    assert ran["compiled"] == []
    assert ran["functions"] >= 20


def test_without_bytecode_every_new_process_compiles_the_app(tmp_path: Path) -> None:
    """The package as it was before (no ``--python``): each new process compiles every module it imports."""
    ran = import_everything(unzipped(tmp_path))
    assert "function_app.py" in ran["compiled"]
    assert len([p for p in ran["compiled"] if p.startswith("memory_core")]) > 100


def test_an_edited_module_runs_its_source_not_the_shipped_bytecode(tmp_path: Path) -> None:
    """The bytecode is checked against its source's hash: a file changed after packaging (a hotfix
    on a mounted copy, a bad unzip) runs as it now reads, never as stale bytecode."""
    app = unzipped(tmp_path, "--python", VERSION)
    modes = app / "memory_core" / "domain" / "modes.py"
    modes.write_text(modes.read_text() + "\nEDITED_AFTER_PACKAGING = True\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", "from memory_core.domain import modes; print(modes.EDITED_AFTER_PACKAGING)"],
                          cwd=app, env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "True", done.stderr


def test_the_package_is_the_same_bytes_whatever_the_hash_seed(tmp_path: Path) -> None:
    """Set constants are ordered by string hashes; the bytecode is made with a fixed seed, so the
    package (and MEMORY_PACKAGE_SHA256, which decides whether deploy.sh redeploys) changes only with the code."""
    first = build_package(tmp_path / "a.zip", "--python", VERSION, hash_seed="1")
    second = build_package(tmp_path / "b.zip", "--python", VERSION, hash_seed="2")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert first.stdout == second.stdout == hashlib.sha256((tmp_path / "a.zip").read_bytes()).hexdigest() + "\n"
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()


def test_a_module_that_does_not_compile_stops_the_package(tmp_path: Path) -> None:
    """A syntax error is found before anything is deployed, named by file and line."""
    app = tmp_path / "app"
    (app / "memory_core").mkdir(parents=True)
    for name in ("function_app.py", "host.json", "requirements.txt"):
        (app / name).write_text((REPO / name).read_text())
    (app / "memory_core" / "__init__.py").write_text("")
    (app / "memory_core" / "broken.py").write_text("def broken(:\n    pass\n")
    done = build_package(tmp_path / "app.zip", "--python", VERSION, app_dir=app)
    assert done.returncode == 2
    assert 'memory_core/broken.py", line 1' in done.stderr and "SyntaxError" in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize("version", ["3.99"])
def test_without_that_python_the_package_is_built_without_bytecode(tmp_path: Path, version: str) -> None:
    """No interpreter of the app's version here: the package is still built, with a note that it
    carries no bytecode, and works as packages did before."""
    done = build_package(tmp_path / "app.zip", "--python", version)
    assert done.returncode == 0, done.stderr
    assert f"no Python {version} here" in done.stderr
    with zipfile.ZipFile(tmp_path / "app.zip") as zf:
        names = zf.namelist()
    assert "function_app.py" in names
    assert not [n for n in names if n.endswith(".pyc")]


@pytest.mark.parametrize("entry", ["../outside.txt", "/etc/hostname"])
def test_package_refuses_entries_outside_the_app_folder(azure, entry):
    """A PACKAGE_INCLUDE entry outside the app folder (``../x``, an absolute path) is refused before
    any changing call, instead of being zipped under a name that unzips outside the app."""
    (azure.root / "outside.txt").write_text("not part of the app")
    azure.write_tenant("acme", PACKAGE_INCLUDE=f'"function_app.py host.json requirements.txt {entry}"')
    proc = azure.deploy(check=False)
    assert proc.returncode != 0
    assert "outside the app folder" in proc.stderr
    assert not azure.deployed_zip.exists()
    assert not [c for c in azure.calls() if is_changing(c)]


def test_package_helper_refuses_an_entry_that_leaves_the_app_folder(tmp_path):
    """helpers.py package itself refuses ``../x``, whoever calls it."""
    app = tmp_path / "app"
    app.mkdir()
    for name in ("function_app.py", "host.json", "requirements.txt"):
        (app / name).write_text("")
    (tmp_path / "outside.txt").write_text("secret")
    proc = subprocess.run([sys.executable, "-S", str(REPO / "infra" / "lib" / "helpers.py"), "package", str(app),
                           str(tmp_path / "app.zip"), "function_app.py", "../outside.txt"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "outside the app folder" in proc.stderr
    assert not (tmp_path / "app.zip").exists()
