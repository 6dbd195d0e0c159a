"""The legacy-import trail: what operators loaded without an owner, and what was refused, readable by operators."""

from __future__ import annotations

import hashlib

import httpx

from tests.support.local_server import OPERATOR_KEY, USER_KEY, RunningServer, identity

OPERATOR = {"X-API-KEY": OPERATOR_KEY}
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2


def _import(server: RunningServer, instance_id: str, **body: object) -> httpx.Response:
    return httpx.post(f"{server.api}/instances/{instance_id}/operator/legacy-imports", headers=OPERATOR, json=body)


def _trail(server: RunningServer, instance_id: str, headers: dict[str, str] | None = None,
           **params: object) -> httpx.Response:
    return httpx.get(f"{server.api}/instances/{instance_id}/operator/legacy-imports/audit",
                     headers=OPERATOR if headers is None else headers, params=params)


def test_each_legacy_import_and_each_refusal_is_in_the_trail(server: RunningServer, instance_id: str) -> None:
    """Two imports, one refused for a token in its content and one for a token in its agent's name: four events in
    order, each naming the operator, the scope, the agent, the content's SHA-256 and size, never its text; a
    user's own writes and shares are not in it."""
    user_fact, agent_fact = "- prefers aisle seats", "- the travel agent books trains"
    _import(server, instance_id, scope="user", content_markdown=user_fact).raise_for_status()
    _import(server, instance_id, scope="agent", agent_object_id="/agents/travel", agent_name="Travel",
            content_markdown=agent_fact).raise_for_status()
    refused = _import(server, instance_id, scope="user", content_markdown=f"- deploy token {TOKEN}")
    refused_name = _import(server, instance_id, scope="agent", agent_object_id="/agents/travel",
                           agent_name=f"Travel {TOKEN}", content_markdown=agent_fact)
    with server.client("alex@contoso.com") as alex:
        alex.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- team fact", "share": "team"}).raise_for_status()
    events = _trail(server, instance_id).json()["events"]
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "secret_detected"
    assert [(e["action"], e["actor"], e["scope"], e["agent_object_id"]) for e in events] == [
        ("import", "operator-key", "user", None),
        ("import", "operator-key", "agent", "/agents/travel"),
        ("write_rejected", "operator-key", "user", None),
        ("write_rejected", "operator-key", "agent", "/agents/travel"),
    ]
    assert events[0]["detail"] == events[1]["detail"] == "legacy"
    assert events[2]["detail"].startswith("secret_detected: ") and "GitHub Token" in events[2]["detail"]
    assert refused_name.status_code == 422 and events[3]["detail"].startswith("secret_detected in agent_name: ")
    assert events[0]["content_sha256"] == hashlib.sha256(user_fact.encode()).hexdigest()
    assert events[1]["byte_count"] == len(agent_fact.encode())
    assert all(e["entry_id"] for e in events[:2]) and events[2]["entry_id"] is None
    assert "aisle" not in str(events) and "trains" not in str(events) and "ghp_" not in str(events)
    assert "team fact" not in str(events)


def test_the_trail_pages_and_reads_newest_first(server: RunningServer, instance_id: str) -> None:
    """limit and continuation walk the whole trail once; order=newest_first reverses it."""
    ids = [_import(server, instance_id, scope="user", content_markdown=f"- fact {n}").json()["entry_id"]
           for n in range(5)]
    walked, continuation = [], None
    while True:
        page = _trail(server, instance_id, limit=2, **({"continuation": continuation} if continuation else {}))
        walked += [e["entry_id"] for e in page.json()["events"]]
        continuation = page.json()["continuation"]
        if continuation is None:
            break
    newest = _trail(server, instance_id, order="newest_first").json()["events"]
    assert walked == ids
    assert [e["entry_id"] for e in newest] == ids[::-1]
    assert _trail(server, instance_id, continuation="not-a-token").status_code == 400


def test_the_trail_is_per_instance_and_operators_only(server: RunningServer, instance_id: str) -> None:
    """Another instance's trail is empty; a user key answers 403, no key 401; a user's own audit trail never
    shows a legacy import."""
    _import(server, instance_id, scope="user", content_markdown="- from the old deployment").raise_for_status()
    as_user = _trail(server, instance_id, {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity("alex@contoso.com")})
    with server.client("alex@contoso.com") as alex:
        own = alex.get(f"/instances/{instance_id}/memory/audit").json()["events"]
    assert _trail(server, f"{instance_id}-other").json() == {"events": [], "continuation": None}
    assert as_user.status_code == 403 and _trail(server, instance_id, {}).status_code == 401
    assert [e for e in own if e["detail"] == "legacy"] == []


def test_a_user_cannot_mark_their_own_write_as_legacy(server: RunningServer, instance_id: str) -> None:
    """``legacy`` names memory an operator loaded with no owner: an append or import that asks for it is refused
    with 400 (as MCP's ``share`` argument refuses it), nothing is stored, and ``private``/``team`` still work."""
    with server.client("alex@contoso.com") as alex:
        refused = [alex.post(f"/instances/{instance_id}/memory/{route}",
                             json={"scope": "user", "content_markdown": "- claims to be legacy", "share": "legacy"})
                   for route in ("append", "import")]
        team = alex.post(f"/instances/{instance_id}/memory/append",
                         json={"scope": "user", "content_markdown": "- a team fact", "share": "team"})
        entries = alex.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()
    assert [r.status_code for r in refused] == [400, 400], [r.text for r in refused]
    assert all("share" in r.json()["error"]["message"] for r in refused), [r.text for r in refused]
    assert team.status_code == 200
    assert [e["share"] for e in entries["entries"]] == ["team"]
