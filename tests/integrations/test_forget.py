"""A "forget ..." request maps to the service's deletion flow, and its answer is reported as it is."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from memory_core.integrations.agent_framework import MEMORY_BLOCK_TAG, NOTICE_BLOCK_TAG
from tests.integrations.conftest import (
    AGENT_ID,
    Harness,
    ScriptedChatClient,
    _builder,
    key_provider,
    make_agent,
    run_altered,
)
from tests.support.local_server import OPERATOR_KEY, RunningServer, running_server

PENDING = "deletion requested, pending operator approval"


def _pending(h: Harness) -> list[dict[str, Any]]:
    with httpx.Client(base_url=h.server.api, headers={"X-API-KEY": OPERATOR_KEY}, timeout=30) as op:
        response = op.get(f"/instances/{h.instance_id}/operator/deletions", params={"status": "pending"})
    response.raise_for_status()
    return list(response.json()["requests"])


def test_forget_requests_deletion_of_the_matching_entry(harness: Callable[..., Harness]) -> None:
    """The best matching entry, and only it, gets a pending forget request."""
    h = harness()
    keep = h.append("- Allergic to peanuts.")
    gone = h.append("- Prefers window seats.")
    h.run("Please forget that I prefer window seats.")
    assert [(r["kind"], r["entry_id"]) for r in _pending(h)] == [("forget", gone)]
    assert [e["id"] for e in h.entries("user")] == [keep]


def test_forget_reports_pending_approval_as_the_service_said(harness: Callable[..., Harness]) -> None:
    """The model is told "deletion requested, pending operator approval" with the request id, not that it was deleted."""
    h = harness()
    h.append("- Prefers window seats.")
    h.run("Forget that I prefer window seats")
    (notice,) = h.model.last.blocks(NOTICE_BLOCK_TAG)
    (request,) = _pending(h)
    assert f"{PENDING} (request {request['id']})" in notice
    assert "do not say that it has been deleted" in notice
    assert "- deleted" not in notice
    (result,) = h.state["last_forget"]["results"]
    assert result["status"] == "pending_approval" and result["message"] == PENDING


def test_forgotten_memory_is_hidden_from_the_same_turn(harness: Callable[..., Harness]) -> None:
    """The deletion is requested before memory is read, so the pending entry is not handed to the model."""
    h = harness()
    h.append("- Prefers window seats.")
    h.run("Forget that I prefer window seats")
    (block,) = h.model.last.blocks(MEMORY_BLOCK_TAG)
    assert "window" not in block


def test_forget_everything_clears_user_and_agent_memory_pending_approval(harness: Callable[..., Harness]) -> None:
    """"Forget everything" asks to clear both scopes the agent sees; both wait for an operator."""
    h = harness()
    h.append("- User fact.")
    h.append("- Agent fact.", scope="agent")
    h.run("Forget everything.")
    pending = sorted((r["kind"], r["scope"], r["agent_object_id"]) for r in _pending(h))
    assert pending == [("clear", "agent", AGENT_ID), ("clear", "user", None)]
    (notice,) = h.model.last.blocks(NOTICE_BLOCK_TAG)
    assert f"user memory: {PENDING}" in notice and f"agent memory: {PENDING}" in notice


def test_forget_without_a_match_deletes_nothing(harness: Callable[..., Harness]) -> None:
    """When no entry matches, nothing is requested and the model is told so."""
    h = harness()
    h.append("- Allergic to peanuts.")
    h.run("Forget my frequent flyer number.")
    (notice,) = h.model.last.blocks(NOTICE_BLOCK_TAG)
    assert "no stored memory matched" in notice
    assert _pending(h) == [] and len(h.entries("user")) == 1


def test_vague_forget_it_is_not_a_deletion_request(harness: Callable[..., Harness]) -> None:
    """"Forget about it" is conversation: no search, no request, no notice."""
    h = harness()
    h.append("- Prefers window seats.")
    h.run("Forget about it.")
    assert h.model.last.blocks(NOTICE_BLOCK_TAG) == []
    assert _pending(h) == []


def test_forget_in_immediate_mode_reports_deleted(immediate_harness: Callable[..., Harness]) -> None:
    """When the service erases at once (200), the model is told it was deleted, and it is gone."""
    h = immediate_harness()
    h.append("- Prefers window seats.")
    h.run("Forget that I prefer window seats")
    (notice,) = h.model.last.blocks(NOTICE_BLOCK_TAG)
    assert "- deleted." in notice and PENDING not in notice
    assert h.entries("user") == []


def test_a_dismissal_is_not_a_forget_request(harness: Callable[..., Harness]) -> None:
    """"Forget that, let's talk about Lisbon hotels" means "never mind": the Lisbon hotels entry stays."""
    h = harness()
    kept = h.append("- Favourite Lisbon hotels: Memmo Alfama, Lumiares")
    h.run("Forget that, let's talk about Lisbon hotels")
    h.run("Forget it. Which hotel was nicer?")
    assert _pending(h) == [] and [e["id"] for e in h.entries("user")] == [kept]
    assert "last_forget" not in h.state


def test_one_common_word_or_a_word_inside_another_forgets_nothing(harness: Callable[..., Harness]) -> None:
    """"like" is half of "I like jazz", and "art" is inside "start": neither names "I like to start work at 7"."""
    h = harness()
    kept = h.append("- I like to start work at 7")
    h.run("Forget that I like jazz")
    h.run("Forget that I like art")
    assert _pending(h) == [] and [e["id"] for e in h.entries("user")] == [kept]
    h.run("Forget that I like to start work early")
    assert [r["entry_id"] for r in _pending(h)] == [kept]


def _lose_deletion_answers(request: httpx.Request, response: httpx.Response) -> None:
    """The service applied the DELETE or clear; its answer never arrives."""
    if request.method == "DELETE" or request.url.path.endswith("/clear"):
        raise httpx.ReadTimeout("answer lost", request=request)


def _gateway_503_after_deletions(request: httpx.Request, response: httpx.Response) -> httpx.Response | None:
    """A gateway answers 503 for a DELETE or clear the service behind it has applied."""
    if request.method == "DELETE" or request.url.path.endswith("/clear"):
        return httpx.Response(503, text="upstream timed out", request=request)
    return None


@pytest.mark.parametrize("alter", [_lose_deletion_answers, _gateway_503_after_deletions], ids=["lost", "5xx"])
@pytest.mark.parametrize("message", ["Forget that I prefer window seats", "Forget everything."],
                         ids=["entry", "everything"])
def test_a_deletion_without_a_definite_answer_is_not_reported_as_nothing_deleted(
    immediate_harness: Callable[..., Harness], alter: Any, message: str
) -> None:
    """The service erased the entry, but its answer was lost (timeout) or a gateway answered 5xx: the model is told
    the outcome is unknown and to check, never "nothing was deleted"; the state records ``unknown``."""
    h = immediate_harness()
    h.append("- Prefers window seats.")
    call, state = run_altered(h, alter, [message])
    (notice,) = call.blocks(NOTICE_BLOCK_TAG)
    assert h.entries("user") == []  # it was deleted
    assert "nothing was deleted" not in notice and "- deleted" not in notice
    assert "it may have been deleted" in notice and "check before telling the user" in notice
    assert {r["status"] for r in state["last_forget"]["results"]} == {"unknown"}


def test_a_definite_refusal_still_says_nothing_was_deleted(immediate_harness: Callable[..., Harness]) -> None:
    """A 4xx answered before anything was applied (here a gateway's 409, the service never asked) is definite."""

    async def refuse(request: httpx.Request) -> httpx.Response:
        if request.method == "DELETE":
            return httpx.Response(409, json={"error": {"code": "conflict", "message": "try later"}})
        async with httpx.AsyncClient() as real:
            return await real.send(request)

    h = immediate_harness()
    h.append("- Prefers window seats.")

    async def go() -> str:
        async with httpx.AsyncClient(transport=httpx.MockTransport(refuse)) as client:
            provider = key_provider(h.server.api, h.instance_id, http_client=client)
            model = ScriptedChatClient()
            await make_agent(model, provider).run("Forget that I prefer window seats")
            (notice,) = model.last.blocks(NOTICE_BLOCK_TAG)
            return notice

    notice = asyncio.run(go())
    assert "the request failed (the memory service answered HTTP 409" in notice and "nothing was deleted" in notice
    assert len(h.entries("user")) == 1


@pytest.fixture(scope="module")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(tmp_path_factory.mktemp("af-team"), {"MEMORY_SHARING_DEFAULT_POLICY": "team"}) as server:
        yield server


def test_a_teammates_shared_entry_ranked_first_does_not_stop_the_users_own_forget(
    team_server: RunningServer, instance_id: str
) -> None:
    """Under team sharing the teammate's "- dentist Smith" outranks the user's own entry; the service refuses to
    forget it for this user (404), and the user's own entry is the one asked for."""
    h = _builder(team_server, instance_id)()
    own = h.append("- Dentist: Dr Smith in Lisbon, every March and September")
    with team_server.client("bea@contoso.com") as bea:
        bea.post(f"/instances/{instance_id}/memory/append",
                 json={"scope": "user", "content_markdown": "- dentist Smith", "share": "team"}).raise_for_status()
    h.run("Forget dentist Smith")
    assert [r["entry_id"] for r in _pending(h)] == [own]
    (result,) = h.state["last_forget"]["results"]
    assert result["status"] == "pending_approval"
