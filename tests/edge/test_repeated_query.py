"""A query parameter a route reads is given once: a repeat answers 400 ``repeated_query_parameter``.

Azure's host joins a repeated parameter with commas (``pending,approved``) and the local host
kept the last one, so before this rule the same URL meant different things on each host.
"""

from __future__ import annotations

from pathlib import Path

import azure.functions as func
import httpx
import pytest

import function_app
from memory_core.api.function_table import functions_of, http_methods
from memory_core.composition import build_runtime
from memory_core.domain.errors import InvalidInput
from memory_core.edge import Access, spec_of
from memory_core.edge.admission import admit
from memory_core.settings import Settings
from memory_core.wire.deletions import DeletionsQuery
from tests.support.local_server import OPERATOR_KEY, USER_KEY, RunningServer, identity
from tests.support.routes import route_path

AGENT = "/instances/i/providers/FoundationaLLM.Agent/agents/repeat-agent"
FILE = "/memories/repeat.md"
BODIES = {
    "view_file": {"command": "view", "path": "/memories"},
    "create_file": {"command": "create", "path": FILE, "file_text": "fact"},
    "str_replace_file": {"command": "str_replace", "path": FILE, "old_str": "fact", "new_str": "fact, edited"},
    "insert_file": {"command": "insert", "path": FILE, "insert_line": 0, "insert_text": "first"},
    "delete_file": {"command": "delete", "path": FILE},
    "rename_file": {"command": "rename", "old_path": FILE, "new_path": "/memories/moved.md"},
    "put_agent_settings": {"enabled": True},
    "dismiss_deletion": None,
    "release_orphan_hold": None,
    "run_sweep": None,
}
"""A valid body for each POST or PUT route (None: it reads none), so only the repeat can refuse the request."""


def _routes_reading_a_query() -> list[tuple[str, str, str, list[str]]]:
    """(function, method, route template, the query parameters it reads) of every such HTTP function."""
    found = []
    for function in functions_of(function_app.app):
        trigger = function.get_trigger()
        spec = spec_of(function.get_user_function())
        if getattr(trigger, "type", None) != "httpTrigger" or spec is None or spec.query is None:
            continue
        assert spec.access in (Access.USER, Access.OPERATOR), function.get_function_name()
        names = [field.alias or name for name, field in spec.query.model_fields.items()]
        for method in http_methods(trigger):
            # A query_or_body route reads no query string on POST: there any parameter of it is refused
            # (parameter_in_url, tests/api/test_search_post_http.py).
            if method != "HEAD" and (method == "GET" or not spec.query_or_body):
                found.append((function.get_function_name(), method, str(trigger.route), names))
    return found


ROUTES = _routes_reading_a_query()


def _headers(template: str, upn: str = "alex@contoso.com") -> dict[str, str]:
    if template.startswith("instances/{instanceId}/operator/"):
        return {"X-API-KEY": OPERATOR_KEY}
    return {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity(upn)}


def _path(template: str, instance_id: str) -> str:
    return route_path(template, {"instanceId": instance_id, "entryId": "e-unknown", "requestId": "r-unknown"})


def test_the_routes_that_read_a_query_are_found() -> None:
    """The parametrized test below covers the listings, the memory reads, the memory tool and the operator's."""
    names = {name for name, *_ in ROUTES}
    assert {"get_memory", "list_entries", "search_memory", "list_own_deletions", "list_deletions",
            "put_agent_settings", "delete_agent_settings", "view_file"} <= names


@pytest.mark.parametrize(("function", "method", "template", "names"), ROUTES, ids=[f"{r[1]} {r[0]}" for r in ROUTES])
def test_each_parameter_a_route_reads_is_refused_when_repeated(sqlite_server: RunningServer, instance_id: str,
                                                              function: str, method: str, template: str,
                                                              names: list[str]) -> None:
    """Every parameter of every such route, given twice, answers 400 naming it, before the handler runs."""
    with httpx.Client(base_url=sqlite_server.api, headers=_headers(template), timeout=30) as http:
        for name in names:
            query = [(name, "a"), ("other", "kept"), (name, "b")]
            body = BODIES[function] if method in ("POST", "PUT") else None
            response = http.request(method, _path(template, instance_id), params=query, json=body)
            assert response.status_code == 400, (name, response.text)
            error = response.json()["error"]
            assert error["code"] == "repeated_query_parameter"
            assert error["message"] == f"query parameter '{name}' is given 2 times; give it once"


