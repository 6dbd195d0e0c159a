"""Per-agent memory settings and the no-memory mode, over REST and MCP."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
from mcp_types import CallToolResult

from memory_core.domain.agent_settings import AGENT_SETTINGS, SETTINGS_OWNER, AgentSettings
from memory_core.domain.models import agent_hash
from memory_core.domain.records import Partition, Record
from tests.mcp.client import call, initialize, mcp_headers, mcp_session, text
from tests.support.local_server import OPERATOR_KEY, USER_KEY, RunningServer, identity

AGENT = "/agents/settings-test"


def _agent() -> str:
    return f"{AGENT}-{uuid.uuid4().hex[:8]}"


def _put(server: RunningServer, instance: str, agent: str, **settings: object) -> httpx.Response:
    return httpx.put(f"{server.api}/instances/{instance}/operator/agent-settings", params={"agentObjectId": agent},
                     headers={"X-API-KEY": OPERATOR_KEY}, json=settings)


def test_settings_default_to_enabled_and_round_trip(server: RunningServer, instance_id: str) -> None:
    """GET answers the defaults for an unknown agent; PUT stores what GET then answers."""
    agent = _agent()
    op = {"X-API-KEY": OPERATOR_KEY}
    before = httpx.get(f"{server.api}/instances/{instance_id}/operator/agent-settings",
                       params={"agentObjectId": agent}, headers=op).json()
    put = _put(server, instance_id, agent, enabled=True, auto_append=True, default_write_scope="agent",
               policy_instructions="Only travel preferences.", allowed_group_ids=["g-travel"])
    after = httpx.get(f"{server.api}/instances/{instance_id}/operator/agent-settings",
                      params={"agentObjectId": agent}, headers=op).json()
    assert before["enabled"] is True and before["allowed_group_ids"] is None and before["stored"] is False
    assert put.status_code == 200
    assert after == {"agent_object_id": agent, "enabled": True, "auto_append": True, "default_write_scope": "agent",
                     "policy_instructions": "Only travel preferences.", "allowed_group_ids": ["g-travel"],
                     "policy_instructions_withheld": False, "stored": True}


def test_unknown_settings_fields_are_400(server: RunningServer, instance_id: str) -> None:
    """PUT validates its body: an unknown field or a bad scope answers 400."""
    assert _put(server, instance_id, _agent(), enabeld=False).status_code == 400
    assert _put(server, instance_id, _agent(), default_write_scope="combined").status_code == 400


def test_instructions_holding_a_secret_are_refused_and_never_reach_a_model(
    server: RunningServer, instance_id: str
) -> None:
    """A token in policy_instructions answers 422 naming the field, without echoing it; the stored settings and
    what initialize tells the agent's model stay as they were."""
    agent, token = _agent(), "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    _put(server, instance_id, agent, policy_instructions="Remember seat preferences only.").raise_for_status()
    refused = _put(server, instance_id, agent, auto_append=True,
                   policy_instructions=f"Use the weather API with token {token} for forecasts.")
    after = httpx.get(f"{server.api}/instances/{instance_id}/operator/agent-settings",
                      params={"agentObjectId": agent}, headers={"X-API-KEY": OPERATOR_KEY}).json()
    init = asyncio.run(initialize(f"{server.api}/mcp", mcp_headers(USER_KEY, agent=agent, instance=instance_id)))
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "secret_detected"
    assert refused.json()["error"]["message"].startswith("policy_instructions looks like it contains a secret")
    assert token[:12] not in refused.text
    assert after["policy_instructions"] == "Remember seat preferences only." and after["auto_append"] is False
    assert "Remember seat preferences only." in (init.instructions or "") and token[:12] not in str(init)


