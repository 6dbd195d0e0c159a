"""The composition root: builds the service, its adapters and the MCP endpoint, once per process.

Entry points call ``runtime()`` (and the MCP function ``mcp_endpoint()``);
nothing is built at import time, so importing ``function_app`` neither reads
the environment nor opens a connection. This module holds the process's only
state: the runtime, the MCP endpoint, the count of worker-thread calls abandoned at a time bound
(``abandoned_calls``), and where this process is reached (the address `serve` listens on, or
stdio under `mcp`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import DeletionMode
from memory_core.edge.names import AppNames
from memory_core.identity import Authenticator, build_authenticator

if TYPE_CHECKING:  # pydantic-settings, the MCP SDK and the service's read machinery load on first use (cold start)
    from memory_core.domain.service import MemoryService
    from memory_core.mcp.backend import MemoryBackend
    from memory_core.mcp.stalled import AbandonedCalls
    from memory_core.mcp.transport import FunctionsMcpEndpoint
    from memory_core.secrets import SecretFinding, SecretScanner
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


@dataclass
class _Process:
    """What this process has built, and where `serve` said it listens."""

    listen_address: str | None = None
    stdio: bool = False
    runtime: Runtime | None = None
    mcp: FunctionsMcpEndpoint | None = None
    abandoned: AbandonedCalls | None = None


_lock = threading.Lock()
_process = _Process()


class ScannerOnFirstScan:
    """The process's ``SecretScanner``, built by the first scan (the first write), not by the first request.

    Its detectors load detect-secrets and, through it, requests: about 0.1 s that an instance
    serving only reads never needs (cold start, docs/performance.md). Every scan scans as the
    scanner does; concurrent first scans build it once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scanner: SecretScanner | None = None

    @property
    def ruleset(self) -> str:
        """The scanner's ruleset, named without building it (``memory_core.secrets.ruleset``)."""
        from memory_core.secrets.ruleset import ruleset

        return ruleset()

    def scan(self, text: str) -> Sequence[SecretFinding]:
        scanner = self._scanner
        if scanner is None:
            with self._lock:
                if self._scanner is None:
                    from memory_core.secrets import SecretScanner

                    self._scanner = SecretScanner()
                scanner = self._scanner
        return scanner.scan(text)


def build_store(settings: Settings) -> MemoryStore:
    """The store that settings select. The Cosmos adapter is imported only when chosen."""
    if settings.memory_store == "cosmos":
        from memory_core.adapters.cosmos_store import CosmosMemoryStore

        return CosmosMemoryStore.from_settings(settings)
    from memory_core.adapters.sqlite_store import SqliteMemoryStore
    from memory_core.settings import sqlite_path

    return SqliteMemoryStore(sqlite_path(settings, stdio=False))


def build_runtime(settings: Settings, *, listen_address: str | None = None, stdio: bool = False) -> Runtime:
    """Everything from ``settings``. ``listen_address``: where `serve` listens (local mode needs loopback);
    ``stdio``: this process serves MCP over stdio (`python -m memory_core mcp`, local mode accepted). The runtime's
    settings name the SQLite file used (``settings.sqlite_path``: unset, stdio's is the user's own)."""
    from memory_core.domain.service import MemoryService
    from memory_core.settings import sqlite_path

    if settings.memory_store == "sqlite" and not settings.memory_sqlite_path:
        settings = settings.model_copy(update={"memory_sqlite_path": sqlite_path(settings, stdio=stdio)})
    # before the store: a refused identity setting opens nothing
    auth = build_authenticator(settings, listen_address=listen_address, stdio=stdio)
    store = build_store(settings)
    return Runtime(
        settings=settings,
        store=store,
        service=MemoryService(
            store,
            max_write_bytes=settings.memory_max_write_bytes,
            deletion_mode=DeletionMode(settings.memory_deletion_mode),
            scanner=ScannerOnFirstScan(),
            default_sharing=SharingPolicy(settings.memory_sharing_default_policy),
            allow_sharing_override=settings.memory_sharing_allow_override,
            audit_retention=_days(settings.memory_audit_retention_days),
            finished_deletion_retention=_days(settings.memory_deletion_retention_days),
            read_cache_bytes=settings.memory_read_cache_mb * 1024 * 1024,
        ),
        auth=auth,
        names=AppNames.from_settings(settings),
    )


