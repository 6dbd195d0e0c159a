"""Operator endpoints (MEMORY_OPERATOR_KEYS) and the sweep timer.

Routes start with "operator", not "admin": Azure Functions reserves "admin".
"""

from __future__ import annotations

import logging

import azure.functions as func

from memory_core.composition import runtime
from memory_core.domain.agent_settings import AgentSettings
from memory_core.domain.deletion import PENDING_MESSAGE, DeletionRequest
from memory_core.domain.errors import InvalidInput
from memory_core.domain.identity import AgentContext, InvalidCallerId, caller_upn
from memory_core.domain.models import SHARED_OWNER, Scope
from memory_core.domain.overview import request_entry_counts
from memory_core.domain.records import DELETIONS_OWNER
from memory_core.domain.views import PendingDeletion
from memory_core.edge import (
    SMALL_BODY_BYTES,
    Access,
    Call,
    EndpointSpec,
    ValidationFailed,
    endpoint,
    json_response,
    validated,
)
from memory_core.wire.custody import (
    AgentSettingsAuditQuery,
    AgentSettingsAuditResponse,
    AgentSettingsBody,
    AgentSettingsListResponse,
    AgentSettingsModel,
    AgentSettingsQuery,
    AuditQuery,
    AuditResponse,
    DeletedAgentSettingsResponse,
    LegacyImportAuditResponse,
    LegacyImportRequest,
    LegacyImportResponse,
    OperatorAuditQuery,
    PageQuery,
    PendingDeletionResponse,
    VisibleAgentQuery,
)
from memory_core.wire.deletions import (
    DeletionListResponse,
    DeletionRequestModel,
    DeletionsQuery,
    DismissedRequestModel,
    DismissQuery,
    PurgeRequest,
    RejectRequest,
    SweepQuery,
    SweepResponse,
)
from memory_core.wire.hidden_text import HiddenTextScanQuery, HiddenTextScanResponse, OperatorForgetRequest
from memory_core.wire.orphan_holds import (
    OrphanHoldsQuery,
    OrphanHoldsResponse,
    ReleasedHoldModel,
    ReleaseHoldBody,
    ReleaseHoldQuery,
)

log = logging.getLogger("memory_core.sweep")
OPERATOR = "operator"


def _user(raw: str) -> str:
    """A user named by an operator, validated as callers are (an internal partition is never a user)."""
    try:
        return caller_upn(raw)
    except InvalidCallerId as error:
        raise InvalidInput(f"upn: {error}", code="invalid_upn") from None


def _trail_owner(raw: str) -> str:
    """Whose trail an operator's audit read names: a user (``_user``), or exactly the instance's deletions trail
    (``DELETIONS_OWNER``), where a dismissal of a request naming no valid user is audited and nothing else could read
    it. Every other internal partition (``~shared`` among them) stays refused: 400 ``invalid_upn``."""
    return DELETIONS_OWNER if raw == DELETIONS_OWNER else _user(raw)


def _hold_owner(raw: str) -> str:
    """Whose holds a release names: a user (``_user``), or exactly ``~shared`` (``SHARED_OWNER``) for the team-shared
    hold whose author no user's name reaches, listed with ``release_upn`` ``~shared`` (``orphan_holds.release``).
    Every other internal partition stays refused: 400 ``invalid_upn``."""
    return SHARED_OWNER if raw == SHARED_OWNER else _user(raw)


def _pending(request: DeletionRequest) -> func.HttpResponse:
    """202: an operator's request waits for an operator's approval, as a person's own does."""
    return json_response(PendingDeletionResponse.from_pending(PendingDeletion(request.id, PENDING_MESSAGE)), 202)


def _settings_agent(call: Call, agent_object_id: str, *, stores: bool = False) -> str:
    """The agent an agent-settings call names: an id held to an agent id's rule (400 ``validation_error`` as the
    query's validation answers), or exactly the id of an agent the rule refuses (saved before the rule, or by an
    older release) whose settings are stored, or, unless the call ``stores`` settings, whose settings trail names it
    (its settings since deleted: the GET answers the defaults, a DELETE 404). The operators' agent list shows such
    an agent; this is how they open it, overwrite its settings (to disable it, say), delete them and read its
    changes, the deletion's among them. A PUT never stores settings anew under an id the rule refuses. One or two
    more reads of the store, only for an id the rule refuses."""
    try:
        return validated(VisibleAgentQuery, {"agentObjectId": agent_object_id}, "query").agentObjectId
    except ValidationFailed:
        book = call.runtime.service.agent_settings
        known = book.is_stored if stores else book.is_named
        if known(call.instance_id, agent_object_id):
            return agent_object_id
        raise


