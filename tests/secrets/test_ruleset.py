"""The screen's ruleset: the name that tells a reader whether text screened earlier needs a new scan.

An agent's stored instructions are marked with the ruleset they passed; a reader skips the scan only
while the ruleset is the same (tests/domain/test_agent_settings.py). So the name must change with
anything that can change a scan's findings, and be the same in every process that scans alike.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core.composition import ScannerOnFirstScan
from memory_core.secrets import SecretScanner
from memory_core.secrets import ruleset as ruleset_module
from memory_core.secrets.detectors import CUSTOM_DETECTORS
from memory_core.secrets.ruleset import ruleset

ROOT = Path(__file__).resolve().parents[2]


def test_a_new_process_names_the_same_ruleset_without_loading_the_detectors() -> None:
    """Computed in a fresh interpreter it is this process's, and detect-secrets (about 0.1 s) stays unloaded:
    a process that only reads marked instructions never loads the detectors."""
    script = ("import sys; from memory_core.secrets.ruleset import ruleset; "
              "print(ruleset()); print('detect_secrets' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [ruleset(), "False"]


@pytest.fixture
def package_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the screen's source that the ruleset is computed from instead of the package's own."""
    copy = tmp_path / "secrets"
    shutil.copytree(Path(ruleset_module.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(ruleset_module, "_PACKAGE", copy)
    return copy


def test_an_edit_to_any_detector_changes_the_ruleset(package_copy: Path) -> None:
    """The same source gives the same name; one character changed in a detector's pattern, or a module
    added, gives another."""
    assert ruleset.__wrapped__() == ruleset()
    tokens = package_copy / "tokens.py"
    tokens.write_text(tokens.read_text(encoding="utf-8").replace("{", "{ ", 1), encoding="utf-8")
    edited = ruleset.__wrapped__()
    assert edited != ruleset() and edited.startswith("screen-") and len(edited) == len(ruleset())
    (package_copy / "new_vendor.py").write_text('"""A detector added by an upgrade."""\n', encoding="utf-8")
    assert ruleset.__wrapped__() not in {edited, ruleset()}


def test_another_detect_secrets_version_changes_the_ruleset(monkeypatch: pytest.MonkeyPatch) -> None:
    """The library detectors call detect-secrets' plugins, so its version is part of the name."""
    installed = ruleset_module._detect_secrets_version()
    assert b"1.5.0" in installed
    monkeypatch.setattr(ruleset_module, "_detect_secrets_version", lambda: installed.replace(b"1.5.0", b"1.6.0"))
    assert ruleset.__wrapped__() != ruleset()


def test_every_scanner_of_the_process_names_the_same_ruleset_and_one_with_other_detectors_another() -> None:
    """The service's scanner (before its first scan builds the detectors), a scanner built directly and the
    module agree; a scanner given detectors of its own names them too."""
    lazy = ScannerOnFirstScan()
    assert lazy.ruleset == SecretScanner().ruleset == ruleset()
    fewer = SecretScanner(CUSTOM_DETECTORS)
    assert fewer.ruleset.startswith(ruleset() + "+") and fewer.ruleset != SecretScanner(CUSTOM_DETECTORS[1:]).ruleset
