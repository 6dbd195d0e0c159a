"""Secret rejection: scan a write for credentials before anything is stored.

See ``memory_core.secrets.scanner`` for the guarantees and design decisions.

The scanner's names load on first use, not with the package: the detectors import detect-secrets
(about 0.1 s), and ``memory_core.secrets.ruleset`` must be importable without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_core.secrets.scanner import SecretFinding, SecretScanner, rejection_message

__all__ = ["SecretFinding", "SecretScanner", "rejection_message"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from memory_core.secrets import scanner

        return getattr(scanner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
