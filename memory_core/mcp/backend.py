"""Where the MCP tools read and write memory.

Two implementations of one small protocol:

- ``InProcessBackend`` calls the ``MemoryService`` of this process (the default);
- ``CoreApiBackend`` calls any CoreAPI with the memory contract over HTTP
  (``MEMORY_COREAPI_BASE_URL``): the seed's Phase 4 shape, where the MCP server
  stores nothing. It calls with the caller's own kind of credential, never a
  weaker one: an Entra caller's token is exchanged on behalf of the user for a
  CoreAPI token (MEMORY_COREAPI_SCOPE; never passed through), a platform
  identity context is forwarded as it is, and key (or local) callers' identity
  goes as X-USER-IDENTITY with ``MEMORY_COREAPI_KEY``.

Both answer what the REST API answers (``MemoryResponse``; for a clear under
operator approval, ``PendingDeletionResponse``) and raise the same domain
errors with the same codes and messages, so a tool's result does not depend on
the backend.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from memory_core.client import DEFAULT_TIMEOUT_SECONDS, CoreApiClient
from memory_core.client_errors import CoreApiFailure
from memory_core.domain.errors import ConfigurationError, Forbidden, Unauthenticated
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import Scope, Share
from memory_core.domain.service import MemoryService, PendingDeletion, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from memory_core.identity import (
    API_KEY_HEADER,
    PLATFORM_IDENTITY_HEADER,
    USER_IDENTITY_HEADER,
    Authentication,
    AuthMode,
)
from memory_core.identity.config import auth_modes
from memory_core.identity.obo import OnBehalfOfExchange
from memory_core.mcp.guidance import AgentGuidance
from memory_core.mcp.stalled import AbandonedCalls, share_of
from memory_core.settings import Settings
from memory_core.wire.custody import PendingDeletionResponse, SearchHitModel, SearchResponse
from memory_core.wire.memory import MemoryResponse
from memory_core.wire.memory_files import MemoryFileResponse

log = logging.getLogger("memory_core.mcp")

T = TypeVar("T")

ClearAnswer = MemoryResponse | PendingDeletionResponse
"""A clear answers the emptied scope, or (under operator approval) the pending deletion request."""


@dataclass(frozen=True, slots=True)
class CallTarget:
    """Whose memory a tool call touches, resolved from trusted headers only.

    ``identity_header`` is the caller's X-USER-IDENTITY value, already verified
    (it parsed to ``caller``); a CoreAPI backend forwards it unchanged for key
    callers. ``authentication`` says how the caller was proved (None: key).
    """

    caller: Caller
    identity_header: str
    instance_id: str
    agent: AgentContext | None = None
    session_id: str | None = None
    operation_id: str | None = None
    authentication: Authentication | None = None

    @property
    def agent_name(self) -> str | None:
        return self.agent.name if self.agent else None

    @property
    def share(self) -> str:
        """The caller's share of the worker threads (``stalled.share_of``): the authenticated user, whatever instance
        the call names."""
        return share_of(self.caller)


class MemoryBackend(Protocol):
    """The three operations the MCP tools need. Failures raise ``MemoryCoreError``."""

    async def get(
        self, target: CallTarget, scope: Scope, sharing: SharingPolicy | None = None, max_chars: int | None = None
    ) -> MemoryResponse:
        """The rendered memory of ``scope`` (empty content when nothing is stored); with ``max_chars``,
        the newest memory that fits, and the budget report (``MemoryService.get_within``)."""
        ...

    async def append(
        self, target: CallTarget, scope: Scope, content_markdown: str, reason: str | None, share: Share = Share.PRIVATE
    ) -> MemoryResponse:
        """Append one entry; answers the profile metadata and the section added."""
        ...

    async def clear(self, target: CallTarget, scope: Scope, *, confirm: bool) -> ClearAnswer:
        """Empty ``scope`` (at once, or hidden pending operator approval); ``InvalidInput`` unless confirmed."""
        ...

    async def search(
        self, target: CallTarget, scope: Scope, query: str, tags: list[str], limit: int,
        sharing: SharingPolicy | None = None,
    ) -> SearchResponse:
        """BM25 search over the visible entries of ``scope``, best first."""
        ...

    async def memory_command(self, target: CallTarget, command: dict[str, Any]) -> MemoryFileResponse:
        """Run one memory_20250818 command over the caller's memory files (see ``MemoryFiles``)."""
        ...

    async def guidance(self, instance_id: str, agent_object_id: str) -> AgentGuidance | None:
        """The operator's settings for this agent, as advice for MCP clients (None when unknown)."""
        ...

    async def aclose(self) -> None:
        """Release connections (process shutdown and tests)."""
        ...


