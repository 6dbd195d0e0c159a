"""Claude's memory tool backed by memory-core, for the anthropic SDK's tool runner.

``MemoryCoreMemoryTool`` is a ``BetaAbstractMemoryTool``; ``AsyncMemoryCoreMemoryTool``
its ``BetaAsyncAbstractMemoryTool`` twin. Hand either to
``client.beta.messages.tool_runner(tools=[...])`` in place of
``BetaLocalFilesystemMemoryTool``: each command Claude sends becomes
``POST {base_url}/instances/{instance_id}/memory/files/{command}`` with the
caller's own credentials, and the text Claude gets back is the service's
(the reference backend's texts; see docs/memory-tool.md for the custody
differences). A refusal becomes the SDK's ``ToolError`` with the service's
text, so the model sees it as ``is_error``.

Credentials, per the service's MEMORY_AUTH_MODE: ``bearer_token`` (an Entra ID
token, or a callable answering one per call), ``platform_identity`` (the
platform-signed identity context), or ``api_key`` with ``user_identity`` (the
X-USER-IDENTITY JSON object). The user is whoever those credentials prove; no
tool input can name another.

Needs the anthropic SDK (``pip install -r requirements-anthropic.txt``); the
Function app never imports this module.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import quote

import httpx

from memory_core.client_errors import error_body

try:
    from anthropic.lib.tools import (
        BetaAbstractMemoryTool,
        BetaAsyncAbstractMemoryTool,
        ToolError,
    )
    from anthropic.types.beta import (
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )
except ImportError as error:  # pragma: no cover - depends on the optional extra
    raise ImportError(
        "memory_core.integrations.anthropic needs the anthropic SDK: pip install -r requirements-anthropic.txt"
    ) from error

__all__ = ["AsyncMemoryCoreMemoryTool", "MemoryCoreMemoryTool"]

log = logging.getLogger("memory_core.integrations.anthropic")

TokenSource = str | Callable[[], str]
AsyncTokenSource = str | Callable[[], str] | Callable[[], Awaitable[str]]
AnyCommand = (
    BetaMemoryTool20250818ViewCommand
    | BetaMemoryTool20250818CreateCommand
    | BetaMemoryTool20250818StrReplaceCommand
    | BetaMemoryTool20250818InsertCommand
    | BetaMemoryTool20250818DeleteCommand
    | BetaMemoryTool20250818RenameCommand
)


class _Connection:
    """What both tools share: where to call, with which credentials, and how answers read."""

    def __init__(
        self,
        base_url: str,
        instance_id: str,
        *,
        api_key: str | None,
        user_identity: Mapping[str, Any] | None,
        bearer_token: AsyncTokenSource | None,
        platform_identity: AsyncTokenSource | None,
        agent_object_id: str | None,
        agent_name: str | None,
    ) -> None:
        if not base_url.lower().startswith(("http://", "https://")):
            raise ValueError("base_url must be an http(s) URL, e.g. http://127.0.0.1:7071/api")
        ways = sum(x is not None for x in (api_key, bearer_token, platform_identity))
        if ways != 1:
            raise ValueError("give exactly one credential: api_key (with user_identity), bearer_token or platform_identity")
        if api_key is not None and not (user_identity and str(user_identity.get("upn") or "").strip()):
            raise ValueError("api_key needs user_identity with a non-empty upn")
        self.base_url = base_url.rstrip("/")
        self.instance_id = instance_id
        self.api_key = api_key
        self.user_identity = dict(user_identity) if user_identity else None
        self.bearer_token = bearer_token
        self.platform_identity = platform_identity
        self.params = {"agentObjectId": agent_object_id, "agentName": agent_name} if agent_object_id else {}
        if not agent_name:
            self.params.pop("agentName", None)

    def url(self, suffix: str) -> str:
        return f"{self.base_url}/instances/{quote(self.instance_id, safe='')}/memory{suffix}"

    def key_headers(self) -> dict[str, str]:
        assert self.api_key is not None
        return {"X-API-KEY": self.api_key, "X-USER-IDENTITY": json.dumps(self.user_identity)}

    @staticmethod
    def answer(response: httpx.Response) -> str:
        """The ``result`` of a 2xx answer; otherwise a ``ToolError`` carrying the service's message."""
        if response.is_success:
            try:
                body = response.json()
            except ValueError:
                body = None
            if isinstance(body, dict) and isinstance(body.get("result"), str):
                return body["result"]
        error = error_body(response)  # the one reading of CoreAPI error bodies (memory_core.client_errors)
        message = error[1] if error else None
        if response.status_code in (401, 403) or response.status_code >= 500:
            log.warning("memory-core answered HTTP %s: %s", response.status_code, message)
        raise ToolError(str(message) if message else f"memory-core answered HTTP {response.status_code}")

    @staticmethod
    def unreachable(error: httpx.HTTPError) -> ToolError:
        log.warning("memory-core cannot be reached: %r", error)
        return ToolError("memory is unavailable right now (memory-core cannot be reached); nothing was changed")