def test_an_agent_id_or_a_group_holding_a_secret_or_hidden_text_is_refused_and_nothing_is_stored(
    server: RunningServer, instance_id: str
) -> None:
    """The agent's id and its groups are stored and shown to operators (settings, settings trail, agent list):
    a token in either answers 422 naming where it is, a group that draws nothing or reorders text answers 400,
    and neither the settings nor the trail nor the agent list changes."""
    agent, token = _agent(), "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    op = {"X-API-KEY": OPERATOR_KEY}
    _put(server, instance_id, agent, allowed_group_ids=["g-travel"]).raise_for_status()
    trail_before = httpx.get(f"{server.api}/instances/{instance_id}/operator/agent-settings/audit", headers=op).json()
    secret_group = _put(server, instance_id, agent, allowed_group_ids=["g-travel", f"g {token}"])
    secret_agent = _put(server, instance_id, f"{agent}-{token}", enabled=False)
    hidden = [_put(server, instance_id, agent, allowed_group_ids=[group])
              for group in ("g-\u202etravel", "g\u200b\u200btravel", " g-travel")]
    after = httpx.get(f"{server.api}/instances/{instance_id}/operator/agent-settings",
                      params={"agentObjectId": agent}, headers=op).json()
    trail_after = httpx.get(f"{server.api}/instances/{instance_id}/operator/agent-settings/audit", headers=op).json()
    agents = httpx.get(f"{server.api}/instances/{instance_id}/operator/agents", headers=op).json()
    assert secret_group.status_code == 422, secret_group.text
    assert secret_group.json()["error"]["message"].startswith("allowed_group_ids looks like it contains a secret")
    assert secret_agent.status_code == 422, secret_agent.text
    assert secret_agent.json()["error"]["message"].startswith("agentObjectId looks like it contains a secret")
    assert [r.status_code for r in hidden] == [400, 400, 400], [r.text for r in hidden]
    assert after["allowed_group_ids"] == ["g-travel"] and after["enabled"] is True
    assert trail_after == trail_before
    assert token[:12] not in str(agents) + str(trail_after) + secret_group.text + secret_agent.text


def _store_settings_as_before_the_screen(server: RunningServer, instance: str, settings: AgentSettings) -> None:
    """Write the settings record into the server's own store, as a version without the screen at PUT did."""
    store = server.open_store()
    try:
        store.put_record(Record(Partition(instance, SETTINGS_OWNER), AGENT_SETTINGS,
                                agent_hash(settings.agent_object_id), settings.to_data()))
    finally:
        store.close()


def test_stored_instructions_holding_a_secret_never_reach_a_model(server: RunningServer, instance_id: str) -> None:
    """Instructions holding a token, stored before the screen existed: initialize leaves them out and keeps the
    other settings (auto-append); the operator's GET shows them with policy_instructions_withheld; a clean PUT
    clears the flag and models receive the new instructions."""
    agent, token = _agent(), "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    _store_settings_as_before_the_screen(server, instance_id, AgentSettings(
        agent, auto_append=True, policy_instructions=f"Use the weather API with token {token}."))
    headers = mcp_headers(USER_KEY, agent=agent, instance=instance_id)
    url, op = f"{server.api}/instances/{instance_id}/operator/agent-settings", {"X-API-KEY": OPERATOR_KEY}
    before = asyncio.run(initialize(f"{server.api}/mcp", headers))
    shown = httpx.get(url, params={"agentObjectId": agent}, headers=op).json()
    _put(server, instance_id, agent, auto_append=True, policy_instructions="Remember seat preferences only."
         ).raise_for_status()
    fixed = httpx.get(url, params={"agentObjectId": agent}, headers=op).json()
    after = asyncio.run(initialize(f"{server.api}/mcp", headers))
    assert token[:12] not in str(before) and "weather API" not in (before.instructions or "")
    assert "auto-appends" in (before.instructions or "")
    assert shown["policy_instructions_withheld"] is True and token in shown["policy_instructions"]
    assert fixed["policy_instructions_withheld"] is False
    assert "Remember seat preferences only." in (after.instructions or "")


