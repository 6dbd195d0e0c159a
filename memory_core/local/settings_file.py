"""local.settings.json, read the way Azure Functions Core Tools read it.

"Values" become environment variables; a variable already set in the
environment wins. Without local.settings.json, local.settings.sample.json is used.
"""

from __future__ import annotations

import json
import os
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

from memory_core.domain.errors import ConfigurationError

SAMPLE_FILE = "local.settings.sample.json"
LOCAL_FILE = "local.settings.json"


@dataclass(frozen=True)
class LocalSettings:
    path: Path | None
    values: dict[str, str]
    sample_keys: frozenset[str]


def _values(path: Path) -> dict[str, str]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigurationError(f"{path} is not readable JSON: {e}") from None
    values = document.get("Values", {}) if isinstance(document, dict) else {}
    if not isinstance(values, dict):
        raise ConfigurationError(f'{path}: "Values" must be an object')
    return {str(k): str(v) for k, v in values.items()}


def read_local_settings(app_dir: Path) -> LocalSettings:
    """The settings file of ``app_dir`` and the keys its sample ships (never safe to expose)."""
    sample = app_dir / SAMPLE_FILE
    sample_values = _values(sample) if sample.exists() else {}
    sample_keys = frozenset(
        key.strip()
        for name in ("MEMORY_API_KEYS", "MEMORY_OPERATOR_KEYS")
        for key in sample_values.get(name, "").split(",")
        if key.strip()
    )
    local = app_dir / LOCAL_FILE
    if local.exists():
        return LocalSettings(local, _values(local), sample_keys)
    if sample.exists():
        return LocalSettings(sample, sample_values, sample_keys)
    return LocalSettings(None, {}, sample_keys)


def apply_to_environment(settings: LocalSettings, environ: MutableMapping[str, str] | None = None) -> None:
    """Export the file's values; variables already in the environment win."""
    target = os.environ if environ is None else environ
    for name, value in settings.values.items():
        target.setdefault(name, value)