async def _run_here(call: Callable[..., T], *args: Any, share: Any = None) -> T:
    return call(*args)


class InProcessBackend:
    """The service layer of this process. Blocking store calls run in worker threads, unless ``offload`` is False.

    ``offload`` False runs them on the event loop itself: for one client over stdio on
    the embedded store, where a call takes well under a millisecond and the thread
    hop costs about as much as the call (``memory_core.mcp.stdio``). Every other
    caller keeps the threads, so one slow call never holds up the others, and a call still running
    at the caller's time bound is abandoned there (the answer does not wait for it; it finishes on its own).
    ``abandoned`` counts those calls (default: a count of this backend's own; the composition root passes the
    process's, which the MCP front joins too, so the bound is the process's). Each call also holds a place in its
    user's share (``CallTarget.share``) from its start until its thread returns: a user whose calls fill their share
    is refused, others still served.
    """

    def __init__(
        self, service: MemoryService, *, offload: bool = True, abandoned: AbandonedCalls | None = None
    ) -> None:
        self._service = service
        self._abandoned = abandoned if abandoned is not None else AbandonedCalls()
        # Abandoned when the caller's time bound cancels it (McpHttpApp, StdioFront: 30 s). Without abandon_on_cancel
        # anyio waits for the thread, so a store call that stalled (a Cosmos read, each operation bounded by
        # COSMOS_OPERATION_TIMEOUT, up to 600 s) held the answer past the bound. The call runs on to its store's own
        # timeout; a write it makes may still land after the 503, as after any lost answer. Refused (Unavailable)
        # while too many abandoned calls still run (``memory_core.mcp.stalled``): they would pile up without bound.
        self._run: Callable[..., Awaitable[Any]] = self._abandoned.run if offload else _run_here

    async def get(
        self, target: CallTarget, scope: Scope, sharing: SharingPolicy | None = None, max_chars: int | None = None
    ) -> MemoryResponse:
        args = (target.caller, target.instance_id, scope, target.agent)
        read = (functools.partial(self._service.get_within, *args, max_chars, sharing) if max_chars is not None
                else functools.partial(self._service.get, *args, sharing))
        return MemoryResponse.from_view(await self._run(read, share=target.share))

    async def append(
        self, target: CallTarget, scope: Scope, content_markdown: str, reason: str | None, share: Share = Share.PRIVATE
    ) -> MemoryResponse:
        options = WriteOptions(
            reason=reason,
            session_id=target.session_id,
            operation_id=target.operation_id,
            agent_name=target.agent_name,
            share=share,
        )
        view = await self._run(
            functools.partial(
                self._service.append,
                target.caller,
                target.instance_id,
                scope,
                target.agent,
                content_markdown,
                options,
            ),
            share=target.share,
        )
        return MemoryResponse.from_view(view)

    async def clear(self, target: CallTarget, scope: Scope, *, confirm: bool) -> ClearAnswer:
        answer = await self._run(
            functools.partial(
                self._service.clear, target.caller, target.instance_id, scope, target.agent, confirm=confirm
            ),
            share=target.share,
        )
        if isinstance(answer, PendingDeletion):
            return PendingDeletionResponse.from_pending(answer)
        return MemoryResponse.from_view(answer)

    async def search(
        self, target: CallTarget, scope: Scope, query: str, tags: list[str], limit: int,
        sharing: SharingPolicy | None = None,
    ) -> SearchResponse:
        hits = await self._run(
            functools.partial(
                self._service.search, target.caller, target.instance_id, scope, target.agent, query, tags, limit,
                sharing,
            ),
            share=target.share,
        )
        return SearchResponse(query=query, hits=[SearchHitModel.from_hit(h) for h in hits])

    async def memory_command(self, target: CallTarget, command: dict[str, Any]) -> MemoryFileResponse:
        # The user's writes take turns in this process, as over REST (``MemoryFiles`` queues them on the service's
        # ``file_writers`` by default): racing, each lost commit read the files again.
        files = MemoryFiles(self._service)
        answer = await self._run(
            functools.partial(
                files.execute, target.caller, target.instance_id, target.agent, command,
                session_id=target.session_id, operation_id=target.operation_id,
            ),
            share=target.share,
        )
        if answer.pending_request_ids:
            return MemoryFileResponse(
                result=answer.text, status="pending_approval", request_ids=list(answer.pending_request_ids)
            )
        return MemoryFileResponse(result=answer.text)

    async def guidance(self, instance_id: str, agent_object_id: str) -> AgentGuidance | None:
        # Always in a thread the caller's time bound may abandon (``guidance.guidance_within``), stdio included: a
        # settings read can wait on a lock or a throttled store, and it is made once per handshake, not per call.
        settings = await self._abandoned.run(self._service.agent_settings.for_models, instance_id, agent_object_id)
        return AgentGuidance(settings.policy_instructions, settings.auto_append, settings.default_write_scope)

    async def aclose(self) -> None:
        return None


