"""Fixtures for the Microsoft Agent Framework integration: a scripted chat client and agents
whose MemoryCoreContextProvider talks to the real local server."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from agent_framework import Agent, AgentResponse, AgentSession, BaseChatClient, ChatResponse, Message

from memory_core.integrations.agent_framework import MEMORY_BLOCK_TAG, MESSAGE_KIND_PROPERTY, MemoryCoreContextProvider
from tests.support.local_server import USER_KEY, RunningServer, free_port

UPN = "alex@contoso.com"
AGENT_ID = "/instances/local/providers/FoundationaLLM.Agent/agents/travel-assistant"
AGENT_NAME = "Travel Assistant"
INSTRUCTIONS = "You are a helpful travel assistant."


def memory_delimiters(block: str) -> tuple[str, str]:
    """The opening (up to its attributes) and the closing tag of a memory block, with its nonce."""
    found = re.search(rf"<({MEMORY_BLOCK_TAG}_[0-9a-f]{{32}}) ", block)
    assert found is not None, "no memory block tag"
    return f"<{found.group(1)} ", f"</{found.group(1)}>"


@dataclass
class ModelCall:
    """What the model was given in one request."""

    messages: list[Message]
    options: dict[str, Any]

    @property
    def instructions(self) -> str:
        return str(self.options.get("instructions") or "")

    def blocks(self, kind: str) -> list[str]:
        """Texts of the provider's context messages of one kind (see MESSAGE_KIND_PROPERTY)."""
        return [m.text for m in self.messages if m.additional_properties.get(MESSAGE_KIND_PROPERTY) == kind]

    @property
    def text(self) -> str:
        """Everything the model could read: instructions and every message."""
        return "\n".join([self.instructions, *(m.text for m in self.messages)])


class ScriptedChatClient(BaseChatClient):
    """A chat client with no model and no network: it answers canned replies in order
    (repeating the last) and records every request."""

    def __init__(self, replies: Sequence[str] = ("OK.",)) -> None:
        super().__init__()
        self.replies = list(replies)
        self.calls: list[ModelCall] = []

    async def _inner_get_response(self, *, messages: Sequence[Message], stream: bool,
                                  options: Mapping[str, Any], **kwargs: Any) -> ChatResponse:
        assert not stream, "the tests run without streaming"
        self.calls.append(ModelCall(list(messages), dict(options)))
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return ChatResponse(messages=[Message(role="assistant", contents=[reply])])

    @property
    def last(self) -> ModelCall:
        return self.calls[-1]


@dataclass
class Harness:
    """One agent with the provider, its scripted model, and helpers against the server."""

    server: RunningServer
    instance_id: str
    model: ScriptedChatClient
    provider: MemoryCoreContextProvider
    agent: Agent
    session: AgentSession = field(init=False)

    def __post_init__(self) -> None:
        self.session = self.agent.create_session(session_id="session-42")

    def run(self, text: str) -> AgentResponse:
        """One agent turn, synchronously."""
        return asyncio.run(self.agent.run(text, session=self.session))

    @property
    def state(self) -> dict[str, Any]:
        return self.session.state[self.provider.source_id]

    def http(self) -> httpx.Client:
        return self.server.client(UPN)

    def append(self, text: str, scope: str = "user", **extra: Any) -> str:
        """Store memory through the REST API; answers the entry id."""
        body = {"scope": scope, "content_markdown": text, **extra}
        if scope == "agent":
            body.setdefault("agent_object_id", AGENT_ID)
        with self.http() as http:
            response = http.post(f"/instances/{self.instance_id}/memory/append", json=body)
        response.raise_for_status()
        return str(response.json()["entry_id"])

    def entries(self, scope: str = "user") -> list[dict[str, Any]]:
        """The visible entries of a scope (agent scope: this agent's)."""
        params = {"scope": scope}
        if scope != "user":
            params["agentObjectId"] = AGENT_ID
        with self.http() as http:
            response = http.get(f"/instances/{self.instance_id}/memory/entries", params=params)
        response.raise_for_status()
        return list(response.json()["entries"])


def make_agent(model: ScriptedChatClient, provider: MemoryCoreContextProvider, agent_id: str = AGENT_ID) -> Agent:
    return Agent(model, INSTRUCTIONS, id=agent_id, name=AGENT_NAME, context_providers=[provider])


def key_provider(base_url: str, instance_id: str, **settings: Any) -> MemoryCoreContextProvider:
    """A provider with the test service key and Alex's identity."""
    settings.setdefault("user_identity", {"upn": UPN, "name": "Alex"})
    return MemoryCoreContextProvider(base_url, instance_id, api_key=USER_KEY, **settings)


def _builder(server: RunningServer, instance_id: str) -> Callable[..., Harness]:
    def build(replies: Sequence[str] = ("OK.",), **settings: Any) -> Harness:
        model = ScriptedChatClient(replies)
        provider = key_provider(server.api, instance_id, **settings)
        return Harness(server, instance_id, model, provider, make_agent(model, provider))

    return build


@pytest.fixture
def harness(server: RunningServer, instance_id: str) -> Callable[..., Harness]:
    """Build a Harness on the real server (each store); keyword arguments configure the provider."""
    return _builder(server, instance_id)


@pytest.fixture
def immediate_harness(immediate_server: RunningServer, instance_id: str) -> Callable[..., Harness]:
    """Build a Harness on the server with MEMORY_DELETION_MODE=immediate."""
    return _builder(immediate_server, instance_id)


Alter = Callable[[httpx.Request, httpx.Response], "httpx.Response | None"]


class AlteringTransport(httpx.AsyncBaseTransport):
    """Sends every request to the real server, then lets ``alter`` replace the answer (or raise, as a lost answer
    does): what a gateway or a dropped connection does to a request the service has already applied."""

    def __init__(self, alter: Alter) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self._alter = alter

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        await response.aread()
        await response.aclose()
        return self._alter(request, response) or response

    async def aclose(self) -> None:
        await self._inner.aclose()


def run_altered(h: Harness, alter: Alter, messages: Sequence[str], **settings: Any) -> tuple[ModelCall, dict[str, Any]]:
    """Run ``messages`` as one session's turns through a provider whose answers pass through ``alter``; answers
    the model's last call and the provider's session state."""

    async def go() -> tuple[ModelCall, dict[str, Any]]:
        async with httpx.AsyncClient(transport=AlteringTransport(alter)) as client:
            provider = key_provider(h.server.api, h.instance_id, http_client=client, **settings)
            model = ScriptedChatClient()
            agent = make_agent(model, provider)
            session = agent.create_session(session_id="session-42")
            for message in messages:
                await agent.run(message, session=session)
            return model.last, session.state[provider.source_id]

    return asyncio.run(go())


@pytest.fixture
def closed_url() -> str:
    """A CoreAPI base URL on a loopback port nobody listens on."""
    return f"http://127.0.0.1:{free_port()}/api"
