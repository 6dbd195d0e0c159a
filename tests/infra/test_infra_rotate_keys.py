"""infra/rotate-keys.sh against a fake az.

The fake az (tests/infra/fake_az.py) stands in for Azure's control plane, which
cannot run here: it records every invocation and answers as az would.
"""

from __future__ import annotations

import json
import re

from tests.infra.infra_support import command_words, is_changing

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _rotate(azure, step, key="api", check=True):
    return azure.run("rotate-keys.sh", "--tenant", "acme", "--key", key, "--step", step, check=check)


def test_add_keeps_the_old_key_next_to_the_new(deployed):
    """The add step leaves old and new key both accepted and prints only the new key on stdout."""
    old = deployed.settings()["MEMORY_API_KEYS"]
    proc = _rotate(deployed, "add")
    new = proc.stdout.strip()
    assert HEX64.match(new) and new != old
    assert deployed.settings()["MEMORY_API_KEYS"].split(",") == [old, new]


def test_remove_old_leaves_only_the_new_key(deployed):
    """After remove-old only the key from the add step remains, and the rotation marker is gone."""
    new = _rotate(deployed, "add").stdout.strip()
    _rotate(deployed, "remove-old")
    settings = deployed.settings()
    assert settings["MEMORY_API_KEYS"] == new
    assert "INFRA_ROTATION_MEMORY_API_KEYS" not in settings


def test_rotating_one_setting_leaves_the_other(deployed):
    """Rotating the operator keys does not touch MEMORY_API_KEYS."""
    api = deployed.settings()["MEMORY_API_KEYS"]
    new = _rotate(deployed, "add", key="operator").stdout.strip()
    _rotate(deployed, "remove-old", key="operator")
    assert deployed.settings()["MEMORY_OPERATOR_KEYS"] == new
    assert deployed.settings()["MEMORY_API_KEYS"] == api


def test_remove_old_without_add_fails(deployed):
    """remove-old with no rotation in progress fails and changes nothing."""
    proc = _rotate(deployed, "remove-old", check=False)
    assert proc.returncode != 0 and "no rotation" in proc.stderr
    assert not [c for c in deployed.calls() if is_changing(c)]


def test_second_add_before_remove_fails(deployed):
    """A second add while a rotation is in progress is refused instead of piling up keys."""
    _rotate(deployed, "add")
    proc = _rotate(deployed, "add", check=False)
    assert proc.returncode != 0 and "already in progress" in proc.stderr
    assert len(deployed.settings()["MEMORY_API_KEYS"].split(",")) == 2


def test_keys_never_on_a_command_line(deployed):
    """Neither the old nor the new key appears in any az argv; values travel in @files."""
    old = deployed.settings()["MEMORY_API_KEYS"]
    new = _rotate(deployed, "add").stdout.strip()
    _rotate(deployed, "remove-old")
    argv_text = json.dumps(deployed.calls())
    assert old not in argv_text and new not in argv_text
    sets = [c for c in deployed.calls() if command_words(c) == ["functionapp", "config", "appsettings", "set"]]
    assert sets and all(c[c.index("--settings") + 1].startswith("@") for c in sets)


def test_status_shows_fingerprints_not_keys(deployed):
    """status reports the number of keys and their fingerprints, never a key."""
    key = deployed.settings()["MEMORY_API_KEYS"]
    proc = _rotate(deployed, "status")
    assert "1 key(s)" in proc.stdout and key not in proc.stdout
    assert not [c for c in deployed.calls() if is_changing(c)]


def test_rotate_what_if_runs_nothing(deployed):
    """rotate --what-if prints the az commands and calls az not once."""
    proc = deployed.run("rotate-keys.sh", "--tenant", "acme", "--key", "api", "--step", "add", "--what-if")
    assert "az functionapp config appsettings set" in proc.stdout
    assert deployed.calls() == []