def test_operators_list_the_agents_with_settings(server: RunningServer, instance_id: str) -> None:
    """GET operator/agents pages every agent with stored settings once, with its settings and whether models are
    denied its instructions; operators only."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    _put(server, instance_id, "/agents/travel", auto_append=True, policy_instructions="Only travel.").raise_for_status()
    _put(server, instance_id, "/agents/hr", enabled=False).raise_for_status()
    _store_settings_as_before_the_screen(server, instance_id, AgentSettings("/agents/old",
                                                                            policy_instructions=f"token {token}"))
    url, op = f"{server.api}/instances/{instance_id}/operator/agents", {"X-API-KEY": OPERATOR_KEY}
    listed, params = [], {"limit": "2"}
    while True:
        page = httpx.get(url, params=params, headers=op).json()
        listed += page["agents"]
        if page["continuation"] is None:
            break
        params = {"limit": "2", "continuation": page["continuation"]}
    by_agent = {a["agent_object_id"]: a for a in listed}
    as_user = httpx.get(url, headers={"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity("alex@contoso.com")})
    assert len(listed) == 3 and sorted(by_agent) == ["/agents/hr", "/agents/old", "/agents/travel"]
    assert by_agent["/agents/travel"]["auto_append"] is True and by_agent["/agents/hr"]["enabled"] is False
    assert [a for a, s in by_agent.items() if s["policy_instructions_withheld"]] == ["/agents/old"]
    assert httpx.get(f"{server.api}/instances/{instance_id}-other/operator/agents", headers=op).json() == {
        "agents": [], "continuation": None}
    assert as_user.status_code == 403 and httpx.get(url).status_code == 401


def test_every_settings_change_is_in_the_operators_settings_trail(server: RunningServer, instance_id: str) -> None:
    """GET operator/agent-settings/audit lists each PUT (who, which agent, what changed; never the instructions'
    text), not a refused one; newest first when asked, one agent when named; operators only."""
    agent, other = _agent(), _agent()
    _put(server, instance_id, agent, policy_instructions="Only travel preferences.").raise_for_status()
    _put(server, instance_id, other, auto_append=True).raise_for_status()
    assert _put(server, instance_id, agent, policy_instructions="ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2).status_code == 422
    _put(server, instance_id, agent, enabled=False, allowed_group_ids=["g-travel"]).raise_for_status()
    url = f"{server.api}/instances/{instance_id}/operator/agent-settings/audit"
    op = {"X-API-KEY": OPERATOR_KEY}
    mine = httpx.get(url, params={"agentObjectId": agent, "order": "newest_first"}, headers=op).json()["events"]
    every = httpx.get(url, headers=op).json()["events"]
    as_user = httpx.get(url, headers={"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity("alex@contoso.com")})
    assert [(e["action"], e["actor"], e["agent_object_id"]) for e in mine] == [
        ("agent_settings", "operator-key", agent)] * 2
    assert mine[0]["detail"] == ("enabled: true -> false; policy_instructions removed; "
                                 "allowed_group_ids: any group -> \"g-travel\"")
    assert mine[1]["detail"] == "policy_instructions set" and mine[1]["byte_count"] == 24
    assert [e["agent_object_id"] for e in every] == [agent, other, agent]
    assert "Only travel" not in str(every) and "ghp_" not in str(every)
    assert as_user.status_code == 403 and httpx.get(url).status_code == 401


def test_a_disabled_agents_calls_are_refused(server: RunningServer, instance_id: str) -> None:
    """With enabled=false, REST and MCP calls for that agent answer 403 with a clear message."""
    agent = _agent()
    _put(server, instance_id, agent, enabled=False).raise_for_status()
    with server.client() as http:
        rest = http.get(f"/instances/{instance_id}/memory", params={"scope": "agent", "agentObjectId": agent})
        user_rest = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    result = asyncio.run(call(f"{server.api}/mcp", mcp_headers(USER_KEY, agent=agent, instance=instance_id),
                              "get_memory", {"scope": "combined"}))
    assert rest.status_code == 403 and rest.json()["error"]["code"] == "agent_memory_disabled"
    assert user_rest.status_code == 200
    assert result.is_error and "disabled for this agent" in text(result)


def test_callers_outside_the_allowed_groups_lose_agent_scope(server: RunningServer, instance_id: str) -> None:
    """allowed_group_ids limits agent scope to members; others get 403, user scope stays open."""
    agent = _agent()
    _put(server, instance_id, agent, allowed_group_ids=["g-1"]).raise_for_status()
    member = {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity("m@contoso.com", group_ids=["g-1"])}
    stranger = {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity("s@contoso.com", group_ids=["g-2"])}
    url = f"{server.api}/instances/{instance_id}/memory"
    assert httpx.get(url, params={"scope": "agent", "agentObjectId": agent}, headers=member).status_code == 200
    refused = httpx.get(url, params={"scope": "agent", "agentObjectId": agent}, headers=stranger)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "agent_group_forbidden"
    assert httpx.get(url, params={"scope": "user"}, headers=stranger).status_code == 200


def test_mcp_instructions_and_tools_follow_the_agents_settings(server: RunningServer, instance_id: str) -> None:
    """initialize carries the agent's policy instructions; append_memory's description says whether to auto-append."""
    agent = _agent()
    _put(server, instance_id, agent, auto_append=True, policy_instructions="Remember seat preferences only.")
    headers = mcp_headers(USER_KEY, agent=agent, instance=instance_id)

    async def read() -> tuple[str, str, str]:
        init = await initialize(f"{server.api}/mcp", headers)
        async with mcp_session(f"{server.api}/mcp", headers) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
        plain = await initialize(f"{server.api}/mcp", mcp_headers(USER_KEY, instance=instance_id))
        return init.instructions or "", tools["append_memory"].description or "", plain.instructions or ""

    instructions, append_description, plain = asyncio.run(read())
    assert "Remember seat preferences only." in instructions
    assert "auto-appends" in instructions and "auto-appends" in append_description
    assert "Remember seat preferences only." not in plain


def test_discovery_carries_the_agents_policy_and_a_tool_call_for_the_agent_still_obeys_its_settings(
    server: RunningServer, instance_id: str
) -> None:
    """server/discover (2026-07-28) carries the policy as initialize does; a tools/call, which no longer
    reads the agent's settings for guidance, is still refused for a disabled agent (the service enforces it)."""
    agent = _agent()
    _put(server, instance_id, agent, policy_instructions="Remember seat preferences only.")
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {**mcp_headers(USER_KEY, agent=agent, instance=instance_id),
               "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28"}
    discovered = httpx.post(f"{server.api}/mcp", headers={**headers, "Mcp-Method": "server/discover"}, timeout=10,
                            json={"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}})
    assert "Remember seat preferences only." in discovered.json()["result"]["instructions"]

    _put(server, instance_id, agent, enabled=False, policy_instructions="Remember seat preferences only.")
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "get_memory", "arguments": {"scope": "agent"}, "_meta": meta}}
    refused = httpx.post(f"{server.api}/mcp", json=body, timeout=10,
                         headers={**headers, "Mcp-Method": "tools/call", "Mcp-Name": "get_memory"}).json()
    assert refused["result"]["isError"] is True
    assert refused["result"]["structuredContent"]["error"]["code"] == "agent_memory_disabled"


