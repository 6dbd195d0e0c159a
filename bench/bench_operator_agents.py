"""Benchmark: what one page of the operator's agent list (``GET .../operator/agents``, ``AgentSettingsBook.page``)
reads from the store when an instance configures many agents, on SQLite and on the Cosmos DB test server.

Run from the repository root:

    python bench/bench_operator_agents.py [--agents 10000] [--repeat 5] [--stores sqlite,cosmos]

Seeds one instance with ``--agents`` agents' settings (in batches of 100, as the settings partition holds them),
then measures with the store's own meter (``MemoryStore.measure``) the first page at ``limit`` 100 and at the
route's default (1,000), and a deep page (the one after half the agents): the round trips, the records read back
(``rows``) and, on SQLite, the VM steps (the work of seeks and scans), on Cosmos DB the request units; and the
median time of ``--repeat`` reads of each. Then the walk the console makes (every page at the default limit).
A page that read every agent would show rows near ``--agents``; one that reads a page shows ``limit`` + 1.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.agent_settings import AGENT_SETTINGS, SETTINGS_OWNER, AgentSettings
from memory_core.domain.models import agent_hash
from memory_core.domain.records import Partition, Record
from memory_core.domain.service import MemoryService
from memory_core.domain.store import MemoryStore

INSTANCE = "bench-agents"
BATCH = 100  # a Cosmos DB transactional batch's limit


def _seed(store: MemoryStore, agents: int) -> None:
    partition = Partition(INSTANCE, SETTINGS_OWNER)
    records = [Record(partition, AGENT_SETTINGS, agent_hash(f"/agents/a{n:06d}"),
                      AgentSettings(f"/agents/a{n:06d}", enabled=n % 2 == 0, allowed_group_ids=(f"g-{n % 7}",)
                                    ).to_data()) for n in range(agents)]
    for at in range(0, len(records), BATCH):
        store.put_records(records[at:at + BATCH])


@contextmanager
def _sqlite() -> Iterator[MemoryStore]:
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteMemoryStore(Path(folder) / "agents.sqlite3")
        try:
            yield store
        finally:
            store.close()


@contextmanager
def _cosmos() -> Iterator[MemoryStore]:
    from tests.adapters.cosmos_support import cosmos_store, provisioned_cosmos_server

    with provisioned_cosmos_server() as account:
        store = cosmos_store(account)
        try:
            yield store
        finally:
            store.close()


STORES: dict[str, Callable[[], Any]] = {"sqlite": _sqlite, "cosmos": _cosmos}


def _measured(store: MemoryStore, read: Callable[[], object], repeat: int) -> tuple[dict[str, float], float]:
    with store.measure() as metrics:
        read()
    counts = {name: float(value) for name, value in asdict(metrics).items()}
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        read()
        times.append((time.perf_counter() - started) * 1000)
    return counts, statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--stores", default="sqlite,cosmos")
    args = parser.parse_args()
    for name in args.stores.split(","):
        with STORES[name]() as store:
            started = time.perf_counter()
            _seed(store, args.agents)
            print(f"{name}: seeded {args.agents} agents' settings in {time.perf_counter() - started:.1f} s")
            book = MemoryService(store).agent_settings
            half = None
            for _ in range(args.agents // 2000):  # the continuation after half the agents, 1,000 a page
                half = book.page(INSTANCE, limit=1000, continuation=half).continuation
            cases: dict[str, Callable[[], object]] = {
                "first page, limit 100": lambda: book.page(INSTANCE, limit=100),
                "first page, limit 1000": lambda: book.page(INSTANCE, limit=1000),
                "deep page, limit 100": lambda: book.page(INSTANCE, limit=100, continuation=half),
            }
            for case, read in cases.items():
                counts, median = _measured(store, read, args.repeat)
                shown = ", ".join(f"{k} {v:g}" for k, v in counts.items())
                print(f"  {case}: {shown}; median {median:.1f} ms of {args.repeat}")

            def walk() -> int:
                pages, token = 0, None
                while True:
                    page = book.page(INSTANCE, limit=1000, continuation=token)
                    pages, token = pages + 1, page.continuation
                    if token is None:
                        return pages
            counts, median = _measured(store, walk, 1)
            print(f"  every page at limit 1000 (the console's walk, {walk()} pages): "
                  + ", ".join(f"{k} {v:g}" for k, v in counts.items()) + f"; {median:.1f} ms")


if __name__ == "__main__":
    main()
