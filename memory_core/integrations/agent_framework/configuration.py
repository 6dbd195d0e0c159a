"""The provider's settings: the choices it accepts and the error for an unusable combination.

Callers may rely on ``MemoryCoreConfigurationError`` (a ``ValueError``) being the only
error a bad setting raises, from ``MemoryCoreContextProvider(...)``, ``bind_user`` and,
when a run cannot authenticate, inside the hooks (where it is logged, never raised).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

Retrieval = Literal["combined", "search", "auto"]
Persist = Literal["none", "remember", "chat_summary"]
WriteScope = Literal["user", "agent"]
MemType = Literal["procedural", "user-profile", "chat-summary"]
MemoryMode = Literal["on", "off"]

MAX_MEMORY_CHARS = 10_000_000  # the service's largest maxChars


class MemoryCoreConfigurationError(ValueError):
    """The provider cannot authenticate a call: no usable credential or user identity."""


def check_choice(name: str, value: str, choices: Any) -> None:
    """Raise ``MemoryCoreConfigurationError`` unless ``value`` is one of the ``Literal`` ``choices``."""
    allowed = get_args(choices)
    if value not in allowed:
        raise MemoryCoreConfigurationError(f"{name} must be one of {', '.join(map(repr, allowed))}")


def checked_identity(identity: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of an ``X-USER-IDENTITY`` object; raises ``MemoryCoreConfigurationError`` without a ``upn``."""
    upn = identity.get("upn")
    if not isinstance(upn, str) or not upn.strip():
        raise MemoryCoreConfigurationError("a user identity needs a non-empty 'upn'")
    return dict(identity)