@endpoint(EndpointSpec(summary="List deletion requests, optionally by status", tag=OPERATOR, access=Access.OPERATOR,
                       query=DeletionsQuery, response=DeletionListResponse, errors=(400, 401, 403)))
def list_deletions(call: Call) -> DeletionListResponse:
    query = call.query(DeletionsQuery)
    page = call.runtime.service.custody.page(call.instance_id, query.wanted, limit=query.limit,
                                             continuation=query.continuation)
    counts = request_entry_counts(call.runtime.store, page.items)
    return DeletionListResponse.of_page(page, [
        DeletionRequestModel.from_request(r).model_copy(update={"entry_count": count})
        for r, count in zip(page.items, counts, strict=True)
    ])


@endpoint(EndpointSpec(summary="Approve a pending deletion request (the sweep erases it)", tag=OPERATOR,
                       access=Access.OPERATOR, response=DeletionRequestModel, errors=(400, 401, 403, 404, 409)))
def approve_deletion(call: Call) -> DeletionRequestModel:
    request = call.runtime.service.custody.approve(call.operator, call.instance_id, call.route_param("requestId"))
    return DeletionRequestModel.from_request(request)


@endpoint(EndpointSpec(summary="Reject a pending deletion request; its memory shows again", tag=OPERATOR,
                       access=Access.OPERATOR, body=RejectRequest, body_limit=SMALL_BODY_BYTES,
                       response=DeletionRequestModel, errors=(400, 401, 403, 404, 409, 413, 415, 422)))
def reject_deletion(call: Call) -> DeletionRequestModel:
    body = call.body(RejectRequest)
    request = call.runtime.service.custody.reject(
        call.operator, call.instance_id, call.route_param("requestId"), body.reason
    )
    return DeletionRequestModel.from_request(request)


@endpoint(EndpointSpec(summary="Dismiss a stored deletion request this release cannot read: its record is erased "
                               "(only while still unreadable) and audited; its holds and all memory stay",
                       tag=OPERATOR, access=Access.OPERATOR, query=DismissQuery, response=DismissedRequestModel,
                       errors=(400, 401, 403, 404, 409)))
def dismiss_deletion(call: Call) -> DismissedRequestModel:
    return DismissedRequestModel.from_dismissed(call.runtime.service.custody.dismiss_unreadable(
        call.operator, call.instance_id, call.route_param("requestId"), force=call.query(DismissQuery).force))


@endpoint(EndpointSpec(summary="List holds whose deletion request is no longer stored (what they hide stays hidden "
                               "and is never erased), a page of users at a time; ids only", tag=OPERATOR,
                       access=Access.OPERATOR, query=OrphanHoldsQuery, response=OrphanHoldsResponse,
                       errors=(400, 401, 403)))
def list_orphan_holds(call: Call) -> OrphanHoldsResponse:
    query = call.query(OrphanHoldsQuery)
    return OrphanHoldsResponse.from_page(call.runtime.service.custody.orphan_holds(
        call.instance_id, limit=query.limit, continuation=query.continuation))


@endpoint(EndpointSpec(summary="Release the holds a deletion request no longer stored left on a user's memory: it "
                               "shows again (audited; 409 while the request is stored). An id a path cannot carry "
                               "('.', '..', '/'): POST .../orphan-holds/release",
                       tag=OPERATOR, access=Access.OPERATOR, query=ReleaseHoldQuery, response=ReleasedHoldModel,
                       errors=(400, 401, 403, 409)))
def release_orphan_hold(call: Call) -> ReleasedHoldModel:
    upn = _hold_owner(call.query(ReleaseHoldQuery).upn)
    return ReleasedHoldModel.from_released(call.runtime.service.custody.release_orphan_hold(
        call.operator, call.instance_id, upn, call.route_param("requestId")))


@endpoint(EndpointSpec(summary="Release the holds a deletion request no longer stored left on a user's memory, the "
                               "request named in the body (any stored id: '.', '..', '/' included): it shows again "
                               "(audited; 404 when no such hold stands, 409 while the request is stored)",
                       tag=OPERATOR, access=Access.OPERATOR, body=ReleaseHoldBody, body_limit=SMALL_BODY_BYTES,
                       response=ReleasedHoldModel, errors=(400, 401, 403, 404, 409, 413, 415)))
