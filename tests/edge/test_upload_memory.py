"""Unauthenticated uploads cost no memory: the server's resident set, measured around refused uploads.

Before the edge, eight concurrent unauthenticated 30 MB uploads took `serve`
from 104 MB to 553 MB: the local host read each body whole before anything
looked at it.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.support.local_server import RunningServer, running_server

UPLOAD_BYTES = 30 * 1024 * 1024
CONCURRENT = 8
ALLOWED_GROWTH_BYTES = 16 * 1024 * 1024
"""Allocator noise and the 413 answers themselves; one buffered upload alone would be 30 MB."""


@pytest.fixture(scope="module")
def measured_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server of its own, so no other test's traffic moves its resident set."""
    with running_server(tmp_path_factory.mktemp("upload-memory")) as server:
        yield server


def rss_bytes(pid: int) -> int:
    """The process's resident set size (VmRSS) from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS line")


def _upload(server: RunningServer, chunked: bool) -> bytes:
    """One unauthenticated 30 MB upload, sent the way curl sends it; returns the status line."""
    host, port = server.base_url.removeprefix("http://").split(":")
    framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: %d" % UPLOAD_BYTES
    head = (b"POST /api/instances/i1/memory/append HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\n" + framing + b"\r\n\r\n")
    piece = b"x" * (256 * 1024)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head)
        try:
            for _ in range(UPLOAD_BYTES // len(piece)):
                sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed without reading the rest
        try:
            return sock.recv(64).split(b"\r\n", 1)[0]
        except ConnectionResetError:
            return b""


def test_refused_uploads_do_not_grow_the_server(measured_server: RunningServer) -> None:
    """Eight concurrent 30 MB uploads, declared and then chunked, leave the server's RSS within 16 MB."""
    for _ in range(3):  # warm up: imports, the runtime, the first answers
        httpx.get(f"{measured_server.api}/openapi.json").raise_for_status()
        _upload(measured_server, chunked=False)
    before = rss_bytes(measured_server.process.pid)
    with ThreadPoolExecutor(CONCURRENT) as pool:
        declared = list(pool.map(lambda _: _upload(measured_server, chunked=False), range(CONCURRENT)))
        chunked = list(pool.map(lambda _: _upload(measured_server, chunked=True), range(CONCURRENT)))
    after = rss_bytes(measured_server.process.pid)
    print(f"server RSS {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB after "
          f"{2 * CONCURRENT} refused {UPLOAD_BYTES // 2**20} MiB uploads")
    assert all(line.startswith(b"HTTP/1.1 413") for line in declared), declared
    assert all(line in (b"", b"HTTP/1.1 413 Request Entity Too Large") or line.startswith(b"HTTP/1.1 413")
               for line in chunked), chunked
    assert after - before < ALLOWED_GROWTH_BYTES
