"""An operator's agent settings as the provider meets them: an agent limited to groups the user is not in still
gives that user their own memory (read and forget), and a disabled agent is memory turned off, not an outage."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from memory_core.integrations.agent_framework import (
    MEMORY_BLOCK_TAG,
    MEMORY_OFF_BLOCK_TAG,
    UNAVAILABLE_BLOCK_TAG,
)
from tests.integrations.conftest import AGENT_ID, Harness
from tests.support.local_server import OPERATOR_KEY

LOGGER = "memory_core.integrations.agent_framework"


def _settle(h: Harness, **settings: Any) -> None:
    """Store the operator's settings for the harness's agent."""
    with h.server.client(None, key=OPERATOR_KEY) as http:
        response = http.put(f"/instances/{h.instance_id}/operator/agent-settings", params={"agentObjectId": AGENT_ID},
                            json={"enabled": True, **settings})
    response.raise_for_status()


@pytest.mark.parametrize("retrieval", ["combined", "auto", "search"])
def test_a_user_outside_the_agents_groups_keeps_their_user_memory(
    harness: Callable[..., Harness], retrieval: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The combined read is refused (agent_group_forbidden); the provider reads user memory instead, and says
    that the agent's own memory is not shown. No outage, no error logged."""
    h = harness(retrieval=retrieval)
    h.append("- I prefer aisle seats.")
    _settle(h, allowed_group_ids=["g-travel"])
    with caplog.at_level(logging.INFO, logger=LOGGER):
        h.run("Which seats do I prefer?")
    (block,) = h.model.last.blocks(MEMORY_BLOCK_TAG)
    assert "aisle seats" in block and "limited to certain groups" in block
    assert h.model.last.blocks(UNAVAILABLE_BLOCK_TAG) == []
    assert h.state["last_recall"]["status"] == "ok" and h.state["last_recall"]["scope"] == "user"
    assert not [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.ERROR]


def test_a_user_outside_the_agents_groups_can_forget_their_user_memory(harness: Callable[..., Harness]) -> None:
    """Forget's search falls back to user scope the same way, so the request reaches the service."""
    h = harness()
    h.append("- I prefer aisle seats.")
    _settle(h, allowed_group_ids=["g-travel"])
    h.run("Forget that I prefer aisle seats")
    (result,) = h.state["last_forget"]["results"]
    assert result["status"] == "pending_approval"


def test_a_disabled_agent_is_memory_off_not_an_outage(
    harness: Callable[..., Harness], caplog: pytest.LogCaptureFixture
) -> None:
    """403 agent_memory_disabled: the model is told memory is off for this agent (not unavailable, not empty), it is
    logged as the operator's choice (info), never as refused credentials; a write is recorded as not stored."""
    h = harness(persist="remember")
    h.append("- I prefer aisle seats.")
    _settle(h, enabled=False)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        h.run("Remember that I like tea.")
    (block,) = h.model.last.blocks(MEMORY_OFF_BLOCK_TAG)
    assert "turned off for this agent" in block and "does not mean the user has no stored memory" in block
    assert h.model.last.blocks(UNAVAILABLE_BLOCK_TAG) == [] and h.model.last.blocks(MEMORY_BLOCK_TAG) == []
    assert h.state["last_recall"] == {"status": "off", "reason": "memory is disabled for this agent by the operator",
                                      "code": "agent_memory_disabled"}
    (write,) = h.state["last_writes"]
    assert write["status"] == "not_stored" and write["code"] == "agent_memory_disabled"
    assert "refused the credentials" not in caplog.text
    assert not [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING]
    assert any("disabled for this agent" in r.getMessage() for r in caplog.records)
