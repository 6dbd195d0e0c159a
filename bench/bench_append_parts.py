"""The parts of an append that the thirty-sixth session changed, each timed in its old and its new form, in turn.

Run from the project root:

    python bench/bench_append_parts.py [--rounds 30] [--batch 500]

Each row times one part both ways in the same process, alternating (old, new, old, new...), ``--rounds`` batches
of ``--batch`` calls each, and prints the median µs a call of each form and their difference. A part's old
form is written out here as main had it before 2026-12-08; its new form is the code's:

- the SQL an append reads its profile and its partition's seal with, inside a ``BEGIN IMMEDIATE`` transaction
  of a real store file (rolled back after each batch): ``INSERT OR IGNORE`` of the profile, then two ``SELECT``
  (old), against one ``SELECT`` (``sqlite_writes._PROFILE_AND_SEAL_SQL``);
- a new id or etag: ``uuid.uuid4().hex`` against ``models.random_hex()`` (four of them in an append before,
  three now: the profile's etag is drawn only when the profile is created);
- the answer's text: ``json.dumps(data, ensure_ascii=False)`` against ``pydantic_core.to_json`` (``json_result``);
- the SDK turning the tool's ``CallToolResult`` into its answer (``FuncMetadata.convert_result``) with the
  ``MemoryResponse`` output model it validates the structured content against (old) and without (new,
  ``server.compact_output_schemas``).

Timing parts in isolation, not the whole call, keeps the comparison inside one process and one minute, so
other processes' load moves both forms alike; the whole call is ``bench_stdio_in_process.py`` and
``bench_vs_reference.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Annotated

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult
from pydantic_core import to_json

from memory_core.adapters.sqlite_rows import profile_values
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.adapters.sqlite_writes import _PARTITION_SEAL_SQL, _PROFILE_AND_SEAL_SQL, PARTITION_SEAL_ID
from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope, random_hex
from memory_core.domain.service import MemoryService
from memory_core.domain.targets import Use
from memory_core.mcp.tool_results import json_result
from memory_core.wire.memory import MemoryResponse

INSTANCE = "bench"
CALLER = Caller(upn="bench@contoso.com", name="Bench")


def per_call(fn: Callable[[], object], batch: int, around: Callable[[], AbstractContextManager[object]]) -> float:
    """µs a call of ``fn``, over one batch run inside ``around``, with the cyclic garbage collector off.

    Off because a collection is paid by whichever call's allocation triggers it: with the SDK and pydantic
    loaded, one took a batch of the SDK's check from 10 to 200 µs a call, a cost of every allocation in the
    process, not of the part that happened to trigger it. Each batch starts after a full collection."""
    gc.collect()
    gc.disable()
    try:
        with around():
            started = time.perf_counter()
            for _ in range(batch):
                fn()
            elapsed = time.perf_counter() - started
    finally:
        gc.enable()
    return elapsed / batch * 1e6


def compared(old: Callable[[], object], new: Callable[[], object], rounds: int, batch: int,
             around: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext) -> tuple[float, float]:
    """Median µs a call of ``old`` and of ``new``, their batches alternating."""
    olds, news = [], []
    for _ in range(rounds):
        olds.append(per_call(old, batch, around))
        news.append(per_call(new, batch, around))
    return statistics.median(olds), statistics.median(news)


def sql_forms() -> tuple[Callable[[], object], Callable[[], object], Callable[[], AbstractContextManager[object]]]:
    """An append's profile and seal reads, old and new, and the write transaction of a store file holding the
    profile and ten entries that a batch of them runs in (rolled back after it: the statements are timed, not
    the ``BEGIN`` and ``COMMIT`` each append pays either way)."""
    store = SqliteMemoryStore(Path(tempfile.mkdtemp(prefix="memory-bench-parts-")) / "memory.sqlite3")
    service = MemoryService(store)
    for n in range(10):
        service.append(CALLER, INSTANCE, Scope.USER, None, f"- fact {n}: the user likes green tea")
    key = service._targets.key(CALLER, INSTANCE, Scope.USER, None, use=Use.AGENT)
    profile = store.load([key])[0].profile
    assert profile is not None
    db = store._db.connection()
    where = (key.instance_id, key.upn, key.profile_id)

    def old() -> object:
        db.execute("INSERT OR IGNORE INTO profiles VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                   profile_values(profile, uuid.uuid4().hex))
        row = db.execute("SELECT * FROM profiles WHERE instance_id=? AND upn=? AND profile_id=?", where).fetchone()
        return row, db.execute(_PARTITION_SEAL_SQL, (key.instance_id, key.upn, PARTITION_SEAL_ID)).fetchone()

    def new() -> object:
        return db.execute(_PROFILE_AND_SEAL_SQL, (key.instance_id, key.upn, PARTITION_SEAL_ID, *where)).fetchone()

    @contextlib.contextmanager
    def transaction() -> Iterator[object]:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        finally:
            db.execute("ROLLBACK")

    return old, new, transaction


def convert_forms() -> tuple[Callable[[], object], Callable[[], object]]:
    """The SDK's ``convert_result`` of an append's answer, with and without the output model."""
    server = MCPServer(name="bench")

    @server.tool()
    async def append_memory() -> Annotated[CallToolResult, MemoryResponse]:  # registered for its metadata only
        raise NotImplementedError

    checked = server._tool_manager.list_tools()[0].fn_metadata  # private: mcp is pinned to 2.x
    unchecked = checked.model_copy(update={"output_model": None})
    result = json_result(_answer())
    return (lambda: checked.convert_result(result)), (lambda: unchecked.convert_result(result))


def _answer() -> MemoryResponse:
    return MemoryResponse.model_validate({
        "scope": "user", "upn": "alex@contoso.com", "user_name": "alex@contoso.com", "name": "Alex",
        "agent_object_id": None, "agent_name": None,
        "content_markdown": "# User memory\n\n## Appended 2026-12-08 01:16:21 UTC\n\n- the user cycles to work\n",
        "created_on": "2026-12-08T01:16:21.720939Z", "updated_on": "2026-12-08T01:16:21.720939Z",
        "entry_id": "c49f3a064abd440895a78e2d3acd532b", "memory_mode": "on", "notice": None, "budget": None,
    })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="batches of each form, alternating")
    parser.add_argument("--batch", type=int, default=500, help="calls a batch")
    args = parser.parse_args()
    data = _answer().model_dump(mode="json")
    rows = [
        ("profile and seal read in the append's transaction", *sql_forms()),
        ("a new id or etag", lambda: uuid.uuid4().hex, random_hex, contextlib.nullcontext),
        ("the answer's JSON text", lambda: json.dumps(data, ensure_ascii=False), lambda: to_json(data).decode(),
         contextlib.nullcontext),
        ("the SDK's convert_result of the answer", *convert_forms(), contextlib.nullcontext),
    ]
    print(f"CPython {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; "
          f"median of {args.rounds} batches of {args.batch} calls, old and new alternating\n")
    print("| part | old µs | new µs | saved µs |\n|---|---:|---:|---:|")
    for name, old, new, around in rows:
        before, after = compared(old, new, args.rounds, args.batch, around)
        print(f"| {name} | {before:.2f} | {after:.2f} | {before - after:.2f} |")


if __name__ == "__main__":
    main()
