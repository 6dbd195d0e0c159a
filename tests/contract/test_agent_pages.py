"""The person's agent list a page at a time (``overview.agent_scopes`` over ``partition_keys``), on every store.

Pages follow the agents' profile ids, which no write moves: an agent whose scope is written to between two page
reads is listed once, where a newest-first order would move it to the front and skip it or list it again.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from memory_core.domain.errors import InvalidInput
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import ProfileKey, Scope, agent_hash, agent_profile_prefix
from memory_core.domain.overview import agent_scopes
from memory_core.domain.service import DeletionMode, MemoryService
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock

ALEX = Caller(upn="alex@contoso.com")


def _service(store: MemoryStore) -> MemoryService:
    return MemoryService(store, clock=TickingClock(), deletion_mode=DeletionMode.IMMEDIATE)


def test_partition_keys_answers_one_prefix_after_a_position_a_page_at_a_time(store: MemoryStore) -> None:
    """Alex's user scope and five agents' scopes, Blake's agent: with Alex's agent prefix the keys are Alex's five
    agent scopes alone, in profile id order; ``after`` starts strictly after an id, ``limit`` stops at that many
    (0: none), and without a limit the same filters answer the rest."""
    instance = f"agent-keys-{uuid.uuid4().hex[:8]}"
    service = _service(store)
    service.append(ALEX, instance, Scope.USER, None, "- user fact")
    for n in range(5):
        service.append(ALEX, instance, Scope.AGENT, AgentContext(f"/agents/{n}"), f"- fact {n}")
    service.append(Caller(upn="blake@contoso.com"), instance, Scope.AGENT, AgentContext("/agents/0"), "- blake's")
    prefix = agent_profile_prefix(ALEX.upn)
    agents = sorted((ProfileKey(instance, ALEX.upn, Scope.AGENT, f"/agents/{n}") for n in range(5)),
                    key=lambda k: k.profile_id)

    assert store.partition_keys(instance, ALEX.upn, prefix=prefix) == agents
    assert store.partition_keys(instance, ALEX.upn, prefix=prefix, limit=2) == agents[:2]
    assert store.partition_keys(instance, ALEX.upn, prefix=prefix, after=agents[1].profile_id, limit=2) == agents[2:4]
    assert store.partition_keys(instance, ALEX.upn, prefix=prefix, after=agents[1].profile_id) == agents[2:]
    assert store.partition_keys(instance, ALEX.upn, prefix=prefix, after=agents[4].profile_id, limit=9) == []
    assert store.partition_keys(instance, ALEX.upn, prefix=prefix, limit=0) == []
    assert len(store.partition_keys(instance, ALEX.upn)) == 6  # no filter: the user scope too


def test_the_agent_list_walks_every_agent_once_while_scopes_change_between_pages(store: MemoryStore) -> None:
    """Seven agents read two at a time. Between the first and second page every agent is written to (each becomes
    the most recently updated in turn), one is cleared and a new agent appears: each of the seven is still listed
    exactly once, the cleared one with its entries gone, and the new one once when its id sorts after the first
    page's last and not at all when before it. The last page says no more follow."""
    instance = f"agent-pages-{uuid.uuid4().hex[:8]}"
    service = _service(store)
    agents = [AgentContext(f"/agents/{n}", name=f"Agent {n}") for n in range(7)]
    for agent in agents:
        service.append(ALEX, instance, Scope.AGENT, agent, f"- kept by {agent.object_id}")
    first = agent_scopes(store, instance, ALEX.upn, limit=2)
    assert len(first.items) == 2 and first.continuation
    for agent in reversed(agents):
        service.append(ALEX, instance, Scope.AGENT, agent, "- written between pages")
    service.clear(ALEX, instance, Scope.AGENT, agents[3], confirm=True)
    newcomer = AgentContext("/agents/new")
    service.append(ALEX, instance, Scope.AGENT, newcomer, "- new agent")

    listed, token = list(first.items), first.continuation
    while token:
        page = agent_scopes(store, instance, ALEX.upn, limit=2, continuation=token)
        assert len(page.items) <= 2
        listed.extend(page.items)
        token = page.continuation
    ids = [s.agent_object_id for s in listed]
    assert len(ids) == len(set(ids))
    newcomer_after = agent_hash(newcomer.object_id) > agent_hash(first.items[-1].agent_object_id)
    assert set(ids) == {a.object_id for a in agents} | ({newcomer.object_id} if newcomer_after else set())
    read_first = {s.agent_object_id for s in first.items}
    later = {a.object_id: 0 if a is agents[3] else 2 for a in agents if a.object_id not in read_first}
    assert {s.agent_object_id: s.entry_count for s in listed} == {
        **dict.fromkeys(read_first, 1), **later, **({newcomer.object_id: 1} if newcomer_after else {})}
    assert [s.agent_object_id for s in listed[2:]] == sorted(ids[2:], key=agent_hash)


