"""The memory tools of the MCP server: get_memory, append_memory, clear_memory, search_memory.

``build_server`` answers the server (``server.new_server``) with these tools and Claude's
memory tool (``memory_tool``) registered. Every tool resolves whose memory it touches
from trusted request headers only (``call_targets``), answers X-MEMORY-MODE: off without
reading or storing anything, and raises the domain's errors, which the server turns
into tool results (``tool_results``): every failure a caller can fix or retry is a
result with ``isError`` true and the REST API's message and error body.
"""

# No ``from __future__ import annotations`` here: the SDK reads the tool functions'
# annotations (argument schemas, the Context parameter) at registration.

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from memory_core.domain.models import Scope, Share
from memory_core.domain.modes import MEMORY_MODE_HEADER, OFF_READ_NOTICE, OFF_WRITE_NOTICE, memory_is_off
from memory_core.domain.sharing import SharingPolicy
from memory_core.identity import Authenticator
from memory_core.mcp.backend import CallTarget, MemoryBackend
from memory_core.mcp.call_targets import MAX_SHORT_TEXT, effective_scope, resolve_target
from memory_core.mcp.memory_tool import register_memory_tool
from memory_core.mcp.server import MemoryMCPServer, compact_output_schemas, new_server
from memory_core.mcp.tool_results import json_result, markdown_result, result_for_error
from memory_core.wire.budget import MAX_BUDGET_CHARS
from memory_core.wire.custody import SearchResponse
from memory_core.wire.memory import MemoryResponse, NotStoredResponse

# The seed's "Example agent memory policy", for any agent.
INSTRUCTIONS = (
    "Use memory to personalize future conversations. Retrieve combined memory at the start of a "
    "conversation when relevant. Append only durable preferences, user profile details, repeated "
    "corrections, and long-lived facts. Do not store secrets, credentials, transient requests, or "
    "sensitive personal details unless the user explicitly asks. Use scope=agent for preferences "
    "specific to this agent and scope=user for general preferences useful across agents. "
    "Clear memory only when the user explicitly asks to forget or reset it."
)

# Argument types: the descriptions are the seed's words on scope. Every boolean and integer argument
# is strict (a JSON boolean, a JSON integer): the SDK validates arguments in lax mode, which would
# read "yes" or 1 as true and "100" or true as a number. The input schema is unchanged by this.
GetScope = Annotated[
    Literal["user", "agent", "combined"],
    Field(
        description='"combined" returns user + agent memory; "user" returns cross-agent memory; '
        '"agent" returns this agent only.'
    ),
]
AppendScope = Annotated[
    Literal["user", "agent"],
    Field(description='"user" = across all agents; "agent" = this agent only'),
]
ClearScope = Annotated[
    Literal["user", "agent"],
    Field(description='"user" clears cross-agent memory; "agent" clears this agent\'s memory only.'),
]
MemoryText = Annotated[str, Field(description="Markdown text to append")]
MemorySharing = Annotated[
    Literal["private", "team", "legacy"] | None,
    Field(description="Sharing policy for this read: private (own memory), team (plus entries teammates shared), "
          "legacy (plus legacy entries). Refused unless the deployment allows per-call overrides."),
]
ShareArg = Annotated[
    Literal["private", "team"],
    Field(description='"team" shares this memory with users of the same instance (for agent scope, of this agent)'),
]
Reason = Annotated[str | None, Field(description="Optional provenance note", max_length=MAX_SHORT_TEXT)]
DEFAULT_MAX_CHARS = 16_000
MaxChars = Annotated[
    int,
    Field(description=f"Most characters of memory to answer (newest first); default {DEFAULT_MAX_CHARS}. "
          "0 answers only the note on what is stored.", ge=0, le=MAX_BUDGET_CHARS, strict=True),
]
Confirm = Annotated[
    bool,
    Field(description="Must be true. Use only when the user explicitly asks to forget/reset memory.", strict=True),
]


def _memory_off(ctx: Context) -> bool:
    """X-MEMORY-MODE: off (the temporary chat): nothing is read or stored, and the answer says so."""
    return memory_is_off((ctx.headers or {}).get(MEMORY_MODE_HEADER))


