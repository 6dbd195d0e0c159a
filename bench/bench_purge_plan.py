"""Benchmark: the sweep of an approved purge of a large memory, step by step, on SQLite and on Cosmos DB.

Run from the repository root (``--store cosmos`` starts the Cosmos DB test server the tests use, tests/cosmos_server):

    python bench/bench_purge_plan.py --store sqlite [--entries 10000] [--shared 1000] [--repeat 3]
    python bench/bench_purge_plan.py --store cosmos [--entries 10000] [--shared 1000] [--repeat 1]
    python bench/bench_purge_plan.py --store sqlite|cosmos --reads [--repeat 10]

For each of ``--repeat`` fresh stores: one user with ``--entries`` entries of about 50 bytes (four fifths in the user
scope, one fifth in an agent scope, 10 of them team-shared through the service, so their copies are in ``~shared``),
another author with ``--shared`` team copies in the instance's ``~shared`` partition, and a third user with 100
entries; an operator's purge of the first user, approved, then swept. The sweep's fault seam (``CustodyService``'s
``fault``) cuts it into its steps (the run's start, its queries for approved requests and for journaled work, and the
plan: up to ``planned``; erase; seal: up to ``sealed``; the rest), and a store
wrapper times each call and reads its work from ``measure()``: round trips and rows on both stores, response bytes
on Cosmos DB, SQLite's virtual-machine steps on SQLite. It prints each step's time and work, then each store call
of the plan and of the seal (what they read what a purge covers with: the whole partitions, ``load_partition``, or
their facts, ``partition_facts``, whichever the code under test calls), and checks what the purge left: none of the
user's entries, none of their copies, every other author's copy and the third user's entries.

``--reads`` seeds one store so and times only what the plan reads, ``--repeat`` turns, the two reads alternating
in each: the person's and the ``~shared`` partitions loaded whole (``load_partition``, the plan before 2026-12-07)
and their facts (``partition_facts``, since); it needs a checkout that has both.

The same file runs against another checkout (``git archive main | tar -x -C /tmp/base``, this file copied into its
``bench/``): it names no store call the other lacks.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.custody import CustodyService
from memory_core.domain.deletion import DeletionRequest
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import SHARED_OWNER, ProfileKey, Scope, Share
from memory_core.domain.service import DeletionMode, MemoryService, WriteOptions
from memory_core.domain.store import MemoryStore
from tests.support.seeding import make_entries, seed

INSTANCE = "bench-purge"
BIG = Caller("big@contoso.com", "Big")
MATE = Caller("mate@contoso.com", "Mate")
OTHER = Caller("other@contoso.com", "Other")
AGENT = AgentContext("/instances/bench-purge/providers/FoundationaLLM.Agent/agents/assistant")
STEPS = ("start and plan", "erase", "seal", "unhold and audit")


class _TimedStore:
    """``store``, each call timed and measured (``measure()``) under the sweep step it runs in."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self.step = STEPS[0]
        self.calls: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0, 0, 0])

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._store, name)
        if name.startswith("_") or name == "measure" or not callable(real):
            return real

        def timed(*args: Any, **kwargs: Any) -> Any:
            with self._store.measure() as metrics:
                started = time.perf_counter()
                answer = real(*args, **kwargs)
                took = time.perf_counter() - started
            row = self.calls[(self.step, name)]
            row[0] += 1
            row[1] += took
            row[2] += metrics.round_trips
            row[3] += metrics.rows
            row[4] += getattr(metrics, "bytes_read", 0) or getattr(metrics, "vm_steps", 0)
            return answer

        return timed


