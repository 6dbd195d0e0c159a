"""Claude's memory tool on Cosmos DB: what each command reads, in round trips and items, and its time.

Run from the project root (starts the Cosmos test server, @vercel/cosmosdb-server, on loopback):

    python bench/bench_memory_tool_cosmos.py [--appended 2000] [--runs 15]

One user with ``--appended`` entries appended outside the tool and one file; ``MemoryFiles`` in
process over ``CosmosMemoryStore`` (MEMORY_DELETION_MODE=immediate). Each command of a fixed
sequence is measured once with ``store.measure()``: round trips (every HTTP request), items
read (items queries answered plus point reads found) and the bytes of the responses. Then ``--runs`` rounds of an edit followed by
a view of the file give the median milliseconds of each (the test server's time is not Azure's;
the round trips and items are what carry over). Last, the partition stamp's size (its own fields, and as a point read
answers it, system properties included: what Azure charges by) and what an unchanged view and an append read, before
and after the stamp's log of erased ids is full. docs/cosmos.md, "The memory tool's commands".
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.cosmos_stamp_item import ERASED_KEPT, stamp_item_id
from memory_core.domain.identity import Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import DeletionMode, MemoryService
from tests.adapters.cosmos_support import cosmos_store, provisioned_cosmos_server, raw_container
from tests.support.seeding import make_entries, seed

INSTANCE = "bench-files"
UPN = "bench@contoso.com"
FILE = "/memories/target.md"


def stamp_costs(store: Any, service: MemoryService, caller: Caller, run: Callable[..., str]) -> None:
    """What the log of erased ids in the stamp costs the calls that read or write the stamp: its size now, then
    after ``ERASED_KEPT`` more erasures (the log full), an unchanged read and an append each time."""
    def stamp_bytes() -> str:
        """The item's own fields, then as a point read answers it (with the system properties, ``_etag`` and the
        like): Azure charges a point read and a replace by the item's size, 1 RU for a read up to 1 KB."""
        with raw_container(SERVER[0]) as container:
            item = container.read_item(stamp_item_id(UPN), partition_key=[INSTANCE, UPN])
        own = len(json.dumps({k: v for k, v in item.items() if not k.startswith("_")}))
        return f"{own:,} B / {len(json.dumps(item)):,} B"

    def costs(label: str) -> None:
        with store.measure() as read:
            run(command="view", path=FILE)
        with store.measure() as append:
            service.append(caller, INSTANCE, Scope.USER, None, "- one more")
        run(command="view", path=FILE)
        print(f"| {label} | {stamp_bytes()} | {read.round_trips} / {read.bytes_read:,} B "
              f"| {append.round_trips} / {append.bytes_read:,} B |")

    print("\n| the stamp | its size: fields / as read | unchanged view: round trips / bytes read "
          "| append: round trips / bytes read |")
    print("|---|---:|---:|---:|")
    costs("after the commands above")
    ids = [service.append(caller, INSTANCE, Scope.USER, None, f"- gone {n}").entry_id for n in range(ERASED_KEPT)]
    run(command="view", path=FILE)
    store.delete_entries(ProfileKey(INSTANCE, UPN, Scope.USER), [str(i) for i in ids])
    run(command="view", path=FILE)
    costs(f"after {ERASED_KEPT} more erasures (the log full)")


SERVER: list[Any] = []


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--appended", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with provisioned_cosmos_server() as server:
        SERVER.append(server)
        store = cosmos_store(server)
        seed(store, make_entries(ProfileKey(INSTANCE, UPN, Scope.USER), args.appended), server)
        service = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE)
        files, caller = MemoryFiles(service), Caller(upn=UPN)

        def run(**command: Any) -> str:
            return files.execute(caller, INSTANCE, None, command).text

        def measured(label: str, action: Callable[[], object]) -> None:
            with store.measure() as metrics:
                started = time.perf_counter()
                action()
                elapsed = (time.perf_counter() - started) * 1000
            read = getattr(metrics, "bytes_read", None)
            print(f"| {label} | {metrics.round_trips} | {metrics.rows:,} | "
                  f"{f'{read / 1024:,.0f} KB' if read is not None else '-'} | {elapsed:.1f} |")

        print(f"{args.appended:,} entries appended outside the tool, one file")
        print("| command, in this order | round trips | items read | bytes read | ms (once) |")
        print("|---|---:|---:|---:|---:|")
        measured("create (the process's first command)", lambda: run(
            command="create", path=FILE, file_text="".join(f"line {i}\n" for i in range(20)) + "[0]\n"))
        measured("view a file", lambda: run(command="view", path=FILE))
        measured("view /memories", lambda: run(command="view", path="/memories"))
        service.append(caller, INSTANCE, Scope.USER, None, "- appended through the service")
        measured("view a file, after an append through the service", lambda: run(command="view", path=FILE))
        measured("str_replace", lambda: run(command="str_replace", path=FILE, old_str="[0]", new_str="[0][1]"))
        measured("view a file after the edit (the edit erased the old version)",
                 lambda: run(command="view", path=FILE))
        measured("view a file again", lambda: run(command="view", path=FILE))
        measured("insert", lambda: run(command="insert", path=FILE, insert_line=1, insert_text="inserted"))
        measured("view a file after the insert", lambda: run(command="view", path=FILE))
        run(command="create", path="/memories/tmp.md", file_text="x\n")
        measured("delete (after a create)", lambda: run(command="delete", path="/memories/tmp.md"))
        measured("view /memories after the delete", lambda: run(command="view", path="/memories"))

        times: dict[str, list[float]] = {"str_replace": [], "view a file after it": []}
        for n in range(1, args.runs + 1):
            started = time.perf_counter()
            run(command="str_replace", path=FILE, old_str=f"[{n}]", new_str=f"[{n}][{n + 1}]")
            middle = time.perf_counter()
            run(command="view", path=FILE)
            times["str_replace"].append((middle - started) * 1000)
            times["view a file after it"].append((time.perf_counter() - middle) * 1000)
        stamp_costs(store, service, caller, run)
        kept = service.file_entries
        print(f"\nmedian of {args.runs}: " + ", ".join(f"{k} {statistics.median(v):.1f} ms" for k, v in times.items()))
        if kept is not None:
            print(f"kept entries: loaded {kept.builds}, grown {kept.grown}, "
                  f"refreshed {getattr(kept, 'refreshed', 'n/a')}")
        store.close()


if __name__ == "__main__":
    main()
