"""REST functions of Claude's memory tool: one per memory_20250818 command.

``POST /api/instances/{instanceId}/memory/files/{command}`` takes the command
exactly as Claude sends it in a ``tool_use`` block and answers
``{"result": <the text for the model>}``; a refusal is the usual error body
whose ``message`` is the reference backend's text. The calling agent, if any,
comes in the query (``agentObjectId``, ``agentName``), as for GET memory.
Every function goes through the edge (``memory_core.edge``).
"""

from __future__ import annotations

from typing import Any

from memory_core.domain.identity import AgentContext
from memory_core.domain.memory_file_service import FileAnswer, MemoryFiles
from memory_core.domain.modes import OFF_READ_NOTICE, OFF_WRITE_NOTICE
from memory_core.edge import Access, Call, EndpointSpec, endpoint, json_response
from memory_core.wire.memory_files import (
    CommandBody,
    CreateCommand,
    DeleteCommand,
    InsertCommand,
    MemoryFileQuery,
    MemoryFileResponse,
    RenameCommand,
    StrReplaceCommand,
    ViewCommand,
)

TAG = "memory tool"
_ERRORS = (400, 401, 403, 404, 409, 413, 422)
_DESCRIPTION = (
    "The body is the memory_20250818 command as Claude sends it. 200 answers the text for the model; "
    "202 when content this command removed awaits an operator's approval (MEMORY_DELETION_MODE). "
    "Refusals carry the reference backend's text as error.message."
)


def response_of(answer: FileAnswer) -> MemoryFileResponse:
    if answer.pending_request_ids:
        return MemoryFileResponse(
            result=answer.text, status="pending_approval", request_ids=list(answer.pending_request_ids)
        )
    return MemoryFileResponse(result=answer.text)


def _run(call: Call, model: type[CommandBody]) -> Any:
    query = call.query(MemoryFileQuery)
    command: dict[str, Any] = call.body(model).model_dump(exclude_none=True)
    agent = AgentContext(query.agentObjectId, query.agentName) if query.agentObjectId else None
    service = call.runtime.service
    answer = MemoryFiles(service).execute(call.caller, call.instance_id, agent, command)
    response = response_of(answer)
    return json_response(response, 202) if answer.pending_request_ids else response


def _off(call: Call) -> MemoryFileResponse:
    """X-MEMORY-MODE: off: a view reads nothing and a change stores nothing, and the answer says so."""
    return MemoryFileResponse(result=OFF_READ_NOTICE if isinstance(call.parsed_body, ViewCommand) else OFF_WRITE_NOTICE)


def _spec(model: type[CommandBody], summary: str) -> EndpointSpec:
    return EndpointSpec(
        summary=summary, tag=TAG, access=Access.USER, body=model, query=MemoryFileQuery,
        response=MemoryFileResponse, statuses={202: MemoryFileResponse}, errors=_ERRORS,
        description=_DESCRIPTION, memory_off=_off,
    )


@endpoint(_spec(ViewCommand, "Memory tool: view a directory listing or a file with line numbers"))
def view_file(call: Call) -> Any:
    return _run(call, ViewCommand)


@endpoint(_spec(CreateCommand, "Memory tool: create a file (never overwrites)"))
def create_file(call: Call) -> Any:
    return _run(call, CreateCommand)


@endpoint(_spec(StrReplaceCommand, "Memory tool: replace one unique occurrence of text in a file"))
def str_replace_file(call: Call) -> Any:
    return _run(call, StrReplaceCommand)


@endpoint(_spec(InsertCommand, "Memory tool: insert text at a line"))
def insert_file(call: Call) -> Any:
    return _run(call, InsertCommand)


@endpoint(_spec(DeleteCommand, "Memory tool: delete a file or directory (under MEMORY_DELETION_MODE)"))
def delete_file(call: Call) -> Any:
    return _run(call, DeleteCommand)


@endpoint(_spec(RenameCommand, "Memory tool: rename or move a file or directory (never overwrites)"))
def rename_file(call: Call) -> Any:
    return _run(call, RenameCommand)