def _body(command: AnyCommand) -> tuple[str, dict[str, Any]]:
    """The command's route and body: only the fields its SDK model defines. The SDK keeps any other property of
    Claude's tool_use input on the command, and the REST routes refuse a body with one; the reference backend and
    the MCP tool ignore it, so the command goes through here too."""
    data = command.model_dump(include=set(type(command).model_fields), exclude_none=True)
    return f"/files/{quote(str(data['command']), safe='')}", data


class MemoryCoreMemoryTool(BetaAbstractMemoryTool):
    """The memory tool over memory-core's REST API (blocking; for ``Anthropic``'s tool runner)."""

    def __init__(
        self,
        base_url: str,
        instance_id: str,
        *,
        api_key: str | None = None,
        user_identity: Mapping[str, Any] | None = None,
        bearer_token: TokenSource | None = None,
        platform_identity: TokenSource | None = None,
        agent_object_id: str | None = None,
        agent_name: str | None = None,
        timeout_seconds: float = 30.0,
        http_client: httpx.Client | None = None,
    ) -> None:
        """``base_url`` is the CoreAPI base that ``/instances/{id}/memory`` hangs off
        (``http://127.0.0.1:7071/api``). ``agent_object_id`` mounts that agent's own memory
        at /memories/agent. Raises ``ValueError`` for an unusable configuration."""
        super().__init__()
        self._conn = _Connection(
            base_url, instance_id, api_key=api_key, user_identity=user_identity, bearer_token=bearer_token,
            platform_identity=platform_identity, agent_object_id=agent_object_id, agent_name=agent_name,
        )
        self._http = http_client or httpx.Client(timeout=timeout_seconds, follow_redirects=False)

    def close(self) -> None:
        self._http.close()

    def _headers(self) -> dict[str, str]:
        conn = self._conn
        if conn.api_key is not None:
            return conn.key_headers()
        if conn.bearer_token is not None:
            token = conn.bearer_token() if callable(conn.bearer_token) else conn.bearer_token
            return {"Authorization": f"Bearer {token}"}
        value = conn.platform_identity() if callable(conn.platform_identity) else conn.platform_identity
        return {"X-PLATFORM-IDENTITY": str(value)}

    def _post(self, suffix: str, body: dict[str, Any]) -> str:
        try:
            response = self._http.post(self._conn.url(suffix), params=self._conn.params, json=body,
                                       headers=self._headers())
        except httpx.HTTPError as error:
            raise self._conn.unreachable(error) from None
        return self._conn.answer(response)

    def _run(self, command: AnyCommand) -> str:
        return self._post(*_body(command))

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self._run(command)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self._run(command)

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self._run(command)

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self._run(command)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self._run(command)

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self._run(command)


class AsyncMemoryCoreMemoryTool(BetaAsyncAbstractMemoryTool):
    """The async twin of ``MemoryCoreMemoryTool`` (for ``AsyncAnthropic``'s tool runner)."""

    def __init__(
        self,
        base_url: str,
        instance_id: str,
        *,
        api_key: str | None = None,
        user_identity: Mapping[str, Any] | None = None,
        bearer_token: AsyncTokenSource | None = None,
        platform_identity: AsyncTokenSource | None = None,
        agent_object_id: str | None = None,
        agent_name: str | None = None,
        timeout_seconds: float = 30.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        """As ``MemoryCoreMemoryTool``; token callables may be coroutines."""
        super().__init__()
        self._conn = _Connection(
            base_url, instance_id, api_key=api_key, user_identity=user_identity, bearer_token=bearer_token,
            platform_identity=platform_identity, agent_object_id=agent_object_id, agent_name=agent_name,
        )
        self._http = http_client or httpx.AsyncClient(timeout=timeout_seconds, follow_redirects=False)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _headers(self) -> dict[str, str]:
        conn = self._conn
        if conn.api_key is not None:
            return conn.key_headers()
        source = conn.bearer_token if conn.bearer_token is not None else conn.platform_identity
        value = source() if callable(source) else source
        if inspect.isawaitable(value):
            value = await value
        if conn.bearer_token is not None:
            return {"Authorization": f"Bearer {value}"}
        return {"X-PLATFORM-IDENTITY": str(value)}

    async def _run(self, command: AnyCommand) -> str:
        suffix, body = _body(command)
        try:
            response = await self._http.post(self._conn.url(suffix), params=self._conn.params, json=body,
                                             headers=await self._headers())
        except httpx.HTTPError as error:
            raise self._conn.unreachable(error) from None
        return self._conn.answer(response)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await self._run(command)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await self._run(command)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await self._run(command)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await self._run(command)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await self._run(command)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await self._run(command)
