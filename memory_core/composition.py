"""The composition root: builds the service and its adapters from settings, once per process.

Entry points call ``runtime()``; nothing is built at import time, so importing
``function_app`` neither reads the environment nor opens a connection.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore
from memory_core.edge.names import AppNames
from memory_core.identity import Authenticator, build_authenticator

if TYPE_CHECKING:  # pydantic-settings loads on the first request, not at import (cold start)
    from memory_core.settings import Settings


@dataclass(frozen=True)
class Runtime:
    """Everything an entry point needs, built once per process."""

    settings: Settings
    store: MemoryStore
    service: MemoryService
    auth: Authenticator
    names: AppNames
    """The host names the edge accepts in Host and Origin."""


_lock = threading.Lock()
_runtime: Runtime | None = None


def build_store(settings: Settings) -> MemoryStore:
    """The store that settings select. The Cosmos adapter is imported only when chosen."""
    if settings.memory_store == "cosmos":
        from memory_core.adapters.cosmos_store import CosmosMemoryStore

        return CosmosMemoryStore.from_settings(settings)
    from memory_core.adapters.sqlite_store import SqliteMemoryStore

    return SqliteMemoryStore(settings.memory_sqlite_path)


def build_runtime(settings: Settings) -> Runtime:
    from memory_core.secrets import SecretScanner

    auth = build_authenticator(settings)  # before the store: a refused identity setting opens nothing
    store = build_store(settings)
    return Runtime(
        settings=settings,
        store=store,
        service=MemoryService(
            store,
            max_write_bytes=settings.memory_max_write_bytes,
            deletion_mode=DeletionMode(settings.memory_deletion_mode),
            scanner=SecretScanner(),
            default_sharing=SharingPolicy(settings.memory_sharing_default_policy),
            allow_sharing_override=settings.memory_sharing_allow_override,
        ),
        auth=auth,
        names=AppNames.from_settings(settings),
    )


def runtime() -> Runtime:
    """The process-wide runtime, built on first use from the environment."""
    global _runtime
    if _runtime is None:
        with _lock:
            if _runtime is None:
                from memory_core.settings import load_settings

                _runtime = build_runtime(load_settings())
    return _runtime


def reset_runtime() -> None:
    """Close and forget the runtime (tests and the local host's shutdown)."""
    global _runtime
    with _lock:
        if _runtime is not None:
            _runtime.store.close()
        _runtime = None