def release_named_orphan_hold(call: Call) -> ReleasedHoldModel:
    body = call.body(ReleaseHoldBody)
    return ReleasedHoldModel.from_released(call.runtime.service.custody.release_orphan_hold(
        call.operator, call.instance_id, _hold_owner(body.upn), body.request_id, must_stand=True))


@endpoint(EndpointSpec(summary="Request erasure of all of one user's memory in the instance", tag=OPERATOR,
                       access=Access.OPERATOR, body=PurgeRequest, body_limit=SMALL_BODY_BYTES,
                       response=PendingDeletionResponse, success_status=202, errors=(400, 401, 403, 413, 415)))
def request_purge(call: Call) -> func.HttpResponse:
    body = call.body(PurgeRequest)
    return _pending(call.runtime.service.custody.request_purge(call.operator, call.instance_id, _user(body.upn)))


@endpoint(EndpointSpec(summary="Ask for one user's entry to be forgotten (pending approval, as the person's own)",
                       tag=OPERATOR, access=Access.OPERATOR, body=OperatorForgetRequest, body_limit=SMALL_BODY_BYTES,
                       response=PendingDeletionResponse, success_status=202, errors=(400, 401, 403, 404, 413, 415)))
def request_forget(call: Call) -> func.HttpResponse:
    body = call.body(OperatorForgetRequest)
    return _pending(call.runtime.service.custody.request_forget_of(call.operator, call.instance_id, _user(body.upn),
                                                                   body.entry_id))


@endpoint(EndpointSpec(summary="Scan stored memory for text no reader sees, a page of users at a time", tag=OPERATOR,
                       access=Access.OPERATOR, query=HiddenTextScanQuery, response=HiddenTextScanResponse,
                       errors=(400, 401, 403)))
def scan_hidden_text(call: Call) -> HiddenTextScanResponse:
    query = call.query(HiddenTextScanQuery)
    return HiddenTextScanResponse.from_page(
        call.runtime.service.hidden_text_page(call.instance_id, limit=query.limit, continuation=query.continuation)
    )


@endpoint(EndpointSpec(summary="Run the sweep now for this instance, whole or a step of it (limit); answers what it "
                               "executed, what it left for a later run and why, and how many it did not reach",
                       tag=OPERATOR, access=Access.OPERATOR, query=SweepQuery, response=SweepResponse,
                       errors=(400, 401, 403)))
def run_sweep(call: Call) -> SweepResponse:
    query = call.query(SweepQuery)
    return SweepResponse.from_result(call.runtime.service.custody.sweep(
        actor=call.operator, instance_id=call.instance_id, limit=query.limit, continuation=query.continuation))


@endpoint(EndpointSpec(summary="Read one user's audit trail (or the instance's ~deletions trail), a page at a time", tag=OPERATOR, access=Access.OPERATOR,
                       query=OperatorAuditQuery, response=AuditResponse, errors=(400, 401, 403)))
def read_audit(call: Call) -> AuditResponse:
    query = call.query(OperatorAuditQuery)
    upn = _trail_owner(query.upn)
    page = call.runtime.service.audit_page(call.instance_id, upn, limit=query.limit, continuation=query.continuation,
                                           newest_first=query.order == "newest_first")
    return AuditResponse.from_page(upn, page)


@endpoint(EndpointSpec(summary="Read an agent's memory settings", tag=OPERATOR, access=Access.OPERATOR,
                       query=AgentSettingsQuery, response=AgentSettingsModel, errors=(400, 401, 403)))
def get_agent_settings(call: Call) -> AgentSettingsModel:
    agent = _settings_agent(call, call.query(AgentSettingsQuery).agentObjectId)
    return AgentSettingsModel.from_stored(call.runtime.service.agent_settings.stored(call.instance_id, agent))


@endpoint(EndpointSpec(summary="List the agents with stored settings, a page at a time", tag=OPERATOR,
                       access=Access.OPERATOR, query=PageQuery, response=AgentSettingsListResponse,
                       errors=(400, 401, 403)))
def list_agent_settings(call: Call) -> AgentSettingsListResponse:
    query = call.query(PageQuery)
    return AgentSettingsListResponse.from_page(
        call.runtime.service.agent_settings.page(call.instance_id, limit=query.limit, continuation=query.continuation)
    )


