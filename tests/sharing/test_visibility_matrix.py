"""The sharing policy's visibility matrix, over REST and MCP against real local servers.

{owner, peer in the instance, user of another instance} x {private, team, legacy}
x {policy set as the deployment default (override off), policy chosen per call
(override on)} x {user, agent, combined}.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.mcp.client import call, mcp_headers, text
from tests.support.local_server import OPERATOR_KEY, USER_KEY, RunningServer, running_server

AGENT_A = "/agents/benefits"
AGENT_B = "/agents/travel"
POLICIES = ["private", "team", "legacy"]
OWNER, PEER, OUTSIDER = "owner@contoso.com", "peer@contoso.com", "outsider@contoso.com"

# What each fact is, and who may see it under which policy.
FACTS = {
    "owner-private-user": ("user", None, "private"),
    "owner-team-user": ("user", None, "team"),
    "owner-private-agent": ("agent", AGENT_A, "private"),
    "owner-team-agent-a": ("agent", AGENT_A, "team"),
    "owner-team-agent-b": ("agent", AGENT_B, "team"),
}
LEGACY_FACTS = {"legacy-user": ("user", None), "legacy-agent-a": ("agent", AGENT_A)}


@dataclass(frozen=True)
class World:
    server: RunningServer
    instance: str
    other_instance: str
    override: bool


def _servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, RunningServer]]:
    servers: dict[str, RunningServer] = {}
    contexts = []
    for policy in POLICIES:
        ctx = running_server(tmp_path_factory.mktemp(f"sharing-{policy}"), {"MEMORY_SHARING_DEFAULT_POLICY": policy})
        servers[policy] = ctx.__enter__()
        contexts.append(ctx)
    ctx = running_server(tmp_path_factory.mktemp("sharing-override"), {"MEMORY_SHARING_ALLOW_OVERRIDE": "true"})
    servers["override"] = ctx.__enter__()
    contexts.append(ctx)
    try:
        yield servers
    finally:
        for ctx in contexts:
            ctx.__exit__(None, None, None)


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, World]]:
    """One populated instance per server: the owner's private and team facts, legacy facts, and another instance."""
    for servers in _servers(tmp_path_factory):
        result = {}
        for name, server in servers.items():
            world = World(server, f"share-{uuid.uuid4().hex[:8]}", f"other-{uuid.uuid4().hex[:8]}", name == "override")
            with server.client(OWNER) as owner, server.client(OUTSIDER) as outsider:
                for fact, (scope, agent, share) in FACTS.items():
                    body = {"scope": scope, "content_markdown": f"- {fact}", "share": share}
                    if agent:
                        body["agent_object_id"] = agent
                    owner.post(f"/instances/{world.instance}/memory/append", json=body).raise_for_status()
                outsider.post(f"/instances/{world.other_instance}/memory/append",
                              json={"scope": "user", "content_markdown": "- outsider-team", "share": "team"}
                              ).raise_for_status()
            for fact, (scope, agent) in LEGACY_FACTS.items():
                httpx.post(f"{server.api}/instances/{world.instance}/operator/legacy-imports",
                           headers={"X-API-KEY": OPERATOR_KEY},
                           json={"scope": scope, "agent_object_id": agent, "content_markdown": f"- {fact}"}
                           ).raise_for_status()
            result[name] = world
        yield result


def expected(viewer: str, policy: str, scope: str) -> set[str]:
    """The facts ``viewer`` should see in the owner's instance (outsider reads their own instance)."""
    if viewer == OUTSIDER:
        own_team = {"outsider-team"} if scope in ("user", "combined") else set()
        return own_team
    wanted_scopes = {"user": {("user", None)}, "agent": {("agent", AGENT_A)},
                     "combined": {("user", None), ("agent", AGENT_A)}}[scope]
    seen = set()
    for fact, (fact_scope, agent, share) in FACTS.items():
        if (fact_scope, agent) not in wanted_scopes:
            continue
        if viewer == OWNER or (share == "team" and policy in ("team", "legacy")):
            seen.add(fact)
    if policy == "legacy":
        seen |= {fact for fact, where in LEGACY_FACTS.items() if where in wanted_scopes}
    return seen


ALL_FACTS = {*FACTS, *LEGACY_FACTS, "outsider-team"}


def _rest_read(world: World, viewer: str, policy: str, scope: str) -> str:
    instance = world.other_instance if viewer == OUTSIDER else world.instance
    params = {"scope": scope}
    if scope != "user":
        params["agentObjectId"] = AGENT_A
    if world.override:
        params["memorySharing"] = policy
    with world.server.client(viewer) as http:
        response = http.get(f"/instances/{instance}/memory", params=params)
    response.raise_for_status()
    return response.json()["content_markdown"]


