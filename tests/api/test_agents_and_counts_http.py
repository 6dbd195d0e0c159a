"""GET /memory/agents (the console's agent list) and entry_count on deletion listings, over HTTP."""

from __future__ import annotations

import uuid

from tests.support.local_server import OPERATOR_KEY, RunningServer


def test_agents_lists_only_the_callers_agent_scopes_newest_first(sqlite_server: RunningServer) -> None:
    instance = f"agents-{uuid.uuid4().hex[:8]}"
    with sqlite_server.client("ana@contoso.com") as ana, sqlite_server.client("ben@contoso.com") as ben:
        base = f"/instances/{instance}/memory"
        for agent, name, n in (("agent-a", "Alpha", 2), ("agent-b", "Beta", 1)):
            for i in range(n):
                ana.post(f"{base}/append", json={"scope": "agent", "agent_object_id": agent, "agent_name": name,
                                                 "content_markdown": f"- {name} {i}"}).raise_for_status()
        ana.post(f"{base}/append", json={"scope": "user", "content_markdown": "- user fact"}).raise_for_status()
        ben.post(f"{base}/append", json={"scope": "agent", "agent_object_id": "agent-secret",
                                         "content_markdown": "- ben only"}).raise_for_status()

        listed = ana.get(f"{base}/agents").json()
        assert listed["upn"] == "ana@contoso.com"
        assert [(a["agent_object_id"], a["agent_name"], a["entry_count"]) for a in listed["agents"]] == [
            ("agent-b", "Beta", 1), ("agent-a", "Alpha", 2)]

        # a cleared scope stays listed, empty; its request counts the entries it hides
        request_id = ana.post(f"{base}/clear", json={"scope": "agent", "agent_object_id": "agent-a",
                                                     "confirm": True}).json()["request_id"]
        counts = {a["agent_object_id"]: a["entry_count"] for a in ana.get(f"{base}/agents").json()["agents"]}
        assert counts == {"agent-a": 0, "agent-b": 1}
        assert [a["agent_object_id"] for a in ben.get(f"{base}/agents").json()["agents"]] == ["agent-secret"]

        off = ana.get(f"{base}/agents", headers={"X-MEMORY-MODE": "off"}).json()
        assert off["agents"] == [] and "memory is off" in off["notice"]

    with sqlite_server.client(None, key=OPERATOR_KEY) as operator:
        deletions = operator.get(f"/instances/{instance}/operator/deletions", params={"status": "pending"}).json()
        assert [(r["id"], r["entry_count"]) for r in deletions["requests"]] == [(request_id, 2)]
        operator.post(f"/instances/{instance}/operator/deletions/{request_id}/approve").raise_for_status()
        approved = operator.get(f"/instances/{instance}/operator/deletions", params={"status": "approved"}).json()
        assert approved["requests"][0]["entry_count"] == 2
        operator.post(f"/instances/{instance}/operator/sweep").raise_for_status()
        executed = operator.get(f"/instances/{instance}/operator/deletions", params={"status": "executed"}).json()
        assert executed["requests"][0]["entry_count"] == executed["requests"][0]["erased_entries"] == 2
