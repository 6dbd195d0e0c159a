"""One typed client of the CoreAPI over HTTP.

The MCP server's remote backend (``mcp/backend.py``), the Agent Framework
provider (``integrations/agent_framework/``) and the operator command line
(``operator_cli.py``) all call the CoreAPI through ``CoreApiClient``. Every
error answer is raised as the domain's error by ``memory_core.client_errors``
(``error_from_response``, the one place that happens), and an answer that never
arrived as ``CoreApiUnreachable``.

The client sends whatever credential headers the caller gives it; it never
invents an identity.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from memory_core.client_errors import CoreApiFailure, CoreApiUnreachable, error_from_response
from memory_core.domain.errors import ConfigurationError, MemoryCoreError
from memory_core.domain.idempotency import IDEMPOTENCY_KEY_HEADER
from memory_core.wire.custody import (
    AgentSettingsAuditResponse,
    AgentSettingsListResponse,
    AuditResponse,
    ForgottenResponse,
    LegacyImportAuditResponse,
    PendingDeletionResponse,
    SearchResponse,
)
from memory_core.wire.deletions import DeletionListResponse, DeletionRequestModel, DismissedRequestModel, SweepResponse
from memory_core.wire.hidden_text import HiddenTextScanResponse
from memory_core.wire.memory import MemoryResponse
from memory_core.wire.memory_files import MemoryFileResponse
from memory_core.wire.orphan_holds import OrphanHoldsResponse, ReleasedHoldModel

log = logging.getLogger("memory_core.client")

M = TypeVar("M", bound=BaseModel)

DEFAULT_TIMEOUT_SECONDS = 30.0


def new_idempotency_key() -> str:
    """A fresh ``Idempotency-Key`` for one logical write (a random UUID): reused only by that write's retries."""
    return str(uuid.uuid4())


def idempotency_key_of(error: MemoryCoreError) -> str | None:
    """The ``Idempotency-Key`` a failed ``CoreApiClient.append`` sent: send the append again with it."""
    key = getattr(error, "idempotency_key", None)
    return key if isinstance(key, str) else None


def parsed(response: httpx.Response, model: type[M]) -> M:
    """``response``'s body as ``model``; ``CoreApiFailure`` when it is not one."""
    try:
        return model.model_validate(response.json())
    except ValueError:  # not JSON, or not the model (pydantic's ValidationError is a ValueError)
        raise CoreApiFailure(
            f"the CoreAPI answered HTTP {response.status_code} with a body that is not a {model.__name__}"
        ) from None


