"""The operator's sweep answer names the approved requests the run left for a later one, and why (``domain.sweeps``).

200 either way: the run happened. ``left`` is empty when it executed every approved request it found.
"""

from __future__ import annotations

import sqlite3
import threading
import time

import httpx

from tests.support.later_release import put_unreadable_request_beside
from tests.support.local_server import OPERATOR_KEY, RunningServer

#: The SQLite store's busy timeout in the server (``SqliteMemoryStore``'s default): a write waits this long for the
#: file's lock, then fails.
BUSY_TIMEOUT_SECONDS = 10


def _operator(server: RunningServer, instance: str) -> httpx.Client:
    return httpx.Client(base_url=f"{server.api}/instances/{instance}/operator", headers={"X-API-KEY": OPERATOR_KEY},
                        timeout=60)


def _approved_clear(server: RunningServer, instance: str, op: httpx.Client) -> str:
    with server.client() as http:
        http.post(f"/instances/{instance}/memory/append",
                  json={"scope": "user", "content_markdown": "- a fact"}).raise_for_status()
        request_id = str(http.post(f"/instances/{instance}/memory/clear",
                                   json={"scope": "user", "confirm": True}).json()["request_id"])
    op.post(f"/deletions/{request_id}/approve").raise_for_status()
    return request_id


def test_the_sweep_answers_a_request_it_cannot_read_as_left(server: RunningServer, instance_id: str) -> None:
    """An approved request of a kind this release does not know, beside an approved clear: the answer (200) executes
    the clear and names the other under ``left`` (kind null, reason unreadable)."""
    put_unreadable_request_beside(server, instance_id)
    with _operator(server, instance_id) as op:
        clear_id = _approved_clear(server, instance_id, op)
        swept = op.post("/sweep")
    assert swept.status_code == 200
    body = swept.json()
    assert [r["id"] for r in body["executed"]] == [clear_id]
    (left,) = body["left"]
    assert {k: left[k] for k in ("request_id", "instance_id", "upn", "kind", "reason", "code")} == {
        "request_id": "from-a-later-release", "instance_id": instance_id, "upn": "later@contoso.com", "kind": None,
        "reason": "unreadable", "code": "unreadable_request"}
    assert "archive" in left["message"]


def test_a_sweep_whose_write_waits_past_the_sqlite_busy_timeout_answers_the_request_left(
    sqlite_server: RunningServer, instance_id: str,
) -> None:
    """Another writer holds the server's SQLite file past the busy timeout: the sweep's answer names the approved
    clear left with reason ``deadline``, and once the file is free a sweep executes it."""
    with _operator(sqlite_server, instance_id) as op:
        request_id = _approved_clear(sqlite_server, instance_id, op)
        holder = sqlite3.connect(sqlite_server.env["MEMORY_SQLITE_PATH"], isolation_level=None,
                                 check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")
        # Held past the clear's first write's timeout, then let go: the run's last step (retention) writes too.
        release = threading.Timer(BUSY_TIMEOUT_SECONDS + 3, lambda: holder.execute("ROLLBACK"))
        release.start()
        started = time.monotonic()
        try:
            swept = op.post("/sweep")
        finally:
            release.join()
            holder.close()
        waited = time.monotonic() - started
        again = op.post("/sweep").json()
        status = [r["status"] for r in op.get("/deletions").json()["requests"]]
    assert swept.status_code == 200 and waited >= BUSY_TIMEOUT_SECONDS
    body = swept.json()
    assert body["executed"] == []
    (left,) = body["left"]
    assert (left["request_id"], left["kind"], left["upn"], left["reason"], left["code"]) == (
        request_id, "clear", "alex@contoso.com", "deadline", "unavailable")
    # (the server's own timer may have swept it first, once the file was free)
    assert again["left"] == [] and status == ["executed"]