@endpoint(EndpointSpec(summary="Replace an agent's memory settings", tag=OPERATOR, access=Access.OPERATOR,
                       query=AgentSettingsQuery, body=AgentSettingsBody, body_limit=SMALL_BODY_BYTES,
                       response=AgentSettingsModel, errors=(400, 401, 403, 409, 413, 415, 422)))
def put_agent_settings(call: Call) -> AgentSettingsModel:
    agent = _settings_agent(call, call.query(AgentSettingsQuery).agentObjectId, stores=True)
    body = call.body(AgentSettingsBody)
    settings = AgentSettings(
        agent_object_id=agent, enabled=body.enabled, auto_append=body.auto_append,
        default_write_scope=body.default_write_scope, policy_instructions=body.policy_instructions,
        allowed_group_ids=tuple(body.allowed_group_ids) if body.allowed_group_ids is not None else None,
    )
    return AgentSettingsModel.from_settings(
        call.runtime.service.agent_settings.put(call.instance_id, settings, actor=call.operator)
    )


@endpoint(EndpointSpec(summary="Delete an agent's memory settings: it is governed as an agent with none (enabled, any "
                               "group, no instructions); its memory is untouched (audited)",
                       tag=OPERATOR, access=Access.OPERATOR, query=AgentSettingsQuery,
                       response=DeletedAgentSettingsResponse, errors=(400, 401, 403, 404, 409)))
def delete_agent_settings(call: Call) -> DeletedAgentSettingsResponse:
    agent = _settings_agent(call, call.query(AgentSettingsQuery).agentObjectId)
    return DeletedAgentSettingsResponse.from_stored(
        call.runtime.service.agent_settings.delete(call.instance_id, agent, actor=call.operator))


@endpoint(EndpointSpec(summary="Read the trail of agent settings changes, a page at a time", tag=OPERATOR,
                       access=Access.OPERATOR, query=AgentSettingsAuditQuery, response=AgentSettingsAuditResponse,
                       errors=(400, 401, 403)))
def read_agent_settings_audit(call: Call) -> AgentSettingsAuditResponse:
    query = call.query(AgentSettingsAuditQuery)
    agent = _settings_agent(call, query.agentObjectId) if query.agentObjectId is not None else None
    page = call.runtime.service.agent_settings.trail(
        call.instance_id, limit=query.limit, continuation=query.continuation,
        newest_first=query.order == "newest_first", agent_object_id=agent,
    )
    return AgentSettingsAuditResponse.from_page(page)


@endpoint(EndpointSpec(summary="Load legacy memory (no owner; shown only under the legacy policy)", tag=OPERATOR,
                       access=Access.OPERATOR, body=LegacyImportRequest, response=LegacyImportResponse,
                       errors=(400, 401, 403, 413, 415, 422)))
def import_legacy(call: Call) -> LegacyImportResponse:
    body = call.body(LegacyImportRequest)
    agent = AgentContext(body.agent_object_id, body.agent_name) if body.agent_object_id else None
    entry = call.runtime.service.import_legacy(call.operator, call.instance_id, Scope(body.scope), agent,
                                               body.content_markdown)
    return LegacyImportResponse(entry_id=entry.id, scope=entry.key.scope.value)


@endpoint(EndpointSpec(summary="Read the trail of legacy imports, a page at a time", tag=OPERATOR,
                       access=Access.OPERATOR, query=AuditQuery, response=LegacyImportAuditResponse,
                       errors=(400, 401, 403)))
def read_legacy_import_audit(call: Call) -> LegacyImportAuditResponse:
    query = call.query(AuditQuery)
    page = call.runtime.service.legacy_trail(call.instance_id, limit=query.limit, continuation=query.continuation,
                                             newest_first=query.order == "newest_first")
    return LegacyImportAuditResponse.from_page(page)


def sweep_timer(timer: func.TimerRequest) -> None:
    """The scheduled sweep (MEMORY_SWEEP_SCHEDULE): executes every approved request. One log line says what it
    executed and left (INFO; WARNING naming the first 20 left, with their kind and reason, when it left any)."""
    result = runtime().service.custody.sweep(actor="sweep-timer")
    log.log(logging.WARNING if result.left else logging.INFO, "sweep %s%s", result.summary(),
            " (past due)" if timer.past_due else "")
