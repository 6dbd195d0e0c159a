"""A store seen without ``ChangeStamps``: the service then loads and renders every read from scratch.

Tests compare a snapshot-answered read against it; benchmarks time it as "before snapshots".
"""

from __future__ import annotations

from typing import Any


class Unstamped:
    """``inner`` with ``partition_stamp`` and ``load_since`` hidden; everything else passes through."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name in ("partition_stamp", "load_since"):
            raise AttributeError(name)
        return getattr(self.inner, name)
