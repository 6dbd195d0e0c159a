"""Behaviour of the CoreAPI beyond the V017 cases: provenance, clear, round trips, concurrency."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.support.local_server import RunningServer

AGENT = "/instances/i/providers/FoundationaLLM.Agent/agents/benefits-assistant"


def test_append_heading_carries_time_agent_reason_and_session(server: RunningServer, instance_id: str) -> None:
    """The provenance heading of an append names its time, agent, reason and session."""
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "agent", "agent_object_id": AGENT, "agent_name": "Benefits Assistant",
                        "content_markdown": "- x", "reason": "user said so", "session_id": "s-42"}).raise_for_status()
        document = http.get(f"/instances/{instance_id}/memory",
                            params={"scope": "agent", "agentObjectId": AGENT}).json()["content_markdown"]
    heading = next(line for line in document.splitlines() if line.startswith("## Appended "))
    assert " UTC" in heading
    assert "agent: Benefits Assistant" in heading
    assert "reason: user said so" in heading
    assert "session: s-42" in heading


def test_clear_keeps_the_profile_created_on(immediate_server: RunningServer, instance_id: str) -> None:
    """After an immediate clear, created_on is unchanged and updated_on moves forward."""
    with immediate_server.client() as http:
        first = http.post(f"/instances/{instance_id}/memory/append",
                          json={"scope": "user", "content_markdown": "- a"}).json()
        cleared = http.post(f"/instances/{instance_id}/memory/clear", json={"scope": "user", "confirm": True}).json()
        after = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()
    assert cleared["content_markdown"] == ""
    assert after["created_on"] == first["created_on"]
    assert after["updated_on"] >= first["updated_on"]


def test_append_after_clear_shows_only_new_content(server: RunningServer, instance_id: str) -> None:
    """Memory appended after a clear is visible; what was cleared is not."""
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append", json={"scope": "user", "content_markdown": "- old"})
        http.post(f"/instances/{instance_id}/memory/clear", json={"scope": "user", "confirm": True})
        http.post(f"/instances/{instance_id}/memory/append", json={"scope": "user", "content_markdown": "- new"})
        document = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()["content_markdown"]
    assert "- new" in document and "- old" not in document


def test_export_import_replace_export_round_trips(server: RunningServer, instance_id: str) -> None:
    """export, then import replace of that text, then export gives the same content."""
    with server.client() as http:
        for line in ("- one", "- two", "- three"):
            http.post(f"/instances/{instance_id}/memory/append",
                      json={"scope": "user", "content_markdown": line}).raise_for_status()
        first = http.get(f"/instances/{instance_id}/memory/export", params={"scope": "user"}).text
        http.post(f"/instances/{instance_id}/memory/import",
                  json={"scope": "user", "content_markdown": first, "mode": "replace"}).raise_for_status()
        second = http.get(f"/instances/{instance_id}/memory/export", params={"scope": "user"}).text
    assert second == first


def test_agent_export_filename_is_made_safe(server: RunningServer, instance_id: str) -> None:
    """The agent export is foundationallm-agent-memory-{agentName}.md with unsafe characters replaced."""
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "agent", "agent_object_id": AGENT, "agent_name": 'Benefits/"Assistant" v2',
                        "content_markdown": "- x"}).raise_for_status()
        exported = http.get(f"/instances/{instance_id}/memory/export", params={"scope": "agent", "agentObjectId": AGENT})
    assert exported.headers["content-disposition"] == (
        'attachment; filename="foundationallm-agent-memory-Benefits-Assistant-v2.md"'
    )


def test_export_of_combined_is_400(server: RunningServer, instance_id: str) -> None:
    """Export takes user or agent only."""
    with server.client() as http:
        response = http.get(f"/instances/{instance_id}/memory/export", params={"scope": "combined"})
    assert response.status_code == 400


def test_concurrent_appends_all_survive(server: RunningServer, instance_id: str) -> None:
    """Twenty appends to one scope sent at once over HTTP are all stored."""
    lines = [f"- concurrent fact {i}" for i in range(20)]

    def append(line: str) -> int:
        with server.client() as http:
            return http.post(f"/instances/{instance_id}/memory/append",
                             json={"scope": "user", "content_markdown": line}).status_code

    with ThreadPoolExecutor(max_workers=20) as pool:
        statuses = list(pool.map(append, lines))
    with server.client() as http:
        document = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()["content_markdown"]
    assert statuses == [200] * 20
    assert all(line in document for line in lines)


def test_instances_are_kept_apart(server: RunningServer, instance_id: str) -> None:
    """The same user's memory in one instance does not show in another."""
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- instance one"}).raise_for_status()
        other = http.get(f"/instances/{instance_id}-other/memory", params={"scope": "user"}).json()
    assert other["content_markdown"] == ""


def test_openapi_document_lists_every_memory_route(server: RunningServer) -> None:
    """GET /api/openapi.json is OpenAPI 3.1 with every CoreAPI route and its models."""
    with server.client() as http:
        document = http.get("/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    paths = document["paths"]
    assert set(paths) >= {
        "/api/instances/{instanceId}/memory",
        "/api/instances/{instanceId}/memory/append",
        "/api/instances/{instanceId}/memory/clear",
        "/api/instances/{instanceId}/memory/export",
        "/api/instances/{instanceId}/memory/import",
    }
    assert paths["/api/instances/{instanceId}/memory/append"]["post"]["requestBody"]["content"]["application/json"][
        "schema"]["$ref"].endswith("/AppendMemoryRequest")
    assert {"AppendMemoryRequest", "ClearMemoryRequest", "ImportMemoryRequest", "MemoryResponse", "ErrorResponse"} <= set(
        document["components"]["schemas"])
