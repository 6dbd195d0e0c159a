"""Counting the statement texts of ``python -m memory_core serve``'s SQLite connections, and a mixed load to count.

``sqlite3`` keeps ``cached_statements`` prepared statements a connection (128 by default), an LRU by text (as
CPython 3.11's cache is). A store whose texts grow without bound (a value written into a text, an ``IN (...)`` list
of every length) pushes its hot statements out, and each comes back prepared again. ``counted_server`` runs the
server with every connection counting the texts it runs and the preparations an LRU of its cache size makes;
``mixed_load`` is one user's session of REST, memory tool and MCP calls.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.support.local_server import PROJECT_ROOT, USER_KEY, RunningServer, identity, running_server

_CONNECTIONS: list[Counting] = []
_LOCK = threading.Lock()


class Counting(sqlite3.Connection):
    """A real connection that records each text it runs, and whether its statement cache would hold it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.capacity = int(kwargs.get("cached_statements", 128))  # sqlite3's default
        self.lru: OrderedDict[str, None] = OrderedDict()
        self.texts: set[str] = set()
        self.statements = self.prepares = 0
        with _LOCK:
            _CONNECTIONS.append(self)

    def _ran(self, sql: str) -> None:
        self.statements += 1
        self.texts.add(sql)
        if sql in self.lru:
            self.lru.move_to_end(sql)
            return
        self.prepares += 1
        self.lru[sql] = None
        if len(self.lru) > self.capacity:
            self.lru.popitem(last=False)

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        self._ran(sql)
        return super().execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        self._ran(sql)
        return super().executemany(sql, *args)


def install(out: str) -> None:
    """In the server's process (its ``sitecustomize``): every connection counts; the counts go to ``out`` as JSON
    every 0.2 s, one object a connection (texts, statements, re-prepares, cache size, the texts themselves)."""
    connect = sqlite3.connect

    def counting_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        kwargs.setdefault("factory", Counting)
        return connect(*args, **kwargs)

    def write() -> None:
        while True:
            time.sleep(0.2)
            with _LOCK:
                rows = [{"texts": len(c.texts), "statements": c.statements, "reprepares": c.prepares - len(c.texts),
                         "capacity": c.capacity, "in_lists": len({t for t in c.texts if " IN (?" in t}),
                         "sample": sorted(c.texts)} for c in _CONNECTIONS]
            with open(out + ".tmp", "w") as file:
                json.dump(rows, file)
            os.replace(out + ".tmp", out)

    sqlite3.connect = counting_connect  # type: ignore[assignment]
    threading.Thread(target=write, daemon=True).start()


@contextmanager
def counted_server(tmp_dir: Path, env: Mapping[str, str] | None = None) -> Iterator[tuple[RunningServer, Path]]:
    """``python -m memory_core serve`` (SQLite, immediate erasures) with every connection counting, and the file
    its counts are written to (read it a moment after the load: it is written every 0.2 s)."""
    out = tmp_dir / "statement-texts.json"
    site = tmp_dir / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        f"import sys\nsys.path.insert(0, {str(PROJECT_ROOT)!r})\n"
        f"from tests.support.statement_texts import install\ninstall({str(out)!r})\n")
    path = os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
    with running_server(tmp_dir, {"MEMORY_DELETION_MODE": "immediate", "PYTHONPATH": path, **(env or {})}) as server:
        yield server, out


def counts(out: Path) -> list[dict[str, Any]]:
    """The counts the server wrote last, after waiting for one more write."""
    time.sleep(0.5)
    return list(json.loads(out.read_text()))


def mixed_load(api: str, index: int, rounds: int, instance: str = "stmt-texts") -> None:
    """One user's session: REST appends (user scope, and up to 6 agents), reads, entry pages, searches, forgets,
    the memory tool's commands, MCP ``tools/call`` and a clear now and then; the memory grows as it goes."""
    upn = f"u{index}-{uuid.uuid4().hex[:6]}@contoso.com"
    headers = {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity(upn)}
    mcp_headers = {**headers, "X-INSTANCE-ID": instance, "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2025-11-25"}
    base = f"/instances/{instance}/memory"
    with httpx.Client(base_url=api, headers=headers, timeout=60) as http:
        def ok(response: httpx.Response) -> Any:
            if response.status_code >= 400:
                raise RuntimeError(f"{response.request.method} {response.request.url}: {response.text[:300]}")
            return response.json() if response.content else None

        def mcp(tool: str, arguments: dict[str, Any]) -> None:
            message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
            answer = ok(http.post("/mcp", json=message, headers=mcp_headers))
            if answer["result"].get("isError"):
                raise RuntimeError(f"{tool}: {answer}")

        for round_ in range(rounds):
            agents = [f"00000000-0000-0000-0000-{index:06d}{a:06d}" for a in range(1 + round_ % 6)]
            for n in range(1 + (index + round_) % 7):
                ok(http.post(f"{base}/append", json={"scope": "user", "content_markdown": f"- fact {round_}.{n} tea"}))
            for agent in agents:
                ok(http.post(f"{base}/append", json={"scope": "agent", "agent_object_id": agent,
                                                      "agent_name": "Helper", "content_markdown": f"- note {round_}"}))
                ok(http.get(base, params={"scope": "agent", "agentObjectId": agent}))
            ok(http.get(base, params={"scope": "user"}))
            listed = ok(http.get(f"{base}/entries", params={"scope": "user"}))
            ok(http.get(f"{base}/search", params={"q": "tea"}))
            entries = listed.get("entries") or listed.get("items") or []
            if entries and round_ % 2:
                ok(http.delete(f"{base}/entries/{entries[-1]['id']}"))
            tool = {"agentObjectId": agents[0], "agentName": "Helper"}
            path = f"/memories/notes-{round_}.md"
            ok(http.post(f"{base}/files/create", params=tool,
                         json={"command": "create", "path": path, "file_text": "one\ntwo\n"}))
            ok(http.post(f"{base}/files/view", params=tool, json={"command": "view", "path": "/memories"}))
            ok(http.post(f"{base}/files/str_replace", params=tool,
                         json={"command": "str_replace", "path": path, "old_str": "two", "new_str": "two, three"}))
            ok(http.post(f"{base}/files/insert", params=tool,
                         json={"command": "insert", "path": path, "insert_line": 1, "insert_text": "zero\n"}))
            ok(http.post(f"{base}/files/view", params=tool, json={"command": "view", "path": path}))
            if round_ % 3 == 2:
                ok(http.post(f"{base}/files/rename", params=tool,
                             json={"command": "rename", "old_path": path, "new_path": path + ".old"}))
                ok(http.post(f"{base}/files/delete", params=tool, json={"command": "delete", "path": path + ".old"}))
            mcp("get_memory", {"scope": "user"})
            mcp("append_memory", {"scope": "user", "memory": f"- via mcp {round_}"})
            mcp("search_memory", {"query": "tea"})
            if round_ == rounds - 2 and index % 4 == 0:
                ok(http.post(f"{base}/clear", json={"scope": "user", "confirm": True}))


__all__ = ["Counting", "counted_server", "counts", "install", "mixed_load"]
