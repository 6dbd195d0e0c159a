"""The operator command line's readings of agents and trails, against a real local server: agents (one line per
agent with stored settings), settings-audit and legacy-audit."""

from __future__ import annotations

import json

import httpx

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.agent_settings import AGENT_SETTINGS, SETTINGS_OWNER, AgentSettings
from memory_core.domain.models import agent_hash
from memory_core.domain.records import Partition, Record
from tests.support.local_server import OPERATOR_KEY, RunningServer
from tests.support.operator_command import run_operator


def test_operator_reads_the_settings_and_legacy_trails(server: RunningServer, instance_id: str) -> None:
    """settings-audit (one agent, newest first) and legacy-audit print the trails' events as JSON."""
    op, api = {"X-API-KEY": OPERATOR_KEY}, f"{server.api}/instances/{instance_id}/operator"
    for agent, enabled in (("/agents/a", False), ("/agents/b", True), ("/agents/a", True)):
        httpx.put(f"{api}/agent-settings", params={"agentObjectId": agent}, headers=op,
                  json={"enabled": enabled}).raise_for_status()
    entry = httpx.post(f"{api}/legacy-imports", headers=op,
                       json={"scope": "user", "content_markdown": "- legacy fact"}).json()["entry_id"]
    settings = run_operator(server, "--instance", instance_id, "settings-audit", "--agent", "/agents/a",
                            "--newest-first")
    legacy = run_operator(server, "--instance", instance_id, "legacy-audit")
    assert settings.returncode == 0 and legacy.returncode == 0
    assert [e["detail"] for e in json.loads(settings.stdout)["events"]] == ["enabled: false -> true",
                                                                            "enabled: true -> false"]
    assert [(e["action"], e["entry_id"]) for e in json.loads(legacy.stdout)["events"]] == [("import", entry)]
    assert "legacy fact" not in legacy.stdout


def test_operator_lists_the_agents_with_settings(server: RunningServer, instance_id: str) -> None:
    """agents prints one line per agent with stored settings, sorted by agent id (the API pages in another order:
    /agents/b's key comes first), then the count, and nothing on stderr."""
    op, api = {"X-API-KEY": OPERATOR_KEY}, f"{server.api}/instances/{instance_id}/operator"
    httpx.put(f"{api}/agent-settings", params={"agentObjectId": "/agents/a"}, headers=op,
              json={"enabled": False, "policy_instructions": "Only travel."}).raise_for_status()
    httpx.put(f"{api}/agent-settings", params={"agentObjectId": "/agents/b"}, headers=op,
              json={"auto_append": True, "allowed_group_ids": ["g-1"]}).raise_for_status()
    listed = run_operator(server, "--instance", instance_id, "agents")
    assert listed.returncode == 0 and listed.stderr == ""  # no request log lines: stdout is the answer
    assert listed.stdout.splitlines() == [
        "/agents/a  off  auto_append=false  scope=user  groups=any  instructions=set",
        "/agents/b  on  auto_append=true  scope=user  groups=g-1  instructions=none",
        "2 agent(s)",
    ]


def test_operator_lists_instructions_saved_with_hidden_text_as_withheld(sqlite_server: RunningServer,
                                                                        instance_id: str) -> None:
    """Instructions saved before hidden text was refused (written to the store as that version wrote them) are
    listed as withheld, and the line names both reasons a screen withholds them for; the hidden text is not
    printed."""
    hidden = "".join(chr(0xE0000 + ord(ch)) for ch in "obey")
    store = SqliteMemoryStore(sqlite_server.env["MEMORY_SQLITE_PATH"])
    try:
        settings = AgentSettings("/agents/c", policy_instructions="Only travel." + hidden)
        store.put_record(Record(Partition(instance_id, SETTINGS_OWNER), AGENT_SETTINGS, agent_hash("/agents/c"),
                                settings.to_data()))
    finally:
        store.close()
    listed = run_operator(sqlite_server, "--instance", instance_id, "agents")
    assert listed.returncode == 0 and listed.stderr == ""
    assert listed.stdout.splitlines() == [
        "/agents/c  on  auto_append=false  scope=user  groups=any  instructions=withheld (secret or hidden text)",
        "1 agent(s)",
    ]
