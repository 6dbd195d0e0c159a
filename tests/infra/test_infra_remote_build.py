"""The dependencies' bytecode after Azure's remote build: used by every new instance, not compiled again.

deploy.sh deploys with ``--build-remote true``: Azure installs requirements.txt with Oryx, which compiles
the dependencies' bytecode and then copies the build to its output without modification times
(``infra_support.replay_remote_build``). Bytecode checked against its source's modification time is
then stale, and on Flex Consumption's read-only mount every new instance compiles those modules again.
The app setting ``SOURCE_DATE_EPOCH`` that deploy.sh sets makes ``py_compile``, which pip and uv both
compile with, check bytecode against the source's hash instead; code built before the setting existed is
deployed, and so built, again once.

Oryx and Azure's build service cannot run here. These tests replay those two steps with the real pip and
the real rsync on a small wheel of their own, in an environment that holds the app settings of a tenant
deployed by deploy.sh into the fake Azure (as Kudu's build does), then import from the output in new
interpreters that write no bytecode, as a read-only mount would. Whether Flex Consumption's build passes
app settings to Oryx could not be observed here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.infra.infra_support import COUNTING_COMPILES, PACKAGES_DIR, SOURCE_DATE_EPOCH, replay_remote_build

MODULES = {"coldpkg/__init__.py": "from coldpkg import a, b\n", "coldpkg/a.py": "A = 1\n", "coldpkg/b.py": "B = 2\n"}

# Imports the wheel's package from the built app's .python_packages and prints the modules compiled from source.
IMPORT_DEPENDENCY = COUNTING_COMPILES + r"""
import json
import coldpkg
assert coldpkg.a.A + coldpkg.b.B == 3
print(json.dumps(sorted(os.path.basename(path) for path in compiled)))
"""


def _wheel(folder: Path) -> Path:
    """A pure-Python wheel of the package ``coldpkg`` (three modules), for pip to install without an index."""
    info = "coldpkg-1.0.dist-info"
    files = {**MODULES,
             f"{info}/METADATA": "Metadata-Version: 2.1\nName: coldpkg\nVersion: 1.0\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: memory-core tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},"
              f"{len(text.encode())}" for name, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    wheel = folder / "coldpkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return wheel


def compiled_after_remote_build(tmp_path: Path, app_settings: dict[str, str]) -> list[str]:
    """The wheel's modules a new instance compiles after a replayed remote build whose environment holds
    ``app_settings``."""
    build, out = tmp_path / "build", tmp_path / "out"
    build.mkdir()
    (build / "requirements.txt").write_text("coldpkg==1.0\n")
    replay_remote_build(build, out, ["--no-index", "--find-links", str(_wheel(tmp_path)), "-r", "requirements.txt"],
                        app_settings)
    assert sorted(p.name for p in (out / PACKAGES_DIR / "coldpkg" / "__pycache__").iterdir()) == sorted(
        f"{Path(m).stem}.{sys.implementation.cache_tag}.pyc" for m in MODULES), "pip compiled no bytecode"
    run = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(out / PACKAGES_DIR)}
    done = subprocess.run([sys.executable, "-S", "-c", IMPORT_DEPENDENCY], cwd=out, env=run, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_deploy_sets_source_date_epoch_before_the_code_is_built(deployed_twice) -> None:
    """The setting is on the app, and in place before the first zip deploy starts the remote build."""
    azure = deployed_twice["azure"]
    assert azure.settings()["SOURCE_DATE_EPOCH"] == SOURCE_DATE_EPOCH
    calls = deployed_twice["first_calls"]
    setting = [i for i in azure.find("functionapp", "config", "appsettings", "set", calls=calls)
               if any(a.startswith("SOURCE_DATE_EPOCH=") for a in calls[i])]
    deploys = azure.find("functionapp", "deployment", "source", "config-zip", calls=calls)
    assert setting and deploys and setting[0] < deploys[0]


def test_with_the_apps_settings_the_remote_builds_bytecode_is_used(tmp_path: Path, deployed_twice) -> None:
    """Built in an environment that holds the app's settings, the dependencies' bytecode survives the copy
    to the build's output: a new instance compiles none of their modules."""
    assert compiled_after_remote_build(tmp_path, deployed_twice["azure"].settings()) == []


def test_without_the_setting_every_instance_compiles_the_dependencies(tmp_path: Path, deployed_twice) -> None:
    """What the setting prevents: without it, the bytecode pip compiled is stale once copied, and a new
    instance compiles every module of the dependency (which also shows the probe sees compiles)."""
    settings = {k: v for k, v in deployed_twice["azure"].settings().items() if k != "SOURCE_DATE_EPOCH"}
    assert compiled_after_remote_build(tmp_path, settings) == ["__init__.py", "a.py", "b.py"]


def _deployed_before_the_setting(azure) -> int:
    """Makes ``azure``'s app look deployed by a deploy.sh that did not set SOURCE_DATE_EPOCH; its deployments."""
    state = azure.state()
    app = state["apps"]["rg-memory-acme/func-memory-acme"]
    del app["settings"]["SOURCE_DATE_EPOCH"]
    azure.save_state(state)
    return app["deployments"]


def test_code_built_before_the_setting_is_built_again_once(deployed) -> None:
    """A tenant whose code was built before deploy.sh set SOURCE_DATE_EPOCH: the next run sets it and then
    deploys the unchanged package again, so the remote build compiles the dependencies anew; the run after
    that deploys nothing."""
    azure = deployed
    deployments = _deployed_before_the_setting(azure)
    azure.deploy()
    assert azure.app()["deployments"] == deployments + 1
    assert azure.settings()["SOURCE_DATE_EPOCH"] == SOURCE_DATE_EPOCH
    assert azure.settings()["MEMORY_PACKAGE_SHA256"] == azure.app()["package_sha256"]
    azure.reset_log()
    azure.deploy()
    assert not azure.find("functionapp", "deployment", "source", "config-zip")


def test_a_run_that_sets_the_setting_without_code_leaves_the_build_to_the_next(deployed) -> None:
    """With --no-code (as with a zip deploy that fails), the setting is set and the old build's hash
    forgotten, so the next run that deploys code builds it again rather than keeping the stale build."""
    azure = deployed
    deployments = _deployed_before_the_setting(azure)
    azure.deploy("--no-code")
    assert azure.settings()["SOURCE_DATE_EPOCH"] == SOURCE_DATE_EPOCH
    assert "MEMORY_PACKAGE_SHA256" not in azure.settings()
    azure.deploy()
    assert azure.app()["deployments"] == deployments + 1
