"""Every status the CoreAPI answers, read by the CoreAPI client as the error family's class of that status.

Over real sockets: the CoreAPI is a real ``serve``, behind a front of the test's own that passes every request on,
except those of a few users, for whom it answers itself what ``serve``'s REST routes cannot be made to answer (or
not within a test's time): a 429 and a 503 in the REST body the service's own edge makes of ``TooManyCalls`` and
``Unavailable``, and a gateway's 429 and 504 pages without it. That front stands in for what sits before a deployment
(App Service's front end, a gateway) and for the MCP line's refusal on a CoreAPI that queued REST calls too. A second
real ``serve``, whose MCP tools call that CoreAPI (``MEMORY_COREAPI_BASE_URL``), shows the same errors to MCP clients.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memory_core.client import CoreApiClient
from memory_core.client_errors import CoreApiFailure, http_status_of, retry_after_of
from memory_core.domain.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    MemoryCoreError,
    NotFound,
    PayloadTooLarge,
    TimedOut,
    TooManyCalls,
    Unauthenticated,
    Unavailable,
    Unprocessable,
    UnsupportedMediaType,
)
from memory_core.edge.errors import headers_for, response_for_error, status_for
from memory_core.wire.custody import PendingDeletionResponse
from tests.mcp.client import call, mcp_headers, text
from tests.support.local_server import OPERATOR_KEY, USER_KEY, RunningServer, identity, running_server
from tests.support.stand_in_front import PassingFront, serving

pytestmark = pytest.mark.anyio

FRONT_KEY = "test-front-key"
LINE_FULL = "10 of your earlier calls to the store have not returned yet and 40 more wait for them; retry later"
STORE_BUSY = "the store is busy; retry later"


def _rest_answer(error: MemoryCoreError) -> tuple[int, bytes, dict[str, str]]:
    """The status, body and headers the service's REST edge answers ``error`` with."""
    answer = response_for_error(error)
    return answer.status_code, answer.get_body(), {**dict(answer.headers), "Content-Type": "application/json"}


#: What the front answers itself, by the user a request names in X-USER-IDENTITY.
ANSWERED_BY_THE_FRONT: dict[str, tuple[int, bytes, dict[str, str]]] = {
    "line-full@contoso.com": _rest_answer(TooManyCalls(LINE_FULL, retry_after_seconds=7)),
    "gateway-throttled@contoso.com": (429, b"<html>Too Many Requests</html>",
                                      {"Content-Type": "text/html", "Retry-After": "9"}),
    "store-busy@contoso.com": _rest_answer(Unavailable(STORE_BUSY, retry_after_seconds=3)),
    "gateway-timeout@contoso.com": (504, b"<html>Gateway Timeout</html>", {"Content-Type": "text/html"}),
    "gateway-slow@contoso.com": (408, b"<html>Request Timeout</html>", {"Content-Type": "text/html",
                                                                         "Retry-After": "4"}),
}


class ThrottlingFront(PassingFront):
    """Passes requests on to the CoreAPI, but answers those of the users of ``ANSWERED_BY_THE_FRONT`` itself."""

    def answers_itself(self) -> bool:
        named = json.loads(self.headers.get("X-USER-IDENTITY") or "{}").get("upn")
        if named not in ANSWERED_BY_THE_FRONT:
            return False
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.reply(*ANSWERED_BY_THE_FRONT[named])
        return True


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def coreapi(sqlite_server: RunningServer) -> Iterator[str]:
    """The CoreAPI's base URL: ``sqlite_server`` behind the throttling front."""
    front = type("Front", (ThrottlingFront,), {"backend": sqlite_server.base_url})
    with serving(front) as base:
        yield f"{base}/api"


def _user(upn: str = "errors@contoso.com", key: str = USER_KEY) -> dict[str, str]:
    return {"X-API-KEY": key, "X-USER-IDENTITY": identity(upn)}


Provoke = Callable[[CoreApiClient, str], Awaitable[object]]


async def _decided_twice(client: CoreApiClient, instance: str) -> object:
    cleared = await client.clear(instance, _user(), {"scope": "user", "confirm": True})
    assert isinstance(cleared, PendingDeletionResponse)  # pending an operator's approval (the server's default)
    request_id = cleared.request_id
    await client.reject(instance, {"X-API-KEY": OPERATOR_KEY}, request_id, "kept")
    return await client.approve(instance, {"X-API-KEY": OPERATOR_KEY}, request_id)


@dataclass(frozen=True)
class Row:
    status: int
    provoke: Provoke
    raised: type[MemoryCoreError]
    code: str
    answered_here: int  # the status this deployment answers the error with (edge.errors.status_for)
    retry_after: str | None  # the Retry-After it sends with it
    retry_seconds: int | None = None  # the seconds to wait the error names (retry_after_of), when not retry_after
    def __str__(self) -> str:
        return f"{self.status}-{self.code}"


