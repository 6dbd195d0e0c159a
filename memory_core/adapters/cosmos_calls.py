"""The Cosmos DB calls of one store operation, their metering, and the profile cache.

Split from ``cosmos_store`` so the store reads as the MemoryStore Protocol; used by the
store's parts only (``cosmos_account``, ``cosmos_reads``, ``cosmos_kept_reads``, ``cosmos_writes``,
``cosmos_records``, ``cosmos_stamps``, ``cosmos_checkpoints``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from azure.core import MatchConditions
from azure.cosmos import ContainerProxy
from azure.cosmos.exceptions import (
    CosmosAccessConditionFailedError,
    CosmosResourceExistsError,
    CosmosResourceNotFoundError,
)

from memory_core.domain.errors import Conflict
from memory_core.domain.models import MemoryProfile, ProfileKey
from memory_core.domain.records import ABSENT

log = logging.getLogger("memory_core.adapters.cosmos")

_SUB_STATUS_OWNER_MISSING = 1003  # a 404 for the container or database, not the item


# -- round trips and request charges -----------------------------------------


@dataclass(eq=False)  # measurements are told apart by identity, not by their counts
class CallMetrics:
    """HTTP round trips (every attempt, retries included), request units, items read
    (``rows``: items queries answered and point reads found) and response bytes (``bytes_read``:
    the bodies' Content-Length) of a block of calls."""

    round_trips: int = 0
    request_charge: float = 0.0
    rows: int = 0
    bytes_read: int = 0


class Meter:
    """Feeds the client's per-request hooks into the measurements open on this thread."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _open(self) -> list[CallMetrics]:
        stack: list[CallMetrics] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    @contextmanager
    def measure(self) -> Iterator[CallMetrics]:
        metrics = CallMetrics()
        stack = self._open()
        stack.append(metrics)
        try:
            yield metrics
        finally:
            stack.remove(metrics)

    def count_rows(self, rows: int) -> None:
        for metrics in self._open():
            metrics.rows += rows

    def on_request(self, request: Any) -> None:
        for metrics in self._open():
            metrics.round_trips += 1

    def on_response(self, response: Any) -> None:
        http_request, http_response = response.http_request, response.http_response
        headers = http_response.headers
        try:
            charge = float(headers.get("x-ms-request-charge") or 0.0)
            length = int(headers.get("content-length") or 0)
        except ValueError:
            charge, length = 0.0, 0
        for metrics in self._open():
            metrics.request_charge += charge
            metrics.bytes_read += length
        if log.isEnabledFor(logging.DEBUG):
            # The path names the resource type only: item ids carry UPNs.
            parts = [p for p in http_request.url.split("?")[0].split("/")[3:] if p]
            resource = parts[-2] if len(parts) >= 2 and len(parts) % 2 == 0 else (parts[-1] if parts else "account")
            log.debug(
                "cosmos %s %s -> %s: %.2f RU (activity %s)",
                http_request.method, resource, http_response.status_code, charge,
                headers.get("x-ms-activity-id", "-"),
            )


class ProfileCache:
    """Profiles this process knows exist (bounded LRU), so an append needs no profile round trip."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[ProfileKey, MemoryProfile] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: ProfileKey) -> MemoryProfile | None:
        with self._lock:
            profile = self._items.get(key)
            if profile is not None:
                self._items.move_to_end(key)
            return profile

    def put(self, profile: MemoryProfile) -> None:
        with self._lock:
            self._items[profile.key] = profile
            self._items.move_to_end(profile.key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def discard(self, key: ProfileKey) -> None:
        with self._lock:
            self._items.pop(key, None)


# -- one operation's calls -----------------------------------------------------


class Calls:
    """The SDK calls of one store operation, each with the partition key and the time left."""

    def __init__(self, container: ContainerProxy, deadline: float, meter: Meter | None = None) -> None:
        self.container = container
        self._deadline = deadline
        self._meter = meter

    def _timeout(self) -> float:
        # The SDK's own retries (429, connection) stop when this runs out.
        return max(0.5, self._deadline - time.monotonic())

    def time_left(self) -> float:
        """Seconds left of the operation's time budget (negative once it is spent)."""
        return self._deadline - time.monotonic()

    def query(self, sql: str, params: Mapping[str, Any], pk: list[str] | None) -> list[Any]:
        """Every item ``sql`` answers in partition ``pk`` (None: a cross-partition query)."""
        # max_item_count=-1: the service fills each page up to 4 MB, so a scope is one page.
        scope: dict[str, Any] = {"partition_key": pk} if pk is not None else {"enable_cross_partition_query": True}
        items = list(
            self.container.query_items(
                sql,
                parameters=[{"name": n, "value": v} for n, v in params.items()],
                max_item_count=-1,
                timeout=self._timeout(),
                **scope,
            )
        )
        self._count(len(items))
        return items

    def read(self, item_id: str, pk: list[str]) -> dict[str, Any] | None:
        try:
            item = self.container.read_item(item_id, partition_key=pk, timeout=self._timeout())
        except CosmosResourceNotFoundError as e:
            if owner_missing(e):
                raise
            return None
        self._count(1)
        return item

    def _count(self, rows: int) -> None:
        if self._meter is not None:
            self._meter.count_rows(rows)

    def create(self, item: dict[str, Any]) -> dict[str, Any]:
        return self.container.create_item(item, timeout=self._timeout())

    def write(self, item: dict[str, Any], etag: str | None) -> dict[str, Any]:
        """Upsert without an etag; create with ``records.ABSENT`` (one exists: ``Conflict``); replace
        If-Match with another (412, or gone: ``Conflict``)."""
        if etag is None:
            return self.container.upsert_item(item, timeout=self._timeout())
        if etag == ABSENT:
            try:
                return self.create(item)
            except CosmosResourceExistsError as e:
                raise Conflict(f"the stored {item['type']} was created since it was read") from e
        try:
            return self.container.replace_item(
                item["id"], item, etag=etag, match_condition=MatchConditions.IfNotModified, timeout=self._timeout()
            )
        except CosmosAccessConditionFailedError as e:
            raise Conflict(f"the stored {item['type']} changed since it was read") from e
        except CosmosResourceNotFoundError as e:
            if owner_missing(e):
                raise
            raise Conflict(f"the stored {item['type']} no longer exists") from e

    def delete(self, item_id: str, pk: list[str], etag: str | None = None) -> bool:
        """Delete the item (False when it is not there); with ``etag``, If-Match it (412: ``Conflict``)."""
        conditions: dict[str, Any] = {}
        if etag is not None:
            conditions = {"etag": etag, "match_condition": MatchConditions.IfNotModified}
        try:
            self.container.delete_item(item_id, partition_key=pk, timeout=self._timeout(), **conditions)
            return True
        except CosmosAccessConditionFailedError as e:
            raise Conflict("the stored item changed since it was read") from e
        except CosmosResourceNotFoundError as e:
            if owner_missing(e):
                raise
            return False

    def execute_batch(self, operations: Sequence[tuple[Any, ...]], pk: list[str]) -> list[dict[str, Any]]:
        """Run ``operations`` as one transactional batch in partition ``pk`` (all or nothing on Cosmos DB).

        Raises the SDK's ``CosmosBatchOperationError`` (``error_index``, ``status_code``) when one fails.
        """
        return list(self.container.execute_item_batch(operations, partition_key=pk, timeout=self._timeout()))


def owner_missing(error: Any) -> bool:
    """True for a 404 that means the container or database is gone, not the item."""
    return getattr(error, "sub_status", None) == _SUB_STATUS_OWNER_MISSING


OpenOperation = Callable[[str], AbstractContextManager["Calls"]]
"""Opens one named store operation and gives its calls (``CosmosAccount.operation``): the time
budget, error translation and metering of everything done inside it."""


__all__ = ["CallMetrics", "Calls", "Meter", "OpenOperation", "ProfileCache", "owner_missing"]
