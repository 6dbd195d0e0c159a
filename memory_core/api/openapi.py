"""The OpenAPI 3.1 document, generated from the FunctionApp's routes and the pydantic models.

Nothing here is written by hand per endpoint: each HTTP function's route and
methods come from the FunctionApp, and its models from the ``EndpointSpec``
that the edge (``memory_core.edge.endpoint``) attached to it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import azure.functions as func
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from memory_core import __version__
from memory_core.api.function_table import functions_of, http_methods
from memory_core.domain.idempotency import IDEMPOTENCY_KEY_HEADER, KEY_PATTERN, MAX_KEY_CHARS
from memory_core.domain.identity import INSTANCE_ID_PATTERN
from memory_core.edge import Access, Call, EndpointSpec, endpoint, spec_of
from memory_core.edge.spec import not_stored
from memory_core.wire.errors import ErrorResponse
from memory_core.wire.memory import NotStoredResponse

Handler = Callable[..., Any]

_REF = "#/components/schemas/{model}"
_STATUS_TEXT = {
    202: "Accepted: a deletion waits for operator approval; what it covers is hidden meanwhile",
    400: "Invalid input",
    401: "Missing or wrong credential",
    403: "Not allowed",
    404: "Not found",
    409: "Conflict",
    413: "Request body larger than this endpoint accepts",
    415: "Body not sent as application/json",
    421: "The Host header names no host this service answers for (DNS rebinding)",
    422: "Rejected content",
    503: "Store unavailable; retry after Retry-After seconds",
}


def _http_functions(app: func.FunctionApp) -> list[tuple[str, list[str], Handler]]:
    found = []
    for function in functions_of(app):
        trigger = function.get_trigger()
        if getattr(trigger, "type", None) != "httpTrigger":
            continue
        route = str(getattr(trigger, "route", None) or function.get_function_name())
        found.append((route, http_methods(trigger), function.get_user_function()))
    return found


def build_openapi(app: func.FunctionApp, route_prefix: str = "api") -> dict[str, Any]:
    """The OpenAPI 3.1 document of every HTTP function of ``app`` that has an EndpointSpec."""
    routes = [(r, m, spec_of(h), h) for r, m, h in _http_functions(app)]
    specs: list[tuple[str, list[str], EndpointSpec, Handler]] = [
        (r, m, s, h) for r, m, s, h in routes if s is not None and s.in_openapi
    ]
    models: set[type[BaseModel]] = {ErrorResponse}
    for _, _, spec, _ in specs:
        models.update(m for m in (spec.body, spec.response, *spec.statuses.values()) if m is not None)
        if spec.memory_off is not_stored:
            models.add(NotStoredResponse)
    _, schema = models_json_schema(
        [(m, "validation") for m in sorted(models, key=lambda m: m.__name__)],
        ref_template=_REF,
    )
    paths: dict[str, dict[str, Any]] = {}
    for route, methods, spec, handler in specs:
        path = f"/{route_prefix}/{route}" if route_prefix else f"/{route}"
        documented = [m for m in methods if m not in ("HEAD", "OPTIONS")]  # HEAD mirrors GET; OPTIONS answers Allow
        for method in documented:
            # operationIds are unique: a function serving several methods keeps its name on GET (existing
            # generated clients) and adds the method on the others (search_memory_post).
            operation_id = handler.__name__ if len(documented) == 1 or method == "GET" else (
                f"{handler.__name__}_{method.lower()}")
            paths.setdefault(path, {})[method.lower()] = _operation(route, spec, operation_id, method)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "memory-core CoreAPI",
            "version": __version__,
            "description": "Personalized memory for AI agents: per-user and per-agent markdown memory.",
        },
        "paths": paths,
        "components": {
            "schemas": schema.get("$defs", {}),
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-KEY"},
                "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                           "description": "Entra ID access token (MEMORY_AUTH_MODE includes entra)"},
                "platformIdentity": {"type": "apiKey", "in": "header", "name": "X-PLATFORM-IDENTITY",
                                     "description": "Platform-signed identity context JWT (mode platform)"},
                "userIdentity": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "X-USER-IDENTITY",
                    "description": 'JSON user identity: {"upn", "name", "user_name", "user_id", "group_ids"}',
                },
            },
        },
    }


def _inputs(spec: EndpointSpec, method: str) -> tuple[type[BaseModel] | None, type[BaseModel] | None]:
    """The query and body models ``method`` reads (``EndpointSpec.query_or_body``: the query on GET, the body
    otherwise; ``memory_core.edge.admission``)."""
    if spec.query_or_body:
        return (spec.query, None) if method in ("GET", "HEAD") else (None, spec.body)
    return spec.query, spec.body


def _operation(route: str, spec: EndpointSpec, operation_id: str, method: str) -> dict[str, Any]:
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": _path_schema(name)}
        for name in re.findall(r"{(\w+)[^}]*}", route)
    ]
    query, body = _inputs(spec, method)
    if query is not None:
        query_schema = query.model_json_schema()
        required = set(query_schema.get("required", []))
        for name, prop in query_schema.get("properties", {}).items():
            parameters.append({"name": name, "in": "query", "required": name in required, "schema": prop})
    if spec.idempotency_key:
        parameters.append(_IDEMPOTENCY_KEY_PARAMETER)
    if spec.content_type == "application/json" and spec.response is not None:
        schema: dict[str, Any] = {"$ref": _REF.format(model=spec.response.__name__)}
        if spec.memory_off is not_stored:  # a write under X-MEMORY-MODE: off stores nothing and says so
            schema = {"anyOf": [schema, {"$ref": _REF.format(model=NotStoredResponse.__name__)}]}
        content: dict[str, Any] = {"application/json": {"schema": schema}}
    elif spec.content_type == "application/json":
        content = {"application/json": {"schema": {"type": "object"}}}
    else:
        content = {spec.content_type: {"schema": {"type": "string"}}}
    responses: dict[str, Any] = {str(spec.success_status): {"description": "Success", "content": content}}
    for status, model in spec.statuses.items():
        responses[str(status)] = {
            "description": _STATUS_TEXT.get(status, "Success"),
            "content": {"application/json": {"schema": {"$ref": _REF.format(model=model.__name__)}}},
        }
    error_content = {"application/json": {"schema": {"$ref": _REF.format(model="ErrorResponse")}}}
    # The edge refuses a body that is not JSON (415) or past the endpoint's limit (413) before any
    # handler runs, so every operation that takes a body can answer both, whatever its spec lists; and any
    # operation a foreign Host (421) or a cross-site Origin (403).
    edge_refusals = {403, 421} | ({413, 415} if body is not None else set())
    for status in sorted({*spec.errors, *edge_refusals, 503}):
        responses[str(status)] = {"description": _STATUS_TEXT.get(status, "Error"), "content": error_content}
    operation: dict[str, Any] = {
        "operationId": operation_id,
        "summary": spec.summary,
        "tags": [spec.tag],
        "parameters": parameters,
        "responses": responses,
        "security": _security(spec),
    }
    if spec.description:
        operation["description"] = spec.description
    if body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": _REF.format(model=body.__name__)}}},
        }
    return operation


_IDEMPOTENCY_KEY_PARAMETER: dict[str, Any] = {
    "name": IDEMPOTENCY_KEY_HEADER, "in": "header", "required": False,
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS, "pattern": KEY_PATTERN},
    "description": "A key of the caller's choosing (draft-ietf-httpapi-idempotency-key-header), new for each "
    "write: a retry with the same key and the same request stores nothing and answers as the first call did "
    "(the same entry_id); the same key on a different request is refused with 422 idempotency_key_reused. "
    "Keys are the caller's own and last as long as the entry they made is stored.",
}


def _path_schema(name: str) -> dict[str, Any]:
    if name == "instanceId":
        return {"type": "string", "pattern": INSTANCE_ID_PATTERN}
    return {"type": "string"}


def _security(spec: EndpointSpec) -> list[dict[str, list[str]]]:
    """Alternatives: a key (with the user's identity on user routes), a bearer token, a platform context."""
    if spec.access is Access.USER:
        return [{"apiKey": [], "userIdentity": []}, {"bearer": []}, {"platformIdentity": []}]
    if spec.access is Access.OPERATOR:
        return [{"apiKey": []}, {"bearer": []}]
    return []


def openapi_endpoint(app: func.FunctionApp) -> Handler:
    """An HTTP function serving ``app``'s OpenAPI document (built once, on first call; public)."""
    cache: dict[str, str] = {}

    @endpoint(EndpointSpec(summary="This API's OpenAPI document", tag="meta", access=Access.PUBLIC,
                           in_openapi=False))
    def openapi(call: Call) -> func.HttpResponse:
        if "doc" not in cache:
            cache["doc"] = json.dumps(build_openapi(app), indent=2)
        return func.HttpResponse(cache["doc"], status_code=200, mimetype="application/json")

    return openapi
