"""The MCP tool ``memory``: Claude's memory tool (memory_20250818) for any MCP host.

Its input schema is the memory_20250818 command schema, so a host can hand a
model's memory commands straight through; its text results are those of the
anthropic SDK's reference backend. Whose memory it touches comes from the same
trusted headers as every other tool (see ``memory_core.mcp.call_targets``).
"""

# No ``from __future__ import annotations``: the SDK reads the tool function's annotations.

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, StrictInt, ValidationError

from memory_core.domain.errors import InvalidInput
from memory_core.domain.modes import (
    MEMORY_MODE_HEADER,
    OFF_READ_NOTICE,
    OFF_WRITE_NOTICE,
    memory_is_off,
)
from memory_core.mcp.backend import CallTarget, MemoryBackend
from memory_core.wire.field_names import field_name
from memory_core.wire.memory_files import COMMAND_ADAPTER, command_input_schema

TOOL_NAME = "memory"
DESCRIPTION = (
    "Claude's memory tool (memory_20250818) over the user's saved memory: files under /memories. "
    "Commands: view (a directory listing or a file with line numbers), create, str_replace, insert, "
    "delete, rename. /memories/agent holds this agent's own memory; /memories/appended shows memory "
    "saved with append_memory. Deleting or overwriting text may wait for an operator's approval: "
    "the answer says so, and the text is hidden meanwhile."
)


def register_memory_tool(
    server: MCPServer,
    backend: MemoryBackend,
    resolve: Callable[[Context], CallTarget],
    on_error: Callable[[BaseException], CallToolResult],
) -> None:
    """Add the ``memory`` tool to ``server``; ``resolve`` finds the caller from a call's headers."""

    @server.tool(
        name=TOOL_NAME,
        description=DESCRIPTION,
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
        ),
    )
    async def memory(
        ctx: Context,
        command: Literal["view", "create", "str_replace", "insert", "delete", "rename"],
        path: Annotated[str | None, Field()] = None,
        view_range: list[StrictInt] | None = None,  # strict: the SDK's lax validation would take "2" or true
        file_text: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: StrictInt | None = None,
        insert_text: str | None = None,
        old_path: str | None = None,
        new_path: str | None = None,
    ) -> CallToolResult:
        given: dict[str, Any] = {
            "command": command, "path": path, "view_range": view_range, "file_text": file_text,
            "old_str": old_str, "new_str": new_str, "insert_line": insert_line, "insert_text": insert_text,
            "old_path": old_path, "new_path": new_path,
        }
        try:
            target = resolve(ctx)
            try:
                parsed = COMMAND_ADAPTER.validate_python({k: v for k, v in given.items() if v is not None})
            except ValidationError as error:
                first = error.errors(include_input=False, include_url=False)[0]
                where = field_name(first["loc"][1:], whole="arguments")
                raise InvalidInput(f"invalid arguments: {where}: {first['msg']}", code="validation_error") from None
            if memory_is_off((ctx.headers or {}).get(MEMORY_MODE_HEADER)):
                return CallToolResult(content=[TextContent(
                    type="text", text=OFF_READ_NOTICE if command == "view" else OFF_WRITE_NOTICE)])
            answer = await backend.memory_command(target, parsed.model_dump(exclude_none=True))
        except Exception as error:
            return on_error(error)
        return CallToolResult(
            content=[TextContent(type="text", text=answer.result)], structured_content=answer.model_dump(mode="json")
        )

    # Publish the memory_20250818 command schema itself (the signature above only receives it).
    tool = server._tool_manager.get_tool(TOOL_NAME)
    assert tool is not None
    tool.parameters = command_input_schema()