def _mcp_read(world: World, viewer: str, policy: str, scope: str) -> str:
    instance = world.other_instance if viewer == OUTSIDER else world.instance
    headers = mcp_headers(USER_KEY, viewer, agent=AGENT_A, instance=instance)
    arguments = {"scope": scope, **({"memory_sharing": policy} if world.override else {})}
    result = asyncio.run(call(f"{world.server.api}/mcp", headers, "get_memory", arguments))
    assert not result.is_error, text(result)
    return text(result)


@pytest.mark.parametrize("transport", ["rest", "mcp"])
@pytest.mark.parametrize("scope", ["user", "agent", "combined"])
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("viewer", [OWNER, PEER, OUTSIDER])
@pytest.mark.parametrize("override", [False, True], ids=["default-policy", "per-call-override"])
def test_visibility(worlds: dict[str, World], override: bool, viewer: str, policy: str, scope: str,
                    transport: str) -> None:
    """Each viewer sees exactly the facts the policy allows in that scope, and nothing else."""
    world = worlds["override" if override else policy]
    document = (_rest_read if transport == "rest" else _mcp_read)(world, viewer, policy, scope)
    seen = {fact for fact in ALL_FACTS if f"- {fact}\n" in document or document.endswith(f"- {fact}")}
    assert seen == expected(viewer, policy, scope)


def test_foreign_entries_are_marked_shared_by_their_author(worlds: dict[str, World]) -> None:
    """In rendered markdown a peer's entries say "(shared by owner@contoso.com)" and legacy ones "(legacy)"."""
    document = _rest_read(worlds["legacy"], PEER, "legacy", "user")
    assert "(shared by owner@contoso.com)" in document
    assert "(legacy)" in document


def test_structured_reads_carry_the_author(worlds: dict[str, World]) -> None:
    """Entries and search hits returned to a peer name the owner as author."""
    world = worlds["team"]
    with world.server.client(PEER) as http:
        entries = http.get(f"/instances/{world.instance}/memory/entries", params={"scope": "user"}).json()["entries"]
        hits = http.get(f"/instances/{world.instance}/memory/search", params={"q": "team"}).json()["hits"]
    assert {e["author"]["upn"] for e in entries} == {OWNER}
    assert hits and {h["entry"]["author"]["upn"] for h in hits} == {OWNER}


def test_override_is_refused_when_not_allowed(worlds: dict[str, World]) -> None:
    """memorySharing on a deployment without MEMORY_SHARING_ALLOW_OVERRIDE answers 403 with a clear message."""
    world = worlds["private"]
    with world.server.client(PEER) as http:
        response = http.get(f"/instances/{world.instance}/memory", params={"scope": "user", "memorySharing": "team"})
    assert response.status_code == 403
    assert "MEMORY_SHARING_ALLOW_OVERRIDE" in response.json()["error"]["message"]


def test_override_is_refused_over_mcp_when_not_allowed(worlds: dict[str, World]) -> None:
    """memory_sharing on get_memory is a tool error when overrides are off."""
    world = worlds["private"]
    headers = mcp_headers(USER_KEY, PEER, instance=world.instance)
    result = asyncio.run(call(f"{world.server.api}/mcp", headers, "get_memory",
                              {"scope": "user", "memory_sharing": "team"}))
    assert result.is_error and "MEMORY_SHARING_ALLOW_OVERRIDE" in text(result)


def test_a_clear_hides_the_shared_copies_too(worlds: dict[str, World]) -> None:
    """When the owner clears user memory (pending approval), peers stop seeing the team-shared entries at once."""
    world = worlds["team"]
    instance = f"clear-{uuid.uuid4().hex[:8]}"
    with world.server.client(OWNER) as owner, world.server.client(PEER) as peer:
        owner.post(f"/instances/{instance}/memory/append",
                   json={"scope": "user", "content_markdown": "- soon gone", "share": "team"}).raise_for_status()
        before = peer.get(f"/instances/{instance}/memory", params={"scope": "user"}).json()["content_markdown"]
        owner.post(f"/instances/{instance}/memory/clear", json={"scope": "user", "confirm": True}).raise_for_status()
        after = peer.get(f"/instances/{instance}/memory", params={"scope": "user"}).json()["content_markdown"]
    assert "- soon gone" in before
    assert "- soon gone" not in after
