"""The one CoreAPI client against `serve`: typed answers, and error answers as the domain's errors."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable

import httpx
import pytest

from memory_core.client import CoreApiClient, idempotency_key_of, new_idempotency_key
from memory_core.client_errors import CoreApiUnreachable, http_status_of
from memory_core.domain.errors import Forbidden, NotFound, Unprocessable
from memory_core.wire.custody import PendingDeletionResponse, SearchResponse
from memory_core.wire.deletions import DeletionListResponse
from memory_core.wire.memory import MemoryResponse
from tests.support.local_server import OPERATOR_KEY, USER_KEY, RunningServer, free_port, identity
from tests.support.trickle import trickling_server

pytestmark = pytest.mark.anyio
USER = {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity("client@contoso.com")}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_typed_answers_for_users_and_operators(sqlite_server: RunningServer, instance_id: str) -> None:
    """append, read and clear answer the wire models; the clear waits for approval and shows in the list."""
    client = CoreApiClient(sqlite_server.api)
    try:
        appended = await client.append(instance_id, USER, {"scope": "user", "content_markdown": "- likes tea"})
        read = await client.get_memory(instance_id, USER, {"scope": "user"})
        cleared = await client.clear(instance_id, USER, {"scope": "user", "confirm": True})
        listed = await client.list_deletions(instance_id, {"X-API-KEY": OPERATOR_KEY}, "pending")
    finally:
        await client.aclose()
    assert isinstance(appended, MemoryResponse) and appended.entry_id
    assert "likes tea" in read.content_markdown
    assert isinstance(cleared, PendingDeletionResponse)
    assert isinstance(listed, DeletionListResponse) and [r.id for r in listed.requests] == [cleared.request_id]


async def test_error_answers_keep_code_message_and_status(sqlite_server: RunningServer, instance_id: str) -> None:
    """A user key on an operator route is Forbidden (403); a secret is refused with 422 secret_detected."""
    client = CoreApiClient(sqlite_server.api)
    try:
        with pytest.raises(Forbidden) as forbidden:
            await client.sweep(instance_id, {"X-API-KEY": USER_KEY})
        with pytest.raises(Unprocessable) as refused:
            await client.append(instance_id, USER, {"scope": "user",
                                                    "content_markdown": "key AKIAIOSFODNN7EXAMPLE0 secret"})
        with pytest.raises(NotFound):
            await client.forget(instance_id, USER, "no-such-entry")
    finally:
        await client.aclose()
    assert http_status_of(forbidden.value) == 403
    assert (refused.value.code, http_status_of(refused.value)) == ("secret_detected", 422)


async def test_search_posts_its_words_in_the_body_never_in_the_url(sqlite_server: RunningServer,
                                                                    instance_id: str) -> None:
    """search is a POST with the fields as JSON (limit a number): the URL, which httpx logs at INFO and proxies
    record, holds no word of the search."""
    sent: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        sent.append(request)

    async with httpx.AsyncClient(event_hooks={"request": [record]}) as http:
        client = CoreApiClient(sqlite_server.api, http=http)
        await client.append(instance_id, USER, {"scope": "user", "content_markdown": "- likes quince jelly",
                                                "tags": ["food"]})
        found = await client.search(instance_id, USER, {"q": "quince", "scope": "user", "limit": 3, "tags": "food"})
    assert isinstance(found, SearchResponse) and found.query == "quince"
    assert [h.entry.content_markdown for h in found.hits] == ["- likes quince jelly"]
    search = sent[-1]
    assert search.method == "POST" and search.url.query == b"" and "quince" not in str(search.url)
    assert json.loads(search.content) == {"q": "quince", "scope": "user", "limit": 3, "tags": "food"}


async def test_no_answer_is_unreachable_with_the_transport_error_as_cause() -> None:
    """A closed port raises CoreApiUnreachable (503 to callers), caused by the transport's error."""
    client = CoreApiClient(f"http://127.0.0.1:{free_port()}/api", timeout_seconds=5)
    try:
        with pytest.raises(CoreApiUnreachable) as raised:
            await client.get_memory("i1", USER, {"scope": "user"})
    finally:
        await client.aclose()
    assert raised.value.__cause__ is not None
    assert http_status_of(raised.value) is None


async def test_a_trickled_answer_is_cut_at_the_total_deadline() -> None:
    """An answer whose body trickles in (every read within the per-read timeout) is cut at timeout_seconds
    in all, and raised as CoreApiUnreachable; a per-call timeout bounds the call in all the same way."""
    with trickling_server() as base:
        client = CoreApiClient(base, timeout_seconds=1)
        try:
            started = time.monotonic()
            whole = await _bounded(client.get_memory("i1", USER, {"scope": "user"}), started)
            started = time.monotonic()
            per_call = await _bounded(client.send("GET", "/instances/i1/memory", USER, timeout=0.5), started)
        finally:
            await client.aclose()
    assert whole < 3 and per_call < 2


async def _bounded(call: Awaitable[object], started: float) -> float:
    """How long ``call`` took to raise CoreApiUnreachable; fails the test when it is still waiting after 8 s."""
    try:
        await asyncio.wait_for(call, 8)
    except CoreApiUnreachable:
        return time.monotonic() - started
    except TimeoutError:
        pytest.fail("the call was still waiting after 8 s")
    pytest.fail("the call answered")


async def test_append_sends_an_idempotency_key_and_a_retry_with_it_stores_once(sqlite_server: RunningServer,
                                                                               instance_id: str) -> None:
    """Each append goes with an Idempotency-Key (a fresh one unless given): the same append sent again with
    the key answers the same entry and stores nothing more."""
    client = CoreApiClient(sqlite_server.api)
    body = {"scope": "user", "content_markdown": "- likes tea"}
    try:
        fresh = [await client.append(instance_id, USER, body) for _ in range(2)]
        key = new_idempotency_key()
        first = await client.append(instance_id, USER, body, idempotency_key=key)
        again = await client.append(instance_id, USER, body, idempotency_key=key)
        read = await client.get_memory(instance_id, USER, {"scope": "user"})
    finally:
        await client.aclose()
    assert fresh[0].entry_id != fresh[1].entry_id
    assert again.entry_id == first.entry_id
    assert read.content_markdown.count("- likes tea") == 3


async def test_a_failed_append_names_the_key_to_send_it_again_with() -> None:
    """No answer arrived, so the append may or may not be stored: the error carries the key it was sent with."""
    client = CoreApiClient(f"http://127.0.0.1:{free_port()}/api", timeout_seconds=5)
    try:
        with pytest.raises(CoreApiUnreachable) as raised:
            await client.append("i1", USER, {"scope": "user", "content_markdown": "- x"}, idempotency_key="k-1")
        with pytest.raises(CoreApiUnreachable) as fresh:
            await client.append("i1", USER, {"scope": "user", "content_markdown": "- x"})
    finally:
        await client.aclose()
    assert idempotency_key_of(raised.value) == "k-1"
    assert idempotency_key_of(fresh.value) not in (None, "k-1")
