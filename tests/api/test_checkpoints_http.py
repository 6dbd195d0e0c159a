"""Read checkpoints across restarts of ``python -m memory_core serve`` (real sockets, one SQLite file).

A restarted server has no snapshot in memory: its first full read starts from the checkpoint the
server before it left, and a forget through the API takes the checkpoint with it.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import httpx

from memory_core.domain.checkpoints import CHECKPOINT_MIN_SECTIONS
from tests.support.local_server import running_server

IMMEDIATE = {"MEMORY_DELETION_MODE": "immediate"}
MEMORABLE = "- the line that is forgotten: the spare key is under the third flowerpot"


def _checkpoints(path: Path) -> list[str]:
    with closing(sqlite3.connect(path)) as db:
        return [payload for (payload,) in db.execute("SELECT payload FROM read_checkpoints")]


def _get(http: httpx.Client) -> str:
    response = http.get("/instances/ckpt/memory", params={"scope": "user"})
    response.raise_for_status()
    return str(response.json()["content_markdown"])


def test_a_restarted_server_answers_its_first_read_from_the_checkpoint_and_a_forget_erases_it(tmp_path: Path) -> None:
    database = tmp_path / "memory.sqlite3"
    with running_server(tmp_path, IMMEDIATE) as first, first.client() as http:
        for n in range(CHECKPOINT_MIN_SECTIONS):
            http.post("/instances/ckpt/memory/append",
                      json={"scope": "user", "content_markdown": f"- fact {n}"}).raise_for_status()
        memorable = http.post("/instances/ckpt/memory/append",
                              json={"scope": "user", "content_markdown": MEMORABLE}).json()["entry_id"]
        before_restart = _get(http)
    (kept,) = _checkpoints(database)
    assert MEMORABLE in kept and r"- fact 0\n" in kept  # the payload is JSON: its newlines are escaped
    # Mark the stored checkpoint, so that what the next server answers shows where it came from.
    with closing(sqlite3.connect(database)) as db, db:
        db.execute("UPDATE read_checkpoints SET payload = replace(payload, '- fact 0\\n', '- fact 0 (marked)\\n')")
    (marked,) = _checkpoints(database)
    assert marked != kept

    with running_server(tmp_path, IMMEDIATE) as second, second.client() as http:
        restored = _get(http)  # the restarted server's first read
        assert restored == before_restart.replace("- fact 0\n", "- fact 0 (marked)\n")
        http.post("/instances/ckpt/memory/append",
                  json={"scope": "user", "content_markdown": "- after the restart"}).raise_for_status()
        grown = _get(http)
        assert grown.startswith(restored) and "- after the restart" in grown[len(restored):]
        assert _checkpoints(database) == [marked]  # an append leaves it
        http.delete(f"/instances/ckpt/memory/entries/{memorable}").raise_for_status()
        assert _checkpoints(database) == []  # the forget took it, in its own transaction
        after_forget = _get(http)  # built from the entries again: the mark is gone with the checkpoint
    assert MEMORABLE not in after_forget and "(marked)" not in after_forget and "- after the restart" in after_forget

    with running_server(tmp_path, IMMEDIATE) as third, third.client() as http:
        assert _get(http) == after_forget
    assert all(MEMORABLE not in payload for payload in _checkpoints(database))