def build_server(
    backend: MemoryBackend, auth: Authenticator, default_instance_id: str | None
) -> MemoryMCPServer:
    """The MCP server with exactly its tools (``server.TOOL_NAMES``), calling ``backend``."""
    server = new_server(INSTRUCTIONS)

    def target_for(ctx: Context, scope: Scope) -> tuple[CallTarget, Scope]:
        target = resolve_target(ctx.headers, auth, default_instance_id)
        return target, effective_scope(target, scope)

    @server.tool(
        description="Recall what the user asked you to remember: call it at the start of a conversation, or "
        "whenever their preferences, profile or past corrections would change your answer. Answers the saved "
        "memory as markdown: user memory, this agent's memory, or both (combined, the default; user memory "
        "alone when no agent is configured). Empty when nothing is saved. "
        f"Answers at most max_chars characters (default {DEFAULT_MAX_CHARS}) of memory, newest entries first "
        "(combined: split evenly between user and agent memory); a closing note says how many older entries "
        "were left out and their dates. For more, call again with a larger max_chars; to find one fact in a "
        "long memory, use search_memory instead.",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    async def get_memory(
        ctx: Context, scope: GetScope = "combined", memory_sharing: MemorySharing = None,
        max_chars: MaxChars = DEFAULT_MAX_CHARS,
    ) -> CallToolResult:
        target = target_for(ctx, Scope(scope))
        if _memory_off(ctx):
            return markdown_result(OFF_READ_NOTICE)
        response = await backend.get(*target, SharingPolicy.named(memory_sharing), max_chars)
        # The note about what the budget left out follows the memory, outside the budget.
        notes = [response.content_markdown.rstrip("\n")] if response.content_markdown else []
        return markdown_result("\n\n".join([*notes, response.notice]) if response.notice else response.content_markdown)

    @server.tool(
        description="Save something worth remembering in later conversations: a durable preference, a user "
        "profile detail, a repeated correction or a long-lived fact. Do not save secrets, credentials, one-off "
        "requests or sensitive personal details unless the user explicitly asks. Use scope=user for what helps "
        "every agent, scope=agent for what only this agent needs. Answers JSON: the memory's metadata and the "
        "section just added.",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
        ),
    )
    async def append_memory(
        ctx: Context, scope: AppendScope, memory: MemoryText, reason: Reason = None, share: ShareArg = "private"
    ) -> Annotated[CallToolResult, MemoryResponse]:
        target = target_for(ctx, Scope(scope))
        if _memory_off(ctx):
            # append_memory publishes MemoryResponse as its output schema, so the notice rides in it.
            caller = target[0].caller
            return json_result(MemoryResponse(
                scope=target[1], upn=caller.upn, user_name=caller.user_name, name=caller.name,
                agent_object_id=None, agent_name=None, content_markdown="", created_on=None, updated_on=None,
                memory_mode="off", notice=OFF_WRITE_NOTICE,
            ))
        response = await backend.append(*target, memory, reason, Share(share))
        return json_result(response)

    @server.tool(
        description="Forget everything saved in one scope, only when the user explicitly asks you to forget "
        "or reset their memory (never to tidy up). The memory profile is kept. Refuses unless confirm=true. "
        "Answers JSON: the "
        "emptied scope, or, where deletions need operator approval, "
        '{"status": "pending_approval", "request_id", "message"} (the memory is hidden at once).',
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )
    async def clear_memory(ctx: Context, scope: ClearScope, confirm: Confirm = False) -> CallToolResult:
        target = target_for(ctx, Scope(scope))
        if _memory_off(ctx):
            return json_result(NotStoredResponse(message=OFF_WRITE_NOTICE))
        # A clear is the person's custody of what is stored, which an agent's settings never take away (the
        # console clears a disabled agent's memory). MCP is an agent's own channel, so its clear first reads as
        # the agent (an empty budget reads nothing): a disabled agent is refused here as for every other tool,
        # on either backend.
        await backend.get(*target, None, 0)
        response = await backend.clear(*target, confirm=confirm)
        return json_result(response)

    @server.tool(
        description="Look up specific saved memories by words when you need one fact rather than the whole "
        "memory (lexical BM25 ranking, best first). "
        '"combined" (the default) searches user + this agent\'s memory; "user" cross-agent memory only; '
        '"agent" this agent only. Optional tags (e.g. mem_type:user-profile) must all match. Answers JSON: '
        "the hits, each with its score and entry.",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    async def search_memory(
        ctx: Context,
        query: Annotated[str, Field(description="Words to look for", max_length=1024)],
        scope: GetScope = "combined",
        tags: Annotated[list[str], Field(description="Tags every hit must carry", max_length=32)] = [],  # noqa: B006
        limit: Annotated[int, Field(description="Most hits to return", ge=1, le=100, strict=True)] = 10,
        memory_sharing: MemorySharing = None,
    ) -> Annotated[CallToolResult, SearchResponse]:
        target = target_for(ctx, Scope(scope))
        if _memory_off(ctx):
            return json_result(SearchResponse(query=query, hits=[], notice=OFF_READ_NOTICE))
        response = await backend.search(*target, query, list(tags), limit, SharingPolicy.named(memory_sharing))
        return json_result(response)

    # Claude's memory tool (memory_20250818), in its own module.
    register_memory_tool(
        server, backend, lambda ctx: resolve_target(ctx.headers, auth, default_instance_id), result_for_error
    )
    compact_output_schemas(server)
    return server