def test_names_are_counted_without_case_as_azure_joins_them(sqlite_server: RunningServer, instance_id: str) -> None:
    """``status`` and ``STATUS`` are one parameter to Azure's host, so together they are a repeat."""
    with sqlite_server.client("alex@contoso.com") as http:
        response = http.get(f"/instances/{instance_id}/memory/deletions",
                            params=[("status", "pending"), ("STATUS", "approved")])
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "repeated_query_parameter"


def test_a_repeated_parameter_the_route_does_not_read_is_ignored(sqlite_server: RunningServer,
                                                                  instance_id: str) -> None:
    """Unknown parameters are ignored, repeated or not; a comma inside one value is not a repeat."""
    with sqlite_server.client("alex@contoso.com") as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- likes trains, boats"}).raise_for_status()
        read = http.get(f"/instances/{instance_id}/memory", params=[("scope", "user"), ("x", "1"), ("x", "2")])
        found = http.get(f"/instances/{instance_id}/memory/search", params={"q": "trains,boats", "scope": "user"})
    assert read.status_code == 200
    assert "likes trains, boats" in read.json()["content_markdown"]
    assert found.status_code == 200
    assert [hit["entry"]["content_markdown"] for hit in found.json()["hits"]] == ["- likes trains, boats"]


def test_a_repeated_agent_id_stores_no_settings(sqlite_server: RunningServer, instance_id: str) -> None:
    """An operator's PUT naming two agents is refused, and neither agent's settings change."""
    other = AGENT + "-2"
    operator = {"X-API-KEY": OPERATOR_KEY}
    path = f"/instances/{instance_id}/operator/agent-settings"
    with httpx.Client(base_url=sqlite_server.api, headers=operator, timeout=30) as http:
        before = [http.get(path, params={"agentObjectId": a}).json() for a in (AGENT, other)]
        response = http.put(path, params=[("agentObjectId", AGENT), ("agentObjectId", other)],
                            json={"enabled": False})
        after = [http.get(path, params={"agentObjectId": a}).json() for a in (AGENT, other)]
        listed = http.get(f"/instances/{instance_id}/operator/agents").json()
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "repeated_query_parameter"
    assert after == before
    assert all(item["enabled"] for item in after)
    assert listed["agents"] == []


def test_a_request_shaped_as_azure_delivers_it_is_refused_too(tmp_path: Path) -> None:
    """Azure's host hands the worker ``params={"status": "pending,approved"}`` and the raw URL; the edge counts
    from the URL. The request is built by hand, as azure-functions-host's ToRpcHttp shapes it, because the
    Functions host cannot run here."""
    from memory_core.api import entries

    spec = spec_of(entries.list_own_deletions)
    assert spec is not None
    rt = build_runtime(Settings(memory_store="sqlite", memory_sqlite_path=str(tmp_path / "m.sqlite3"),
                                memory_api_keys=(USER_KEY,), website_hostname=None))
    try:
        url = "http://localhost:7071/api/instances/i/memory/deletions?status=pending&Status=approved"
        request = func.HttpRequest(method="GET", url=url, params={"status": "pending,approved"},
                                   route_params={"instanceId": "i"}, body=b"",
                                   headers={"host": "localhost:7071", "x-api-key": USER_KEY,
                                            "x-user-identity": identity("alex@contoso.com")})
        with pytest.raises(InvalidInput) as refused:
            admit(spec, request, rt)
        assert refused.value.code == "repeated_query_parameter"
        single = func.HttpRequest(method="GET", url=url.split("&")[0], params={"status": "pending"},
                                  route_params={"instanceId": "i"}, body=b"", headers=dict(request.headers))
        assert admit(spec, single, rt).query(DeletionsQuery).status == "pending"
    finally:
        rt.store.close()


def test_a_repeated_agent_id_deletes_no_settings(sqlite_server: RunningServer, instance_id: str) -> None:
    """An operator's DELETE naming two agents is refused, and both agents keep their settings."""
    other = AGENT + "-2"
    path = f"/instances/{instance_id}/operator/agent-settings"
    with httpx.Client(base_url=sqlite_server.api, headers={"X-API-KEY": OPERATOR_KEY}, timeout=30) as http:
        for agent in (AGENT, other):
            http.put(path, params={"agentObjectId": agent}, json={"enabled": False}).raise_for_status()
        response = http.delete(path, params=[("agentObjectId", AGENT), ("agentObjectId", other)])
        after = [http.get(path, params={"agentObjectId": a}).json() for a in (AGENT, other)]
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "repeated_query_parameter"
    assert [item["enabled"] for item in after] == [False, False]
