"""Wire shapes of the memory tool: the memory_20250818 commands and the answer.

The six command models mirror the anthropic SDK's ``BetaMemoryTool20250818*Command``
types field for field (tests/memory_tool/test_schema.py compares them), so a
``tool_use`` input from Claude is a valid body as it is.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, TypeAdapter

from memory_core.wire.memory import AgentName, AgentObjectId

ShortText = Annotated[str, Field(max_length=1024)]


class CommandBody(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ViewCommand(CommandBody):
    command: Literal["view"]
    path: str = Field(description="A directory or file under /memories")
    view_range: list[StrictInt] | None = Field(default=None, description="[start, end] lines, 1-based; end -1 is the last")


class CreateCommand(CommandBody):
    command: Literal["create"]
    path: str
    file_text: str


class StrReplaceCommand(CommandBody):
    command: Literal["str_replace"]
    path: str
    old_str: str
    new_str: str


class InsertCommand(CommandBody):
    command: Literal["insert"]
    path: str
    insert_line: StrictInt
    insert_text: str


class DeleteCommand(CommandBody):
    command: Literal["delete"]
    path: str


class RenameCommand(CommandBody):
    command: Literal["rename"]
    old_path: str
    new_path: str


MemoryCommand = Annotated[
    ViewCommand | CreateCommand | StrReplaceCommand | InsertCommand | DeleteCommand | RenameCommand,
    Field(discriminator="command"),
]
COMMAND_ADAPTER: TypeAdapter[Any] = TypeAdapter(MemoryCommand)
COMMAND_MODELS: dict[str, type[CommandBody]] = {
    "view": ViewCommand, "create": CreateCommand, "str_replace": StrReplaceCommand,
    "insert": InsertCommand, "delete": DeleteCommand, "rename": RenameCommand,
}


def command_input_schema() -> dict[str, Any]:
    """The memory_20250818 command schema as one JSON object schema (what MCP wants of a tool's input).

    One variant per command under ``oneOf``, each with its own required fields;
    the top level lists every property so simple clients can show them.
    """
    variants = [model.model_json_schema() for model in COMMAND_MODELS.values()]
    properties: dict[str, Any] = {}
    for variant in variants:
        variant.pop("title", None)
        for name, prop in variant["properties"].items():
            prop.pop("title", None)
            if name != "command":
                properties.setdefault(name, prop)
    properties = {
        "command": {"type": "string", "enum": list(COMMAND_MODELS), "description": "The memory operation"},
        **properties,
    }
    return {"type": "object", "properties": properties, "required": ["command"], "oneOf": variants}


class MemoryFileQuery(BaseModel):
    """Which agent is calling (optional): its own memory is mounted at /memories/agent."""

    model_config = ConfigDict(extra="ignore")
    agentObjectId: AgentObjectId | None = None
    agentName: AgentName | None = None


class MemoryFileResponse(BaseModel):
    """The memory tool's answer: ``result`` is the text Claude sees."""

    result: str = Field(description="The text to hand back to the model as the tool result")
    status: Literal["ok", "pending_approval"] = Field(
        default="ok", description="pending_approval: content this command removed awaits an operator's approval"
    )
    request_ids: list[str] = Field(default_factory=list, description="The deletion requests opened, if any")
