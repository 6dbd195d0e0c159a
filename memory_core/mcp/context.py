"""What the front established about the current MCP request, for the server and its tools to read.

The only module-level state of the MCP package: three context variables, set by
``memory_core.mcp.front.McpHttpApp`` for the duration of one request (every
request runs in its own context, and tasks the SDK starts for it inherit it).

- ``CURRENT_AUTHENTICATION``: the caller the front authenticated from this
  request's headers, so a tool does not check the same credential again (a
  bearer token's signature is the costly part of a call in entra mode).
- ``CURRENT_GUIDANCE``: the calling agent's settings, read once per request,
  which the server's instructions and tools/list put in their own words.
- ``CURRENT_PLACE``: the place in the caller's share of the worker threads the
  front took (or waited for) before the protocol ran (``stalled.AbandonedCalls.hold``),
  which the request's store calls run in, one after another, until it ends.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory_core.identity.model import Authentication
    from memory_core.mcp.guidance import AgentGuidance
    from memory_core.mcp.stalled import HeldPlace

CURRENT_AUTHENTICATION: ContextVar[Authentication | None] = ContextVar("memory_core_mcp_caller", default=None)
CURRENT_GUIDANCE: ContextVar[AgentGuidance | None] = ContextVar("memory_core_mcp_guidance", default=None)
CURRENT_PLACE: ContextVar[HeldPlace | None] = ContextVar("memory_core_mcp_place", default=None)
