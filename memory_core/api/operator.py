"""Operator endpoints (MEMORY_OPERATOR_KEYS) and the sweep timer.

Routes start with "operator", not "admin": Azure Functions reserves "admin".
"""

from __future__ import annotations

import logging

import azure.functions as func

from memory_core.api.custody_schemas import (
    AgentSettingsBody,
    AgentSettingsModel,
    AgentSettingsQuery,
    LegacyImportRequest,
    LegacyImportResponse,
    AuditEventModel,
    AuditResponse,
    DeletionListResponse,
    DeletionRequestModel,
    DeletionsQuery,
    OperatorAuditQuery,
    PendingDeletionResponse,
    PurgeRequest,
    RejectRequest,
    SweepResponse,
)
from memory_core.api.http import (
    EndpointSpec,
    endpoint,
    instance_id,
    json_response,
    parse_body,
    parse_query,
    request_body_limit,
)
from memory_core.composition import runtime
from memory_core.domain.deletion import PENDING_MESSAGE, DeletionStatus
from memory_core.domain.agent_settings import AgentSettings
from memory_core.domain.identity import AgentContext
from memory_core.domain.models import Scope, normalize_upn
from memory_core.domain.service import PendingDeletion

log = logging.getLogger("memory_core.sweep")
OPERATOR = "operator"
_OPERATOR_AUTH = ("apiKey",)
_BODY_LIMIT = 64 * 1024


@endpoint(EndpointSpec(summary="List deletion requests, optionally by status", tag=OPERATOR, query=DeletionsQuery,
                       response=DeletionListResponse, security=_OPERATOR_AUTH, errors=(400, 401, 403)))
def list_deletions(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    rt.auth.operator(req.headers)
    query = parse_query(req, DeletionsQuery)
    status = DeletionStatus(query.status) if query.status else None
    requests = rt.service.custody.list(instance_id(req), status)
    return json_response(DeletionListResponse(requests=[DeletionRequestModel.from_request(r) for r in requests]))


@endpoint(EndpointSpec(summary="Approve a pending deletion request (the sweep erases it)", tag=OPERATOR,
                       response=DeletionRequestModel, security=_OPERATOR_AUTH, errors=(400, 401, 403, 404, 409)))
def approve_deletion(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    operator = rt.auth.operator(req.headers)
    request = rt.service.custody.approve(operator, instance_id(req), req.route_params.get("requestId", ""))
    return json_response(DeletionRequestModel.from_request(request))


@endpoint(EndpointSpec(summary="Reject a pending deletion request; its memory shows again", tag=OPERATOR,
                       body=RejectRequest, response=DeletionRequestModel, security=_OPERATOR_AUTH,
                       errors=(400, 401, 403, 404, 409)))
def reject_deletion(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    operator = rt.auth.operator(req.headers)
    body = parse_body(req, RejectRequest, _BODY_LIMIT)
    request = rt.service.custody.reject(operator, instance_id(req), req.route_params.get("requestId", ""), body.reason)
    return json_response(DeletionRequestModel.from_request(request))


@endpoint(EndpointSpec(summary="Request erasure of all of one user's memory in the instance", tag=OPERATOR,
                       body=PurgeRequest, response=PendingDeletionResponse, success_status=202,
                       security=_OPERATOR_AUTH, errors=(400, 401, 403)))
def request_purge(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    operator = rt.auth.operator(req.headers)
    body = parse_body(req, PurgeRequest, _BODY_LIMIT)
    request = rt.service.custody.request_purge(operator, instance_id(req), normalize_upn(body.upn))
    return json_response(PendingDeletionResponse.from_pending(PendingDeletion(request.id, PENDING_MESSAGE)), 202)


@endpoint(EndpointSpec(summary="Run the sweep now for this instance; answers what it executed", tag=OPERATOR,
                       response=SweepResponse, security=_OPERATOR_AUTH, errors=(401, 403)))
def run_sweep(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    operator = rt.auth.operator(req.headers)
    executed = rt.service.custody.sweep(actor=operator, instance_id=instance_id(req))
    return json_response(SweepResponse(executed=[DeletionRequestModel.from_request(r) for r in executed]))


@endpoint(EndpointSpec(summary="Read one user's audit trail", tag=OPERATOR, query=OperatorAuditQuery,
                       response=AuditResponse, security=_OPERATOR_AUTH, errors=(400, 401, 403)))
def read_audit(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    rt.auth.operator(req.headers)
    query = parse_query(req, OperatorAuditQuery)
    upn = normalize_upn(query.upn)
    events = rt.service.audit_trail(instance_id(req), upn)
    return json_response(AuditResponse(upn=upn, events=[AuditEventModel.from_event(e) for e in events]))


@endpoint(EndpointSpec(summary="Read an agent's memory settings", tag=OPERATOR, query=AgentSettingsQuery,
                       response=AgentSettingsModel, security=_OPERATOR_AUTH, errors=(400, 401, 403)))
def get_agent_settings(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    rt.auth.operator(req.headers)
    query = parse_query(req, AgentSettingsQuery)
    settings = rt.service.agent_settings.get(instance_id(req), query.agentObjectId)
    return json_response(AgentSettingsModel.from_settings(settings))


@endpoint(EndpointSpec(summary="Replace an agent's memory settings", tag=OPERATOR, query=AgentSettingsQuery,
                       body=AgentSettingsBody, response=AgentSettingsModel, security=_OPERATOR_AUTH,
                       errors=(400, 401, 403)))
def put_agent_settings(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    rt.auth.operator(req.headers)
    query = parse_query(req, AgentSettingsQuery)
    body = parse_body(req, AgentSettingsBody, _BODY_LIMIT)
    settings = AgentSettings(
        agent_object_id=query.agentObjectId, enabled=body.enabled, auto_append=body.auto_append,
        default_write_scope=body.default_write_scope, policy_instructions=body.policy_instructions,
        allowed_group_ids=tuple(body.allowed_group_ids) if body.allowed_group_ids is not None else None,
    )
    return json_response(AgentSettingsModel.from_settings(rt.service.agent_settings.put(instance_id(req), settings)))


@endpoint(EndpointSpec(summary="Load legacy memory (no owner; shown only under the legacy policy)", tag=OPERATOR,
                       body=LegacyImportRequest, response=LegacyImportResponse, security=_OPERATOR_AUTH,
                       errors=(400, 401, 403, 413, 422)))
def import_legacy(req: func.HttpRequest) -> func.HttpResponse:
    rt = runtime()
    operator = rt.auth.operator(req.headers)
    body = parse_body(req, LegacyImportRequest, request_body_limit(rt.settings.memory_max_write_bytes))
    agent = AgentContext(body.agent_object_id, body.agent_name) if body.agent_object_id else None
    entry = rt.service.import_legacy(operator, instance_id(req), Scope(body.scope), agent, body.content_markdown)
    return json_response(LegacyImportResponse(entry_id=entry.id, scope=entry.key.scope.value))


def sweep_timer(timer: func.TimerRequest) -> None:
    """The scheduled sweep (MEMORY_SWEEP_SCHEDULE): executes every approved request."""
    executed = runtime().service.custody.sweep(actor="sweep-timer")
    log.info("sweep executed %d deletion request(s)%s", len(executed), " (past due)" if timer.past_due else "")
