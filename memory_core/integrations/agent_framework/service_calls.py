"""The provider's requests to the memory service (CoreAPI) for one run: recall, forget, write.

Callers may rely on:

* No method raises for a transport failure or an HTTP error answer; each answers an
  outcome (a JSON-serializable ``dict``) whose ``status`` says what happened, and logs
  the failure without memory content or credentials (a warning when the service is
  unreachable or answers 5xx or another 4xx, an error when it refuses the credentials; a
  ``DELETE``'s 404 is an answer, not a failure).
* ``guarded`` turns any other exception into a failure outcome of the same shape.
* A deletion outcome is the service's answer as it is: ``pending_approval`` (with the
  request id and the service's message), ``deleted``, ``not_found``, ``not_stored``
  (memory is off: nothing deleted, nothing requested), ``failed`` (a definite refusal, or the
  request never left: nothing was deleted) or ``unknown`` (the request was sent and no definite
  answer came back, or the service failed with 5xx: it may have been applied).
* An operator's agent settings are not failures: for an agent limited to groups the
  user is not in (403 ``agent_group_forbidden`` on a combined request) the reads and
  forget's search fall back to user scope; a disabled agent (403 ``agent_memory_disabled``)
  is memory off. Both are logged at info, never as refused credentials.
* Memory off (``X-MEMORY-MODE: off`` answered by the service) is reported as off: a read
  as ``{"status": "off"}``, a write answered ``not_stored`` as not stored.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from memory_core.client import CoreApiClient, new_idempotency_key
from memory_core.client_errors import CoreApiUnreachable, http_status_of, retry_after_of
from memory_core.domain.errors import MemoryCoreError
from memory_core.domain.idempotency import IDEMPOTENCY_KEY_HEADER
from memory_core.domain.modes import OFF_READ_NOTICE
from memory_core.domain.tags import agent_tag, session_tag
from memory_core.integrations.agent_framework.blocks import (
    fitted_hits,
    left_out_note,
    newest_lines,
    omission_note,
    search_section,
)
from memory_core.integrations.agent_framework.configuration import Retrieval, WriteScope
from memory_core.integrations.agent_framework.user_requests import asks_to_forget_everything, matches

# The documented logger (docs/agent-framework.md): every module of the provider logs on it.
log = logging.getLogger("memory_core.integrations.agent_framework")

PENDING_APPROVAL_MESSAGE = "deletion requested, pending operator approval"
OFF_DELETE_REASON = "memory is off for this chat: nothing was deleted and no deletion was requested"

_FORGET_TRIES = 3
GROUP_FORBIDDEN = "agent_group_forbidden"
AGENT_DISABLED = "agent_memory_disabled"
_POLICY_CODES = (GROUP_FORBIDDEN, AGENT_DISABLED)
GROUP_NOTE = ("This agent's own memory is limited to certain groups, and the user is in none of them: "
              "only the user's own memory is shown.")
_LOG_PHASES = {"recall": "reading memory", "forget": "requesting deletion", "write": "storing memory"}
# Refusals of a write for its content; any other answer is a failure the same write may be sent again after.
_CONTENT_REFUSALS = (400, 413, 422)
# Transport errors raised before any byte of the request left: such a request was certainly not applied.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class RunTarget:
    """Who and what one run is about: the service's user (as request headers), agent and session."""

    headers: dict[str, str]
    agent_object_id: str
    agent_name: str | None
    session_id: str


@dataclass(frozen=True)
class Reply:
    """One service answer; ``status`` is ``None`` when no HTTP answer arrived (``sent`` says whether the request
    may have reached the service all the same)."""

    status: int | None
    body: Any = None
    code: str | None = None
    message: str | None = None
    sent: bool = True
    retry_after: int | None = None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def memory_off(self) -> bool:
        """The service answered under X-MEMORY-MODE: off: nothing was read, stored or deleted."""
        if not self.ok or not isinstance(self.body, dict):
            return False
        return (self.body.get("memory_mode") == "off" or self.body.get("status") == "not_stored"
                or self.body.get("notice") == OFF_READ_NOTICE)

    @property
    def outcome_unknown(self) -> bool:
        """The request may have been applied, but no definite answer says so: it was sent and no (readable)
        answer came back, or the service failed (5xx)."""
        return (self.status is None and self.sent) or (self.status is not None and self.status >= 500)

    @property
    def agent_disabled(self) -> bool:
        return self.status == 403 and self.code == AGENT_DISABLED

    def reason(self) -> str:
        """A short description of a failure, without memory content or credentials."""
        if self.status is None:
            return self.message or "the memory service could not be reached"
        detail = f"{self.code}: {self.message}" if self.code else (self.message or "no error description")
        return f"the memory service answered HTTP {self.status} ({detail})"