class CoreApiClient:
    """The CoreAPI at ``base_url`` (what ``/instances/...`` hangs off, e.g. ``https://app/api``), over one
    pooled HTTP client (``http``, when given, is the caller's and is not closed here).

    Every method takes the credential headers to send and raises the domain's
    errors: ``error_from_response`` for an error answer, ``CoreApiUnreachable``
    when no answer arrived.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        if not base_url.lower().startswith(("http://", "https://")):
            raise ConfigurationError("invalid configuration: the CoreAPI base URL must be an http(s) URL")
        self.base_url = base_url.rstrip("/")
        self.timeout_seconds = timeout_seconds
        self._owns_http = http is None
        self._http = http or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_seconds, connect=min(10.0, timeout_seconds)), follow_redirects=False
        )

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    # -- the one request path ------------------------------------------------------

    async def send(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        """The 2xx answer to ``method`` ``path`` (under ``base_url``); any other answer raised as its domain error.

        ``timeout`` (default: the client's ``timeout_seconds``) bounds the whole call, the wait for a pooled
        connection and the body included: httpx's own timeouts are per read, so an answer that trickles in
        would otherwise never end. Past it the call raises ``CoreApiUnreachable`` caused by ``TimeoutError``.
        """
        url = self.base_url + path
        extra: dict[str, Any] = {"timeout": timeout} if timeout is not None else {}
        try:
            async with asyncio.timeout(timeout if timeout is not None else self.timeout_seconds):
                response = await self._http.request(method, url, params=params, json=json, headers=dict(headers),
                                                    **extra)
        except (httpx.TimeoutException, TimeoutError) as error:
            log.warning("CoreAPI %s %s timed out: %r", method, path, error)
            raise CoreApiUnreachable("the CoreAPI did not answer in time; retry later") from error
        except httpx.HTTPError as error:
            log.warning("CoreAPI %s %s failed: %r", method, path, error)
            raise CoreApiUnreachable("the CoreAPI cannot be reached; retry later") from error
        if not response.is_success:
            raise error_from_response(response)
        return response

    # -- memory ---------------------------------------------------------------------

    @staticmethod
    def memory_path(instance_id: str, suffix: str = "") -> str:
        return f"/instances/{quote(instance_id, safe='')}/memory{suffix}"

    async def get_memory(
        self, instance_id: str, headers: Mapping[str, str], params: Mapping[str, str]
    ) -> MemoryResponse:
        """GET memory with ``params`` (scope, agentObjectId, agentName, memorySharing)."""
        return parsed(await self.send("GET", self.memory_path(instance_id), headers, params=params), MemoryResponse)

    async def append(
        self, instance_id: str, headers: Mapping[str, str], body: Mapping[str, Any], *,
        idempotency_key: str | None = None,
    ) -> MemoryResponse:
        """POST memory/append with an ``Idempotency-Key``: ``idempotency_key``, or a fresh one for a new write.

        The client does not retry. An append that fails (no answer in time, a 503) may have been stored: its
        error carries the key sent as ``idempotency_key`` (``idempotency_key_of``), and the same append sent
        again with it is stored at most once, answering the same entry id (docs/architecture.md)."""
        key = idempotency_key or new_idempotency_key()
        try:
            response = await self.send("POST", self.memory_path(instance_id, "/append"),
                                       {**headers, IDEMPOTENCY_KEY_HEADER: key}, json=dict(body))
        except MemoryCoreError as error:
            error.idempotency_key = key  # type: ignore[attr-defined]
            raise
        return parsed(response, MemoryResponse)

    async def clear(
        self, instance_id: str, headers: Mapping[str, str], body: Mapping[str, Any]
    ) -> MemoryResponse | PendingDeletionResponse:
        """The emptied scope (200), or the pending deletion request (202, under operator approval)."""
        response = await self.send("POST", self.memory_path(instance_id, "/clear"), headers, json=dict(body))
        if response.status_code == 202:
            return parsed(response, PendingDeletionResponse)
        return parsed(response, MemoryResponse)

    async def search(self, instance_id: str, headers: Mapping[str, str], body: Mapping[str, Any]) -> SearchResponse:
        """POST memory/search with ``body`` (q, scope, agentObjectId, tags, limit, memorySharing: a SearchBody).

        Sent as a body, never as query parameters: the words stay out of the URL, which httpx logs at INFO and
        proxies and request telemetry record."""
        response = await self.send("POST", self.memory_path(instance_id, "/search"), headers, json=dict(body))
        return parsed(response, SearchResponse)

    async def forget(
        self, instance_id: str, headers: Mapping[str, str], entry_id: str
    ) -> PendingDeletionResponse | ForgottenResponse:
        """The pending deletion request (202), or the erased entry (200, immediate deletion)."""
        path = self.memory_path(instance_id, f"/entries/{quote(entry_id, safe='')}")
        response = await self.send("DELETE", path, headers)
        if response.status_code == 202:
            return parsed(response, PendingDeletionResponse)
        return parsed(response, ForgottenResponse)

    async def memory_command(
        self, instance_id: str, headers: Mapping[str, str], command: Mapping[str, Any], params: Mapping[str, str]
    ) -> MemoryFileResponse:
        """One memory-tool command (view, create, str_replace, ...) on the /memories file view."""
        path = self.memory_path(instance_id, f"/files/{quote(str(command['command']), safe='')}")
        response = await self.send("POST", path, headers, params=params, json=dict(command))
        return parsed(response, MemoryFileResponse)

    # -- operator -------------------------------------------------------------------

    @staticmethod
    def operator_path(instance_id: str, suffix: str) -> str:
        return f"/instances/{quote(instance_id, safe='')}/operator{suffix}"

    async def list_deletions(
        self, instance_id: str, headers: Mapping[str, str], status: str | None = None, continuation: str | None = None
    ) -> DeletionListResponse:
        """One page of the instance's deletion requests (with ``status``), after ``continuation``."""
        params = {**({"status": status} if status else {}), **_after(continuation)}
        response = await self.send("GET", self.operator_path(instance_id, "/deletions"), headers, params=params)
        return parsed(response, DeletionListResponse)

    async def approve(self, instance_id: str, headers: Mapping[str, str], request_id: str) -> DeletionRequestModel:
        path = self.operator_path(instance_id, f"/deletions/{quote(request_id, safe='')}/approve")
        return parsed(await self.send("POST", path, headers), DeletionRequestModel)

    async def reject(
        self, instance_id: str, headers: Mapping[str, str], request_id: str, reason: str
    ) -> DeletionRequestModel:
        path = self.operator_path(instance_id, f"/deletions/{quote(request_id, safe='')}/reject")
        return parsed(await self.send("POST", path, headers, json={"reason": reason}), DeletionRequestModel)

    async def dismiss(
        self, instance_id: str, headers: Mapping[str, str], request_id: str, *, force: bool = False,
    ) -> DismissedRequestModel:
        """Dismiss a stored deletion request this release cannot read (its record erased; 409 ``readable_request``
        if it reads it, ``holds_standing`` while holds it filed stand and not ``force``)."""
        path = self.operator_path(instance_id, f"/deletions/{quote(request_id, safe='')}/dismiss")
        params = {"force": "true"} if force else None
        return parsed(await self.send("POST", path, headers, params=params), DismissedRequestModel)

    async def orphan_holds(
        self, instance_id: str, headers: Mapping[str, str], continuation: str | None = None,
    ) -> OrphanHoldsResponse:
        """One page of the holds whose deletion request is no longer stored (ids only), after ``continuation``."""
        params = {"continuation": continuation} if continuation else None
        response = await self.send("GET", self.operator_path(instance_id, "/orphan-holds"), headers, params=params)
        return parsed(response, OrphanHoldsResponse)

    async def release_hold(
        self, instance_id: str, headers: Mapping[str, str], upn: str, request_id: str,
    ) -> ReleasedHoldModel:
        """Release the holds a deletion request no longer stored left on ``upn``'s memory (the listing's
        ``release_upn``), the request named in the body, so any stored id is named as listed. 404 ``hold_not_found``
        when none stands (released already), 409 ``hold_not_orphaned`` while the request is stored."""
        response = await self.send("POST", self.operator_path(instance_id, "/orphan-holds/release"), headers,
                                   json={"request_id": request_id, "upn": upn})
        return parsed(response, ReleasedHoldModel)

    async def purge(self, instance_id: str, headers: Mapping[str, str], upn: str) -> PendingDeletionResponse:
        response = await self.send("POST", self.operator_path(instance_id, "/purges"), headers, json={"upn": upn})
        return parsed(response, PendingDeletionResponse)

    async def forget_for(
        self, instance_id: str, headers: Mapping[str, str], upn: str, entry_id: str
    ) -> PendingDeletionResponse:
        """Ask for one of ``upn``'s entries to be forgotten (pending an operator's approval)."""
        response = await self.send("POST", self.operator_path(instance_id, "/forgets"), headers,
                                   json={"upn": upn, "entry_id": entry_id})
        return parsed(response, PendingDeletionResponse)

    async def hidden_text_page(
        self, instance_id: str, headers: Mapping[str, str], *, limit: int | None = None,
        continuation: str | None = None,
    ) -> HiddenTextScanResponse:
        """One page of the scan for stored text no reader sees: ``limit`` memories read whole, after
        ``continuation``."""
        params = {"limit": str(limit)} if limit is not None else {}
        if continuation:
            params["continuation"] = continuation
        response = await self.send("GET", self.operator_path(instance_id, "/hidden-text"), headers, params=params)
        return parsed(response, HiddenTextScanResponse)

    async def sweep(
        self, instance_id: str, headers: Mapping[str, str], *, limit: int | None = None,
        continuation: str | None = None,
    ) -> SweepResponse:
        """Run the sweep: every approved request (no ``limit``), or a step of at most ``limit`` of them after
        ``continuation`` (the previous step's); the answer's ``continuation`` is None once no approved request is
        left to reach. A service older than the bound ignores it, sweeps everything and answers no continuation."""
        params = {"limit": str(limit)} if limit is not None else {}
        response = await self.send("POST", self.operator_path(instance_id, "/sweep"), headers,
                                   params={**params, **_after(continuation)})
        return parsed(response, SweepResponse)

    async def audit(
        self, instance_id: str, headers: Mapping[str, str], upn: str, *, newest_first: bool = False,
        continuation: str | None = None,
    ) -> AuditResponse:
        """One page of one user's trail (the first, or the one after ``continuation``)."""
        params = {"upn": upn, **_order(newest_first), **_after(continuation)}
        response = await self.send("GET", self.operator_path(instance_id, "/audit"), headers, params=params)
        return parsed(response, AuditResponse)

    async def agent_settings_audit(
        self, instance_id: str, headers: Mapping[str, str], agent_object_id: str | None = None, *,
        newest_first: bool = False, continuation: str | None = None,
    ) -> AgentSettingsAuditResponse:
        """One page of the instance's settings trail, or of one agent's part of it."""
        params = {**({"agentObjectId": agent_object_id} if agent_object_id else {}), **_order(newest_first),
                  **_after(continuation)}
        response = await self.send("GET", self.operator_path(instance_id, "/agent-settings/audit"), headers,
                                   params=params)
        return parsed(response, AgentSettingsAuditResponse)

    async def agents(
        self, instance_id: str, headers: Mapping[str, str], continuation: str | None = None
    ) -> AgentSettingsListResponse:
        """One page of the agents with stored settings."""
        response = await self.send("GET", self.operator_path(instance_id, "/agents"), headers,
                                   params=_after(continuation))
        return parsed(response, AgentSettingsListResponse)

    async def legacy_import_audit(
        self, instance_id: str, headers: Mapping[str, str], *, newest_first: bool = False,
        continuation: str | None = None,
    ) -> LegacyImportAuditResponse:
        """One page of the instance's legacy-import trail."""
        response = await self.send("GET", self.operator_path(instance_id, "/legacy-imports/audit"), headers,
                                   params={**_order(newest_first), **_after(continuation)})
        return parsed(response, LegacyImportAuditResponse)


def _order(newest_first: bool) -> dict[str, str]:
    """A trail's ``order`` query parameter (the service's default is oldest first)."""
    return {"order": "newest_first"} if newest_first else {}


def _after(continuation: str | None) -> dict[str, str]:
    """A listing's ``continuation`` query parameter (none for its first page)."""
    return {"continuation": continuation} if continuation else {}
