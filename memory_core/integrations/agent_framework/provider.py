"""``MemoryCoreContextProvider``: the Agent Framework lifecycle of long-term memory in memory-core.

The provider maps ``before_run`` and ``after_run`` onto the service (see the package
docstring, ``memory_core.integrations.agent_framework``, for the whole contract); the
requests themselves are in ``service_calls``, the text the model sees in ``blocks``,
and what counts as a "remember"/"forget" request in ``user_requests``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

try:
    from agent_framework import AgentSession, ContextProvider, Message, SessionContext, SupportsAgentRun
except ImportError as error:  # pragma: no cover - depends on the optional extra
    raise ImportError(
        "memory_core.integrations.agent_framework needs Microsoft Agent Framework: "
        "pip install -r requirements-agent-framework.txt"
    ) from error

from memory_core.client import CoreApiClient
from memory_core.integrations.agent_framework.blocks import (
    MEMORY_BLOCK_TAG,
    MEMORY_OFF_BLOCK_TAG,
    MESSAGE_KIND_PROPERTY,
    NOTICE_BLOCK_TAG,
    UNAVAILABLE_BLOCK_TAG,
    memory_text,
    notice_text,
    off_text,
    unavailable_text,
)
from memory_core.integrations.agent_framework.configuration import (
    MAX_MEMORY_CHARS,
    MemoryCoreConfigurationError,
    MemoryMode,
    MemType,
    Persist,
    Retrieval,
    WriteScope,
    check_choice,
    checked_identity,
)
from memory_core.integrations.agent_framework.service_calls import (
    OFF_DELETE_REASON,
    RunTarget,
    ServiceCalls,
    guarded,
)
from memory_core.integrations.agent_framework.user_requests import forget_request, latest_user_text, remember_request

# The documented logger (docs/agent-framework.md): every module of the provider logs on it.
log = logging.getLogger("memory_core.integrations.agent_framework")

ChatSummarySource = Callable[[SessionContext], "str | Awaitable[str | None] | None"]
"""Called in ``after_run`` with the run's context (input and response); answers the
summary to store, or ``None``/``""`` to store nothing. May be sync or async."""
BearerTokenSource = str | Callable[[], "str | Awaitable[str]"]

_AUTHOR = "memory_core"
_OFF_REASON = "memory_mode=\"off\" is set, so nothing is read or stored"

class MemoryCoreContextProvider(ContextProvider):
    """Long-term memory for a Microsoft Agent Framework agent, stored in memory-core.

    Callers may rely on:

    * Memory is added with ``context.extend_messages`` as ``role="user"`` messages
      authored ``"memory_core"``; ``context.instructions`` is never touched.
    * The memory block is ``<untrusted_memory_<nonce> ...>`` ... ``</untrusted_memory_<nonce>>``
      with a random nonce per block; nothing a reader would take for a provider tag
      survives inside it (``blocks.escape_delimiters``).
    * Exactly one of these reaches the model per run: the memory block (possibly empty,
      stated as such), a ``<memory_off>`` block (``memory_mode="off"``, the service answered
      memory off, or the operator disabled the agent's memory) or a ``<memory_unavailable>``
      block with the reason. Neither of the last two says the user has no memory.
    * No exception from the service path escapes the hooks; failures are logged
      (warning when unreachable, error when the credentials are refused).
    * Writes use ``POST memory/append`` with one ``mem_type:*`` tag, ``session_tag``
      of the session id and ``agent_tag`` of the agent object id.
    * With a configured ``user_identity`` the (serialized, editable) session state never
      chooses the user: a session naming another upn gets memory unavailable for the run.
    """

    DEFAULT_SOURCE_ID = "memory_core"
    after_run_once_per_turn = True  # persist once per user turn, not per agent-loop iteration

    def __init__(
        self,
        base_url: str,
        instance_id: str,
        *,
        api_key: str | None = None,
        user_identity: Mapping[str, Any] | None = None,
        bearer_token: BearerTokenSource | None = None,
        agent_object_id: str | None = None,
        agent_name: str | None = None,
        retrieval: Retrieval = "combined",
        search_limit: int = 5,
        persist: Persist = "none",
        remember_scope: WriteScope = "user",
        remember_mem_type: MemType = "user-profile",
        chat_summary: ChatSummarySource | None = None,
        summary_scope: WriteScope = "agent",
        max_memory_chars: int = 16_000,
        timeout_seconds: float = 10.0,
        hook_timeout_seconds: float | None = None,
        http_client: httpx.AsyncClient | None = None,
        source_id: str = DEFAULT_SOURCE_ID,
        memory_mode: MemoryMode = "on",
    ) -> None:
        """Configure the provider.

        Args:
            base_url: The CoreAPI base that ``/instances/{id}/memory`` hangs off, e.g.
                ``http://127.0.0.1:7071/api``.
            instance_id: The memory-core instance.
            api_key: A service key (``X-API-KEY``); needs a user identity, from
                ``user_identity`` or per session via ``bind_user``.
            user_identity: The ``X-USER-IDENTITY`` JSON object (non-empty ``upn``).
            bearer_token: Instead of a key and identity: a token, or a callable
                answering one per run; sent as ``Authorization: Bearer``.
            agent_object_id: The agent's object id in the service; defaults to the
                Agent's ``id`` (give ``Agent(id=...)`` a stable value).
            agent_name: Display name; defaults to the Agent's ``name``.
            retrieval: ``"combined"``: the newest combined memory within ``max_memory_chars``;
                ``"search"``: the best ``search_limit`` entries for the latest user input;
                ``"auto"``: three quarters of the budget for the newest memory and, when
                older memory was left out, the rest for search hits of the user's message.
            search_limit: Hits read in search mode (1..100).
            persist: ``"none"``, ``"remember"`` or ``"chat_summary"``.
            remember_scope, remember_mem_type: Where and as what a remembered fact goes.
            chat_summary: Required with ``persist="chat_summary"``; see ``ChatSummarySource``.
            summary_scope: Where a chat summary goes.
            max_memory_chars: The budget the service fills (``maxChars``): newest entries first,
                and the model is told how many older entries were left out.
            timeout_seconds: The most one request may take, in all (a body that trickles in included).
            hook_timeout_seconds: The most the service calls of one hook may take together (a forget turn
                makes up to six); default three times ``timeout_seconds``. Past it the run goes on with
                memory unavailable.
            http_client: Optional shared client (the caller closes it).
            source_id: The provider's id in the agent's pipeline and session state.
            memory_mode: ``"off"`` for a "temporary chat": no request is sent, nothing is read,
                stored or deleted, and the model is told memory is off (not that there is none).

        Raises:
            MemoryCoreConfigurationError: for an unusable combination of settings.
        """
        super().__init__(source_id)
        if not base_url.lower().startswith(("http://", "https://")):
            raise MemoryCoreConfigurationError("base_url must be an http(s) URL")
        if not instance_id:
            raise MemoryCoreConfigurationError("instance_id is required")
        if bearer_token is not None and (api_key is not None or user_identity is not None):
            raise MemoryCoreConfigurationError("give either bearer_token, or api_key with a user identity; not both")
        if bearer_token is None and not api_key:
            raise MemoryCoreConfigurationError("give api_key (with a user identity) or bearer_token")
        check_choice("retrieval", retrieval, Retrieval)
        check_choice("persist", persist, Persist)
        check_choice("remember_scope", remember_scope, WriteScope)
        check_choice("summary_scope", summary_scope, WriteScope)
        check_choice("remember_mem_type", remember_mem_type, MemType)
        check_choice("memory_mode", memory_mode, MemoryMode)
        if persist == "chat_summary" and chat_summary is None:
            raise MemoryCoreConfigurationError('persist="chat_summary" needs a chat_summary callable')
        if not 1 <= search_limit <= 100:
            raise MemoryCoreConfigurationError("search_limit must be between 1 and 100")
        if not timeout_seconds > 0 or (hook_timeout_seconds is not None and not hook_timeout_seconds > 0):
            raise MemoryCoreConfigurationError("timeout_seconds and hook_timeout_seconds must be positive")
        if not 0 <= max_memory_chars <= MAX_MEMORY_CHARS:
            raise MemoryCoreConfigurationError(f"max_memory_chars must be between 0 and {MAX_MEMORY_CHARS}")
        self._base_url = base_url.rstrip("/")
        self._instance_id = instance_id
        self._api_key = api_key
        self._user_identity = checked_identity(user_identity) if user_identity is not None else None
        self._bearer_token = bearer_token
        self._agent_object_id = agent_object_id
        self._agent_name = agent_name
        self.retrieval: Retrieval = retrieval
        self._search_limit = search_limit
        self.persist: Persist = persist
        self._remember_scope = remember_scope
        self._remember_mem_type = remember_mem_type
        self._chat_summary = chat_summary
        self._summary_scope = summary_scope
        self._max_memory_chars = max_memory_chars
        self._timeout = timeout_seconds
        self._hook_timeout = hook_timeout_seconds if hook_timeout_seconds is not None else 3 * timeout_seconds
        self._http_client = http_client
        self.memory_mode: MemoryMode = memory_mode

    # -- public helpers ---------------------------------------------------------

    def bind_user(self, session: AgentSession, user_identity: Mapping[str, Any]) -> None:
        """Use ``user_identity`` (X-USER-IDENTITY JSON) for this session: for a provider configured without
        ``user_identity`` (an agent serving many users).

        Only with an ``api_key``; the identity is kept in the session's state, so whoever can edit that state
        (a session store, a client that round-trips it) chooses the user: bind again on every run from the
        caller's authenticated user, or keep sessions where only the application writes them. With a configured
        ``user_identity`` only that user may be bound (another upn raises ``MemoryCoreConfigurationError``).
        """
        if self._bearer_token is not None:
            raise MemoryCoreConfigurationError("a bearer token carries the identity; bind_user needs api_key")
        identity = checked_identity(user_identity)
        if self._user_identity is not None and not _same_user(identity, self._user_identity):
            raise MemoryCoreConfigurationError(
                "this provider is configured with a fixed user_identity; bind_user cannot switch to another user "
                "(configure the provider without user_identity to bind a user per session)")
        session.state.setdefault(self.source_id, {})["user_identity"] = identity

    # -- lifecycle --------------------------------------------------------------

    async def before_run(
        self,
        *,
        agent: SupportsAgentRun,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Handle a forget request, then add memory (or the reason it is unavailable) as context."""
        user_text = latest_user_text(context)
        forget_what = forget_request(user_text)
        if self.memory_mode == "off":
            if forget_what is not None:
                state["last_forget"] = {"target": "entry", "results": [{"status": "not_stored",
                                                                         "reason": OFF_DELETE_REASON}]}
                self._add(context, NOTICE_BLOCK_TAG, notice_text(forget_what, state["last_forget"]))
            self._add_off(context, state, {"status": "off", "reason": _OFF_REASON, "memory_mode": "off"})
            return
        try:
            target = await self._target(agent, session, state)
        except Exception as error:
            reason = _target_failure(error, "memory is unavailable for this run")
            if forget_what is not None:
                state["last_forget"] = {"target": "entry", "results": [{"status": "failed", "reason": reason}]}
                self._add(context, NOTICE_BLOCK_TAG, notice_text(forget_what, state["last_forget"]))
            self._add_unavailable(context, state, reason)
            return
        async with self._http() as http:
            calls = self._calls(http, target)
            if forget_what is not None:
                outcome = await guarded("forget", calls.forget(forget_what))
                state["last_forget"] = outcome
                self._add(context, NOTICE_BLOCK_TAG, notice_text(forget_what, outcome))
            recall = await guarded("recall", calls.recall(self.retrieval, self._max_memory_chars, user_text))
        if recall["status"] == "ok":
            state["last_recall"] = {"status": "ok", "retrieval": self.retrieval, "empty": not recall["memory"],
                                    "scope": recall["scope"], **recall.get("budget", {})}
            self._add(context, MEMORY_BLOCK_TAG, memory_text(recall["memory"], self.retrieval, recall.get("note")))
        elif recall["status"] == "off":
            self._add_off(context, state, recall)
        else:
            self._add_unavailable(context, state, recall["reason"])

    async def after_run(
        self,
        *,
        agent: SupportsAgentRun,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Persist an explicit remember request or the caller's chat summary, per ``persist``."""
        if self.persist == "none":
            return
        writes: list[dict[str, Any]] = []
        state["last_writes"] = writes
        if self.persist == "remember":
            what = remember_request(latest_user_text(context))
            if what is None:
                return
            write = ("remember", self._remember_scope, self._remember_mem_type, f"- {what}",
                     "the user asked to remember this")
        else:
            summary = await self._summary(context)
            if not summary:
                return
            write = ("chat_summary", self._summary_scope, "chat-summary", summary, "chat summary")
        if self.memory_mode == "off":
            writes.append({"kind": write[0], "status": "not_stored", "memory_mode": "off", "reason": _OFF_REASON})
            return
        try:
            target = await self._target(agent, session, state)
        except Exception as error:
            writes.append({"kind": write[0], "status": "failed",
                           "reason": _target_failure(error, f"the {write[0]} was not stored")})
            return
        async with self._http() as http:
            writes.append(await guarded("write", self._calls(http, target).append(*write), kind=write[0]))

    # -- identity, agent, session ---------------------------------------------

    async def _target(self, agent: SupportsAgentRun, session: AgentSession, state: Mapping[str, Any]) -> RunTarget:
        agent_object_id = self._agent_object_id or str(getattr(agent, "id", "") or "")
        if not agent_object_id:
            raise MemoryCoreConfigurationError("no agent object id: configure agent_object_id or give the Agent an id")
        agent_name = self._agent_name or getattr(agent, "name", None)
        return RunTarget(await self._headers(state), agent_object_id, agent_name, session.session_id)

    async def _headers(self, state: Mapping[str, Any]) -> dict[str, str]:
        if self._bearer_token is not None:
            token = self._bearer_token() if callable(self._bearer_token) else self._bearer_token
            if inspect.isawaitable(token):
                async with asyncio.timeout(self._timeout):  # a token source that hangs must not hold the run
                    token = await token
            if not token:
                raise MemoryCoreConfigurationError("the bearer token source answered no token")
            return {"Authorization": f"Bearer {token}"}
        identity = self._identity(state.get("user_identity"))
        if self._api_key is None:  # unreachable: __init__ requires a key without a bearer token
            raise MemoryCoreConfigurationError("no api_key")
        return {"X-API-KEY": self._api_key, "X-USER-IDENTITY": json.dumps(identity)}

    def _identity(self, bound: Any) -> dict[str, Any]:
        """The user a run acts for. The session state is serialized and may come back edited, so with a
        configured ``user_identity`` it never chooses the user: a session naming another upn makes memory
        unavailable for the run (raised as a configuration error, logged), and the configured identity is the
        one sent. Without one, the session's bound identity is the user (the caller's trust boundary)."""
        if bound is not None and not isinstance(bound, Mapping):
            raise MemoryCoreConfigurationError("the session's user_identity is not a JSON object")
        session_identity = checked_identity(bound) if bound else None
        if self._user_identity is not None:
            if session_identity is not None and not _same_user(session_identity, self._user_identity):
                raise MemoryCoreConfigurationError(
                    "the session state names a different user than the provider's configured user_identity; "
                    "memory is not used for this session")
            return self._user_identity
        if session_identity is None:
            raise MemoryCoreConfigurationError("no user identity: configure user_identity or call bind_user")
        return session_identity

    @asynccontextmanager
    async def _http(self) -> AsyncIterator[CoreApiClient]:
        if self._http_client is not None:
            yield CoreApiClient(self._base_url, timeout_seconds=self._timeout, http=self._http_client)
            return
        async with httpx.AsyncClient(timeout=self._timeout, follow_redirects=False) as client:
            yield CoreApiClient(self._base_url, timeout_seconds=self._timeout, http=client)

    async def _summary(self, context: SessionContext) -> str | None:
        assert self._chat_summary is not None
        try:
            result = self._chat_summary(context)
            if inspect.isawaitable(result):
                result = await result
        except Exception:
            log.exception("memory-core: the chat_summary callable failed; no summary stored")
            return None
        return result.strip() if isinstance(result, str) else None

    # -- context messages -----------------------------------------------------

    def _add_unavailable(self, context: SessionContext, state: dict[str, Any], reason: str) -> None:
        state["last_recall"] = {"status": "unavailable", "reason": reason}
        self._add(context, UNAVAILABLE_BLOCK_TAG, unavailable_text(reason))

    def _add_off(self, context: SessionContext, state: dict[str, Any], outcome: dict[str, Any]) -> None:
        state["last_recall"] = outcome
        by_operator = outcome.get("code") == "agent_memory_disabled"
        reason = "the operator has turned memory off for this agent" if by_operator else str(outcome["reason"])
        self._add(context, MEMORY_OFF_BLOCK_TAG, off_text(reason, by_operator=by_operator))

    def _add(self, context: SessionContext, kind: str, text: str) -> None:
        message = Message(role="user", contents=[text], author_name=_AUTHOR,
                          additional_properties={MESSAGE_KIND_PROPERTY: kind})
        context.extend_messages(self, [message])

    def _calls(self, http: CoreApiClient, target: RunTarget) -> ServiceCalls:
        return ServiceCalls(http, target, instance_id=self._instance_id, timeout=self._timeout,
                            search_limit=self._search_limit, hook_timeout=self._hook_timeout)


def _same_user(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    return str(first["upn"]).strip().casefold() == str(second["upn"]).strip().casefold()


def _target_failure(error: Exception, consequence: str) -> str:
    """Log why a run has no usable credential or agent, and answer the reason to report."""
    if isinstance(error, MemoryCoreConfigurationError):
        log.error("memory-core: %s: %s", consequence, error)
        return str(error)
    log.exception("memory-core: %s: resolving the credentials failed", consequence)
    return f"the memory credentials could not be obtained ({type(error).__name__})"
