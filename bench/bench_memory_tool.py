"""Claude's memory tool over HTTP: median latency per command, by how many files the user has.

Run from the project root:

    python bench/bench_memory_tool.py [--files 10 200] [--runs 30] [--appended 10000]

For each file count, one user on ``python -m memory_core serve`` (SQLite,
MEMORY_DELETION_MODE=immediate) gets that many files, then each command is timed
``--runs`` times through ``MemoryCoreMemoryTool`` (real HTTP on loopback):
view of /memories, view of one file, str_replace and insert in one file
(edits that keep the old text, so no custody request is involved), a
create+delete pair (and the delete in it alone), and a view of the file right
after an edit (the edit erased the old version; the view alone is timed). Beside them: ``POST memory/append`` (the plain CoreAPI
write) and the SDK's ``BetaLocalFilesystemMemoryTool`` on a local folder (no
network, no custody: the floor a local backend gives).

``--appended N`` first gives the user N entries appended outside the tool (an agent's
``append_memory`` calls over the years), stored straight into the server's SQLite file by
another process; each shows as a file under /memories/appended.

Target (issue #17): every command under 50 ms median at 200 files on the embedded store.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.models import ProfileKey, Scope
from memory_core.integrations.anthropic import MemoryCoreMemoryTool
from tests.support.local_server import USER_KEY, running_server
from tests.support.seeding import make_entries, seed

UPN = "bench@contoso.com"


def median_ms(action: Callable[[int], object], runs: int) -> float:
    times = []
    for n in range(runs):
        started = time.perf_counter()
        action(n)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def commands(tool: Callable[[dict[str, object]], object], runs: int) -> dict[str, float]:
    tool({"command": "create", "path": "/memories/target.md",
          "file_text": "".join(f"line {i}\n" for i in range(20)) + "[0]\n"})
    results = {
        "view /memories": median_ms(lambda n: tool({"command": "view", "path": "/memories"}), runs),
        "view a file": median_ms(lambda n: tool({"command": "view", "path": "/memories/target.md"}), runs),
        "str_replace": median_ms(lambda n: tool({"command": "str_replace", "path": "/memories/target.md",
                                                 "old_str": f"[{n}]", "new_str": f"[{n}][{n + 1}]"}), runs),
        "insert": median_ms(lambda n: tool({"command": "insert", "path": "/memories/target.md", "insert_line": 1,
                                            "insert_text": f"inserted {n}"}), runs),
    }

    deletes: list[float] = []

    def create_delete(n: int) -> None:
        tool({"command": "create", "path": f"/memories/tmp/{n}.md", "file_text": "x\n"})
        started = time.perf_counter()
        tool({"command": "delete", "path": f"/memories/tmp/{n}.md"})
        deletes.append((time.perf_counter() - started) * 1000)

    results["create + delete"] = median_ms(create_delete, runs)
    results["delete"] = statistics.median(deletes)
    views: list[float] = []
    for n in range(runs):  # an edit erases the file's old version; the view after it is timed alone
        tool({"command": "str_replace", "path": "/memories/target.md", "old_str": "line 0", "new_str": f"line 0.{n}"})
        started = time.perf_counter()
        tool({"command": "view", "path": "/memories/target.md"})
        views.append((time.perf_counter() - started) * 1000)
        tool({"command": "str_replace", "path": "/memories/target.md", "old_str": f"line 0.{n}", "new_str": "line 0"})
    results["view after an edit"] = statistics.median(views)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, nargs="+", default=[10, 200, 1000])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--appended", type=int, default=0, help="entries appended outside the tool first")
    args = parser.parse_args()
    rows: list[tuple[str, int, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp, running_server(Path(tmp), {"MEMORY_DELETION_MODE": "immediate"}) as server:
        for count in args.files:
            instance = f"bench-{uuid.uuid4().hex[:8]}"
            if args.appended:
                store = SqliteMemoryStore(Path(tmp) / "memory.sqlite3")  # the server's file, from this process
                seed(store, make_entries(ProfileKey(instance, UPN, Scope.USER), args.appended))
                store.close()
            remote = MemoryCoreMemoryTool(server.api, instance, api_key=USER_KEY, user_identity={"upn": UPN})
            local = BetaLocalFilesystemMemoryTool(str(Path(tmp) / f"local-{count}"))
            for backend in (remote, local):
                for n in range(count):
                    backend.call({"command": "create", "path": f"/memories/d{n % 10}/f{n}.md",
                                  "file_text": f"fact {n}\n"})
            timed = commands(remote.call, args.runs)
            with server.client(UPN) as http:
                timed["REST append (for scale)"] = median_ms(lambda n, instance=instance: http.post(
                    f"/instances/{instance}/memory/append",
                    json={"scope": "user", "content_markdown": f"- fact {n}"}).raise_for_status(), args.runs)
            rows.append(("memory-core, HTTP", count, timed))
            rows.append(("SDK local folder", count, commands(local.call, args.runs)))
            remote.close()
    names = list(rows[0][2])
    print(f"Entries appended outside the tool first: {args.appended}")
    print("| backend | files | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for backend, count, timed in rows:
        print(f"| {backend} | {count} | " + " | ".join(f"{timed[n]:.1f}" if n in timed else "-" for n in names) + " |")


if __name__ == "__main__":
    main()
