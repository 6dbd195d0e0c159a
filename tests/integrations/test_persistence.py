"""after_run: what is stored, per the persist setting, and with which tags."""

from __future__ import annotations

import logging
from collections.abc import Callable

import httpx
import pytest
from agent_framework import SessionContext

from memory_core.domain.idempotency import keyed_entry_id
from memory_core.domain.tags import agent_tag, session_tag
from memory_core.integrations.agent_framework import service_calls
from tests.integrations.conftest import AGENT_ID, UPN, Harness, run_altered

SEAT = "Remember that I prefer aisle seats."


def _tags(h: Harness, mem_type: str) -> set[str]:
    return {mem_type, session_tag(h.session.session_id), agent_tag(AGENT_ID)}


def test_explicit_remember_request_is_appended_to_user_memory(harness: Callable[..., Harness]) -> None:
    """persist="remember" stores the fact the user asked to remember, with the reason and the run's session."""
    h = harness(persist="remember")
    h.run(SEAT)
    (entry,) = h.entries("user")
    assert entry["content_markdown"] == "- I prefer aisle seats."
    assert entry["session_id"] == "session-42"
    assert entry["reason"] == "the user asked to remember this (Microsoft Agent Framework)"
    assert h.state["last_writes"] == [
        {"kind": "remember", "status": "stored", "scope": "user", "entry_id": entry["id"]}]


def test_remembered_fact_carries_mem_type_session_and_agent_tags(harness: Callable[..., Harness]) -> None:
    """The write carries mem_type:user-profile and the seed's session and agent hash tags."""
    h = harness(persist="remember")
    h.run(SEAT)
    (entry,) = h.entries("user")
    assert set(entry["tags"]) == _tags(h, "mem_type:user-profile")


def test_remembered_fact_is_in_memory_on_the_next_turn(harness: Callable[..., Harness]) -> None:
    """What after_run stored is what the next before_run hands the model."""
    h = harness(persist="remember")
    h.run(SEAT)
    h.run("Book me a seat.")
    assert "I prefer aisle seats." in h.model.last.blocks("untrusted_memory")[0]


def test_remember_scope_and_type_follow_the_configuration(harness: Callable[..., Harness]) -> None:
    """remember_scope="agent" and remember_mem_type="procedural" decide where and as what the fact goes."""
    h = harness(persist="remember", remember_scope="agent", remember_mem_type="procedural")
    h.run("Remember: always quote fares in euros.")
    (entry,) = h.entries("agent")
    assert entry["content_markdown"] == "- always quote fares in euros."
    assert set(entry["tags"]) == _tags(h, "mem_type:procedural")
    assert h.entries("user") == []


def test_ordinary_message_stores_nothing_in_remember_mode(harness: Callable[..., Harness]) -> None:
    """Only an explicit remember request is stored; conversation is not."""
    h = harness(persist="remember")
    h.run("I think I prefer aisle seats, what do you think?")
    assert h.entries("user") == [] and h.entries("agent") == []
    assert h.state["last_writes"] == []


def test_question_about_the_past_is_not_a_remember_request(harness: Callable[..., Harness]) -> None:
    """"Remember when ...?" is a question, not a request to store anything."""
    h = harness(persist="remember")
    h.run("Remember when we booked Lisbon?")
    assert h.entries("user") == []


def test_persist_none_stores_nothing(harness: Callable[..., Harness]) -> None:
    """With the default persist="none", even an explicit remember request is not stored."""
    h = harness()
    h.run(SEAT)
    assert h.entries("user") == [] and h.entries("agent") == []
    assert "last_writes" not in h.state


def test_caller_supplied_chat_summary_is_stored_in_agent_memory(harness: Callable[..., Harness]) -> None:
    """persist="chat_summary" stores the caller's summary of the run, tagged mem_type:chat-summary."""
    seen: list[str] = []

    def summarize(context: SessionContext) -> str:
        seen.append(context.response.text if context.response else "")
        return f"- Asked: {context.input_messages[-1].text}"

    h = harness(replies=["Take the train."], persist="chat_summary", chat_summary=summarize)
    h.run("How do I get to Porto?")
    (entry,) = h.entries("agent")
    assert entry["content_markdown"] == "- Asked: How do I get to Porto?"
    assert set(entry["tags"]) == _tags(h, "mem_type:chat-summary")
    assert seen == ["Take the train."]


