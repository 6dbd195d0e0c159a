"""Secret rejection: scan a write for credentials before anything is stored.

See ``memory_core.secrets.scanner`` for the guarantees and design decisions.
"""

from memory_core.secrets.scanner import SecretFinding, SecretScanner, rejection_message

__all__ = ["SecretFinding", "SecretScanner", "rejection_message"]
