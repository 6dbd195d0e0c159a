"""Filling a Functions route template ("instances/{instanceId}/memory/entries/{entryId}") to a request path."""

from __future__ import annotations

import re
from collections.abc import Mapping

_PARAMETER = re.compile(r"{(\w+)[^}]*}")


def route_path(template: str, values: Mapping[str, str]) -> str:
    """``/`` and ``template`` with each ``{name}`` or ``{name:constraint}`` replaced by ``values[name]``."""
    return "/" + _PARAMETER.sub(lambda m: values[m.group(1)], template)