class ServiceCalls:
    """The requests of one run, for one ``RunTarget``, through one CoreAPI client."""

    def __init__(
        self, http: CoreApiClient, target: RunTarget, *, instance_id: str, timeout: float, search_limit: int,
        hook_timeout: float,
    ) -> None:
        """``timeout`` bounds each call in all; ``hook_timeout`` bounds all the calls made through this object
        together (one hook): a call is given what is left of it, and none is sent once it is spent."""
        self._http = http
        self._target = target
        self._instance_id = instance_id
        self._timeout = timeout
        self._search_limit = search_limit
        self._hook_timeout = hook_timeout
        self._deadline = asyncio.get_running_loop().time() + hook_timeout
        self.read_scope = "combined"  # "user" once the service refused this user the agent's scope

    async def recall(self, retrieval: Retrieval, max_memory_chars: int, user_text: str) -> dict[str, Any]:
        """``{"status": "ok", "memory", "note"?, "budget"?, "scope"}``, ``{"status": "off", "reason", "code"?}``
        (memory is off: the agent is disabled, or X-MEMORY-MODE: off) or ``{"status": "unavailable", "reason"}``."""
        target = self._target
        if retrieval == "search":
            reply = await self._search(user_text)
            if not reply.ok or reply.memory_off:
                return _not_read(reply)
            # Whole hits, best first, within the budget, as the other modes: a hit is never cut.
            memory, shown, left_out = fitted_hits(reply.body.get("hits", []), max_memory_chars)
            return self._read({"status": "ok", "memory": memory, "note": left_out_note(left_out),
                               "budget": {"search_hits_shown": shown, "search_hits_left_out": left_out}})
        # auto keeps a quarter of the budget for search hits, used only when older memory was left out.
        budget = max_memory_chars
        newest_budget = budget - budget // 4 if retrieval == "auto" else budget
        reply = await self._visible("GET", "", "recall", {
            "agentObjectId": target.agent_object_id, "maxChars": str(newest_budget)})
        if not reply.ok or reply.memory_off:
            return _not_read(reply)
        memory = str(reply.body.get("content_markdown") or "")
        report = reply.body.get("budget")
        if not isinstance(report, dict):
            # A service that predates budgets answered everything: keep the newest whole lines.
            return self._read({"status": "ok", "memory": newest_lines(memory, newest_budget),
                               "note": None if len(memory) <= newest_budget else "Older memory was cut to fit."})
        omitted = int(report.get("omitted_entries") or 0)
        outcome: dict[str, Any] = {"status": "ok", "memory": memory, "note": omission_note(report),
                                   "budget": {"shown_entries": int(report.get("shown_entries") or 0),
                                              "omitted_entries": omitted}}
        if retrieval == "auto" and omitted and user_text:
            found = await self._search(user_text)
            if found.ok and not found.memory_off:
                section, added = search_section(found.body.get("hits", []), memory, budget - len(memory))
                outcome["memory"] = memory.rstrip("\n") + ("\n\n" + section if memory and section else section)
                outcome["budget"]["search_hits_added"] = added
            else:
                outcome["budget"]["search_hits_added"] = 0
        return self._read(outcome)

    def _read(self, outcome: dict[str, Any]) -> dict[str, Any]:
        """``outcome`` with the scope it was read from, and the note when that is user scope only."""
        outcome["scope"] = self.read_scope
        if self.read_scope == "user":
            outcome["note"] = " ".join(n for n in (GROUP_NOTE, outcome.get("note")) if n)
        return outcome

    async def forget(self, what: str) -> dict[str, Any]:
        """Request deletion of the best matching entry, or of both scopes for "everything".

        Answers ``{"target": "entry" | "everything", "results": [deletion outcome, ...]}``.
        """
        if asks_to_forget_everything(what):
            results = [await self._clear("user")]
            results.append(await self._clear("agent"))
            return {"target": "everything", "results": results}
        found = await self._search(what, limit=10, phase="forget")
        if found.memory_off:
            return {"target": "entry", "results": [_deletion_outcome(found)]}
        if not found.ok:
            return {"target": "entry", "results": [{"status": "failed", "reason": found.reason()}]}
        candidates = matches(what, found.body.get("hits", []))
        if not candidates:
            return {"target": "entry", "results": [{"status": "not_found"}]}
        # A teammate's shared entry can rank first; the service refuses to forget it for this user (404), so the
        # next match is theirs to forget. A few, not all: a request names one thing.
        for entry_id in candidates[:_FORGET_TRIES]:
            reply = await self._call("DELETE", f"/entries/{quote(entry_id, safe='')}", "forget")
            if reply.status != 404:
                break
        return {"target": "entry", "results": [_deletion_outcome(reply, entry_id=entry_id)]}

    async def append(self, kind: str, scope: WriteScope, mem_type: str, content: str, reason: str) -> dict[str, Any]:
        """``POST memory/append`` tagged ``mem_type:*``, the session tag and the agent tag.

        Answers ``{"kind", "status": "stored" | "rejected" | "failed", ...}``; ``rejected`` is a
        refusal for the content (422 ``secret_detected``, 413, 400), which does not stop the run; ``failed``
        (no answer, 5xx, or any other refusal, 429 and 408 included) names the ``idempotency_key``, the ``path``
        and the JSON ``body`` the write was sent with, and ``retry_after`` (seconds) when the answer named it:
        the same body sent again to that path with that key is stored at most once.
        """
        target = self._target
        body: dict[str, Any] = {
            "scope": scope,
            "agent_object_id": target.agent_object_id,
            "content_markdown": content,
            "reason": f"{reason} (Microsoft Agent Framework)",
            "session_id": target.session_id,
            "tags": [f"mem_type:{mem_type}", session_tag(target.session_id), agent_tag(target.agent_object_id)],
        }
        if target.agent_name:
            body["agent_name"] = target.agent_name
        # A fresh key per write: the provider does not retry, but a write that failed after its commit is then
        # stored at most once if it is sent again with the key its outcome names.
        key = new_idempotency_key()
        reply = await self._call("POST", "/append", "write", json_body=body, headers={IDEMPOTENCY_KEY_HEADER: key})
        if reply.memory_off:
            return {"kind": kind, "status": "not_stored", "memory_mode": "off",
                    "reason": str(reply.body.get("message") or "memory is off: nothing was stored")}
        if reply.status == 403 and reply.code in _POLICY_CODES:
            return {"kind": kind, "status": "not_stored", "code": reply.code, "reason": reply.message}
        if reply.ok:
            return {"kind": kind, "status": "stored", "scope": scope, "entry_id": reply.body.get("entry_id")}
        if reply.status in _CONTENT_REFUSALS:
            # Refused for its content (422 secret_detected, 413, 400; logged by _call): report, keep the run.
            return {"kind": kind, "status": "rejected", "code": reply.code, "message": reply.message}
        # Throttled (429), timed out (408), conflicting, unreachable, 5xx...: the write may be sent again, and
        # the service keys an identical request only, so the outcome carries everything needed to resend it.
        failed: dict[str, Any] = {
            "kind": kind, "status": "failed", "reason": reply.reason(), "idempotency_key": key,
            "path": CoreApiClient.memory_path(self._instance_id, "/append"), "body": body}
        if reply.retry_after is not None:
            failed["retry_after"] = reply.retry_after
        return failed

    async def _search(self, words: str, *, limit: int | None = None, phase: str = "recall") -> Reply:
        """``POST memory/search`` for ``words``: the user's words go in the body, never in the URL, which httpx
        logs at INFO in the agent's process and proxies and request telemetry record."""
        return await self._visible("POST", "/search", phase, {
            "q": words[:1024], "limit": self._search_limit if limit is None else limit,
            "agentObjectId": self._target.agent_object_id}, as_body=True)

    async def _visible(
        self, method: str, suffix: str, phase: str, fields: Mapping[str, Any], *, as_body: bool = False
    ) -> Reply:
        """A read of the memory this user may see through the agent: combined, or user scope once the service
        refuses this user the agent's scope (an agent limited to groups the user is not in). ``fields`` go in
        the JSON body when ``as_body``, else in the query string."""

        async def read() -> Reply:
            sent = {**fields, "scope": self.read_scope}
            if as_body:
                return await self._call(method, suffix, phase, json_body=sent)
            return await self._call(method, suffix, phase, params={k: str(v) for k, v in sent.items()})

        reply = await read()
        if self.read_scope == "combined" and reply.status == 403 and reply.code == GROUP_FORBIDDEN:
            self.read_scope = "user"
            log.info("memory-core: this agent's memory is limited to groups the user is not in; "
                     "reading user memory only")
            reply = await read()
        return reply

    async def _clear(self, scope: WriteScope) -> dict[str, Any]:
        body = {"scope": scope, "agent_object_id": self._target.agent_object_id, "confirm": True}
        reply = await self._call("POST", "/clear", "forget", json_body=body)
        return {"scope": scope, **_deletion_outcome(reply)}

    async def _call(
        self,
        method: str,
        suffix: str,
        phase: str,
        *,
        params: Mapping[str, str] | None = None,
        json_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """One request through the CoreAPI client, with ``headers`` beside the run's credentials. Never raises for
        transport or HTTP errors; logs them (no content, no secrets)."""
        path = CoreApiClient.memory_path(self._instance_id, suffix)
        left = self._deadline - asyncio.get_running_loop().time()
        if left <= 0:
            log.warning("memory-core: no time left in this hook (hook_timeout_seconds=%s) for %s %s while %s",
                        self._hook_timeout, method, path, _LOG_PHASES[phase])
            return Reply(None, message=f"the memory service did not answer in time (within {self._hook_timeout:g} s "
                                       "for this turn)", sent=False)
        try:
            # send bounds the whole call (a trickled body included), to what is left of the hook's time at most.
            response = await self._http.send(method, path, {**self._target.headers, **(headers or {})},
                                             params=params, json=json_body, timeout=min(self._timeout, left))
        except CoreApiUnreachable as error:
            cause = type(error.__cause__).__name__ if error.__cause__ is not None else "no answer"
            log.warning("memory-core unreachable while %s (%s %s): %s", _LOG_PHASES[phase], method, path, cause)
            if isinstance(error.__cause__, (TimeoutError, httpx.TimeoutException)):
                return Reply(None, message=f"the memory service did not answer in time ({cause})",
                             sent=not isinstance(error.__cause__, _NOT_SENT))
            return Reply(None, message=f"the memory service could not be reached ({cause})",
                         sent=not isinstance(error.__cause__, _NOT_SENT))
        except MemoryCoreError as error:
            reply = Reply(http_status_of(error) or 500, None, error.code, error.message,
                          retry_after=retry_after_of(error))
            if reply.status == 403 and reply.code in _POLICY_CODES:
                # The operator's agent settings, not a fault: the callers fall back or report memory off.
                log.info("memory-core: %s while %s (%s)", error.message, _LOG_PHASES[phase], error.code)
            elif reply.status in (401, 403):
                log.error("memory-core refused the credentials while %s: %s", _LOG_PHASES[phase], reply.reason())
            elif (reply.status or 500) >= 500:
                log.warning("memory-core failed while %s: %s", _LOG_PHASES[phase], reply.reason())
            elif not (reply.status == 404 and method == "DELETE"):  # a DELETE's 404 is an answer: not found
                log.warning("memory-core refused the request while %s: %s", _LOG_PHASES[phase], reply.reason())
            return reply
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            log.error("memory-core answered %s %s with a body that is not a JSON object", method, path)
            return Reply(None, message="the memory service answered with an unreadable body")
        return Reply(response.status_code, body)


async def guarded(phase: str, work: Awaitable[dict[str, Any]], *, kind: str | None = None) -> dict[str, Any]:
    """``work``'s outcome; an unexpected error is logged and becomes a failure outcome of ``phase``'s shape.

    ``phase`` is ``"recall"``, ``"forget"`` or ``"write"``; a write's failure outcome names its ``kind``.
    """
    try:
        return await work
    except Exception as error:  # keep the agent running whatever the service answered
        log.exception("memory-core: unexpected failure while %s", _LOG_PHASES[phase])
        reason = f"unexpected failure ({type(error).__name__})"
        if phase == "recall":
            return {"status": "unavailable", "reason": reason}
        if phase == "forget":
            return {"target": "entry", "results": [{"status": "failed", "reason": reason}]}
        return {"kind": kind, "status": "failed", "reason": reason}


def _not_read(reply: Reply) -> dict[str, Any]:
    """The recall outcome of a read that brought no memory: memory off, or unavailable."""
    if reply.memory_off:
        return {"status": "off", "reason": str(reply.body.get("notice") or OFF_READ_NOTICE), "memory_mode": "off"}
    if reply.agent_disabled:
        return {"status": "off", "reason": reply.message, "code": AGENT_DISABLED}
    return {"status": "unavailable", "reason": reply.reason()}


def _deletion_outcome(reply: Reply, **extra: str) -> dict[str, Any]:
    """The service's answer to a deletion, as it is."""
    if reply.memory_off:
        return {"status": "not_stored", "reason": OFF_DELETE_REASON, **extra}
    if reply.status == 202 and isinstance(reply.body, dict):
        return {"status": "pending_approval", "request_id": reply.body.get("request_id"),
                "message": reply.body.get("message") or PENDING_APPROVAL_MESSAGE, **extra}
    if reply.ok:
        return {"status": "deleted", **extra}
    if reply.status == 404:
        return {"status": "not_found", **extra}
    if reply.outcome_unknown:
        # The DELETE or clear may have been applied (a lost answer, a 5xx after the commit): never "not deleted".
        return {"status": "unknown", "reason": reply.reason(), **extra}
    return {"status": "failed", "reason": reply.reason(), **extra}