class CoreApiBackend:
    """A CoreAPI with the memory contract, over HTTP (one pooled client per process)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        token_exchange: OnBehalfOfExchange | None = None,
        abandoned: AbandonedCalls | None = None,
    ) -> None:
        """``api_key`` None: no key callers to forward (modes without key or local). ``abandoned`` counts the token
        exchanges abandoned at the caller's time bound (default: a count of this backend's own; the composition root
        passes the process's)."""
        if not base_url.lower().startswith(("http://", "https://")):
            raise ConfigurationError("invalid configuration: MEMORY_COREAPI_BASE_URL must be an http(s) URL")
        if api_key is not None and not api_key:
            raise ConfigurationError(
                "invalid configuration: MEMORY_COREAPI_KEY is required when MEMORY_COREAPI_BASE_URL is set"
            )
        self._client = CoreApiClient(base_url, timeout_seconds=timeout_seconds)
        self.base_url = self._client.base_url
        self._api_key = api_key
        self._token_exchange = token_exchange
        self._abandoned = abandoned if abandoned is not None else AbandonedCalls()

    @classmethod
    def from_settings(cls, settings: Settings, *, abandoned: AbandonedCalls | None = None) -> CoreApiBackend:
        """From MEMORY_COREAPI_BASE_URL, MEMORY_COREAPI_KEY (modes key, local) and the on-behalf-of
        settings (mode entra); ``ConfigurationError`` when unusable. ``abandoned``: as the constructor's."""
        modes = auth_modes(settings)  # the on-behalf-of settings were checked with the settings
        key = settings.memory_coreapi_key.get_secret_value() if settings.memory_coreapi_key else ""
        needs_key = bool(modes & {AuthMode.KEY, AuthMode.LOCAL})
        exchange = OnBehalfOfExchange.from_settings(settings) if AuthMode.ENTRA in modes else None
        return cls(settings.memory_coreapi_base_url or "", key if needs_key or key else None, token_exchange=exchange,
                   abandoned=abandoned)

    async def get(
        self, target: CallTarget, scope: Scope, sharing: SharingPolicy | None = None, max_chars: int | None = None
    ) -> MemoryResponse:
        params = {"scope": scope.value}
        if max_chars is not None:
            params["maxChars"] = str(max_chars)
        if sharing is not None:
            params["memorySharing"] = sharing.value
        if target.agent is not None:
            params["agentObjectId"] = target.agent.object_id
            if target.agent.name:
                params["agentName"] = target.agent.name
        return await self._call(target, lambda headers: self._client.get_memory(target.instance_id, headers, params))

    async def append(
        self, target: CallTarget, scope: Scope, content_markdown: str, reason: str | None, share: Share = Share.PRIVATE
    ) -> MemoryResponse:
        body: dict[str, Any] = {
            "share": share.value,
            "scope": scope.value,
            "agent_object_id": target.agent.object_id if target.agent else None,
            "agent_name": target.agent_name,
            "content_markdown": content_markdown,
            "reason": reason,
            "session_id": target.session_id,
            "operation_id": target.operation_id,
        }
        sent = {k: v for k, v in body.items() if v is not None}
        return await self._call(target, lambda headers: self._client.append(target.instance_id, headers, sent))

    async def clear(self, target: CallTarget, scope: Scope, *, confirm: bool) -> ClearAnswer:
        body: dict[str, Any] = {"scope": scope.value, "confirm": confirm}
        if target.agent is not None:
            body["agent_object_id"] = target.agent.object_id
        return await self._call(target, lambda headers: self._client.clear(target.instance_id, headers, body))

    async def search(
        self, target: CallTarget, scope: Scope, query: str, tags: list[str], limit: int,
        sharing: SharingPolicy | None = None,
    ) -> SearchResponse:
        body: dict[str, Any] = {"q": query, "scope": scope.value, "limit": limit}
        if sharing is not None:
            body["memorySharing"] = sharing.value
        if tags:
            body["tags"] = ",".join(tags)
        if target.agent is not None:
            body["agentObjectId"] = target.agent.object_id
        return await self._call(target, lambda headers: self._client.search(target.instance_id, headers, body))

    async def memory_command(self, target: CallTarget, command: dict[str, Any]) -> MemoryFileResponse:
        params: dict[str, str] = {}
        if target.agent is not None:
            params["agentObjectId"] = target.agent.object_id
            if target.agent.name:
                params["agentName"] = target.agent.name
        return await self._call(
            target, lambda headers: self._client.memory_command(target.instance_id, headers, command, params)
        )

    async def guidance(self, instance_id: str, agent_object_id: str) -> AgentGuidance | None:
        # Agent settings are an operator resource of the remote CoreAPI; the MCP
        # server holds no operator credential, so it gives the default guidance.
        return None

    async def aclose(self) -> None:
        await self._client.aclose()

    async def _call(self, target: CallTarget, request: Callable[[dict[str, str]], Awaitable[T]]) -> T:
        """``request`` with the caller's credential headers; the CoreAPI's errors raised as domain errors
        (``memory_core.client_errors``), a refusal of this server's own credentials logged."""
        headers = await self._credential_headers(target)
        try:
            return await request(headers)
        except Unauthenticated as failure:
            log.warning("the CoreAPI refused this server's credentials: %s", failure.message)
            raise

    async def _credential_headers(self, target: CallTarget) -> dict[str, str]:
        """The caller's credential for the CoreAPI: the same kind as the caller's own, never weaker."""
        authentication = target.authentication
        mode = authentication.mode if authentication is not None else AuthMode.KEY
        if mode is AuthMode.ENTRA:
            if self._token_exchange is None or authentication is None or not authentication.credential:
                raise CoreApiFailure("this MCP server cannot exchange Entra ID tokens for the CoreAPI (MEMORY_OBO_*)")
            # Abandoned at the caller's time bound, as the store calls are (``_run_in_thread``): an identity provider
            # that stalls (each MSAL request allowed obo.TIMEOUT_SECONDS, retried once) must not hold the answer.
            token = await self._abandoned.run(self._token_exchange.exchange, authentication.credential,
                                             share=target.share)
            return {"Authorization": f"Bearer {token}"}
        if mode is AuthMode.PLATFORM:
            if authentication is None or not authentication.credential:
                raise CoreApiFailure("the platform identity context to forward is missing")
            return {PLATFORM_IDENTITY_HEADER: authentication.credential}
        if mode is AuthMode.EASYAUTH:
            raise Forbidden(
                "an App Service sign-in cannot be carried to a remote CoreAPI; "
                "call with an Entra ID bearer token or a platform identity context"
            )
        if not self._api_key:
            raise CoreApiFailure("this MCP server has no MEMORY_COREAPI_KEY to call the CoreAPI for key callers")
        return {API_KEY_HEADER: self._api_key, USER_IDENTITY_HEADER: target.identity_header}
