"""The connection of one Cosmos store to its container: made on first use, then every operation's frame.

``CosmosAccount`` makes the store's one ``CosmosClient`` on first use and checks
the container's partition key (the app never creates databases or containers;
a missing or differently keyed container answers ``Unavailable`` with code
``store_not_provisioned``). ``operation`` frames one store operation: its time
budget (``COSMOS_OPERATION_TIMEOUT``, passed to every call as the time left),
the translation of SDK failures into ``memory_core.domain.errors`` (the table in
docs/cosmos.md, "Failures"), its metering and its DEBUG log line. Split from
``cosmos_store`` so the store reads as the MemoryStore Protocol.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from azure.core.exceptions import AzureError, ClientAuthenticationError, ServiceRequestError, ServiceResponseError
from azure.cosmos import ContainerProxy, CosmosClient
from azure.cosmos.exceptions import CosmosClientTimeoutError, CosmosResourceNotFoundError

from memory_core.adapters.cosmos_calls import Calls, Meter
from memory_core.adapters.cosmos_client import new_client
from memory_core.domain.errors import MemoryCoreError, PayloadTooLarge, TimedOut, Unavailable

log = logging.getLogger("memory_core.adapters.cosmos")

SDK_HTTP_LOG = logging.getLogger("memory_core.adapters.cosmos.sdk_http")
"""The logger the SDK's HTTP logging policy writes to (its own, ``azure.cosmos._cosmos_http_logging_policy``,
otherwise): it logs every request and response, URL and headers, at INFO, two records of about 1.5 KB per round
trip. At the Functions host's default level (Information, host.json) each would be a trace sent to Application
Insights, and ``serve`` wrote 76 MB of them while 5,000 entries were appended. WARNING unless a level is set before
the first client is made; ``log`` already has one DEBUG line per request (its RU) and per store operation."""

EXPECTED_PARTITION_KEY = {"paths": ["/instance_id", "/upn"], "kind": "MultiHash", "version": 2}
PROVISION_COMMAND = "infra/deploy.sh --tenant <name>"

_TRANSIENT_STATUS = frozenset({408, 410, 429, 449, 502, 503, 504})
_RETRY_AFTER_UNREACHABLE = 5
_RETRY_AFTER_NOT_PROVISIONED = 60
_RETRY_AFTER_ACCESS_DENIED = 60
_SUB_STATUS_READ_SESSION_NOT_AVAILABLE = 1002


class CosmosAccount:
    """One container of one account, reached through one client made on first use. Thread-safe."""

    def __init__(
        self,
        endpoint: str,
        credential: Any,
        database: str,
        container: str,
        *,
        client_kwargs: Mapping[str, Any],
        operation_timeout: float,
        meter: Meter,
    ) -> None:
        """No network here."""
        self.endpoint = endpoint
        self.database_name = database
        self.container_name = container
        self._credential = credential
        self._client_kwargs = client_kwargs
        self._operation_timeout = operation_timeout
        self._meter = meter
        self._lock = threading.Lock()
        self._client: CosmosClient | None = None
        self._container: ContainerProxy | None = None
        self._closed = False

    def close(self) -> None:
        """Close the client; every later operation raises ``RuntimeError``."""
        with self._lock:
            self._closed = True
            client, self._client, self._container = self._client, None, None
        if client is not None:
            client.close()

    # -- first use: the client and the container check -------------------------

    def _ready(self, deadline: float) -> ContainerProxy:
        container = self._container
        if container is not None:
            return container
        with self._lock:
            if self._closed:
                raise RuntimeError("the Cosmos DB store is closed")
            if self._container is None:
                if self._client is None:
                    if SDK_HTTP_LOG.level == logging.NOTSET:
                        SDK_HTTP_LOG.setLevel(logging.WARNING)
                    self._client = new_client(
                        self.endpoint,
                        self._credential,
                        raw_request_hook=self._meter.on_request,
                        raw_response_hook=self._meter.on_response,
                        logger=SDK_HTTP_LOG,
                        **self._client_kwargs,
                    )
                proxy = self._client.get_database_client(self.database_name).get_container_client(
                    self.container_name
                )
                try:
                    properties = proxy.read(timeout=max(0.5, deadline - time.monotonic()))
                except CosmosResourceNotFoundError:
                    raise self._not_provisioned("does not exist (or its database does not)") from None
                found = properties.get("partitionKey") or {}
                if not _same_partition_key(found):
                    raise self._not_provisioned(
                        f"has the partition key {found.get('paths')} (kind {found.get('kind')},"
                        f" version {found.get('version')})"
                    )
                self._container = proxy
            return self._container

    def _not_provisioned(self, problem: str) -> Unavailable:
        message = (
            f"Cosmos DB container '{self.container_name}' in database '{self.database_name}' of account"
            f" {self.endpoint} {problem}; memory-core needs the hierarchical partition key /instance_id then"
            f" /upn (kind MultiHash, version 2). The app never creates databases or containers;"
            f" create it with: {PROVISION_COMMAND}"
        )
        log.error("%s", message)
        return Unavailable(message, code="store_not_provisioned", retry_after_seconds=_RETRY_AFTER_NOT_PROVISIONED)

    # -- one operation: time budget, error translation, metrics, logging --------

    @contextmanager
    def operation(self, name: str) -> Iterator[Calls]:
        """The calls of one store operation named ``name``; SDK failures leave it as domain errors
        (or, for a bug or broken invariant, as they are)."""
        started = time.perf_counter()
        deadline = time.monotonic() + self._operation_timeout
        with self._meter.measure() as metrics:
            try:
                yield Calls(self._ready(deadline), deadline, self._meter)
            except AzureError as e:
                translated = self._translate(name, e)
                if translated is None:
                    raise
                raise translated from e
            finally:
                log.debug(
                    "cosmos %s: %d round trip(s), %.2f RU, %.1f ms",
                    name, metrics.round_trips, metrics.request_charge, (time.perf_counter() - started) * 1000,
                )

    def _translate(self, operation: str, error: AzureError) -> MemoryCoreError | None:
        """The domain error for a Cosmos failure, or None for one that is a bug (left to the 500 mapping)."""
        status = getattr(error, "status_code", None)
        if isinstance(status, int) and status:
            sub_status = getattr(error, "sub_status", None)
            # 404/1002: a replica behind the session token, still so after the SDK's retries.
            transient = status in _TRANSIENT_STATUS or (
                status == 404 and sub_status == _SUB_STATUS_READ_SESSION_NOT_AVAILABLE
            )
            if status == 404 and not transient:
                # Item-level 404s are handled where they are expected; one that gets
                # here means the container or database went away after the check.
                with self._lock:
                    self._container = None
                return self._not_provisioned("was not found")
            if transient:
                log.warning("cosmos %s: HTTP %s (substatus %s) after the SDK's retries", operation, status, sub_status)
                return Unavailable(
                    f"the memory store is busy or unavailable (Cosmos DB answered {status}); retry later",
                    retry_after_seconds=_retry_after(getattr(error, "headers", None)),
                )
            if status in (401, 403):
                return self._access_denied(operation, f"HTTP {status}, substatus {sub_status}")
            if status == 413:
                return PayloadTooLarge("the write is larger than a Cosmos DB item may be (2 MB)")
            return None
        if isinstance(error, ClientAuthenticationError):
            return self._access_denied(operation, type(error).__name__)
        if isinstance(error, CosmosClientTimeoutError):
            log.warning("cosmos %s: no answer within %.1f s, retries included", operation, self._operation_timeout)
            return TimedOut(
                "the memory store did not answer in time (Cosmos DB slow, throttling or unreachable); retry later",
                retry_after_seconds=_RETRY_AFTER_UNREACHABLE,
            )
        if isinstance(error, (ServiceRequestError, ServiceResponseError)):
            log.warning("cosmos %s: %s: %s", operation, type(error).__name__, error)
            return Unavailable(
                f"the memory store cannot be reached (Cosmos DB account {self.endpoint}); retry later",
                retry_after_seconds=_RETRY_AFTER_UNREACHABLE,
            )
        return None

    def _access_denied(self, operation: str, detail: str) -> Unavailable:
        message = (
            f"Cosmos DB account {self.endpoint} refused the service's credential ({detail}); the app's identity"
            f" needs a data-plane role (Cosmos DB Built-in Data Contributor) on database '{self.database_name}'"
        )
        log.error("cosmos %s: %s", operation, message)
        return Unavailable(message, code="store_access_denied", retry_after_seconds=_RETRY_AFTER_ACCESS_DENIED)


def _same_partition_key(found: Mapping[str, Any]) -> bool:
    return (
        list(found.get("paths") or []) == EXPECTED_PARTITION_KEY["paths"]
        and found.get("kind") == EXPECTED_PARTITION_KEY["kind"]
        and found.get("version") == EXPECTED_PARTITION_KEY["version"]
    )


def _retry_after(headers: Mapping[str, str] | None) -> int:
    """Seconds to wait: the server's x-ms-retry-after-ms when given, rounded up, at least 1."""
    try:
        ms = float((headers or {}).get("x-ms-retry-after-ms") or 0)
    except (TypeError, ValueError):
        ms = 0
    return max(1, math.ceil(ms / 1000)) if ms > 0 else _RETRY_AFTER_UNREACHABLE


__all__ = ["EXPECTED_PARTITION_KEY", "PROVISION_COMMAND", "CosmosAccount"]
