"""Per-agent guidance for MCP clients: the operator's agent settings in instructions and tool descriptions.

The front resolves the calling agent's settings for the requests whose answer carries them
(``answers_with_guidance``) and puts them in a context variable
(``memory_core.mcp.context.CURRENT_GUIDANCE``); the server's instructions and its tools/list read
them from there, so one stateless server answers every agent in its own words.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from memory_core.domain.errors import Unavailable

if TYPE_CHECKING:
    from memory_core.mcp.backend import MemoryBackend
    from memory_core.settings import Settings

GUIDANCE_TIME_LIMIT_SECONDS = 5.0
"""Longest a request waits for the agent's settings (a store read, normally milliseconds) before it is
answered with the base text instead (``guidance_within``); a front gives it at most half its own bound."""

GUIDED_METHODS = frozenset({"initialize", "server/discover", "tools/list"})
"""The JSON-RPC methods whose answer carries the agent's guidance: the instructions (initialize in the
handshake era, server/discover in the stateless one) and append_memory's description (tools/list)."""


def answers_with_guidance(message: Any) -> bool:
    """True when the answer to ``message`` (a decoded JSON-RPC body) may carry the agent's guidance.

    Only a single request for another method (a tools/call, a ping, a notification) is False: it
    answers the same whatever the agent's settings, so the settings are not read for it. Anything
    else (a guided method, a batch, a body the SDK will refuse) is True, so no answer that shows the
    guidance is ever built without it.
    """
    return not isinstance(message, dict) or message.get("method") in GUIDED_METHODS


@dataclass(frozen=True, slots=True)
class AgentGuidance:
    policy_instructions: str | None
    auto_append: bool
    default_write_scope: str


def instructions_for(base: str, guidance: AgentGuidance | None) -> str:
    """The server instructions, extended with the agent's policy and write habits."""
    if guidance is None:
        return base
    parts = [base]
    if guidance.policy_instructions:
        parts.append(f"Memory policy for this agent: {guidance.policy_instructions}")
    parts.append(_append_advice(guidance))
    return "\n\n".join(parts)


def append_description(base: str, guidance: AgentGuidance | None) -> str:
    return base if guidance is None else f"{base} {_append_advice(guidance)}"


def _append_advice(guidance: AgentGuidance) -> str:
    scope = "agent" if guidance.default_write_scope == "agent" else "user"
    if guidance.auto_append:
        return (f"This agent auto-appends: call append_memory on your own initiative for durable facts "
                f"and preferences (default scope={scope}).")
    return f"This agent does not auto-append: call append_memory only when the user asks (default scope={scope})."


def guidance_reader(
    settings: Settings, backend: MemoryBackend
) -> Callable[[Mapping[str, str]], Awaitable[AgentGuidance | None]]:
    """Reads the calling agent's guidance from a request's (lower-case) headers, for either front.

    None without an agent (X-AGENT-OBJECT-ID) or instance (X-INSTANCE-ID, else
    MEMORY_DEFAULT_INSTANCE_ID), and when the settings cannot be read (logged: the
    answer then carries the base text, it never fails for want of guidance).
    """

    async def read(headers: Mapping[str, str]) -> AgentGuidance | None:
        agent = headers.get("x-agent-object-id", "").strip()
        instance = headers.get("x-instance-id", "").strip() or settings.memory_default_instance_id
        if not agent or not instance:
            return None
        try:
            return await backend.guidance(instance, agent)
        except Unavailable as refused:  # a store down or stalled (the read refused, not started): said, not traced
            logging.getLogger("memory_core.mcp").warning("agent settings unavailable for guidance: %s", refused.message)
            return None
        except Exception:
            logging.getLogger("memory_core.mcp").warning("agent settings unavailable for guidance", exc_info=True)
            return None

    return read


async def guidance_within(
    read: Callable[[Mapping[str, str]], Awaitable[AgentGuidance | None]], headers: Mapping[str, str], seconds: float
) -> AgentGuidance | None:
    """``read(headers)``, or None when it takes longer than ``seconds``: the read is cancelled (logged) and
    the answer carries the base text, as when the settings cannot be read at all (``guidance_reader``)."""
    with anyio.move_on_after(seconds):
        return await read(headers)
    logging.getLogger("memory_core.mcp").warning(
        "agent settings not read within %g s; answering with the base guidance", seconds)
    return None