def test_async_chat_summary_answering_none_stores_nothing(harness: Callable[..., Harness]) -> None:
    """An async summary source may decline (None): nothing is written."""

    async def summarize(context: SessionContext) -> None:
        return None

    h = harness(persist="chat_summary", chat_summary=summarize)
    h.run("Hello")
    assert h.entries("agent") == [] and h.state["last_writes"] == []


def test_secret_in_remember_request_is_reported_not_raised(
    harness: Callable[..., Harness], caplog: pytest.LogCaptureFixture
) -> None:
    """A 422 secret_detected is recorded and logged, the agent still answers, and nothing is stored."""
    secret = "postgres://app:Xk9vTq2LmW7rZp4s@db.contoso.com:5432/prod"
    h = harness(replies=["Noted."], persist="remember")
    with caplog.at_level(logging.WARNING, logger="memory_core.integrations.agent_framework"):
        answer = h.run(f"Remember that my database is {secret}")
    (write,) = h.state["last_writes"]
    assert answer.text == "Noted."
    assert write["status"] == "rejected" and write["code"] == "secret_detected"
    assert h.entries("user") == []
    assert "secret_detected" in caplog.text and "Xk9vTq2LmW7rZp4s" not in caplog.text


def test_each_write_is_sent_with_a_fresh_idempotency_key(harness: Callable[..., Harness],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider sends every write with an Idempotency-Key of its own, so a write that failed after its
    commit and is sent again with that key is stored once: the stored entry's id is the one the key derives."""
    sent = iter(["af-key-1", "af-key-2"])
    monkeypatch.setattr(service_calls, "new_idempotency_key", lambda: next(sent))
    h = harness(persist="remember")
    h.run(SEAT)
    (entry,) = h.entries("user")
    assert entry["id"] == keyed_entry_id(h.instance_id, UPN, "af-key-1")


@pytest.mark.parametrize("status", [429, 408, 409, 425])
def test_a_throttled_or_timed_out_write_is_failed_with_what_a_retry_needs(
    harness: Callable[..., Harness], status: int, caplog: pytest.LogCaptureFixture
) -> None:
    """A 429 (or 408, 409, 425) from the service or a gateway is not a refusal of the content: the write is
    ``failed``, logged, and names its key, the path and body it was sent with, and the Retry-After."""

    def throttle(request: httpx.Request, response: httpx.Response) -> httpx.Response | None:
        if request.url.path.endswith("/append"):
            return httpx.Response(status, headers={"Retry-After": "2"},
                                  json={"error": {"code": "too_many_requests", "message": "retry in 2 s"}})
        return None

    h = harness(persist="remember")
    with caplog.at_level(logging.WARNING, logger="memory_core.integrations.agent_framework"):
        _, state = run_altered(h, throttle, [SEAT], persist="remember")
    (write,) = state["last_writes"]
    assert write["status"] == "failed" and f"HTTP {status}" in write["reason"]
    assert len(write["idempotency_key"]) == 36 and write["retry_after"] == 2
    assert write["path"] == f"/instances/{h.instance_id}/memory/append"
    assert write["body"]["content_markdown"] == "- I prefer aisle seats."
    assert f"HTTP {status}" in caplog.text


def test_a_failed_write_sent_again_as_its_outcome_says_is_stored_once(harness: Callable[..., Harness]) -> None:
    """The service stored the write, but the answer was lost: sending the outcome's body to its path with its
    key (as docs/agent-framework.md says) answers the entry already stored, and no second entry is made."""

    def lose(request: httpx.Request, response: httpx.Response) -> None:
        if request.url.path.endswith("/append"):
            raise httpx.ReadTimeout("answer lost", request=request)

    h = harness(persist="remember")
    _, state = run_altered(h, lose, [SEAT], persist="remember")
    (write,) = state["last_writes"]
    (stored,) = h.entries("user")
    with h.http() as http:
        again = http.post(write["path"], json=write["body"], headers={"Idempotency-Key": write["idempotency_key"]})
    assert again.status_code == 200 and again.json()["entry_id"] == stored["id"]
    assert [e["id"] for e in h.entries("user")] == [stored["id"]]


def test_a_write_that_fails_unexpectedly_names_its_kind(harness: Callable[..., Harness]) -> None:
    """A lone surrogate cannot be encoded as UTF-8 JSON: the write fails before it is sent, and the outcome
    still says which write it was."""
    h = harness(persist="remember")
    h.run("Remember that my code is \ud800 seven")
    (write,) = h.state["last_writes"]
    assert write == {"kind": "remember", "status": "failed", "reason": "unexpected failure (UnicodeEncodeError)"}
    assert h.entries("user") == []
