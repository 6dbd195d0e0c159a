"""No-memory mode (the "temporary chat"): reads show nothing, writes store nothing, and say so."""

from __future__ import annotations

from memory_core.domain.errors import InvalidInput

MEMORY_MODE_HEADER = "x-memory-mode"
OFF_READ_NOTICE = "memory is off for this request (X-MEMORY-MODE: off): no memory was read"
OFF_WRITE_NOTICE = "memory is off for this request (X-MEMORY-MODE: off): nothing was stored"


def memory_is_off(value: str | None) -> bool:
    """True for "off"; False when absent or "on". ``InvalidInput`` for anything else."""
    if value is None:
        return False
    normalized = value.strip().lower()
    if normalized in ("", "on"):
        return False
    if normalized == "off":
        return True
    raise InvalidInput('X-MEMORY-MODE must be "on" or "off"', code="invalid_memory_mode")
