"""The CoreAPI memory endpoints. Each function serves one route of function_app.py.

Every function here goes through the edge (``memory_core.edge``): by the time a
handler runs, the caller is authenticated and the body, query and instance id
are validated.
"""

from __future__ import annotations

import azure.functions as func

from memory_core.domain.identity import AgentContext
from memory_core.domain.models import Scope, Share
from memory_core.domain.modes import OFF_READ_NOTICE
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.views import PendingDeletion, WriteOptions
from memory_core.edge import Access, Call, EndpointSpec, endpoint, json_response, not_stored
from memory_core.wire.custody import PendingDeletionResponse
from memory_core.wire.memory import (
    AppendMemoryRequest,
    ClearMemoryRequest,
    ExportQuery,
    ImportMemoryRequest,
    ImportMemoryResponse,
    MemoryQuery,
    MemoryResponse,
)

MEMORY = "memory"


def _agent(object_id: str | None, name: str | None) -> AgentContext | None:
    return AgentContext(object_id, name) if object_id else None


def _empty_memory(call: Call, query: MemoryQuery) -> MemoryResponse:
    """A read under X-MEMORY-MODE: off: nothing read, and the answer says so."""
    caller = call.caller
    return MemoryResponse(
        scope=Scope(query.scope), upn=caller.upn, user_name=caller.user_name, name=caller.name,
        agent_object_id=query.agentObjectId, agent_name=query.agentName, content_markdown="",
        created_on=None, updated_on=None, memory_mode="off", notice=OFF_READ_NOTICE,
    )


def _empty_export(call: Call) -> func.HttpResponse:
    return func.HttpResponse("", status_code=200, mimetype="text/markdown", charset="utf-8",
                             headers={"X-Memory-Mode": "off"})


@endpoint(
    EndpointSpec(
        summary="Read memory (user, agent, or combined)",
        tag=MEMORY,
        access=Access.USER,
        query=MemoryQuery,
        response=MemoryResponse,
        errors=(400, 401, 403),
        description="combined is user memory then agent memory, assembled at read time. "
        "Empty content_markdown when nothing is stored. 403 sharing_override_forbidden when "
        "memorySharing is sent and MEMORY_SHARING_ALLOW_OVERRIDE is not true. With maxChars, the newest "
        "memory that fits in that many characters, and a budget report of what was left out (docs/budgets.md).",
        memory_off=lambda call: _empty_memory(call, call.query(MemoryQuery)),
    )
)
def get_memory(call: Call) -> MemoryResponse:
    query = call.query(MemoryQuery)
    agent, sharing = _agent(query.agentObjectId, query.agentName), SharingPolicy.named(query.memorySharing)
    if query.maxChars is not None:
        view = call.runtime.service.get_within(
            call.caller, call.instance_id, Scope(query.scope), agent, query.maxChars, sharing
        )
    else:
        view = call.runtime.service.get(call.caller, call.instance_id, Scope(query.scope), agent, sharing)
    return MemoryResponse.from_view(view)


@endpoint(
    EndpointSpec(
        summary="Append markdown under a timestamp/provenance heading",
        tag=MEMORY,
        access=Access.USER,
        body=AppendMemoryRequest,
        response=MemoryResponse,
        errors=(400, 401, 403, 413, 415, 422),
        description="Answers the profile metadata and the section just added. With an Idempotency-Key, a retry "
        "of the same request stores nothing and answers the same entry_id.",
        memory_off=not_stored,
        idempotency_key=True,
    )
)
def append_memory(call: Call) -> MemoryResponse:
    body = call.body(AppendMemoryRequest)
    options = WriteOptions(reason=body.reason, session_id=body.session_id, operation_id=body.operation_id,
                           agent_name=body.agent_name, tags=tuple(body.tags), share=Share(body.share))
    agent = _agent(body.agent_object_id, body.agent_name)
    view = call.runtime.service.append(call.caller, call.instance_id, Scope(body.scope), agent,
                                       body.content_markdown, options, idempotency_key=call.idempotency_key)
    return MemoryResponse.from_view(view)


@endpoint(
    EndpointSpec(
        summary="Clear one scope (confirm must be true); the profile is kept",
        tag=MEMORY,
        access=Access.USER,
        body=ClearMemoryRequest,
        response=MemoryResponse,
        statuses={202: PendingDeletionResponse},
        errors=(400, 401, 403, 413, 415),
        description="Under MEMORY_DELETION_MODE=operator_approval (the default) this answers 202 "
        "pending_approval and hides the scope until an operator decides; immediate answers 200.",
        memory_off=not_stored,
    )
)
def clear_memory(call: Call) -> func.HttpResponse | MemoryResponse:
    body = call.body(ClearMemoryRequest)
    outcome = call.runtime.service.clear(
        call.caller, call.instance_id, Scope(body.scope), _agent(body.agent_object_id, None), confirm=body.confirm
    )
    if isinstance(outcome, PendingDeletion):
        return json_response(PendingDeletionResponse.from_pending(outcome), 202)
    return MemoryResponse.from_view(outcome)


@endpoint(
    EndpointSpec(
        summary="Export one scope as a markdown file",
        tag=MEMORY,
        access=Access.USER,
        query=ExportQuery,
        content_type="text/markdown",
        errors=(400, 401, 403),
        memory_off=_empty_export,
    )
)
def export_memory(call: Call) -> func.HttpResponse:
    query = call.query(ExportQuery)
    document = call.runtime.service.export(
        call.caller, call.instance_id, Scope(query.scope), _agent(query.agentObjectId, query.agentName),
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
        access=Access.USER,
        body=ImportMemoryRequest,
        response=ImportMemoryResponse,
        statuses={202: ImportMemoryResponse},
        errors=(400, 401, 403, 413, 415, 422),
        description="mode=replace under MEMORY_DELETION_MODE=operator_approval (the default) erases nothing: "
        "it answers 202 pending_approval with the new document and the id of the deletion request that "
        "holds the replaced content (hidden now; shown again if an operator rejects). immediate answers 200. "
        "Idempotency-Key is taken in append mode only (400 idempotency_key_unsupported with replace).",
        memory_off=not_stored,
        idempotency_key=True,
    )
)
def import_memory(call: Call) -> func.HttpResponse:
    body = call.body(ImportMemoryRequest)
    options = WriteOptions(agent_name=body.agent_name, tags=tuple(body.tags), share=Share(body.share))
    view = call.runtime.service.import_markdown(
        call.caller, call.instance_id, Scope(body.scope), _agent(body.agent_object_id, body.agent_name),
        body.content_markdown, body.mode, options, idempotency_key=call.idempotency_key,
    )
    return json_response(ImportMemoryResponse.from_import(view), 202 if view.pending else 200)