TABLE = [
    Row(400, lambda c, i: c.get_memory(i, _user(), {"scope": "everything"}), InvalidInput, "validation_error", 400,
        None),
    Row(401, lambda c, i: c.get_memory(i, _user(key="not-a-key"), {"scope": "user"}), Unauthenticated,
        "unauthenticated", 401, None),
    Row(403, lambda c, i: c.sweep(i, _user()), Forbidden, "forbidden", 403, None),
    Row(404, lambda c, i: c.forget(i, _user(), "no-such-entry"), NotFound, "not_found", 404, None),
    Row(409, _decided_twice, Conflict, "not_pending", 409, None),
    Row(413, lambda c, i: c.append(i, _user(), {"scope": "user", "content_markdown": "x" * 70_000}), PayloadTooLarge,
        "payload_too_large", 413, None),
    Row(415, lambda c, i: c.send("POST", c.memory_path(i, "/append"), _user()), UnsupportedMediaType,
        "unsupported_media_type", 415, None),
    Row(422, lambda c, i: c.append(i, _user(), {"scope": "user", "content_markdown": "key AKIAIOSFODNN7EXAMPLE0"}),
        Unprocessable, "secret_detected", 422, None),
    Row(429, lambda c, i: c.get_memory(i, _user("line-full@contoso.com"), {"scope": "user"}), TooManyCalls,
        "too_many_calls", 429, "7"),
    Row(429, lambda c, i: c.append(i, _user("gateway-throttled@contoso.com"), {"scope": "user",
                                                                               "content_markdown": "- x"}),
        TooManyCalls, "too_many_calls", 429, "9"),
    Row(503, lambda c, i: c.search(i, _user("store-busy@contoso.com"), {"q": "x", "scope": "user"}), Unavailable,
        "unavailable", 503, "3"),
    Row(504, lambda c, i: c.get_memory(i, _user("gateway-timeout@contoso.com"), {"scope": "user"}), TimedOut,
        "unavailable", 503, "5"),
    # Not the CoreAPI's: a status outside the error family is a failure of this deployment's call (500), which still
    # names the wait the answer asked for.
    Row(408, lambda c, i: c.get_memory(i, _user("gateway-slow@contoso.com"), {"scope": "user"}), CoreApiFailure,
        "coreapi_error", 500, None, 4),
]


@pytest.mark.parametrize("row", TABLE, ids=str)
async def test_each_status_the_coreapi_answers_is_its_error_family_class_answered_with_the_same_status(
    coreapi: str, instance_id: str, row: Row,
) -> None:
    """The error raised for each status is the error family's class of it, with the CoreAPI's code, so this
    deployment answers it with the same status (a 504, which the family has no class of, as the 503 of a store's
    deadline) and the same Retry-After (5 s where none was named, as the service's own 503s); the status answered
    is kept (``http_status_of``). Before, a 429 was a CoreApiFailure (500 here) and a 422 an InvalidInput (400)."""
    client = CoreApiClient(coreapi, timeout_seconds=20)
    try:
        with pytest.raises(MemoryCoreError) as raised:
            await row.provoke(client, instance_id)
    finally:
        await client.aclose()
    error = raised.value
    assert (type(error), error.code) == (row.raised, row.code), (type(error), error.code, error.message)
    assert (status_for(error), http_status_of(error)) == (row.answered_here, row.status)
    assert headers_for(error).get("Retry-After") == row.retry_after
    assert retry_after_of(error) == (int(row.retry_after) if row.retry_after else row.retry_seconds)


@pytest.fixture(scope="module")
def mcp_in_front(coreapi: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A real ``serve`` whose MCP tools call the CoreAPI (through the throttling front) with a key of its own."""
    env = {"MEMORY_API_KEYS": FRONT_KEY, "MEMORY_COREAPI_BASE_URL": coreapi, "MEMORY_COREAPI_KEY": USER_KEY,
           "MEMORY_DEFAULT_INSTANCE_ID": "client-errors", "MEMORY_MCP_ALLOWED_HOSTS": "", "WEBSITE_HOSTNAME": "",
           "MEMORY_STORE": "sqlite"}
    with running_server(Path(tmp_path_factory.mktemp("mcp-in-front")), env) as server:
        yield server


@pytest.mark.parametrize(("upn", "code", "message"), [
    ("line-full@contoso.com", "too_many_calls", LINE_FULL),
    ("gateway-throttled@contoso.com", "too_many_calls", "the CoreAPI answered HTTP 429; retry later"),
    ("store-busy@contoso.com", "unavailable", STORE_BUSY),
    ("gateway-timeout@contoso.com", "unavailable", "the CoreAPI answered HTTP 504; retry later"),
])
async def test_an_mcp_tool_whose_coreapi_refuses_for_now_answers_its_code_and_message(
    mcp_in_front: RunningServer, upn: str, code: str, message: str,
) -> None:
    """An MCP tool call whose CoreAPI answered 429, 503 or 504 is the tool error of the same code and message
    (a gateway's page: a message naming the status, never its text); a gateway's 429 was ``coreapi_error`` before."""
    result = await call(f"{mcp_in_front.api}/mcp", mcp_headers(FRONT_KEY, upn), "append_memory",
                        {"scope": "user", "memory": "- likes tea"})
    assert result.is_error
    assert (result.structured_content, text(result)) == ({"error": {"code": code, "message": message}}, message)
