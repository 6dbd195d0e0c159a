"""User-facing custody endpoints: list and forget entries, search, read one's own audit trail and deletion
requests."""

from __future__ import annotations

import re

import azure.functions as func

from memory_core.domain.errors import NotFound
from memory_core.domain.identity import AgentContext
from memory_core.domain.models import Scope
from memory_core.domain.modes import OFF_READ_NOTICE
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.views import PendingDeletion
from memory_core.edge import SMALL_BODY_BYTES, Access, Call, EndpointSpec, endpoint, json_response, not_stored
from memory_core.wire.custody import (
    AuditQuery,
    AuditResponse,
    EntriesQuery,
    EntriesResponse,
    EntryModel,
    ForgottenResponse,
    PendingDeletionResponse,
    SearchBody,
    SearchHitModel,
    SearchQuery,
    SearchResponse,
)
from memory_core.wire.deletions import DeletionListResponse, DeletionRequestModel, DeletionsQuery

MEMORY = "memory"
_ENTRY_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _agent(object_id: str | None) -> AgentContext | None:
    return AgentContext(object_id) if object_id else None


@endpoint(EndpointSpec(summary="List the visible entries of a scope, a page at a time", tag=MEMORY,
                       access=Access.USER, query=EntriesQuery, response=EntriesResponse, errors=(400, 401, 403),
                       memory_off=lambda call: EntriesResponse(scope=call.query(EntriesQuery).scope, entries=[],
                                                               notice=OFF_READ_NOTICE)))
def list_entries(call: Call) -> EntriesResponse:
    query = call.query(EntriesQuery)
    page = call.runtime.service.entries_page(
        call.caller, call.instance_id, Scope(query.scope), _agent(query.agentObjectId),
        SharingPolicy.named(query.memorySharing), limit=query.limit, continuation=query.continuation,
    )
    return EntriesResponse(scope=query.scope, entries=[EntryModel.from_entry(e) for e in page.items],
                           continuation=page.continuation)


@endpoint(EndpointSpec(summary="Forget one entry (pending operator approval unless deletion is immediate)",
                       tag=MEMORY, access=Access.USER, response=PendingDeletionResponse, success_status=202,
                       statuses={200: ForgottenResponse}, errors=(400, 401, 404), memory_off=not_stored))
def forget_entry(call: Call) -> func.HttpResponse:
    entry_id = call.route_param("entryId")
    if not _ENTRY_ID.fullmatch(entry_id):  # match's $ would accept a final newline
        raise NotFound(f"no memory entry {entry_id[:64]!r}")
    outcome = call.runtime.service.forget(call.caller, call.instance_id, entry_id)
    if isinstance(outcome, PendingDeletion):
        return json_response(PendingDeletionResponse.from_pending(outcome), 202)
    return json_response(ForgottenResponse(entry_id=outcome.entry_id), 200)


_SEARCH_DESCRIPTION = (
    "POST with a JSON body (SearchBody) is preferred: it keeps the search words out of the URL, which proxies, "
    "request telemetry and HTTP clients' logs record. GET with the same fields as query parameters is kept for "
    "existing callers. The caller is always the credential's, never a field of the body or the query."
)


@endpoint(EndpointSpec(summary="Lexical (BM25) search over the caller's visible memory", tag=MEMORY,
                       access=Access.USER, query=SearchQuery, body=SearchBody, query_or_body=True,
                       body_limit=SMALL_BODY_BYTES,
                       response=SearchResponse, errors=(400, 401, 403), description=_SEARCH_DESCRIPTION,
                       memory_off=lambda call: SearchResponse(query=call.input(SearchQuery).q, hits=[],
                                                              notice=OFF_READ_NOTICE)))
def search_memory(call: Call) -> SearchResponse:
    query = call.input(SearchQuery)  # GET: the query string; POST: the body (a SearchBody)
    hits = call.runtime.service.search(
        call.caller, call.instance_id, Scope(query.scope), _agent(query.agentObjectId), query.q, query.tag_list(),
        query.limit, SharingPolicy.named(query.memorySharing),
    )
    return SearchResponse(query=query.q, hits=[SearchHitModel.from_hit(h) for h in hits])


@endpoint(EndpointSpec(summary="The caller's own audit trail, a page at a time", tag=MEMORY, access=Access.USER,
                       query=AuditQuery, response=AuditResponse))
def read_own_audit(call: Call) -> AuditResponse:
    query = call.query(AuditQuery)
    page = call.runtime.service.audit_page(call.instance_id, call.caller.upn, limit=query.limit,
                                           continuation=query.continuation, newest_first=query.order == "newest_first")
    return AuditResponse.from_page(call.caller.upn, page)


@endpoint(EndpointSpec(summary="The caller's own deletion requests (with status), oldest first, a page at a time",
                       tag=MEMORY, access=Access.USER, query=DeletionsQuery, response=DeletionListResponse))
def list_own_deletions(call: Call) -> DeletionListResponse:
    # What the person's console shows as waiting for an operator, without reading the whole audit trail;
    # the requests include an operator's purge of the caller's memory.
    query = call.query(DeletionsQuery)
    page = call.runtime.service.custody.page(call.instance_id, query.wanted, limit=query.limit,
                                             continuation=query.continuation, upn=call.caller.upn)
    return DeletionListResponse.of_page(page, [DeletionRequestModel.from_request(r) for r in page.items])
