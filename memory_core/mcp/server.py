"""The MCP server as memory-core runs it: one error path, tools only, instructions that follow the agent.

Callers may rely on (``new_server``):

- an unknown tool is a JSON-RPC invalid-params error; arguments that do not match a
  tool's input schema are a tool error "invalid arguments: <field>: <reason>" (never
  the rejected value); any other failure a tool raises is a tool result through
  ``tool_results.result_for_error``; protocol problems are JSON-RPC errors;
- tools only: no prompts, resources or subscriptions, and no change notifications;
- the instructions at initialize and append_memory's description carry the calling
  agent's guidance (``context.CURRENT_GUIDANCE``);
- building a server leaves the host's root logger as it was;
- the SDK's OpenTelemetry span of each request is made only while a tracer
  provider is set (``SpansWhenTraced``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, InputRequiredResult
from mcp_types import Tool as MCPTool
from opentelemetry import trace
from pydantic import ValidationError

from memory_core import __version__
from memory_core.mcp.context import CURRENT_GUIDANCE
from memory_core.mcp.guidance import append_description, instructions_for
from memory_core.mcp.output_schemas import compact
from memory_core.mcp.tool_results import error_result, result_for_error
from memory_core.wire.field_names import field_name

SERVER_NAME = "memory-core"
TOOL_NAMES = ("get_memory", "append_memory", "clear_memory", "search_memory", "memory")
"""Every tool the server registers (``tools.build_server``, ``memory_tool``); call_tool refuses any other name."""


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
                where = field_name(first["loc"], whole="arguments")
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


class SpansWhenTraced:
    """The SDK's OpenTelemetry middleware, run only while a tracer provider is set.

    With none set (the default: memory-core configures no telemetry), the SDK's
    span goes nowhere, yet opening it and making it current costs about 0.02 ms
    of a 0.3 ms tool call over stdio (docs/performance.md). Asked per request,
    so a provider set after the server is built (``opentelemetry-instrument``,
    Azure Monitor) gets every span from then on.
    """

    def __init__(self, spans: OpenTelemetryMiddleware) -> None:
        self._spans = spans

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            return await call_next(ctx)
        return await self._spans(ctx, call_next)


def _spans_only_when_traced(server: MCPServer) -> None:
    """Wrap the SDK's OpenTelemetry middleware in ``SpansWhenTraced``."""
    low = server._lowlevel_server  # private API: mcp is pinned to 2.x (requirements.txt)
    low.middleware[:] = [SpansWhenTraced(m) if isinstance(m, OpenTelemetryMiddleware) else m for m in low.middleware]


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


def new_server(instructions: str) -> MemoryMCPServer:
    """A server with no tools yet, shaped as the module says; register tools, then ``compact_output_schemas``."""
    with _root_logging_kept():
        server = MemoryMCPServer(
            name=SERVER_NAME,
            title="memory-core",
            description="Personalized memory for AI agents: user and agent memory as markdown.",
            instructions=instructions,
            version=__version__,
            # No subscriptions/listen: see _serve_only_tools.
            subscriptions=False,
        )
    _instructions_follow_the_agent(server)
    _serve_only_tools(server)
    _spans_only_when_traced(server)
    return server


def compact_output_schemas(server: MCPServer) -> None:
    """Publish each tool's output schema in its compact form (see output_schemas.compact), and stop the SDK
    validating each answer against the model it was made from.

    Every tool answers a ``CallToolResult`` whose structured content is a model's ``model_dump``
    (``tool_results.json_result``): the SDK's check of it against that same model (``output_model``,
    ``FuncMetadata.convert_result``) could not fail, and cost about 25 µs of every append's answer
    (docs/performance.md, thirty-sixth session). With no ``output_model`` the SDK still publishes the schema,
    and a client still checks each answer against it (the official client does). A tool returning anything but
    a ``CallToolResult`` would lose its structured content, so one is refused here (``TypeError``).
    """
    for tool in server._tool_manager.list_tools():  # private: mcp is pinned to 2.x; see requirements.txt
        metadata = tool.fn_metadata
        if metadata.output_schema is not None:
            if metadata.output_model is not None and not _answers_call_tool_results(tool.fn):
                raise TypeError(f"tool {tool.name} publishes an output schema but does not answer a CallToolResult")
            metadata.output_schema = compact(metadata.output_schema)
            metadata.output_model = None


def _answers_call_tool_results(fn: Any) -> bool:
    """Whether ``fn``'s return annotation is ``CallToolResult`` (``Annotated[CallToolResult, Model]`` for a tool
    with an output schema)."""
    returns = get_type_hints(fn, include_extras=True).get("return")
    return returns is CallToolResult or (get_origin(returns) is Annotated and get_args(returns)[0] is CallToolResult)
