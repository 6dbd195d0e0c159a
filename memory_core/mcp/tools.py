"""The MCP server and its three tools: get_memory, append_memory, clear_memory.

Whose memory a call touches comes only from trusted request headers, never
from the model's arguments, so a prompt cannot steer a call to someone else's
memory:

- the user: X-USER-IDENTITY, believed only with a valid X-API-KEY (as for REST);
- the agent: X-AGENT-OBJECT-ID and X-AGENT-NAME, static values configured on
  the agent's MCP tool (scope=agent needs them; scope=combined without them
  reads user memory only);
- the instance: X-INSTANCE-ID, else the MEMORY_DEFAULT_INSTANCE_ID setting;
- optional provenance: X-SESSION-ID and X-OPERATION-ID, recorded on appends.

Every failure a caller can fix or retry is a tool result with ``isError`` true
whose text is the same message the REST API answers, and whose structured
content is the REST error body ``{"error": {"code", "message"}}``. Anything
unexpected is logged with an incident id and answered with a generic message.
Protocol problems (an unknown tool, a malformed request) are JSON-RPC errors.
"""

# No ``from __future__ import annotations`` here: the SDK reads the tool
# functions' annotations (argument schemas, the Context parameter) at registration.

import json
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from mcp_types import Tool as MCPTool
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from memory_core import __version__
from memory_core.domain.errors import InvalidInput, MemoryCoreError
from memory_core.domain.identity import AgentContext
from memory_core.domain.models import Scope, Share
from memory_core.domain.modes import MEMORY_MODE_HEADER, OFF_READ_NOTICE, OFF_WRITE_NOTICE, memory_is_off
from memory_core.domain.sharing import SharingPolicy
from memory_core.edge.errors import internal_error
from memory_core.identity import Authenticator, AuthMode, identity_json
from memory_core.mcp.backend import CallTarget, MemoryBackend
from memory_core.mcp.context import CURRENT_AUTHENTICATION, CURRENT_GUIDANCE
from memory_core.mcp.guidance import append_description, instructions_for
from memory_core.mcp.memory_tool import register_memory_tool
from memory_core.mcp.output_schemas import compact
from memory_core.wire.budget import MAX_BUDGET_CHARS
from memory_core.wire.custody import SearchResponse
from memory_core.wire.memory import InstanceId, MemoryResponse, NotStoredResponse

log = logging.getLogger("memory_core.mcp")

SERVER_NAME = "memory-core"
TOOL_NAMES = ("get_memory", "append_memory", "clear_memory", "search_memory", "memory")

AGENT_OBJECT_ID_HEADER = "x-agent-object-id"
AGENT_NAME_HEADER = "x-agent-name"
INSTANCE_ID_HEADER = "x-instance-id"
SESSION_ID_HEADER = "x-session-id"
OPERATION_ID_HEADER = "x-operation-id"

MAX_AGENT_OBJECT_ID = 1024
MAX_SHORT_TEXT = 1024

# The seed's "Example agent memory policy", for any agent.
INSTRUCTIONS = (
    "Use memory to personalize future conversations. Retrieve combined memory at the start of a "
    "conversation when relevant. Append only durable preferences, user profile details, repeated "
    "corrections, and long-lived facts. Do not store secrets, credentials, transient requests, or "
    "sensitive personal details unless the user explicitly asks. Use scope=agent for preferences "
    "specific to this agent and scope=user for general preferences useful across agents. "
    "Clear memory only when the user explicitly asks to forget or reset it."
)

# Argument types: the descriptions are the seed's words on scope.
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


def _memory_off(ctx: Context) -> bool:
    """X-MEMORY-MODE: off (the temporary chat): nothing is read or stored, and the answer says so."""
    return memory_is_off((ctx.headers or {}).get(MEMORY_MODE_HEADER))
Reason = Annotated[str | None, Field(description="Optional provenance note", max_length=MAX_SHORT_TEXT)]
DEFAULT_MAX_CHARS = 16_000
MaxChars = Annotated[
    int,
    Field(description=f"Most characters of memory to answer (newest first); default {DEFAULT_MAX_CHARS}. "
          "0 answers only the note on what is stored.", ge=0, le=MAX_BUDGET_CHARS),
]
Confirm = Annotated[
    bool,
    Field(description="Must be true. Use only when the user explicitly asks to forget/reset memory."),
]

_INSTANCE_ID = TypeAdapter(InstanceId)


def _header(headers: Mapping[str, str], name: str, label: str, max_length: int) -> str | None:
    value = (headers.get(name) or "").strip()
    if not value:
        return None
    if len(value) > max_length:
        raise InvalidInput(f"the {label} header must be at most {max_length} characters", code="invalid_header")
    return value