def build_mcp_backend(rt: Runtime, *, one_client: bool = False) -> MemoryBackend:
    """Where the MCP tools read and write: a remote CoreAPI (MEMORY_COREAPI_BASE_URL) or this process's service.

    ``one_client``: the process serves a single client (stdio); on the embedded store its
    calls then run on the event loop, without a thread hop (``InProcessBackend``). Either backend counts the
    calls it abandons at a time bound in the process's count (``abandoned_calls``).
    """
    from memory_core.mcp.backend import CoreApiBackend, InProcessBackend

    if rt.settings.memory_coreapi_base_url:
        return CoreApiBackend.from_settings(rt.settings, abandoned=abandoned_calls())
    return InProcessBackend(rt.service, offload=not (one_client and rt.settings.memory_store == "sqlite"),
                            abandoned=abandoned_calls())


def declare_listen_address(host: str | None) -> None:
    """Record the address this process serves HTTP on (`python -m memory_core serve`, before the runtime)."""
    with _lock:
        _process.listen_address = host


def declare_stdio() -> None:
    """Record that this process serves MCP over its own stdin and stdout (`python -m memory_core mcp`)."""
    with _lock:
        _process.stdio = True


def _days(days: int | None) -> timedelta | None:
    return timedelta(days=days) if days is not None else None


def runtime() -> Runtime:
    """The process-wide runtime, built on first use from the environment."""
    built = _process.runtime
    if built is None:
        with _lock:
            if _process.runtime is None:
                from memory_core.settings import load_settings

                _process.runtime = build_runtime(
                    load_settings(), listen_address=_process.listen_address, stdio=_process.stdio
                )
            built = _process.runtime
    return built


def mcp_endpoint() -> FunctionsMcpEndpoint:
    """The process-wide MCP endpoint over ``runtime()``; its app is built on the first MCP request. Its front and its
    backend (``build_mcp_backend``) share the process's count of abandoned calls (``abandoned_calls``)."""
    endpoint = _process.mcp
    if endpoint is None:
        abandoned = abandoned_calls()  # before the lock: it takes the lock itself on first use
        with _lock:
            if _process.mcp is None:
                from memory_core.mcp.transport import FunctionsMcpEndpoint

                _process.mcp = FunctionsMcpEndpoint(runtime, build_mcp_backend, abandoned=abandoned)
            endpoint = _process.mcp
    return endpoint


def abandoned_calls() -> AbandonedCalls:
    """The process's count of worker-thread calls abandoned at a time bound and still running, built on first use.

    This root hands it to the MCP backends it builds (``build_mcp_backend``) and to the MCP endpoint's front
    (``mcp_endpoint``), so the bound on abandoned threads (``memory_core.mcp.stalled``) is the process's; one built
    without a count (a test) keeps its own. In a stdio process (``declare_stdio`` first) a call whose share is full
    waits in its line for a place (``AbandonedCalls.share_line``) instead of being refused. It outlives
    ``reset_runtime``: the threads it counts run on after their runtime is forgotten.
    """
    counted = _process.abandoned
    if counted is None:
        with _lock:
            if _process.abandoned is None:
                from memory_core.mcp.stalled import AbandonedCalls

                if _process.stdio:
                    from memory_core.mcp.stdio_front import MAX_REQUESTS_IN_FLIGHT

                    # One client, the process's only user: its calls past its share wait for a place (the front
                    # admits no more than MAX_REQUESTS_IN_FLIGHT, so none is refused for a full line).
                    _process.abandoned = AbandonedCalls(share_line=MAX_REQUESTS_IN_FLIGHT)
                else:
                    _process.abandoned = AbandonedCalls()
            counted = _process.abandoned
    return counted


def is_built() -> bool:
    """Whether anything was built yet (the runtime or the MCP app)."""
    return _process.runtime is not None or (_process.mcp is not None and _process.mcp.is_built)


def reset_runtime() -> None:
    """Close and forget the runtime (tests and the local host's shutdown)."""
    with _lock:
        if _process.runtime is not None:
            _process.runtime.store.close()
        _process.runtime = None
