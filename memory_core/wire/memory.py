"""Request, query and response models of the CoreAPI memory endpoints (snake_case JSON)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StringConstraints

from memory_core.domain.hidden_text import invisible_in_label
from memory_core.domain.identity import INSTANCE_ID_PATTERN, invisible_in_identifier
from memory_core.domain.models import Scope
from memory_core.domain.views import ImportMode, MemoryView
from memory_core.wire.budget import MAX_BUDGET_CHARS, BudgetModel, omission_notice

InstanceId = Annotated[str, StringConstraints(pattern=INSTANCE_ID_PATTERN)]
# No surrounding whitespace: what the document says is what is accepted (no silent trimming).
def _visible_identifier(value: str) -> str:
    """An agent id from a body or a query, refused when it would show as something else (``invisible_in_identifier``).
    MCP's X-AGENT-OBJECT-ID header (latin-1: a soft hyphen or a C1 control) is refused the same way by
    ``mcp.call_targets``."""
    invisible = invisible_in_identifier(value)
    if invisible is not None:
        raise ValueError(f"holds a character that draws nothing or reorders text (U+{ord(invisible):04X})")
    return value


AgentObjectId = Annotated[
    str, StringConstraints(min_length=1, max_length=1024, pattern=r"^\S(?:.*\S)?$"), AfterValidator(_visible_identifier)
]
# A group an agent's memory is limited to (agent settings): matched against the caller's group claims, and
# shown to operators, so held to the same rule as an agent id.
GroupId = Annotated[
    str, StringConstraints(min_length=1, max_length=256, pattern=r"^\S(?:.*\S)?$"), AfterValidator(_visible_identifier)
]
ShortText = Annotated[str, StringConstraints(max_length=1024)]


def _visible_label(value: str) -> str:
    """An agent's name, refused when it holds a character that draws nothing or formats text, even one alone
    (``invisible_in_label``: "Hel\u200bper" reads as another agent's "Helper"). Writes are refused the same way
    by the domain (``new_entries.refuse_invisible_labels``), which MCP's X-AGENT-NAME reaches too."""
    invisible = invisible_in_label(value)
    if invisible is not None:
        raise ValueError(f"holds a character that draws nothing or formats text (U+{ord(invisible):04X})")
    return value


AgentName = Annotated[str, StringConstraints(max_length=1024), AfterValidator(_visible_label)]
# No comma: a search names the tags it filters on as one comma-separated parameter, so a tag holding one could be
# stored and never be searched for.
Tag = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^,]+$")]

SharingName = Literal["private", "team", "legacy"]
WriteScope = Literal["user", "agent"]
ReadScope = Literal["user", "agent", "combined"]


WriteShare = Literal["private", "team"]
"""What a write may ask for: ``legacy`` is only an operator's legacy import (``Share``), as on MCP."""


class _Request(BaseModel):
    # Unknown fields are ignored, so a body "upn" can never decide ownership
    # and older clients that send extra fields keep working.
    model_config = ConfigDict(extra="ignore", str_max_length=16 * 1024 * 1024)


class AppendMemoryRequest(_Request):
    """POST /memory/append."""

    scope: WriteScope = Field(description='"user" = across all agents; "agent" = this agent only')
    agent_object_id: AgentObjectId | None = Field(default=None, description="Required for scope=agent")
    agent_name: AgentName | None = Field(default=None, description="Display name of the agent")
    content_markdown: str = Field(description="Markdown to append")
    reason: ShortText | None = Field(default=None, description="Optional provenance note")
    operation_id: ShortText | None = None
    session_id: ShortText | None = None
    tags: list[Tag] = Field(default_factory=list, max_length=64)
    share: WriteShare = Field(default="private", description="team marks the entry as shared with the instance")


class ClearMemoryRequest(_Request):
    """POST /memory/clear."""

    scope: WriteScope
    agent_object_id: AgentObjectId | None = None
    confirm: StrictBool = Field(default=False, description="Must be true (a JSON boolean)")


class ImportMemoryRequest(_Request):
    """POST /memory/import."""

    scope: WriteScope
    agent_object_id: AgentObjectId | None = None
    agent_name: AgentName | None = None
    content_markdown: str
    mode: ImportMode = ImportMode.APPEND
    tags: list[Tag] = Field(default_factory=list, max_length=64)
    share: WriteShare = "private"


class MemoryQuery(_Request):
    """Query parameters of GET /memory."""

    scope: ReadScope
    agentObjectId: AgentObjectId | None = None
    agentName: AgentName | None = None
    memorySharing: SharingName | None = Field(
        default=None, description="Per-call sharing policy; 403 unless MEMORY_SHARING_ALLOW_OVERRIDE=true"
    )
    maxChars: int | None = Field(
        default=None, ge=0, le=MAX_BUDGET_CHARS,
        description="A budget in characters (Unicode code points): the newest entries of each scope that fit "
        "(combined: split evenly between user and agent memory), in the usual order; the answer's budget and "
        "notice say how many older entries were left out, their dates, and how to reach them. "
        "Absent: everything. See docs/budgets.md",
    )


class ExportQuery(_Request):
    """Query parameters of GET /memory/export."""

    scope: WriteScope
    agentObjectId: AgentObjectId | None = None
    agentName: AgentName | None = None
    memorySharing: SharingName | None = None


class MemoryResponse(BaseModel):
    """A scope's memory and its metadata. After an append, content_markdown is the section added."""

    scope: Scope
    upn: str
    user_name: str | None
    name: str | None
    agent_object_id: str | None
    agent_name: str | None
    content_markdown: str
    created_on: datetime | None
    updated_on: datetime | None
    entry_id: str | None = Field(default=None, description="Set on append: the id of the stored entry")
    memory_mode: Literal["on", "off"] = "on"
    notice: str | None = Field(
        default=None,
        description="Set when X-MEMORY-MODE: off made the read empty, or when a budget (maxChars) left entries out",
    )
    budget: BudgetModel | None = Field(default=None, description="Set on a read with maxChars")

    @classmethod
    def from_view(cls, view: MemoryView) -> MemoryResponse:
        return cls(
            scope=view.scope,
            upn=view.upn,
            user_name=view.user_name,
            name=view.name,
            agent_object_id=view.agent_object_id,
            agent_name=view.agent_name,
            content_markdown=view.content_markdown,
            created_on=view.created_on,
            updated_on=view.updated_on,
            entry_id=view.entry_id,
            budget=BudgetModel.from_report(view.budget) if view.budget else None,
            notice=omission_notice(view.budget) if view.budget else None,
        )


class ImportMemoryResponse(MemoryResponse):
    """The document after an import. A replace under operator approval answers 202 with
    status pending_approval: the replaced content is hidden and held by deletion request
    ``request_id``; the new content is visible already."""

    status: Literal["stored", "pending_approval"] = "stored"
    request_id: str | None = Field(default=None, description="The deletion request holding the replaced content")
    message: str | None = None

    @classmethod
    def from_import(cls, view: MemoryView) -> ImportMemoryResponse:
        base = MemoryResponse.from_view(view).model_dump()
        if view.pending is None:
            return cls(**base)
        return cls(**base, status="pending_approval", request_id=view.pending.request_id,
                   message=view.pending.message)


class NotStoredResponse(BaseModel):
    """A write under X-MEMORY-MODE: off: nothing was stored, and the answer says so."""

    status: Literal["not_stored"] = "not_stored"
    memory_mode: Literal["off"] = "off"
    message: str