def test_no_memory_mode_reads_nothing_and_says_so(server: RunningServer, instance_id: str) -> None:
    """X-MEMORY-MODE: off makes get, entries and search empty, with a notice naming the mode."""
    with server.client() as http:
        http.post(f"/instances/{instance_id}/memory/append", json={"scope": "user", "content_markdown": "- kept"})
        off = {"X-MEMORY-MODE": "off"}
        got = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"}, headers=off).json()
        entries = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}, headers=off).json()
        found = http.get(f"/instances/{instance_id}/memory/search", params={"q": "kept"}, headers=off).json()
    assert got["content_markdown"] == "" and got["memory_mode"] == "off" and "X-MEMORY-MODE: off" in got["notice"]
    assert entries["entries"] == [] and entries["notice"]
    assert found["hits"] == [] and found["notice"]


def test_no_memory_mode_writes_nothing_and_says_so(server: RunningServer, instance_id: str) -> None:
    """Under X-MEMORY-MODE: off an append stores nothing and answers not_stored; later reads are unchanged."""
    with server.client() as http:
        answer = http.post(f"/instances/{instance_id}/memory/append", headers={"X-MEMORY-MODE": "off"},
                           json={"scope": "user", "content_markdown": "- temporary chat"})
        after = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()
    assert answer.status_code == 200
    assert answer.json()["status"] == "not_stored" and "nothing was stored" in answer.json()["message"]
    assert after["content_markdown"] == ""


def test_no_memory_mode_over_mcp(server: RunningServer, instance_id: str) -> None:
    """MCP tools honour X-MEMORY-MODE: off: get says memory is off, append says nothing was stored."""
    headers = mcp_headers(USER_KEY, instance=instance_id, X_MEMORY_MODE="off")
    got = asyncio.run(call(f"{server.api}/mcp", headers, "get_memory", {"scope": "user"}))
    appended = asyncio.run(call(f"{server.api}/mcp", headers, "append_memory", {"scope": "user", "memory": "- x"}))
    assert "memory is off" in text(got)
    stored = json.loads(text(appended))
    assert not appended.is_error
    assert stored["memory_mode"] == "off" and "nothing was stored" in stored["notice"]


def test_bad_memory_mode_is_400(server: RunningServer, instance_id: str) -> None:
    """X-MEMORY-MODE takes on or off only."""
    with server.client() as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"},
                            headers={"X-MEMORY-MODE": "maybe"})
    assert response.status_code == 400


