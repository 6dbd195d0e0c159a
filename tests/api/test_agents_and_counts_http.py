"""GET /memory/agents (the console's agent list) and entry_count on deletion listings, over HTTP."""

from __future__ import annotations

import uuid

from memory_core.domain.models import agent_hash
from memory_core.domain.paging import encode_token
from tests.support.local_server import OPERATOR_KEY, RunningServer


def test_agents_lists_only_the_callers_agent_scopes(sqlite_server: RunningServer) -> None:
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
        assert listed["continuation"] is None
        assert [(a["agent_object_id"], a["agent_name"], a["entry_count"]) for a in listed["agents"]] == sorted(
            [("agent-b", "Beta", 1), ("agent-a", "Alpha", 2)], key=lambda a: agent_hash(a[0]))

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


def test_agents_come_a_page_at_a_time_and_a_bad_limit_or_token_is_a_400(sqlite_server: RunningServer) -> None:
    """Five agents: ``limit=2`` answers 2, 2 and 1 with a continuation between, each agent once and the last page
    without one; the default page holds them all. A limit of 0 or 501, garbage, another listing's token and one
    naming no agent answer 400 (``invalid_continuation`` for the tokens), never 500."""
    instance = f"agent-pages-{uuid.uuid4().hex[:8]}"
    with sqlite_server.client("ana@contoso.com") as ana:
        base = f"/instances/{instance}/memory"
        for n in range(5):
            ana.post(f"{base}/append", json={"scope": "agent", "agent_object_id": f"agent-{n}",
                                             "content_markdown": f"- fact {n}"}).raise_for_status()
        sizes, ids, token = [], [], None
        while True:
            page = ana.get(f"{base}/agents", params={"limit": 2, **({"continuation": token} if token else {})})
            page.raise_for_status()
            sizes.append(len(page.json()["agents"]))
            ids += [a["agent_object_id"] for a in page.json()["agents"]]
            token = page.json()["continuation"]
            if not token:
                break
        assert sizes == [2, 2, 1]
        assert ids == sorted((f"agent-{n}" for n in range(5)), key=agent_hash)
        assert [a["agent_object_id"] for a in ana.get(f"{base}/agents").json()["agents"]] == ids

        for limit in ("0", "501", "many"):
            assert ana.get(f"{base}/agents", params={"limit": limit}).status_code == 400
        for hostile in ("%%%", "e30", encode_token("audit:oldest", ["x"]), encode_token("memory-agents", ["'"]),
                        "A" * 3000):
            refused = ana.get(f"{base}/agents", params={"continuation": hostile})
            assert refused.status_code == 400, hostile
        refused = ana.get(f"{base}/agents", params={"continuation": encode_token("memory-agents", ["zz"])})
        assert refused.json()["error"]["code"] == "invalid_continuation"