def resolve_target(
    headers: Mapping[str, str] | None, auth: Authenticator, default_instance_id: str | None
) -> CallTarget:
    """The caller, instance and agent of a call, from its HTTP headers (``headers`` is case-insensitive).

    The caller is authenticated exactly as for REST (any credential MEMORY_AUTH_MODE
    accepts: bearer token, platform identity context, App Service principal, key,
    local), or is the one the front already authenticated from these same headers
    (``CURRENT_AUTHENTICATION``). Raises ``Unauthenticated`` as the REST API does,
    and ``InvalidInput`` for an unusable instance or an over-long header.
    """
    headers = headers if headers is not None else {}
    authentication = CURRENT_AUTHENTICATION.get() or auth.authenticate(headers)
    caller = authentication.caller
    instance = (headers.get(INSTANCE_ID_HEADER) or "").strip() or (default_instance_id or "").strip()
    if not instance:
        raise InvalidInput(
            "no instance: send the X-INSTANCE-ID header or set MEMORY_DEFAULT_INSTANCE_ID",
            code="instance_required",
        )
    try:
        instance = _INSTANCE_ID.validate_python(instance)
    except ValidationError:
        raise InvalidInput(
            "instanceId must be 1-128 characters: letters, digits, '.', '_', ':' or '-'", code="invalid_instance_id"
        ) from None
    object_id = _header(headers, AGENT_OBJECT_ID_HEADER, "X-AGENT-OBJECT-ID", MAX_AGENT_OBJECT_ID)
    name = _header(headers, AGENT_NAME_HEADER, "X-AGENT-NAME", MAX_SHORT_TEXT)
    return CallTarget(
        caller=caller,
        identity_header=(
            authentication.credential or "" if authentication.mode is AuthMode.KEY else identity_json(caller)
        ),
        instance_id=instance,
        agent=AgentContext(object_id, name) if object_id else None,
        session_id=_header(headers, SESSION_ID_HEADER, "X-SESSION-ID", MAX_SHORT_TEXT),
        operation_id=_header(headers, OPERATION_ID_HEADER, "X-OPERATION-ID", MAX_SHORT_TEXT),
        authentication=authentication,
    )


def _effective_scope(target: CallTarget, scope: Scope) -> Scope:
    """The scope to use: combined without an agent header reads user memory; agent without one is an error."""
    if target.agent is not None or scope is Scope.USER:
        return scope
    if scope is Scope.COMBINED:
        return Scope.USER
    raise InvalidInput(
        f"scope={scope.value} needs the agent: configure the X-AGENT-OBJECT-ID header "
        "(and X-AGENT-NAME) on this agent's MCP tool",
        code="agent_required",
    )


def error_result(code: str, message: str) -> CallToolResult:
    """A tool error: ``message`` as text, the REST error body as structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text=message)],
        structured_content={"error": {"code": code, "message": message}},
        is_error=True,
    )


def result_for_error(error: BaseException) -> CallToolResult:
    """The one place a raised error becomes a tool result (mirrors ``edge.errors.response_for_error``)."""
    if isinstance(error, MemoryCoreError):
        return error_result(error.code, error.message)
    code, message = internal_error(error)
    return error_result(code, message)


def _json_result(response: BaseModel) -> CallToolResult:
    data = response.model_dump(mode="json")
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


def _markdown_result(markdown: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=markdown)])


class MemoryMCPServer(MCPServer):
    """MCPServer whose tool-call failures read like the REST API's.

    An unknown tool is a JSON-RPC invalid-params error; arguments that do not
    match the input schema are a tool error "invalid arguments: <field>: <reason>"
    (never the rejected value); an unexpected failure is a generic internal
    error with an incident id.
    """

    async def list_tools(self) -> list[MCPTool]:
        """The tools, with append_memory's description telling this agent whether to auto-append."""
        tools = await super().list_tools()
        guidance = CURRENT_GUIDANCE.get()
        if guidance is None:
            return tools
        return [
            t.model_copy(update={"description": append_description(t.description or "", guidance)})
            if t.name == "append_memory" else t
            for t in tools
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        """The one error path of every tool: tools raise, and this turns what they raise into a result."""
        if name not in TOOL_NAMES:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}")
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as error:
            return result_for_error(error.__cause__ or error)
        except ToolError as error:
            cause = error.__cause__
            if isinstance(cause, ValidationError):
                first = cause.errors(include_input=False, include_url=False)[0]
                where = ".".join(str(part) for part in first["loc"]) or "arguments"
                return error_result("validation_error", f"invalid arguments: {where}: {first['msg']}")
            return result_for_error(error)


