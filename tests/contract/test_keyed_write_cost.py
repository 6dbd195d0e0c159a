"""A keyed first write costs what an unkeyed one does, on every store: the key's mark is created in the entry's
atomic write, not read before it.

A key seen for the first time (the usual case: a retry is rare) needs no read: the store's atomic append creates
the key's mark only while none is stored, so a key whose entry was erased since fails that write as a taken entry
id does, and only then is anything read (``domain.idempotency.store_once``). Round trips are HTTP requests to
Cosmos DB (every attempt) or reads and write transactions on SQLite (``MemoryStore.measure``).
"""

from __future__ import annotations

import uuid
from typing import Any

from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope
from memory_core.domain.records import RecordKind
from memory_core.domain.service import MemoryService
from memory_core.domain.store import MemoryStore


class MarkReads:
    """The store, counting the point reads of a key's mark (``get_record`` of a ``keyed_entry``)."""

    def __init__(self, store: MemoryStore) -> None:
        self.inner = store
        self.reads = 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        if name != "get_record":
            return method

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.reads += args[1] == RecordKind.KEYED_ENTRY
            return method(*args, **kwargs)

        return counted


def _caller() -> Caller:
    return Caller(upn=f"cost-{uuid.uuid4().hex[:8]}@contoso.com", name="Alex", user_name="alex")


def test_a_keyed_first_write_reads_no_mark(store: MemoryStore) -> None:
    counting = MarkReads(store)
    service = MemoryService(counting)  # type: ignore[arg-type]
    alex, key = _caller(), uuid.uuid4().hex
    first = service.append(alex, "kc", Scope.USER, None, "- keyedzq fact", idempotency_key=key)
    assert counting.reads == 0
    again = service.append(alex, "kc", Scope.USER, None, "- keyedzq fact", idempotency_key=key)  # a retry: replayed
    assert again.entry_id == first.entry_id and counting.reads == 0
    assert len(service.entries(alex, "kc", Scope.USER, None)) == 1


def test_a_keyed_first_write_costs_the_round_trips_of_an_unkeyed_one(store: MemoryStore) -> None:
    """Measured warm (the profile and the partition's stamp known to the process), alternately, three times."""
    service = MemoryService(store)
    alex = _caller()
    service.append(alex, "kc", Scope.USER, None, "- warm")
    costs: dict[bool, list[int]] = {False: [], True: []}
    for n in range(6):
        keyed = n % 2 == 1
        with store.measure() as metrics:
            service.append(alex, "kc", Scope.USER, None, f"- fact {n}",
                           idempotency_key=uuid.uuid4().hex if keyed else None)
        costs[keyed].append(metrics.round_trips)
    assert costs[True] == costs[False]
    assert len(service.entries(alex, "kc", Scope.USER, None)) == 7
