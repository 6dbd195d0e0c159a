"""shellcheck over every shell script in infra/."""

from __future__ import annotations

import shutil
import subprocess

from tests.infra.infra_support import INFRA

INSTALL_HINT = "shellcheck is not on PATH; install it with: apt-get update && apt-get install -y shellcheck"


def test_shell_scripts_are_shellcheck_clean():
    """Every infra/**/*.sh passes shellcheck (all severities, sourced files followed).
    A missing shellcheck is a failure, not a skip."""
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, INSTALL_HINT
    scripts = sorted(str(p) for p in INFRA.rglob("*.sh"))
    assert len(scripts) >= 4, scripts
    proc = subprocess.run([shellcheck, "--external-sources", "--severity=style", *scripts],
                          capture_output=True, text=True, cwd=INFRA)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_entry_points_are_strict_bash():
    """The entry points run under bash with `set -euo pipefail` and are executable."""
    for name in ("deploy.sh", "teardown.sh", "rotate-keys.sh"):
        path = INFRA / name
        text = path.read_text()
        assert text.startswith("#!/usr/bin/env bash\n"), name
        assert "\nset -euo pipefail\n" in text, name
        assert path.stat().st_mode & 0o111, f"{name} is not executable"