def _seed(store: MemoryStore, service: MemoryService, entries: int, shared: int, cosmos: Any) -> None:
    """The memories the docstring describes; seeded entries are from 2025, so the purge's watermark covers them."""
    user, agent = ProfileKey(INSTANCE, BIG.upn, Scope.USER), ProfileKey(INSTANCE, BIG.upn, Scope.AGENT,
                                                                         AGENT.object_id)
    seed(store, make_entries(user, entries - entries // 5 - 10), cosmos)
    seed(store, make_entries(agent, entries // 5), cosmos)
    for n in range(10):
        service.append(BIG, INSTANCE, Scope.USER, None, f"- team fact {n}", WriteOptions(share=Share.TEAM))
    mates = make_entries(ProfileKey(INSTANCE, SHARED_OWNER, Scope.USER), shared)
    seed(store, [replace(e, author_upn=MATE.upn) for e in mates], cosmos)
    seed(store, make_entries(ProfileKey(INSTANCE, OTHER.upn, Scope.USER), 100), cosmos)


def _check(store: MemoryStore, entries: int, shared: int) -> None:
    left = sum(len(s.entries) for s in store.load_partition(INSTANCE, BIG.upn))
    copies = [e.author_upn for s in store.load_partition(INSTANCE, SHARED_OWNER) for e in s.entries]
    others = sum(len(s.entries) for s in store.load_partition(INSTANCE, OTHER.upn))
    assert left == 0, f"{left} of the purged user's entries left"
    assert copies.count(BIG.upn) == 0 and len(copies) == shared, f"copies left: {len(copies)}, {shared} expected"
    assert others == 100, f"{others} of the other user's 100 entries"


def _one_run(store: MemoryStore, cosmos: Any, entries: int, shared: int) -> dict[tuple[str, str], list[float]]:
    clock = lambda: datetime.now(UTC)  # noqa: E731
    service = MemoryService(store, clock=clock, deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    _seed(store, service, entries, shared, cosmos)
    request = service.custody.request_purge("operator", INSTANCE, BIG.upn)
    service.custody.approve("operator", INSTANCE, request.id)
    timed = _TimedStore(store)

    def next_step(at: str, request: DeletionRequest) -> None:
        timed.step = {"planned": "erase", "erased": "seal", "sealed": "unhold and audit"}.get(at, timed.step)

    custody = CustodyService(timed, service.audit, clock=clock,  # type: ignore[arg-type]
                             new_id=lambda: uuid.uuid4().hex, fault=next_step)
    started = time.perf_counter()
    (done,) = custody.sweep("operator", INSTANCE).executed
    timed.calls[("sweep", "whole")] = [1, time.perf_counter() - started, 0, 0, 0]
    assert done.erased_entries == entries, f"{done.erased_entries} entries counted, {entries} expected"
    _check(store, entries, shared)
    return dict(timed.calls)


@contextmanager
def _stores(kind: str, repeat: int) -> Iterator[Iterator[tuple[MemoryStore, Any]]]:
    """``repeat`` fresh stores, each with the Cosmos test server's account (None on SQLite)."""
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        account = None
        if kind == "cosmos":
            from tests.adapters.cosmos_support import cosmos_store, own_container, provisioned_cosmos_server
            account = stack.enter_context(provisioned_cosmos_server())

        def made() -> Iterator[tuple[MemoryStore, Any]]:
            for n in range(repeat):
                if account is None:
                    store: MemoryStore = SqliteMemoryStore(folder / f"purge-{n}.sqlite3")
                    yield store, None
                else:
                    container: AbstractContextManager[str] = own_container(account, f"purge{n}")
                    with container as name:
                        store = cosmos_store(account, container=name)
                        yield store, account
                store.close()

        yield made()


def _reads(kind: str, entries: int, shared: int, repeat: int) -> None:
    """Time the plan's two reads, old and new, in alternating turns on one seeded store (see the docstring)."""
    with _stores(kind, 1) as stores:
        for store, account in stores:
            _seed(store, MemoryService(store), entries, shared, account)
            reads = {
                "load_partition of the person and of ~shared": "load_partition",
                "partition_facts of the person and of ~shared": "partition_facts",
            }
            runs: dict[str, list[list[float]]] = {label: [] for label in reads}
            for _ in range(repeat):
                for label, name in reads.items():
                    read = getattr(store, name)
                    with store.measure() as metrics:
                        started = time.perf_counter()
                        read(INSTANCE, BIG.upn), read(INSTANCE, SHARED_OWNER)
                        took = time.perf_counter() - started
                    runs[label].append([took, metrics.round_trips, metrics.rows,
                                        getattr(metrics, "bytes_read", 0) or getattr(metrics, "vm_steps", 0)])
    work = "bytes" if kind == "cosmos" else "VM steps"
    print(f"{kind}: the plan's reads, {repeat} alternating turns; median seconds (each turn's)")
    print(f"| read | seconds | runs | round trips | rows | {work} |")
    print("|---|---:|---|---:|---:|---:|")
    for label, rows in runs.items():
        print(f"| {label} | {statistics.median(r[0] for r in rows):.3f} | {', '.join(f'{r[0]:.2f}' for r in rows)} "
              f"| {rows[0][1]:.0f} | {rows[0][2]:,.0f} | {rows[0][3]:,.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("sqlite", "cosmos"), default="sqlite")
    parser.add_argument("--entries", type=int, default=10000)
    parser.add_argument("--shared", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--reads", action="store_true", help="time only the plan's reads, old and new, in turns")
    args = parser.parse_args()
    if args.reads:
        _reads(args.store, args.entries, args.shared, args.repeat)
        return
    runs: dict[tuple[str, str], list[list[float]]] = defaultdict(list)
    with _stores(args.store, args.repeat) as stores:
        for store, account in stores:
            for call, row in _one_run(store, account, args.entries, args.shared).items():
                runs[call].append(row)
    work = "bytes" if args.store == "cosmos" else "VM steps"
    print(f"{args.store}: {args.entries:,} entries of the purged user, {args.shared:,} copies of another author, "
          f"{args.repeat} run(s); medians (each run's seconds)")
    print(f"| step | calls | seconds | runs | round trips | rows | {work} |")
    print("|---|---:|---:|---|---:|---:|---:|")
    calls = sorted({key for key in runs if key[0] in STEPS[::2]}, key=lambda k: (k[0] != STEPS[0], k[1]))
    steps = [("sweep", "whole")] + [(s, "") for s in STEPS] + calls
    for step, call in steps:
        rows = runs.get((step, call)) if call else [
            [sum(r[i] for (s, _), rr in runs.items() if s == step for r in rr[n:n + 1]) for i in range(5)]
            for n in range(args.repeat)]
        if not rows:
            continue
        label = f"{step}: {call}" if call and step != "sweep" else ("whole sweep" if call else step)
        median = [statistics.median(r[i] for r in rows) for i in range(5)]
        print(f"| {label} | {median[0]:.0f} | {median[1]:.3f} | {', '.join(f'{r[1]:.2f}' for r in rows)} "
              f"| {median[2]:.0f} | {median[3]:,.0f} | {median[4]:,.0f} |")


if __name__ == "__main__":
    main()
