"""REST functions of Claude's memory tool: one per memory_20250818 command.

``POST /api/instances/{instanceId}/memory/files/{command}`` takes the command
exactly as Claude sends it in a ``tool_use`` block and answers
``{"result": <the text for the model>}``; a refusal is the usual error body
whose ``message`` is the reference backend's text. The calling agent, if any,
comes in the query (``agentObjectId``, ``agentName``), as for GET memory.
"""

from __future__ import annotations

from typing import Any

import azure.functions as func

from memory_core.api.http import (
    EndpointSpec,
    endpoint,
    instance_id,
    json_response,
    memory_off,
    parse_body,
    parse_query,
    request_body_limit,
)
from memory_core.api.memory_file_schemas import (
    CreateCommand,
    DeleteCommand,
    InsertCommand,
    MemoryFileQuery,
    MemoryFileResponse,
    RenameCommand,
    StrReplaceCommand,
    ViewCommand,
    CommandBody,
)
from memory_core.composition import runtime
from memory_core.domain.identity import AgentContext
from memory_core.domain.memory_file_service import FileAnswer, MemoryFiles
from memory_core.domain.modes import OFF_READ_NOTICE, OFF_WRITE_NOTICE

TAG = "memory tool"
_ERRORS = (400, 401, 403, 404, 409, 413, 422)
_DESCRIPTION = (
    "The body is the memory_20250818 command as Claude sends it. 200 answers the text for the model; "
    "202 when content this command removed awaits an operator's approval (MEMORY_DELETION_MODE). "
    "Refusals carry the reference backend's text as error.message."
)


def answer_response(answer: FileAnswer) -> func.HttpResponse:
    if answer.pending_request_ids:
        body = MemoryFileResponse(
            result=answer.text, status="pending_approval", request_ids=list(answer.pending_request_ids)
        )
        return json_response(body, 202)
    return json_response(MemoryFileResponse(result=answer.text))


def _run(req: func.HttpRequest, model: type[CommandBody]) -> func.HttpResponse:
    rt = runtime()
    caller = rt.auth.user(req.headers)
    query = parse_query(req, MemoryFileQuery)
    command: dict[str, Any] = parse_body(
        req, model, request_body_limit(rt.settings.memory_max_write_bytes)
    ).model_dump(exclude_none=True)
    instance = instance_id(req)
    if memory_off(req):
        notice = OFF_READ_NOTICE if command["command"] == "view" else OFF_WRITE_NOTICE
        return json_response(MemoryFileResponse(result=notice))
    agent = AgentContext(query.agentObjectId, query.agentName) if query.agentObjectId else None
    files = MemoryFiles(rt.service)
    return answer_response(files.execute(caller, instance, agent, command))


def _spec(model: type[CommandBody], summary: str) -> EndpointSpec:
    return EndpointSpec(
        summary=summary, tag=TAG, body=model, query=MemoryFileQuery, response=MemoryFileResponse,
        errors=_ERRORS, description=_DESCRIPTION,
    )


@endpoint(_spec(ViewCommand, "Memory tool: view a directory listing or a file with line numbers"))
def view_file(req: func.HttpRequest) -> func.HttpResponse:
    return _run(req, ViewCommand)


@endpoint(_spec(CreateCommand, "Memory tool: create a file (never overwrites)"))
def create_file(req: func.HttpRequest) -> func.HttpResponse:
    return _run(req, CreateCommand)


@endpoint(_spec(StrReplaceCommand, "Memory tool: replace one unique occurrence of text in a file"))
def str_replace_file(req: func.HttpRequest) -> func.HttpResponse:
    return _run(req, StrReplaceCommand)


@endpoint(_spec(InsertCommand, "Memory tool: insert text at a line"))
def insert_file(req: func.HttpRequest) -> func.HttpResponse:
    return _run(req, InsertCommand)


@endpoint(_spec(DeleteCommand, "Memory tool: delete a file or directory (under MEMORY_DELETION_MODE)"))
def delete_file(req: func.HttpRequest) -> func.HttpResponse:
    return _run(req, DeleteCommand)


@endpoint(_spec(RenameCommand, "Memory tool: rename or move a file or directory (never overwrites)"))
def rename_file(req: func.HttpRequest) -> func.HttpResponse:
    return _run(req, RenameCommand)
