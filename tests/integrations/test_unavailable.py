"""When the service cannot be used, the agent runs without memory, the failure is logged, and the
model is told memory is unavailable (never that there is none)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import httpx
import pytest

from memory_core.integrations.agent_framework import (
    MEMORY_BLOCK_TAG,
    UNAVAILABLE_BLOCK_TAG,
    MemoryCoreConfigurationError,
    MemoryCoreContextProvider,
)
from tests.integrations.conftest import (
    INSTRUCTIONS,
    Harness,
    ScriptedChatClient,
    key_provider,
    make_agent,
    run_altered,
)
from tests.support.local_server import RunningServer
from tests.support.trickle import trickling_server

LOGGER = "memory_core.integrations.agent_framework"


def _run(provider: MemoryCoreContextProvider, text: str = "Hello") -> tuple[ScriptedChatClient, str]:
    model = ScriptedChatClient(["Hi there."])
    agent = make_agent(model, provider)
    session = agent.create_session()
    answer = asyncio.run(agent.run(text, session=session))
    return model, answer.text


def test_unreachable_service_agent_still_answers(closed_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """With nothing listening, the run completes with the model's answer."""
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        _, answer = _run(key_provider(closed_url, "inst-x"))
    assert answer == "Hi there."


def test_unreachable_service_is_logged_as_a_warning(closed_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """The failure is logged (warning, naming the phase and the error type)."""
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        _run(key_provider(closed_url, "inst-x"))
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    assert record.levelno == logging.WARNING
    assert "unreachable while reading memory" in record.getMessage() and "ConnectError" in record.getMessage()


def test_unreachable_service_tells_the_model_memory_is_unavailable(closed_url: str) -> None:
    """The model gets an "unavailable" block, not an empty memory block, and instructions stay untouched."""
    model, _ = _run(key_provider(closed_url, "inst-x"))
    (block,) = model.last.blocks(UNAVAILABLE_BLOCK_TAG)
    assert "Long-term memory is unavailable for this turn" in block
    assert "does not mean the user has no stored memory" in block
    assert model.last.blocks(MEMORY_BLOCK_TAG) == []
    assert model.last.instructions == INSTRUCTIONS


def test_unreachable_write_is_logged_and_recorded_not_raised(
    closed_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A remember request that cannot be stored is recorded as failed in the session state and logged."""
    provider = key_provider(closed_url, "inst-x", persist="remember")
    model = ScriptedChatClient(["Noted."])
    agent = make_agent(model, provider)
    session = agent.create_session()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        answer = asyncio.run(agent.run("Remember that I prefer aisle seats.", session=session))
    (write,) = session.state[provider.source_id]["last_writes"]
    assert answer.text == "Noted."
    assert write["status"] == "failed" and "could not be reached" in write["reason"]
    assert len(write["idempotency_key"]) == 36  # the key to send it again with (stored at most once)
    assert "unreachable while storing memory" in caplog.text


def test_refused_credentials_are_an_error_and_memory_unavailable(
    server: RunningServer, instance_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A wrong service key (401) is logged as an error and reported to the model as unavailable, with the reason."""
    provider = MemoryCoreContextProvider(server.api, instance_id, api_key="wrong-key", user_identity={"upn": "a@b.c"})
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        model, answer = _run(provider)
    (block,) = model.last.blocks(UNAVAILABLE_BLOCK_TAG)
    assert answer == "Hi there."
    assert "HTTP 401" in block
    assert any(r.levelno == logging.ERROR and "refused the credentials" in r.getMessage() for r in caplog.records)


def test_bearer_token_is_sent_without_key_or_identity_headers(server: RunningServer, instance_id: str) -> None:
    """bearer_token sends Authorization: Bearer and neither X-API-KEY nor X-USER-IDENTITY."""
    sent: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        sent.append(request)

    async def go() -> ScriptedChatClient:
        async with httpx.AsyncClient(event_hooks={"request": [record]}) as client:
            provider = MemoryCoreContextProvider(server.api, instance_id, bearer_token=lambda: "tok-123",
                                                 http_client=client)
            model = ScriptedChatClient()
            await make_agent(model, provider).run("Hello")
            return model

    model = asyncio.run(go())
    (request,) = sent
    assert request.headers["authorization"] == "Bearer tok-123"
    assert "x-api-key" not in request.headers and "x-user-identity" not in request.headers
    # This server takes service keys only, so it refuses the token; the run still completes.
    assert model.last.blocks(UNAVAILABLE_BLOCK_TAG)


def test_missing_user_identity_is_memory_unavailable(server: RunningServer, instance_id: str,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """A key without any user identity is a configuration error: logged, no request, model told unavailable."""
    provider = MemoryCoreContextProvider(server.api, instance_id, api_key="test-user-key")
    with caplog.at_level(logging.ERROR, logger=LOGGER):
        model, _ = _run(provider)
    (block,) = model.last.blocks(UNAVAILABLE_BLOCK_TAG)
    assert "no user identity" in block and "no user identity" in caplog.text


@pytest.mark.parametrize(
    "settings",
    [
        {"api_key": "k", "bearer_token": "t"},
        {},
        {"bearer_token": "t", "user_identity": {"upn": "a@b.c"}},
        {"api_key": "k", "user_identity": {"name": "no upn"}},
        {"api_key": "k", "persist": "chat_summary"},
        {"api_key": "k", "retrieval": "semantic"},
    ],
    ids=["key-and-bearer", "no-credential", "bearer-with-identity", "identity-without-upn",
         "summary-without-source", "unknown-retrieval"],
)
def test_unusable_configuration_is_refused_at_construction(settings: dict[str, object]) -> None:
    """Ambiguous or incomplete settings raise MemoryCoreConfigurationError before any run."""
    with pytest.raises(MemoryCoreConfigurationError):
        MemoryCoreContextProvider("http://127.0.0.1:1/api", "inst", **settings)  # type: ignore[arg-type]



def test_forget_while_unreachable_says_nothing_was_deleted(closed_url: str) -> None:
    """A forget request that cannot reach the service is reported as failed, never as done or pending."""
    model, _ = _run(key_provider(closed_url, "inst-x"), "Forget that I prefer window seats")
    (notice,) = model.last.blocks("memory_service_notice")
    assert "the request failed" in notice and "nothing was deleted" in notice
    assert "pending operator approval" not in notice


def test_failing_bearer_token_source_is_memory_unavailable(closed_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """A token callable that raises is logged with its traceback; the agent answers without memory."""

    def broken() -> str:
        raise RuntimeError("token endpoint down")

    with caplog.at_level(logging.ERROR, logger=LOGGER):
        model, answer = _run(MemoryCoreContextProvider(closed_url, "inst-x", bearer_token=broken))
    (block,) = model.last.blocks(UNAVAILABLE_BLOCK_TAG)
    assert answer == "Hi there."
    assert "credentials could not be obtained (RuntimeError)" in block
    assert any(r.exc_info for r in caplog.records if r.name == LOGGER)


def test_forget_without_credentials_says_nothing_was_deleted(server: RunningServer, instance_id: str) -> None:
    """A forget request on a run with no usable identity is reported as failed, not as done."""
    provider = MemoryCoreContextProvider(server.api, instance_id, api_key="test-user-key")
    model, _ = _run(provider, "Forget that I prefer window seats")
    (notice,) = model.last.blocks("memory_service_notice")
    assert "the request failed (no user identity" in notice and "nothing was deleted" in notice


def _timed_run(provider: MemoryCoreContextProvider, text: str) -> tuple[ScriptedChatClient, float]:
    model = ScriptedChatClient(["Hi there."])
    agent = make_agent(model, provider)
    started = time.monotonic()
    try:
        asyncio.run(asyncio.wait_for(agent.run(text, session=agent.create_session()), 10))
    except TimeoutError:
        pytest.fail("agent.run() was still waiting on the memory service after 10 s")
    return model, time.monotonic() - started


def test_a_trickling_service_is_cut_at_timeout_seconds(caplog: pytest.LogCaptureFixture) -> None:
    """A service that sends headers and then trickles the body (each read in time) is given timeout_seconds in
    all; the run goes on with memory unavailable and a warning."""
    with trickling_server() as base, caplog.at_level(logging.WARNING, logger=LOGGER):
        model, took = _timed_run(key_provider(base, "inst-x", timeout_seconds=1), "Hello")
    (block,) = model.last.blocks(UNAVAILABLE_BLOCK_TAG)
    assert took < 4
    assert "did not answer in time" in block
    assert "unreachable while reading memory" in caplog.text


def test_one_hook_is_bounded_whatever_its_number_of_calls() -> None:
    """A forget turn makes several calls; hook_timeout_seconds bounds them together, and a call the hook has no
    time left for is not sent (the forget fails, memory is unavailable)."""
    with trickling_server() as base:
        provider = key_provider(base, "inst-x", timeout_seconds=3, hook_timeout_seconds=1)
        model, took = _timed_run(provider, "Forget that I prefer window seats")
    (notice,) = model.last.blocks("memory_service_notice")
    (block,) = model.last.blocks(UNAVAILABLE_BLOCK_TAG)
    assert took < 2.5
    assert "nothing was deleted" in notice and "time" in block


def test_hook_timeout_must_be_positive() -> None:
    """hook_timeout_seconds and timeout_seconds must be positive."""
    for settings in ({"timeout_seconds": 0}, {"hook_timeout_seconds": 0}):
        with pytest.raises(MemoryCoreConfigurationError):
            key_provider("http://127.0.0.1:1/api", "inst", **settings)


def test_a_refused_read_is_logged(harness: Callable[..., Harness], caplog: pytest.LogCaptureFixture) -> None:
    """A read answered 4xx other than refused credentials (here a gateway's 429) is logged as a warning, as every
    failure is, and the model is told memory is unavailable with the reason."""

    def throttle(request: httpx.Request, response: httpx.Response) -> httpx.Response:
        return httpx.Response(429, json={"error": {"code": "too_many_requests", "message": "slow down"}})

    h = harness()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        call, state = run_altered(h, throttle, ["Hello"])
    (block,) = call.blocks(UNAVAILABLE_BLOCK_TAG)
    assert "HTTP 429" in block and state["last_recall"]["status"] == "unavailable"
    assert any(r.levelno == logging.WARNING and "while reading memory" in r.getMessage() and "429" in r.getMessage()
               for r in caplog.records if r.name == LOGGER)
