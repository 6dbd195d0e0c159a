"""Memory off (the "temporary chat"): nothing is read or stored, the model is told memory is off (never that the
user has no memory), and the outcomes say nothing was stored or deleted."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from memory_core.integrations.agent_framework import (
    MEMORY_BLOCK_TAG,
    MEMORY_OFF_BLOCK_TAG,
    MemoryCoreConfigurationError,
)
from tests.integrations.conftest import Harness, ScriptedChatClient, key_provider, make_agent


def test_memory_mode_off_reads_and_stores_nothing_and_says_so(harness: Callable[..., Harness]) -> None:
    """memory_mode="off": the model gets the memory_off block, the remember request is recorded as not stored,
    and the service holds nothing new."""
    h = harness(persist="remember", memory_mode="off")
    h.append("- I prefer aisle seats.")
    h.run("Remember that I like tea.")
    (block,) = h.model.last.blocks(MEMORY_OFF_BLOCK_TAG)
    assert "off for this chat" in block and "aisle" not in h.model.last.text
    first_line = block.splitlines()[1]
    assert first_line.count("off for this chat") == 1 and 'memory_mode="off"' in first_line  # said once, and why
    assert "holds no stored memory" not in h.model.last.text and h.model.last.blocks(MEMORY_BLOCK_TAG) == []
    assert h.state["last_recall"]["status"] == "off"
    (write,) = h.state["last_writes"]
    assert write["status"] == "not_stored"
    assert [e["content_markdown"] for e in h.entries()] == ["- I prefer aisle seats."]


def test_memory_mode_off_forget_deletes_nothing(harness: Callable[..., Harness]) -> None:
    """A forget request in a chat with memory off is answered as such: nothing deleted, nothing requested."""
    h = harness(memory_mode="off")
    h.append("- I prefer aisle seats.")
    h.run("Forget that I prefer aisle seats")
    (notice,) = h.model.last.blocks("memory_service_notice")
    assert "memory is off" in notice and "nothing was deleted" in notice
    assert h.state["last_forget"]["results"][0]["status"] == "not_stored"
    assert len(h.entries()) == 1


def test_a_service_answering_memory_off_is_honoured(harness: Callable[..., Harness]) -> None:
    """When the service answers memory off (here: a shared client sending X-MEMORY-MODE: off), the model is told
    memory is off, not that there is none, and the write answered not_stored is recorded as not stored."""
    h = harness()
    h.append("- I prefer aisle seats.")

    async def go() -> tuple[ScriptedChatClient, dict[str, Any], list[Any]]:
        async with httpx.AsyncClient(headers={"X-MEMORY-MODE": "off"}) as client:
            provider = key_provider(h.server.api, h.instance_id, persist="remember", http_client=client)
            model = ScriptedChatClient()
            agent = make_agent(model, provider)
            session = agent.create_session()
            await agent.run("Remember that I like tea.", session=session)
            writes = list(session.state[provider.source_id]["last_writes"])
            await agent.run("Forget everything", session=session)
            return model, session.state[provider.source_id], writes

    model, state, writes = asyncio.run(go())
    assert model.last.blocks(MEMORY_OFF_BLOCK_TAG) and "holds no stored memory" not in model.last.text
    assert writes == [{"kind": "remember", "status": "not_stored", "memory_mode": "off",
                                     "reason": "memory is off for this request (X-MEMORY-MODE: off): "
                                               "nothing was stored"}]
    assert {r["status"] for r in state["last_forget"]["results"]} == {"not_stored"}
    assert len(h.entries()) == 1


def test_memory_mode_must_be_on_or_off() -> None:
    with pytest.raises(MemoryCoreConfigurationError):
        key_provider("http://127.0.0.1:1/api", "inst", memory_mode="temporary")