def test_the_person_still_sees_exports_and_clears_a_disabled_agents_memory(
    server: RunningServer, instance_id: str
) -> None:
    """docs/console.md: with memory switched off for an agent, what is already stored stays, and the person can
    still see, export and forget it: the entries listing, export and clear answer; the settings govern the
    agent's use of memory, not the person's custody of it."""
    agent, base = _agent(), f"/instances/{instance_id}/memory"
    with server.client() as http:
        http.post(f"{base}/append", json={"scope": "agent", "agent_object_id": agent, "agent_name": "Helper",
                                          "content_markdown": "my dentist is Dr Who"}).raise_for_status()
        _put(server, instance_id, agent, enabled=False).raise_for_status()
        listed = http.get(f"{base}/entries", params={"scope": "agent", "agentObjectId": agent})
        exported = http.get(f"{base}/export", params={"scope": "agent", "agentObjectId": agent})
        cleared = http.post(f"{base}/clear", json={"scope": "agent", "agent_object_id": agent, "confirm": True})
        pending = http.get(f"{base}/deletions", params={"status": "pending"})
        after = http.get(f"{base}/entries", params={"scope": "agent", "agentObjectId": agent})
    assert listed.status_code == 200 and [e["content_markdown"] for e in listed.json()["entries"]] == [
        "my dentist is Dr Who"]
    assert exported.status_code == 200 and "my dentist is Dr Who" in exported.text
    assert cleared.status_code in (200, 202)
    if cleared.status_code == 202:
        assert cleared.json()["request_id"] in [r["id"] for r in pending.json()["requests"]]
    assert after.status_code == 200 and after.json()["entries"] == []


def test_a_disabled_agent_gets_no_memory_into_a_model_over_rest_or_mcp(server: RunningServer, instance_id: str) -> None:
    """Hostile: a disabled agent's platform tries every way an agent reaches memory - REST get (whole,
    budgeted, combined, user), search, append, import and the memory tool, and every MCP tool, clear
    included - and each answers 403 agent_memory_disabled; nothing is read, written or cleared."""
    agent, base = _agent(), f"/instances/{instance_id}/memory"
    with server.client() as http:
        http.post(f"{base}/append", json={"scope": "agent", "agent_object_id": agent,
                                          "content_markdown": "my dentist is Dr Who"}).raise_for_status()
        _put(server, instance_id, agent, enabled=False).raise_for_status()
        as_agent = {"agentObjectId": agent}
        rest = {
            "get agent": http.get(base, params={"scope": "agent", **as_agent}),
            "get combined": http.get(base, params={"scope": "combined", **as_agent}),
            "get budgeted": http.get(base, params={"scope": "combined", "maxChars": "4000", **as_agent}),
            "get user": http.get(base, params={"scope": "user", **as_agent}),
            "search": http.get(f"{base}/search", params={"scope": "agent", "q": "dentist", **as_agent}),
            "search combined": http.get(f"{base}/search", params={"scope": "combined", "q": "dentist", **as_agent}),
            "append": http.post(f"{base}/append", json={"scope": "agent", "agent_object_id": agent,
                                                        "content_markdown": "planted"}),
            "import": http.post(f"{base}/import", json={"scope": "agent", "agent_object_id": agent,
                                                        "content_markdown": "planted", "mode": "replace"}),
            "memory tool view": http.post(f"{base}/files/view", params=as_agent,
                                          json={"command": "view", "path": "/memories/agent"}),
        }

        async def over_mcp() -> dict[str, CallToolResult]:
            url, headers = f"{server.api}/mcp", mcp_headers(USER_KEY, agent=agent, instance=instance_id)
            calls: dict[str, dict[str, object]] = {
                "get_memory": {"scope": "agent"}, "search_memory": {"query": "dentist", "scope": "agent"},
                "append_memory": {"scope": "agent", "memory": "planted"},
                "clear_memory": {"scope": "agent", "confirm": True},
                "memory": {"command": "view", "path": "/memories/agent"}}
            return {tool: await call(url, headers, tool, arguments) for tool, arguments in calls.items()}

        mcp = asyncio.run(over_mcp())
        stored = http.get(f"{base}/entries", params={"scope": "agent", **as_agent}).json()["entries"]
    assert {name: (r.status_code, r.json()["error"]["code"]) for name, r in rest.items()} == {
        name: (403, "agent_memory_disabled") for name in rest}
    for tool, result in mcp.items():
        assert result.is_error and "disabled for this agent" in text(result), tool
    assert [e["content_markdown"] for e in stored] == ["my dentist is Dr Who"]
