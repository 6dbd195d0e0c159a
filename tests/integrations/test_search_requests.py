"""The user's words never travel in a URL: the provider searches with POST, the words in the JSON body.

A URL is what httpx logs at INFO in the agent's own process ("HTTP Request: GET ...?q=..."), and what
proxies and request telemetry record; a body is none of these. Every request the provider sends to the
real server is captured with an httpx event hook, and httpx's own log is read as the process logs it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from memory_core.integrations.agent_framework import MEMORY_BLOCK_TAG, MEMORY_OFF_BLOCK_TAG
from tests.integrations.conftest import AGENT_ID, Harness, ScriptedChatClient, key_provider, make_agent

WORD = "marmalade"


@dataclass(frozen=True)
class Sent:
    method: str
    url: str
    body: dict[str, Any] | None


def _turns(h: Harness, messages: list[str], headers: dict[str, str] | None = None,
           **settings: Any) -> tuple[list[Sent], ScriptedChatClient]:
    """Run ``messages`` as one session's turns through a provider whose every request is recorded (the shared
    client sends ``headers`` with each)."""
    sent: list[Sent] = []

    async def record(request: httpx.Request) -> None:
        content = request.content
        sent.append(Sent(request.method, str(request.url), json.loads(content) if content else None))

    async def go() -> ScriptedChatClient:
        async with httpx.AsyncClient(headers=headers, event_hooks={"request": [record]}) as client:
            provider = key_provider(h.server.api, h.instance_id, http_client=client, **settings)
            model = ScriptedChatClient()
            agent = make_agent(model, provider)
            session = agent.create_session()
            for message in messages:
                await agent.run(message, session=session)
            return model

    return sent, asyncio.run(go())


def _searches(sent: list[Sent]) -> list[Sent]:
    return [s for s in sent if s.url.split("?", 1)[0].endswith("/memory/search")]


def test_search_retrieval_posts_the_words_and_puts_none_in_a_url(
    harness: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """retrieval="search": one POST whose body holds the message; no URL and no httpx log line holds a word."""
    h: Harness = harness()
    h.append(f"- Likes {WORD} on toast.")
    caplog.set_level(logging.INFO, logger="httpx")
    sent, model = _turns(h, [f"Do I like {WORD}?"], retrieval="search")
    (search,) = _searches(sent)
    assert search.method == "POST" and "?" not in search.url
    assert search.body == {"q": f"Do I like {WORD}?", "limit": 5, "agentObjectId": AGENT_ID, "scope": "combined"}
    (block,) = model.last.blocks(MEMORY_BLOCK_TAG)
    assert f"Likes {WORD}" in block
    assert all(WORD not in s.url for s in sent)
    logged = [r.getMessage() for r in caplog.records if r.name == "httpx"]
    assert any("/memory/search" in line for line in logged)  # httpx logs each request, as it does in an agent
    assert all(WORD not in line for line in logged)


def test_auto_retrievals_search_and_a_forgets_search_post_the_words(harness: Any) -> None:
    """retrieval="auto" (memory past the budget) and "forget ..." search too: by POST, no word in any URL."""
    h: Harness = harness()
    for n in range(8):
        h.append(f"- Older fact number {n} about the garden shed and its long history.")
    h.append(f"- Likes {WORD} on toast.")
    sent, model = _turns(h, [f"What about {WORD}?", f"Forget that I like {WORD}"], retrieval="auto",
                         max_memory_chars=300)
    searches = _searches(sent)
    # the first turn's recall; the second's forget (10 candidates), then its recall
    assert [s.body["limit"] if s.body else None for s in searches] == [5, 10, 5], [(s.method, s.url) for s in sent]
    assert all(s.method == "POST" and s.body is not None and WORD in s.body["q"] for s in searches)
    assert all(WORD not in s.url for s in sent)
    (notice,) = model.last.blocks("memory_service_notice")
    assert "pending operator approval" in notice


def test_searches_the_service_answers_memory_off_keep_the_words_out_of_urls_too(harness: Any) -> None:
    """X-MEMORY-MODE: off on the shared client: the service answers each search empty, as memory off; the words
    went in the body all the same, and the model is told memory is off."""
    h: Harness = harness()
    h.append(f"- Likes {WORD} on toast.")
    sent, model = _turns(h, [f"Do I like {WORD}?", f"Forget that I like {WORD}"], {"X-MEMORY-MODE": "off"},
                         retrieval="search")
    searches = _searches(sent)
    assert len(searches) == 3 and all(s.method == "POST" for s in searches)
    assert all(WORD not in s.url for s in sent)
    assert f"Likes {WORD}" not in model.last.text and model.last.blocks(MEMORY_OFF_BLOCK_TAG)
    (notice,) = model.last.blocks("memory_service_notice")
    assert "nothing was deleted" in notice
    assert len(h.entries()) == 1


def test_memory_mode_off_sends_no_search_at_all(harness: Any) -> None:
    """memory_mode="off": the provider asks the service nothing, so no words leave the process."""
    h: Harness = harness()
    sent, _ = _turns(h, [f"Do I like {WORD}?", f"Forget that I like {WORD}"], memory_mode="off", retrieval="search")
    assert _searches(sent) == []
