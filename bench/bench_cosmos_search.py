"""Store work of a search and a budgeted read on the Cosmos DB test server, by memory size.

    python bench/bench_cosmos_search.py            # --sizes 3000 --port 0

One user with N entries (about 60 characters each) in the user scope, seeded in stamped batches. Each row is
one call of a service, counted by the store's meter: round trips (every HTTP request), items read and response
bytes. The test server charges a flat 1 RU a request, so the bytes stand in for the request charge. "fresh" is a
new ``MemoryService`` (a process that keeps nothing yet) over a store whose client has already checked its
container; "again" is the same service's next call; "after an append" follows one append by another process.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import MemoryService
from tests.adapters.cosmos_support import cosmos_store, provisioned_cosmos_server
from tests.support.seeding import make_entries, seed

ALEX = Caller(upn="alex@contoso.com", name="Alex")
BUDGET = 4000


def _row(name: str, store: CosmosMemoryStore, call: Callable[[], object]) -> None:
    with store.measure() as metrics:
        call()
    print(f"| {name} | {metrics.round_trips} | {metrics.rows:,} | {metrics.bytes_read:,} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="3000")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with provisioned_cosmos_server(port=args.port) as server:
        reading, writing = cosmos_store(server), cosmos_store(server)
        for size in (int(s) for s in args.sizes.split(",")):
            key = ProfileKey(f"bench-{uuid.uuid4().hex[:8]}", ALEX.upn, Scope.USER)
            seed(writing, make_entries(key, size), server)
            instance, writer = key.instance_id, MemoryService(writing)
            MemoryService(reading).get(ALEX, instance, Scope.USER, None)  # the client's container check
            print(f"\n{size:,} entries\n\n| call | round trips | items read | bytes read |\n|---|---:|---:|---:|")
            service = MemoryService(reading)

            def search(words: str) -> Callable[[], object]:
                return lambda: service.search(ALEX, instance, Scope.USER, None, words)

            _row("search, fresh", reading, search("mentioned"))
            _row("search again (another query)", reading, search("item number"))
            writer.append(ALEX, instance, Scope.USER, None, "- a new entry about zeppelins")
            _row("search after an append", reading, search("zeppelins"))
            _row("get (full) after the searches", reading, lambda: service.get(ALEX, instance, Scope.USER, None))
            gets_first = MemoryService(reading)
            _row("get (full), fresh", reading, lambda: gets_first.get(ALEX, instance, Scope.USER, None))
            _row("search after that get", reading,
                 lambda: gets_first.search(ALEX, instance, Scope.USER, None, "mentioned"))
            searches_first = MemoryService(reading)
            _row("search, fresh (for a get)", reading,
                 lambda: searches_first.search(ALEX, instance, Scope.USER, None, "mentioned"))
            _row("get (full) after that search", reading,
                 lambda: searches_first.get(ALEX, instance, Scope.USER, None))
            budgeted = MemoryService(reading)
            _row(f"budgeted get ({BUDGET}), fresh", reading,
                 lambda: budgeted.get_within(ALEX, instance, Scope.USER, None, BUDGET))
            _row(f"budgeted get ({BUDGET}) again", reading,
                 lambda: budgeted.get_within(ALEX, instance, Scope.USER, None, BUDGET))
        reading.close()
        writing.close()


if __name__ == "__main__":
    main()
