"""The seed's V017 verification cases 1-11, over real HTTP against the local server."""

from __future__ import annotations

from tests.support.local_server import RunningServer

AGENT_A = "/instances/i/providers/FoundationaLLM.Agent/agents/benefits-assistant"
AGENT_B = "/instances/i/providers/FoundationaLLM.Agent/agents/travel-assistant"


def test_case_01_user_memory_starts_empty(server: RunningServer, instance_id: str) -> None:
    """GET scope=user on a new user answers 200 with empty content_markdown."""
    with server.client() as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    assert response.status_code == 200
    assert response.json()["content_markdown"] == ""
    assert response.json()["upn"] == "alex@contoso.com"


def test_case_02_append_user_memory_is_read_back(server: RunningServer, instance_id: str) -> None:
    """An appended user memory shows in GET scope=user under the user title."""
    with server.client() as http:
        appended = http.post(
            f"/instances/{instance_id}/memory/append",
            json={"scope": "user", "content_markdown": "- User prefers concise answers.", "reason": "stated"},
        )
        read = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    assert appended.status_code == 200
    assert "- User prefers concise answers." in appended.json()["content_markdown"]
    document = read.json()["content_markdown"]
    assert document.startswith("# User memory\n")
    assert "- User prefers concise answers." in document
    assert "reason: stated" in document


def test_case_03_append_agent_memory_for_agent_a(server: RunningServer, instance_id: str) -> None:
    """Agent-scoped memory is stored for that agent and read back under the agent title."""
    with server.client() as http:
        http.post(
            f"/instances/{instance_id}/memory/append",
            json={"scope": "agent", "agent_object_id": AGENT_A, "agent_name": "Benefits Assistant",
                  "content_markdown": "- Cares about HSA details."},
        ).raise_for_status()
        read = http.get(f"/instances/{instance_id}/memory", params={"scope": "agent", "agentObjectId": AGENT_A})
    body = read.json()
    assert body["content_markdown"].startswith("# Agent memory\n")
    assert "- Cares about HSA details." in body["content_markdown"]
    assert body["agent_name"] == "Benefits Assistant"


def test_case_04_agent_b_does_not_see_agent_a(server: RunningServer, instance_id: str) -> None:
    """Agent A's memory never shows for agent B."""
    with server.client() as http:
        http.post(
            f"/instances/{instance_id}/memory/append",
            json={"scope": "agent", "agent_object_id": AGENT_A, "content_markdown": "- secret-to-A"},
        ).raise_for_status()
        read_b = http.get(f"/instances/{instance_id}/memory", params={"scope": "agent", "agentObjectId": AGENT_B})
    assert read_b.status_code == 200
    assert "secret-to-A" not in read_b.json()["content_markdown"]


def test_case_05_combined_is_user_then_agent(server: RunningServer, instance_id: str) -> None:
    """combined holds user memory, then agent A's memory, in that order."""
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "agent", "agent_object_id": AGENT_A, "content_markdown": "- agent fact"}).raise_for_status()
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- user fact"}).raise_for_status()
        combined = http.get(f"/instances/{instance_id}/memory",
                            params={"scope": "combined", "agentObjectId": AGENT_A}).json()["content_markdown"]
    assert combined.index("# User memory") < combined.index("- user fact") < combined.index("# Agent memory")
    assert combined.index("# Agent memory") < combined.index("- agent fact")


def test_case_06_export_user_memory_is_a_markdown_attachment(server: RunningServer, instance_id: str) -> None:
    """Export answers text/markdown, as an attachment named foundationallm-user-memory.md."""
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- exported fact"}).raise_for_status()
        exported = http.get(f"/instances/{instance_id}/memory/export", params={"scope": "user"})
    assert exported.status_code == 200
    assert exported.headers["content-type"].startswith("text/markdown")
    assert exported.headers["content-disposition"] == 'attachment; filename="foundationallm-user-memory.md"'
    assert "- exported fact" in exported.text


def test_case_07_import_append_adds_under_an_import_heading(server: RunningServer, instance_id: str) -> None:
    """mode=append keeps existing agent B memory and adds the import under an import heading."""
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "agent", "agent_object_id": AGENT_B, "content_markdown": "- before"}).raise_for_status()
        imported = http.post(f"/instances/{instance_id}/memory/import",
                             json={"scope": "agent", "agent_object_id": AGENT_B,
                                   "content_markdown": "# Imported memory\n\n- likes trains", "mode": "append"})
    document = imported.json()["content_markdown"]
    assert imported.status_code == 200
    assert "- before" in document and "- likes trains" in document
    assert "## Imported " in document


def test_case_08_import_replace_replaces_the_scope(server: RunningServer, instance_id: str) -> None:
    """mode=replace removes old agent B content and keeps only the replacement."""
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "agent", "agent_object_id": AGENT_B, "content_markdown": "- old content"}).raise_for_status()
        http.post(f"/instances/{instance_id}/memory/import",
                  json={"scope": "agent", "agent_object_id": AGENT_B,
                        "content_markdown": "- replacement", "mode": "replace"}).raise_for_status()
        read = http.get(f"/instances/{instance_id}/memory", params={"scope": "agent", "agentObjectId": AGENT_B})
    document = read.json()["content_markdown"]
    assert "- old content" not in document
    assert "- replacement" in document


def test_case_09_clear_agent_memory_empties_it(server: RunningServer, instance_id: str) -> None:
    """clear scope=agent confirm=true: agent B reads empty at once (pending approval), user memory untouched."""
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "agent", "agent_object_id": AGENT_B, "content_markdown": "- to clear"}).raise_for_status()
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- keep me"}).raise_for_status()
        cleared = http.post(f"/instances/{instance_id}/memory/clear",
                            json={"scope": "agent", "agent_object_id": AGENT_B, "confirm": True})
        agent = http.get(f"/instances/{instance_id}/memory", params={"scope": "agent", "agentObjectId": AGENT_B})
        user = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    assert cleared.status_code == 202
    assert cleared.json()["status"] == "pending_approval"
    assert agent.json()["content_markdown"] == ""
    assert "- keep me" in user.json()["content_markdown"]


def test_case_10_another_user_sees_none_of_the_first_users_memory(server: RunningServer, instance_id: str) -> None:
    """A second identity reads empty memory where the first stored some."""
    with server.client("alex@contoso.com") as alex, server.client("blake@contoso.com") as blake:
        alex.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- alex only"}).raise_for_status()
        seen = blake.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    assert seen.status_code == 200
    assert "alex only" not in seen.json()["content_markdown"]
    assert seen.json()["upn"] == "blake@contoso.com"


def test_case_11a_agent_scope_without_agent_object_id_is_400(server: RunningServer, instance_id: str) -> None:
    """scope=agent without agent_object_id answers 400 agent_required."""
    with server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/append",
                             json={"scope": "agent", "content_markdown": "- x"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "agent_required"


def test_case_11b_clear_without_confirm_is_400(server: RunningServer, instance_id: str) -> None:
    """clear without confirm=true answers 400 confirm_required."""
    with server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/clear", json={"scope": "user"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "confirm_required"


def test_case_11c_oversized_markdown_is_413(server: RunningServer, instance_id: str) -> None:
    """A write over MEMORY_MAX_WRITE_BYTES (64 KiB by default) answers 413 and stores nothing."""
    with server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/append",
                             json={"scope": "user", "content_markdown": "x" * (64 * 1024 + 1)})
        read = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert read.json()["content_markdown"] == ""
