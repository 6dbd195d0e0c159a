"""The store's ``CosmosClient``, made safe to share between threads.

azure-cosmos keeps the headers of the last response on the client, in one
attribute for every thread (``client_connection.last_response_headers``), and
writes into them after each request (its throttling retry counts,
``_retry_utility.Execute``) while the request that put them there may still be
reading them (a query copies them, ``__QueryFeed``). The client also refreshes the
account's topology on a thread of its own, every 5 minutes. So a query could fail
with ``RuntimeError: OrderedDict mutated during iteration`` (a 500) whenever
another thread's request ended at the same moment: the function host's other
requests, or the client's own refresh, even with one request at a time. The SDK's
maintainers call these headers "not thread safe" (azure-sdk-for-python #33790).

``new_client`` gives the client's connection a ``last_response_headers`` of each
thread's own, so each request writes and reads the headers of its own response,
which is all the SDK uses them for. It relies on that attribute's name: azure-cosmos
is pinned (requirements.txt), and ``tests/adapters/test_cosmos_client.py`` fails if
the race comes back.
"""

from __future__ import annotations

import threading
from typing import Any

from azure.core.utils import CaseInsensitiveDict
from azure.cosmos import CosmosClient

_PER_THREAD: dict[type, type] = {}
_PER_THREAD_LOCK = threading.Lock()


def new_client(endpoint: str, credential: Any, **kwargs: Any) -> CosmosClient:
    """``CosmosClient(endpoint, credential, **kwargs)`` whose last response headers are kept per thread."""
    client = CosmosClient(endpoint, credential=credential, **kwargs)
    keep_response_headers_per_thread(client)
    return client


def keep_response_headers_per_thread(client: CosmosClient) -> None:
    """Make ``client``'s ``last_response_headers`` one per thread (each starts empty), from now on."""
    connection = client.client_connection
    connection._memory_core_headers = threading.local()  # type: ignore[attr-defined]
    # The property is a data descriptor: it takes precedence over the value the constructor left on the instance.
    connection.__class__ = _per_thread_class(type(connection))


def _per_thread_class(base: type) -> type:
    """A subclass of ``base`` whose ``last_response_headers`` is a property over the instance's thread-local
    (``_memory_core_headers``, set before the class is swapped)."""
    with _PER_THREAD_LOCK:
        made = _PER_THREAD.get(base)
        if made is None:
            made = type(f"PerThreadHeaders{base.__name__}", (base,), {
                "last_response_headers": property(_headers, _set_headers),
            })
            _PER_THREAD[base] = made
        return made


def _headers(connection: Any) -> Any:
    local = connection._memory_core_headers
    headers = getattr(local, "headers", None)
    if headers is None:
        headers = local.headers = CaseInsensitiveDict()
    return headers


def _set_headers(connection: Any, headers: Any) -> None:
    connection._memory_core_headers.headers = headers
