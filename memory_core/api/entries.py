"""User-facing custody endpoints: list and forget entries, search, read one's own audit trail."""

from __future__ import annotations

import re

import azure.functions as func

from memory_core.api.custody_schemas import (
    AuditEventModel,
    AuditResponse,
    EntriesQuery,
    EntriesResponse,
    EntryModel,
    ForgottenResponse,
    PendingDeletionResponse,
    SearchHitModel,
    SearchQuery,
    SearchResponse,
)
from memory_core.api.http import EndpointSpec, endpoint, instance_id, json_response, memory_off, parse_query
from memory_core.api.schemas import NotStoredResponse
from memory_core.domain.modes import OFF_READ_NOTICE, OFF_WRITE_NOTICE
from memory_core.composition import runtime
from memory_core.domain.errors import NotFound
from memory_core.domain.identity import AgentContext
from memory_core.domain.models import Scope
from memory_core.domain.service import PendingDeletion
from memory_core.domain.sharing import SharingPolicy

MEMORY = "memory"
_ENTRY_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _agent(object_id: str | None) -> AgentContext | None:
    return AgentContext(object_id) if object_id else None


@endpoint(EndpointSpec(summary="List the visible entries of a scope", tag=MEMORY, query=EntriesQuery,
                       response=EntriesResponse))
def list_entries(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    caller = rt.auth.user(req.headers)
    query = parse_query(req, EntriesQuery)
    if memory_off(req):
        return json_response(EntriesResponse(scope=query.scope, entries=[], notice=OFF_READ_NOTICE))
    entries = rt.service.entries(
        caller, instance_id(req), Scope(query.scope), _agent(query.agentObjectId), SharingPolicy.named(query.memorySharing)
    )
    return json_response(EntriesResponse(scope=query.scope, entries=[EntryModel.from_entry(e) for e in entries]))


@endpoint(EndpointSpec(summary="Forget one entry (pending operator approval unless deletion is immediate)",
                       tag=MEMORY, response=PendingDeletionResponse, success_status=202, errors=(400, 401, 404)))
def forget_entry(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    caller = rt.auth.user(req.headers)
    if memory_off(req):
        return json_response(NotStoredResponse(message=OFF_WRITE_NOTICE))
    entry_id = req.route_params.get("entryId", "")
    if not _ENTRY_ID.match(entry_id):
        raise NotFound(f"no memory entry {entry_id[:64]!r}")
    outcome = rt.service.forget(caller, instance_id(req), entry_id)
    if isinstance(outcome, PendingDeletion):
        return json_response(PendingDeletionResponse.from_pending(outcome), 202)
    return json_response(ForgottenResponse(entry_id=outcome.entry_id))


@endpoint(EndpointSpec(summary="Lexical (BM25) search over the caller's visible memory", tag=MEMORY,
                       query=SearchQuery, response=SearchResponse))
def search_memory(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    caller = rt.auth.user(req.headers)
    query = parse_query(req, SearchQuery)
    if memory_off(req):
        return json_response(SearchResponse(query=query.q, hits=[], notice=OFF_READ_NOTICE))
    hits = rt.service.search(caller, instance_id(req), Scope(query.scope), _agent(query.agentObjectId),
                             query.q, query.tag_list(), query.limit, SharingPolicy.named(query.memorySharing))
    return json_response(SearchResponse(query=query.q, hits=[SearchHitModel.from_hit(h) for h in hits]))


@endpoint(EndpointSpec(summary="The caller's own audit trail", tag=MEMORY, response=AuditResponse))
def read_own_audit(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    caller = rt.auth.user(req.headers)
    events = rt.service.audit_trail(instance_id(req), caller.upn)
    return json_response(AuditResponse(upn=caller.upn, events=[AuditEventModel.from_event(e) for e in events]))