def test_the_agent_list_refuses_a_limit_out_of_range_and_a_token_it_did_not_answer(store: MemoryStore) -> None:
    """A limit of 0 or over 500, garbage, another listing's token, and this listing's shape around another
    position (not an agent's hash, two positions): ``InvalidInput``, never a store error."""
    from memory_core.domain.paging import encode_token

    instance = f"agent-hostile-{uuid.uuid4().hex[:8]}"
    _service(store).append(ALEX, instance, Scope.AGENT, AgentContext("/agents/one"), "- fact")
    for limit in (0, 501):
        with pytest.raises(InvalidInput):
            agent_scopes(store, instance, ALEX.upn, limit=limit)
    hostile = ["not a token", "e30", encode_token("audit:oldest", ["x"]), encode_token("memory-agents", ["x'; --"]),
               encode_token("memory-agents", ["0" * 32, "1" * 32]), encode_token("memory-agents", [])]
    for token in hostile:
        with pytest.raises(InvalidInput) as refused:
            agent_scopes(store, instance, ALEX.upn, continuation=token)
        assert refused.value.code == "invalid_continuation"
    assert agent_scopes(store, instance, ALEX.upn, limit=500).items


def test_an_append_after_another_process_erased_the_profile_makes_it_again(
    stores: Callable[[], MemoryStore],
) -> None:
    """A process appends to an agent's scope, so it knows its profile; another erases the scope's entries and its
    profile, as a purge's seal does. The first process's next append stores the profile again with its entry, so
    the agent is listed (before, on Cosmos DB, its cached profile made the entry land alone, listed nowhere)."""
    writer, sealer = stores(), stores()
    instance, agent = f"agent-again-{uuid.uuid4().hex[:8]}", AgentContext("/agents/planner", name="Planner")
    first = _service(writer).append(ALEX, instance, Scope.AGENT, agent, "- before the purge")
    key = ProfileKey(instance, ALEX.upn, Scope.AGENT, agent.object_id)
    sealer.delete_entries(key, [first.entry_id or ""])
    sealer.delete_profile(key)
    _service(writer).append(ALEX, instance, Scope.AGENT, agent, "- after the purge")
    (state,) = sealer.load([key])
    assert state.profile is not None and [e.content_markdown for e in state.entries] == ["- after the purge"]
    assert [(s.agent_object_id, s.entry_count) for s in agent_scopes(sealer, instance, ALEX.upn).items] == [
        (agent.object_id, 1)]


def test_a_purge_whose_seal_read_the_memory_before_an_append_keeps_that_scope_listed(
    stores: Callable[[], MemoryStore],
) -> None:
    """A purge approved and swept while another process appends to an agent's scope after the seal read the
    partition (so the seal finds the scope empty) and before it erases the profile: the new entry stays, and so
    does a profile for it, so the agent is listed with it."""
    sweeper, writer = stores(), stores()
    instance, agent = f"agent-seal-{uuid.uuid4().hex[:8]}", AgentContext("/agents/planner", name="Planner")
    service = MemoryService(sweeper, clock=TickingClock(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    service.append(ALEX, instance, Scope.AGENT, agent, "- before the purge")
    request = service.custody.request_purge("olivia@contoso.com", instance, ALEX.upn)
    service.custody.approve("olivia@contoso.com", instance, request.id)
    erase_profile = sweeper.delete_profile

    def append_first(key: ProfileKey) -> None:
        if key.agent_object_id == agent.object_id:
            _service(writer).append(ALEX, instance, Scope.AGENT, agent, "- landed during the seal")
        erase_profile(key)

    sweeper.delete_profile = append_first  # type: ignore[method-assign]
    service.custody.sweep(instance_id=instance)
    key = ProfileKey(instance, ALEX.upn, Scope.AGENT, agent.object_id)
    (state,) = writer.load([key])
    assert state.profile is not None
    assert [e.content_markdown for e in state.visible_entries()] == ["- landed during the seal"]
    assert [(s.agent_object_id, s.entry_count) for s in agent_scopes(writer, instance, ALEX.upn).items] == [
        (agent.object_id, 1)]
