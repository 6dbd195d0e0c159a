"""The store's CosmosClient shared between threads, against the Cosmos DB protocol server and the real SDK."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest
from azure.cosmos import _constants

from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import DeletionMode, MemoryService
from tests.adapters.cosmos_support import cosmos_store
from tests.support.cosmos_server import CosmosServer
from tests.support.threads import run_switching_often

RACING_SECONDS = 4.0
RACING_CALLS = 60
"""The race runs at least RACING_SECONDS and until it has made RACING_CALLS calls: on a loaded machine (the
suite's parallel workers, other work beside it) 4 s made 27 calls, too few to be a race."""
RACING_AT_MOST_SECONDS = 60.0


@pytest.fixture
def refreshing_store(cosmos_account: CosmosServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[CosmosMemoryStore]:
    """A store whose client refreshes the account's topology in the background every 5 ms, not every 5 minutes.

    The interval is the SDK's own constant, read when the client is made; 5 minutes is what a
    process serving for an hour goes through a dozen times, and what a test of seconds never would.
    """
    monkeypatch.setattr(_constants._Constants, "DefaultEndpointsRefreshTime", 5)
    store = cosmos_store(cosmos_account)
    yield store
    store.close()


def _race(service: MemoryService, seconds: float, calls_wanted: int, at_most: float) -> tuple[int, list[BaseException]]:
    """Three threads appending, reading and searching one memory through ``service`` for ``seconds`` and until they
    made ``calls_wanted`` calls (``at_most`` seconds in all); how many calls they made and what they raised."""
    caller = Caller(upn=f"client-{uuid.uuid4().hex[:8]}@contoso.com", name="Alex")
    failures: list[BaseException] = []
    calls = [0]
    started = time.monotonic()

    def racing() -> bool:
        elapsed = time.monotonic() - started
        return not failures and elapsed < at_most and (elapsed < seconds or calls[0] < calls_wanted)

    def work() -> None:
        try:
            while racing():
                service.append(caller, "i", Scope.USER, None, f"- prefers tea number {uuid.uuid4().hex[:6]}")
                service.get(caller, "i", Scope.USER, None)
                service.search(caller, "i", Scope.USER, None, "tea")
                calls[0] += 3
        except BaseException as error:  # reported by the test thread
            failures.append(error)

    threads = [threading.Thread(target=work) for _ in range(3)]
    run_switching_often(threads, timeout=at_most + 60)
    return calls[0], failures


def test_requests_on_many_threads_and_the_clients_own_refresh_never_fail_each_other(
    refreshing_store: CosmosMemoryStore,
) -> None:
    """The SDK's refresh thread and the requests of other threads wrote their retry counts into the headers a
    query was copying (the client kept one ``last_response_headers`` for all): the query failed with
    ``RuntimeError: OrderedDict mutated during iteration``, once in a few hundred CI runs of the suite, in
    every run of this test. With the headers kept per thread, every call of the race succeeds."""
    service = MemoryService(refreshing_store, deletion_mode=DeletionMode.IMMEDIATE)
    calls, failures = _race(service, RACING_SECONDS, RACING_CALLS, RACING_AT_MOST_SECONDS)
    assert failures == []
    assert calls >= RACING_CALLS  # the race ran: 651 and 684 calls in 4 s in two runs on a quiet machine


def test_each_thread_sees_the_headers_of_its_own_last_response(refreshing_store: CosmosMemoryStore) -> None:
    """What the SDK reads back after a request (its session token, a response hook's headers) is that request's,
    not whichever thread's request ended last; a thread that made none sees empty headers."""
    refreshing_store.load([ProfileKey("i", "alex@contoso.com", Scope.USER)])  # the client made, the container checked
    connection = refreshing_store._account._client.client_connection  # type: ignore[union-attr]
    connection.last_response_headers = {"x-ms-activity-id": "main"}
    seen: list[object] = []
    other = threading.Thread(target=lambda: seen.append(dict(connection.last_response_headers)))
    other.start()
    other.join()
    assert seen == [{}]
    assert connection.last_response_headers == {"x-ms-activity-id": "main"}

