"""Every HTTP function goes through the edge, by construction."""

from __future__ import annotations

import azure.functions as func
import pytest

import function_app
from memory_core.api.function_table import functions_of, http_methods
from memory_core.edge import Access, Call, EdgeApp, EndpointSpec, endpoint, spec_of


def test_a_plain_function_cannot_be_routed() -> None:
    """EdgeApp.route refuses a function that endpoint() did not make."""
    app = EdgeApp()

    def bare(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse("hi")

    with pytest.raises(TypeError, match="does not go through the edge"):
        app.route(route="bare", methods=["GET"])(bare)


def test_every_http_function_of_the_app_declares_its_access() -> None:
    """Each route of function_app.py carries an EndpointSpec, and GET routes answer HEAD."""
    for function in functions_of(function_app.app):
        trigger = function.get_trigger()
        if getattr(trigger, "type", None) != "httpTrigger":
            continue
        spec = spec_of(function.get_user_function())
        assert spec is not None, function.get_function_name()
        assert isinstance(spec.access, Access)
        methods = http_methods(trigger)
        if "GET" in methods and not spec.methods:
            assert "HEAD" in methods, function.get_function_name()


def test_a_public_route_is_declared_public() -> None:
    """The OpenAPI document, the web console's page and assets, and the MCP endpoint's OAuth metadata are the
    app's public routes, and say so."""
    publics = [f.get_function_name() for f in functions_of(function_app.app)
               if (s := spec_of(f.get_user_function())) is not None and s.access is Access.PUBLIC]
    assert sorted(publics) == ["console_asset", "console_page", "oauth_protected_resource", "openapi"]


def test_the_worker_sees_the_binding_names() -> None:
    """The wrapped function keeps (req) or (req, context): the Functions worker binds by these names."""
    import inspect

    @endpoint(EndpointSpec(summary="s", tag="t", access=Access.PUBLIC))
    def sync_page(call: Call) -> func.HttpResponse:
        return func.HttpResponse("x")

    @endpoint(EndpointSpec(summary="s", tag="t", access=Access.PUBLIC))
    async def async_page(call: Call) -> func.HttpResponse:
        return func.HttpResponse("x")

    assert list(inspect.signature(sync_page).parameters) == ["req"]
    assert list(inspect.signature(async_page).parameters) == ["req", "context"]
    assert sync_page.__name__ == "sync_page"


def test_a_route_taking_its_input_either_way_needs_a_body_model_that_extends_its_query_model() -> None:
    """query_or_body: the handler reads ``call.input(QueryModel)`` on GET and POST alike, so the body model must be
    one; a route declaring it otherwise is refused when declared, not on its first request."""
    from memory_core.wire.custody import EntriesQuery, SearchBody, SearchQuery

    EndpointSpec(summary="s", tag="t", access=Access.USER, query=SearchQuery, body=SearchBody, query_or_body=True)
    for query, body in ((SearchQuery, None), (None, SearchBody), (EntriesQuery, SearchBody)):
        with pytest.raises(TypeError, match="query_or_body"):
            EndpointSpec(summary="s", tag="t", access=Access.USER, query=query, body=body, query_or_body=True)
