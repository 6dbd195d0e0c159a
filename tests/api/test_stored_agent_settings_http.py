"""Stored agent settings are answered as stored, and a stored agent can be opened whatever its id, on both stores.

Input is held to its rules at the edge: an agent's id and each group id draw something and reorder nothing (400).
Settings saved before those rules, or by an older release, may break them: a group ID holding a right-to-left
override (U+202E), an agent ID holding one. Such a record used to answer 500 wherever it was shown, since the
answer's model applied the input's rules again, so one old record hid every agent of ``GET .../operator/agents``;
and its agent was listed but could not be opened, since ``?agentObjectId=`` refused the id the list showed.

Now an answer shows what is stored (the console isolates and marks it), and an id the rule refuses is taken when it
is exactly the id of an agent whose settings are stored: the operator opens that agent, overwrites its settings
and reads its changes. Any other such id is still refused (400), and so is a refused group sent back in a PUT.
The records are written straight into the server's store, as an older release left them.
"""

from __future__ import annotations

import httpx

from memory_core.domain.agent_settings import AGENT_SETTINGS, SETTINGS_OWNER, AgentSettings
from memory_core.domain.models import agent_hash
from memory_core.domain.records import Partition, Record
from tests.support.local_server import OPERATOR_KEY, RunningServer

RLO = "\u202e"
OLD_GROUPS = (f"g-{RLO}travel", "g\u200b\u200btravel", " g-travel")  # each refused by a PUT now
ODD_AGENT = f"agent{RLO}-old"  # an agent id the rule refuses, stored before it


def _operator(server: RunningServer, instance: str) -> httpx.Client:
    return httpx.Client(base_url=f"{server.api}/instances/{instance}/operator", headers={"X-API-KEY": OPERATOR_KEY},
                        timeout=30)


def _store_as_an_older_release(server: RunningServer, instance: str, *settings: AgentSettings) -> None:
    store = server.open_store()
    try:
        for each in settings:
            store.put_record(Record(Partition(instance, SETTINGS_OWNER), AGENT_SETTINGS,
                                    agent_hash(each.agent_object_id), each.to_data()))
    finally:
        store.close()


def test_the_agent_list_shows_settings_stored_before_the_rules_as_stored(server: RunningServer,
                                                                         instance_id: str) -> None:
    """Groups and an agent id that a PUT refuses now: the list answers 200 with every agent, each as stored,
    and so does each agent's own GET."""
    _store_as_an_older_release(server, instance_id, AgentSettings("agent-groups", allowed_group_ids=OLD_GROUPS),
                               AgentSettings(ODD_AGENT, enabled=False))
    with _operator(server, instance_id) as op:
        op.put("/agent-settings", params={"agentObjectId": "agent-new"}, json={"auto_append": True}).raise_for_status()
        listed = op.get("/agents")
        opened = op.get("/agent-settings", params={"agentObjectId": "agent-groups"})
    assert listed.status_code == 200, listed.text
    agents = {a["agent_object_id"]: a for a in listed.json()["agents"]}
    assert set(agents) == {"agent-groups", ODD_AGENT, "agent-new"}
    assert agents["agent-groups"]["allowed_group_ids"] == list(OLD_GROUPS)
    assert agents[ODD_AGENT]["enabled"] is False
    assert opened.status_code == 200, opened.text
    assert opened.json()["allowed_group_ids"] == list(OLD_GROUPS)


def test_a_stored_agent_whose_id_the_rule_refuses_opens_saves_and_shows_its_changes(server: RunningServer,
                                                                                   instance_id: str) -> None:
    """The id exactly as the list shows it opens the agent, a PUT overwrites its settings (here: memory off, and
    groups that pass), and its changes are read by it; the same id with a character more or less is refused."""
    _store_as_an_older_release(server, instance_id, AgentSettings(ODD_AGENT, allowed_group_ids=OLD_GROUPS[:1]))
    with _operator(server, instance_id) as op:
        (listed,) = op.get("/agents").json()["agents"]
        opened = op.get("/agent-settings", params={"agentObjectId": listed["agent_object_id"]})
        saved = op.put("/agent-settings", params={"agentObjectId": listed["agent_object_id"]},
                       json={"enabled": False, "allowed_group_ids": ["g-travel"]})
        reopened = op.get("/agent-settings", params={"agentObjectId": ODD_AGENT}).json()
        changes = op.get("/agent-settings/audit", params={"agentObjectId": ODD_AGENT})
        unknown = [op.get("/agent-settings", params={"agentObjectId": ODD_AGENT + "x"}),
                   op.put("/agent-settings", params={"agentObjectId": f"{RLO}{ODD_AGENT}"}, json={}),
                   op.get("/agent-settings/audit", params={"agentObjectId": ODD_AGENT + "x"})]
        after = op.get("/agents").json()["agents"]
    assert opened.status_code == 200, opened.text
    assert opened.json()["agent_object_id"] == ODD_AGENT and opened.json()["allowed_group_ids"] == [f"g-{RLO}travel"]
    assert saved.status_code == 200, saved.text
    assert (reopened["enabled"], reopened["allowed_group_ids"]) == (False, ["g-travel"])
    assert changes.status_code == 200, changes.text
    assert [(e["agent_object_id"], e["action"]) for e in changes.json()["events"]] == [(ODD_AGENT, "agent_settings")]
    assert [(r.status_code, r.json()["error"]["code"]) for r in unknown] == [(400, "validation_error")] * 3
    assert all("U+202E" in r.json()["error"]["message"] for r in unknown)
    assert [a["agent_object_id"] for a in after] == [ODD_AGENT]


def test_a_group_the_rule_refuses_is_shown_but_cannot_be_saved_again(server: RunningServer,
                                                                      instance_id: str) -> None:
    """Input keeps its rule: sending the stored group back answers 400 and keeps the settings; leaving it out
    saves them."""
    _store_as_an_older_release(server, instance_id, AgentSettings("agent-groups", allowed_group_ids=OLD_GROUPS[:1]))
    with _operator(server, instance_id) as op:
        stored = op.get("/agent-settings", params={"agentObjectId": "agent-groups"}).json()
        refused = op.put("/agent-settings", params={"agentObjectId": "agent-groups"},
                         json={"allowed_group_ids": stored["allowed_group_ids"]})
        kept = op.get("/agent-settings", params={"agentObjectId": "agent-groups"}).json()
        saved = op.put("/agent-settings", params={"agentObjectId": "agent-groups"},
                       json={"allowed_group_ids": ["g-travel"]})
    assert refused.status_code == 400 and "U+202E" in refused.json()["error"]["message"]
    assert kept["allowed_group_ids"] == [f"g-{RLO}travel"]
    assert saved.status_code == 200 and saved.json()["allowed_group_ids"] == ["g-travel"]
