"""``DELETE .../operator/agent-settings`` over real sockets against ``serve``, on both stores.

An operator deletes an agent's settings: the agent is then governed as one with none (enabled, any group, no
instructions), its memory is untouched, and the settings trail tells the deletion with the old values, never the
instructions' text. None stored answers 404; the agent is named as the GET and the PUT name it.
"""

from __future__ import annotations

from memory_core.domain.agent_settings import AgentSettings
from memory_core.domain.models import sha256_hex
from tests.api.test_stored_agent_settings_http import ODD_AGENT, _operator, _store_as_an_older_release
from tests.support.local_server import RunningServer

AGENT = "/instances/i/providers/FoundationaLLM.Agent/agents/travel"
INSTRUCTIONS = "Only remember seat and meal preferences."
DEFAULTS = {"agent_object_id": AGENT, "enabled": True, "auto_append": False, "default_write_scope": "user",
            "policy_instructions": None, "allowed_group_ids": None, "policy_instructions_withheld": False,
            "stored": False}


def test_a_deleted_agents_settings_are_the_defaults_and_its_memory_stays(server: RunningServer,
                                                                         instance_id: str) -> None:
    """Disabled with instructions and groups, the agent's reads are refused; after the DELETE (200, the settings
    erased) the GET answers the defaults, the list is empty, the agent reads the memory written before and writes
    again, and the trail's last event is the deletion: old values against the defaults, the instructions' SHA-256
    and size, not their text."""
    read = {"scope": "combined", "agentObjectId": AGENT}
    with server.client("alex@contoso.com") as user, _operator(server, instance_id) as op:
        memory = f"/instances/{instance_id}/memory"
        user.post(f"{memory}/append", json={"scope": "agent", "agent_object_id": AGENT,
                                            "content_markdown": "- prefers aisle seats"}).raise_for_status()
        op.put("/agent-settings", params={"agentObjectId": AGENT}, json={
            "enabled": False, "policy_instructions": INSTRUCTIONS, "allowed_group_ids": ["g-travel"]},
        ).raise_for_status()
        refused = user.get(memory, params=read)
        deleted = op.delete("/agent-settings", params={"agentObjectId": AGENT})
        settings = op.get("/agent-settings", params={"agentObjectId": AGENT})
        listed = op.get("/agents")
        after = user.get(memory, params=read)
        written = user.post(f"{memory}/append", json={"scope": "agent", "agent_object_id": AGENT,
                                                      "content_markdown": "- vegetarian meals"})
        trail = op.get("/agent-settings/audit", params={"agentObjectId": AGENT, "order": "newest_first"})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "agent_memory_disabled"
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"status": "deleted", "deleted": {
        **DEFAULTS, "stored": True, "enabled": False, "policy_instructions": INSTRUCTIONS,
        "allowed_group_ids": ["g-travel"]}}
    assert settings.json() == DEFAULTS
    assert listed.json()["agents"] == []
    assert after.status_code == 200 and "aisle seats" in after.json()["content_markdown"]
    assert written.status_code == 200, written.text
    newest = trail.json()["events"][0]
    assert (newest["action"], newest["actor"], newest["agent_object_id"]) == (
        "agent_settings_deleted", "operator-key", AGENT)
    assert newest["detail"] == ('enabled: false -> true; policy_instructions removed; '
                                'allowed_group_ids: "g-travel" -> any group')
    assert (newest["content_sha256"], newest["byte_count"]) == (sha256_hex(INSTRUCTIONS), len(INSTRUCTIONS))
    assert INSTRUCTIONS not in trail.text


