"""The memory tool in process after erasures, on a large memory: per-command medians and a profile.

Run from the project root:

    python bench/bench_memory_tool_erasures.py --entries 60000 [--rounds 10] [--db seeded.sqlite3] [--profile str_replace]

One user with ``--entries`` appends (the store's own ``append``, about 40 s for 60,000; ``--db`` copies a file seeded
before, whose user is ``big@contoso.com`` in instance ``local``), then ``MemoryFiles.execute`` (SQLite,
``immediate``) in rounds of: create a file, view it, str_replace in it (an erasure: the old version is dropped),
view it after the edit, insert, delete. Every command but the first ``create`` of a round follows an erasure of the
round before or its own. ``--profile NAME`` prints a cProfile of that command's runs.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.identity import Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import DeletionMode, MemoryService
from tests.support.seeding import make_entries, seed

UPN, INSTANCE = "big@contoso.com", "local"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=60000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--db", type=Path, help="a SQLite file seeded before (copied, never changed)")
    parser.add_argument("--profile", help="the command to profile (create, str_replace, view after edit, ...)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "memory.sqlite3"
        if args.db:
            for suffix in ("", "-wal", "-shm"):
                if Path(f"{args.db}{suffix}").exists():
                    shutil.copy(f"{args.db}{suffix}", f"{path}{suffix}")
            store = SqliteMemoryStore(path)
        else:
            store = SqliteMemoryStore(path)
            seed(store, make_entries(ProfileKey(INSTANCE, UPN, Scope.USER), args.entries))
        service = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE)
        files, caller = MemoryFiles(service), Caller(upn=UPN)
        times: dict[str, list[float]] = {}
        cpus: dict[str, list[float]] = {}  # this thread's CPU: steadier than wall time on a shared machine
        profile = cProfile.Profile()

        def timed(name: str, **command: object) -> None:
            profiling = name == args.profile
            if profiling:
                profile.enable()
            started, cpu = time.perf_counter(), time.thread_time()
            files.execute(caller, INSTANCE, None, dict(command))
            times.setdefault(name, []).append((time.perf_counter() - started) * 1000)
            cpus.setdefault(name, []).append((time.thread_time() - cpu) * 1000)
            if profiling:
                profile.disable()

        files.execute(caller, INSTANCE, None, {"command": "view", "path": "/memories"})  # the first load
        for n in range(args.rounds):
            path_n = f"/memories/n/a{n}.md"
            timed("create", command="create", path=path_n, file_text="one\nline\n")
            timed("view a file", command="view", path=path_n)
            timed("str_replace", command="str_replace", path=path_n, old_str="line", new_str="line 2")
            timed("view after edit", command="view", path=path_n)
            timed("insert", command="insert", path=path_n, insert_line=0, insert_text="top\n")
            timed("delete", command="delete", path=path_n)
        print(f"{args.entries} entries, {args.rounds} rounds: | command | p50 ms | max ms | CPU p50 ms |")
        for name, values in times.items():
            print(f"| {name} | {statistics.median(values):.1f} | {max(values):.1f} | {statistics.median(cpus[name]):.1f} |")
        if args.profile:
            pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
        store.close()


if __name__ == "__main__":
    main()