def _instructions_follow_the_agent(server: MCPServer) -> None:
    """Make the instructions sent at initialize carry the calling agent's guidance.

    The SDK reads ``instructions`` from its low-level server when a session
    starts (each request, in stateless mode); a property on a per-server
    subclass answers the base text plus the guidance of the current request.
    """
    low = server._lowlevel_server  # private API: mcp is pinned to 2.x (requirements.txt)
    base = low.instructions or ""
    low.__class__ = type(
        "AgentAwareLowLevelServer",
        (low.__class__,),
        {"instructions": property(lambda _self: instructions_for(base, CURRENT_GUIDANCE.get()))},
    )


UNSERVED_METHODS = (
    "prompts/list", "prompts/get", "resources/list", "resources/templates/list", "resources/read",
    "resources/subscribe", "resources/unsubscribe", "subscriptions/listen",
)
"""Methods this server does not serve; they answer JSON-RPC -32601 (method not found)."""


def _serve_only_tools(server: MCPServer) -> None:
    """Advertise and serve tools only, with no change notifications.

    A stateless, scaled-out endpoint behind the Functions HTTP bridge (which
    buffers whole responses) can deliver no list-changed or resource-updated
    event, so it offers none: capabilities are ``{"tools": {"listChanged":
    false}}`` in every protocol era, and ``subscriptions/listen`` is refused
    with method-not-found instead of opening a stream that would never end.
    Tool descriptions that follow the agent's settings are computed on each
    tools/list; they are not a change event. There are no prompts or resources.
    """
    handlers = server._lowlevel_server._request_handlers  # private: mcp is pinned to 2.x; see requirements.txt
    for method in UNSERVED_METHODS:
        handlers.pop(method, None)


@contextmanager
def _root_logging_kept() -> Iterator[None]:
    """MCPServer() calls logging.basicConfig(); leave the host's root logger as it was."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield
    finally:
        root.setLevel(level)
        root.handlers[:] = handlers


def build_server(
    backend: MemoryBackend, auth: Authenticator, default_instance_id: str | None
) -> MemoryMCPServer:
    """The MCP server with exactly the three memory tools, calling ``backend``."""
    with _root_logging_kept():
        server = MemoryMCPServer(
            name=SERVER_NAME,
            title="memory-core",
            description="Personalized memory for AI agents: user and agent memory as markdown.",
            instructions=INSTRUCTIONS,
            version=__version__,
            # No subscriptions/listen: see _serve_only_tools.
            subscriptions=False,
        )

    _instructions_follow_the_agent(server)
    _serve_only_tools(server)

    def target_for(ctx: Context, scope: Scope) -> tuple[CallTarget, Scope]:
        target = resolve_target(ctx.headers, auth, default_instance_id)
        return target, _effective_scope(target, scope)

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
            return _markdown_result(OFF_READ_NOTICE)
        response = await backend.get(*target, SharingPolicy.named(memory_sharing), max_chars)
        # The note about what the budget left out follows the memory, outside the budget.
        notes = [response.content_markdown.rstrip("\n")] if response.content_markdown else []
        return _markdown_result("\n\n".join([*notes, response.notice]) if response.notice else response.content_markdown)

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
            return _json_result(MemoryResponse(
                scope=target[1], upn=caller.upn, user_name=caller.user_name, name=caller.name,
                agent_object_id=None, agent_name=None, content_markdown="", created_on=None, updated_on=None,
                memory_mode="off", notice=OFF_WRITE_NOTICE,
            ))
        response = await backend.append(*target, memory, reason, Share(share))
        return _json_result(response)

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
            return _json_result(NotStoredResponse(message=OFF_WRITE_NOTICE))
        response = await backend.clear(*target, confirm=confirm)
        return _json_result(response)

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
        limit: Annotated[int, Field(description="Most hits to return", ge=1, le=100)] = 10,
        memory_sharing: MemorySharing = None,
    ) -> Annotated[CallToolResult, SearchResponse]:
        target = target_for(ctx, Scope(scope))
        if _memory_off(ctx):
            return _json_result(SearchResponse(query=query, hits=[], notice=OFF_READ_NOTICE))
        response = await backend.search(*target, query, list(tags), limit, SharingPolicy.named(memory_sharing))
        return _json_result(response)

    # Claude's memory tool (memory_20250818), in its own module.
    register_memory_tool(
        server, backend, lambda ctx: resolve_target(ctx.headers, auth, default_instance_id), result_for_error
    )
    _compact_output_schemas(server)
    return server


def _compact_output_schemas(server: MCPServer) -> None:
    """Publish each tool's output schema in its compact form (see output_schemas.compact).

    Results are still checked against the pydantic model (``output_model``), not the schema.
    """
    for tool in server._tool_manager.list_tools():  # private: mcp is pinned to 2.x; see requirements.txt
        metadata = tool.fn_metadata
        if metadata.output_schema is not None:
            metadata.output_schema = compact(metadata.output_schema)