def test_deleting_settings_none_stored_answers_404_and_stores_nothing(server: RunningServer,
                                                                      instance_id: str) -> None:
    """Never saved: 404 ``not_found``; saved and deleted once, a second DELETE is 404 too, and the trail tells one
    deletion."""
    with _operator(server, instance_id) as op:
        never = op.delete("/agent-settings", params={"agentObjectId": AGENT})
        op.put("/agent-settings", params={"agentObjectId": AGENT}, json={"auto_append": True}).raise_for_status()
        first = op.delete("/agent-settings", params={"agentObjectId": AGENT})
        second = op.delete("/agent-settings", params={"agentObjectId": AGENT})
        trail = op.get("/agent-settings/audit").json()["events"]
    assert (never.status_code, never.json()["error"]["code"]) == (404, "not_found")
    assert first.status_code == 200
    assert (second.status_code, second.json()["error"]["code"]) == (404, "not_found")
    assert [e["action"] for e in trail] == ["agent_settings", "agent_settings_deleted"]


def test_a_deletion_names_the_agent_as_the_get_and_the_put_do(server: RunningServer, instance_id: str) -> None:
    """No agentObjectId, or one the input rule refuses and no stored settings hold: 400, nothing erased. An agent
    stored by an older release under an id the rule refuses is deleted by exactly that id, and stays named by it
    once deleted, since its trail names it: the trail (the deletion in it) and the GET (the defaults, ``stored``
    false, as for any agent with none) answer, a second DELETE is 404, and a PUT, which would store settings anew
    under an id the rule refuses, is 400."""
    _store_as_an_older_release(server, instance_id, AgentSettings(ODD_AGENT, enabled=False))
    with _operator(server, instance_id) as op:
        missing = op.delete("/agent-settings")
        refused = op.delete("/agent-settings", params={"agentObjectId": ODD_AGENT + "x"})
        kept = op.get("/agents").json()["agents"]
        opened = op.get("/agent-settings", params={"agentObjectId": ODD_AGENT})
        deleted = op.delete("/agent-settings", params={"agentObjectId": ODD_AGENT})
        left = op.get("/agents").json()["agents"]
        trail = op.get("/agent-settings/audit", params={"agentObjectId": ODD_AGENT, "order": "newest_first"})
        reopened = op.get("/agent-settings", params={"agentObjectId": ODD_AGENT})
        again = op.delete("/agent-settings", params={"agentObjectId": ODD_AGENT})
        recreated = op.put("/agent-settings", params={"agentObjectId": ODD_AGENT}, json={"enabled": False})
        other = op.get("/agent-settings/audit", params={"agentObjectId": ODD_AGENT + "x"})
        still_left = op.get("/agents").json()["agents"]
    assert (missing.status_code, refused.status_code) == (400, 400)
    assert [a["agent_object_id"] for a in kept] == [ODD_AGENT]
    assert (opened.status_code, opened.json()["stored"], opened.json()["enabled"]) == (200, True, False)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["deleted"]["agent_object_id"] == ODD_AGENT
    assert left == []
    assert trail.status_code == 200, trail.text
    assert [(e["action"], e["agent_object_id"]) for e in trail.json()["events"]] == [
        ("agent_settings_deleted", ODD_AGENT)]
    assert reopened.status_code == 200, reopened.text
    assert reopened.json() == {**DEFAULTS, "agent_object_id": ODD_AGENT}
    assert (again.status_code, again.json()["error"]["code"]) == (404, "not_found")
    assert (recreated.status_code, recreated.json()["error"]["code"]) == (400, "validation_error")
    assert other.status_code == 400
    assert still_left == []


def test_a_user_credential_cannot_delete_an_agents_settings(server: RunningServer, instance_id: str) -> None:
    """A person's key, whoever they name, is 403 on the DELETE; the settings stay."""
    with server.client("alex@contoso.com") as user, _operator(server, instance_id) as op:
        op.put("/agent-settings", params={"agentObjectId": AGENT}, json={"enabled": False}).raise_for_status()
        response = user.delete(f"/instances/{instance_id}/operator/agent-settings", params={"agentObjectId": AGENT})
        kept = op.get("/agent-settings", params={"agentObjectId": AGENT}).json()
    assert (response.status_code, response.json()["error"]["code"]) == (403, "forbidden")
    assert kept["enabled"] is False
