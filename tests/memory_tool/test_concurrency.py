"""Concurrent commands on one user's files never lose a write (real threads, real HTTP, both stores).

Each command reads the user's file index with its etag and commits with it; a command
that loses the race withdraws its unpublished version and re-applies itself to the
winner's result. These tests race commands from parallel clients against
``python -m memory_core serve`` and check that every acknowledged write is there. One server
queues one user's writes (``domain.file_writers``), so here they mostly take turns; losing a
commit and re-applying is raced in process (tests/domain/test_memory_file_service.py and the
race tests of tests/contract/), where the commands do not queue.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from tests.support.local_server import RunningServer

WRITERS = 16  # one partition, all at once: the Cosmos store's stamp must let every one of them through


def _race(server: RunningServer, instance_id: str, upn: str, commands: list[dict[str, Any]]) -> list[httpx.Response]:
    """Send ``commands`` at once, one client each, released together by a barrier."""
    barrier = threading.Barrier(len(commands))

    def send(command: dict[str, Any]) -> httpx.Response:
        with server.client(upn) as http:
            barrier.wait()
            return http.post(f"/instances/{instance_id}/memory/files/{command['command']}", json=command)

    with ThreadPoolExecutor(len(commands)) as pool:
        return list(pool.map(send, commands))


def _view(server: RunningServer, instance_id: str, upn: str, path: str) -> str:
    with server.client(upn) as http:
        return http.post(f"/instances/{instance_id}/memory/files/view", json={"command": "view", "path": path}).json()[
            "result"]


def test_concurrent_inserts_into_one_file_all_survive(server: RunningServer, instance_id: str) -> None:
    upn = "racer@contoso.com"
    with server.client(upn) as http:
        http.post(f"/instances/{instance_id}/memory/files/create",
                  json={"command": "create", "path": "/memories/log.md", "file_text": "start\n"}).raise_for_status()
    answers = _race(server, instance_id, upn, [
        {"command": "insert", "path": "/memories/log.md", "insert_line": 1, "insert_text": f"writer {n}"}
        for n in range(WRITERS)
    ])
    assert [a.status_code for a in answers] == [200] * WRITERS, [a.text for a in answers]
    content = _view(server, instance_id, upn, "/memories/log.md")
    assert all(f"\twriter {n}" in content for n in range(WRITERS)), content
    lines = [line.split("\t", 1)[1] for line in content.split("\n")[1:]]
    assert lines[0] == "start" and sorted(lines[1:-1]) == sorted(f"writer {n}" for n in range(WRITERS)) and lines[-1] == ""


def test_concurrent_replacements_of_different_lines_all_survive(server: RunningServer, instance_id: str) -> None:
    upn = "editor@contoso.com"
    text = "".join(f"slot {n}: open\n" for n in range(WRITERS))
    with server.client(upn) as http:
        http.post(f"/instances/{instance_id}/memory/files/create",
                  json={"command": "create", "path": "/memories/slots.md", "file_text": text}).raise_for_status()
    answers = _race(server, instance_id, upn, [
        {"command": "str_replace", "path": "/memories/slots.md", "old_str": f"slot {n}: open",
         "new_str": f"slot {n}: open, taken by writer {n}"}
        for n in range(WRITERS)
    ])
    assert [a.status_code for a in answers] == [200] * WRITERS, [a.text for a in answers]
    content = _view(server, instance_id, upn, "/memories/slots.md")
    assert all(f"taken by writer {n}" in content for n in range(WRITERS)), content
    with server.client(upn) as http:
        document = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()["content_markdown"]
    # get_memory shows the file once, in its final version: no lost or leftover versions.
    assert document.count("slot 0: open") == 1 and all(f"taken by writer {n}" in document for n in range(WRITERS))


def test_concurrent_creates_of_one_path_have_one_winner(server: RunningServer, instance_id: str) -> None:
    upn = "creator@contoso.com"
    answers = _race(server, instance_id, upn, [
        {"command": "create", "path": "/memories/first.md", "file_text": f"by writer {n}\n"} for n in range(WRITERS)
    ])
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] + [409] * (WRITERS - 1), [a.text for a in answers]
    assert {a.json()["error"]["message"] for a in answers if a.status_code == 409} == {
        "File /memories/first.md already exists"}
    winner = next(a for a in answers if a.status_code == 200)
    assert winner.json()["result"] == "File created successfully at: /memories/first.md"
    assert _view(server, instance_id, upn, "/memories/first.md").count("by writer") == 1


def test_concurrent_creates_of_different_files_on_an_empty_memory_all_survive(
    server: RunningServer, instance_id: str
) -> None:
    """The very first writes race to create the user's file index: none of them is lost."""
    upn = "first-writes@contoso.com"
    answers = _race(server, instance_id, upn, [
        {"command": "create", "path": f"/memories/dir{n % 2}/file{n}.md", "file_text": f"file {n}\n"}
        for n in range(WRITERS)
    ])
    assert [a.status_code for a in answers] == [200] * WRITERS, [a.text for a in answers]
    listing = _view(server, instance_id, upn, "/memories")
    assert all(f"/memories/dir{n % 2}/file{n}.md" in listing for n in range(WRITERS)), listing
