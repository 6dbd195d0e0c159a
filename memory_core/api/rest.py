"""The CoreAPI memory endpoints. Each function serves one route of function_app.py."""

from __future__ import annotations

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
from memory_core.api.schemas import (
    AppendMemoryRequest,
    ClearMemoryRequest,
    ExportQuery,
    ImportMemoryRequest,
    ImportMemoryResponse,
    MemoryQuery,
    MemoryResponse,
    NotStoredResponse,
)
from memory_core.composition import Runtime, runtime
from memory_core.domain.identity import AgentContext
from memory_core.domain.models import Scope
from memory_core.domain.modes import OFF_READ_NOTICE, OFF_WRITE_NOTICE
from memory_core.api.custody_schemas import PendingDeletionResponse
from memory_core.domain.service import PendingDeletion, WriteOptions
from memory_core.domain.sharing import SharingPolicy

MEMORY = "memory"


def _body_limit(rt: Runtime) -> int:
    return request_body_limit(rt.settings.memory_max_write_bytes)


def _agent(object_id: str | None, name: str | None) -> AgentContext | None:
    return AgentContext(object_id, name) if object_id else None


@endpoint(
    EndpointSpec(
        summary="Read memory (user, agent, or combined)",
        tag=MEMORY,
        query=MemoryQuery,
        response=MemoryResponse,
        description="combined is user memory then agent memory, assembled at read time. "
        "Empty content_markdown when nothing is stored.",
    )
)
def get_memory(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    caller = rt.auth.user(req.headers)
    query = parse_query(req, MemoryQuery)
    if memory_off(req):
        return json_response(MemoryResponse(
            scope=Scope(query.scope), upn=caller.upn, user_name=caller.user_name, name=caller.name,
            agent_object_id=query.agentObjectId, agent_name=query.agentName, content_markdown="",
            created_on=None, updated_on=None, memory_mode="off", notice=OFF_READ_NOTICE,
        ))
    view = rt.service.get(
        caller, instance_id(req), Scope(query.scope), _agent(query.agentObjectId, query.agentName),
        SharingPolicy.named(query.memorySharing),
    )
    return json_response(MemoryResponse.from_view(view))


@endpoint(
    EndpointSpec(
        summary="Append markdown under a timestamp/provenance heading",
        tag=MEMORY,
        body=AppendMemoryRequest,
        response=MemoryResponse,
        errors=(400, 401, 413),
        description="Answers the profile metadata and the section just added.",
    )
)
def append_memory(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    caller = rt.auth.user(req.headers)
    body = parse_body(req, AppendMemoryRequest, _body_limit(rt))
    if memory_off(req):
        return json_response(NotStoredResponse(message=OFF_WRITE_NOTICE))
    view = rt.service.append(
        caller,
        instance_id(req),
        Scope(body.scope),
        _agent(body.agent_object_id, body.agent_name),
        body.content_markdown,
        WriteOptions(
            reason=body.reason,
            session_id=body.session_id,
            operation_id=body.operation_id,
            agent_name=body.agent_name,
            tags=tuple(body.tags),
            share=body.share,
        ),
    )
    return json_response(MemoryResponse.from_view(view))


@endpoint(
    EndpointSpec(
        summary="Clear one scope (confirm must be true); the profile is kept",
        tag=MEMORY,
        body=ClearMemoryRequest,
        response=MemoryResponse,
        description="Under MEMORY_DELETION_MODE=operator_approval (the default) this answers 202 "
        "pending_approval and hides the scope until an operator decides; immediate answers 200.",
    )
)
def clear_memory(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    caller = rt.auth.user(req.headers)
    body = parse_body(req, ClearMemoryRequest, _body_limit(rt))
    if memory_off(req):
        return json_response(NotStoredResponse(message=OFF_WRITE_NOTICE))
    outcome = rt.service.clear(
        caller, instance_id(req), Scope(body.scope), _agent(body.agent_object_id, None), confirm=body.confirm
    )
    if isinstance(outcome, PendingDeletion):
        return json_response(PendingDeletionResponse.from_pending(outcome), 202)
    return json_response(MemoryResponse.from_view(outcome))


@endpoint(
    EndpointSpec(
        summary="Export one scope as a markdown file",
        tag=MEMORY,
        query=ExportQuery,
        content_type="text/markdown",
    )
)
def export_memory(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    caller = rt.auth.user(req.headers)
    query = parse_query(req, ExportQuery)
    if memory_off(req):
        return func.HttpResponse("", status_code=200, mimetype="text/markdown", charset="utf-8",
                                 headers={"X-Memory-Mode": "off"})
    document = rt.service.export(
        caller, instance_id(req), Scope(query.scope), _agent(query.agentObjectId, query.agentName),
        SharingPolicy.named(query.memorySharing),
    )
    return func.HttpResponse(
        document.content_markdown,
        status_code=200,
        mimetype="text/markdown",
        charset="utf-8",
        headers={"Content-Disposition": f'attachment; filename="{document.filename}"'},
    )


@endpoint(
    EndpointSpec(
        summary="Import markdown into one scope (append or replace)",
        tag=MEMORY,
        body=ImportMemoryRequest,
        response=ImportMemoryResponse,
        other_success=(202,),
        errors=(400, 401, 413, 422),
        description="mode=replace under MEMORY_DELETION_MODE=operator_approval (the default) erases nothing: "
        "it answers 202 pending_approval with the new document and the id of the deletion request that "
        "holds the replaced content (hidden now; shown again if an operator rejects). immediate answers 200.",
    )
)
def import_memory(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    caller = rt.auth.user(req.headers)
    body = parse_body(req, ImportMemoryRequest, _body_limit(rt))
    if memory_off(req):
        return json_response(NotStoredResponse(message=OFF_WRITE_NOTICE))
    view = rt.service.import_markdown(
        caller,
        instance_id(req),
        Scope(body.scope),
        _agent(body.agent_object_id, body.agent_name),
        body.content_markdown,
        body.mode,
        WriteOptions(agent_name=body.agent_name, tags=tuple(body.tags), share=body.share),
    )
    return json_response(ImportMemoryResponse.from_import(view), 202 if view.pending else 200)
