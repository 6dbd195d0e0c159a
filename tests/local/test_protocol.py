"""``memory_core.local.protocol``: the head timeout, on a real uvicorn server over sockets.

The head's size limit is tested against ``serve`` itself (tests/local/test_serve.py); the timeout is
30 s there, so here the same protocol runs with a shorter one.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from memory_core.local.protocol import BoundedHttpToolsProtocol
from memory_core.local.serve import bound_listener
from tests.support.local_server import read_until_closed


class _QuickHead(BoundedHttpToolsProtocol):
    head_timeout_seconds = 0.5


async def _ok(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@contextmanager
def _server() -> Iterator[int]:
    listener = bound_listener("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(_ok, http=_QuickHead, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        yield int(listener.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()


def test_a_head_that_does_not_finish_in_time_is_answered_408_and_closed() -> None:
    """A client trickling a head holds its connection only for the head timeout, then gets 408."""
    with _server() as port, socket.create_connection(("127.0.0.1", port)) as sock:
        started = time.monotonic()
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: a")
        answer = read_until_closed(sock, 5)
        elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b'"code":"request_timeout"' in answer
    assert 0.4 < elapsed < 4


def test_a_connection_that_sends_nothing_is_closed_after_the_head_timeout() -> None:
    with _server() as port, socket.create_connection(("127.0.0.1", port)) as sock:
        started = time.monotonic()
        assert read_until_closed(sock, 5) == b""
        assert time.monotonic() - started < 4


def test_keep_alive_requests_each_get_their_own_head_timeout() -> None:
    """Requests on one connection, each head sent in time, are all answered past the first timeout."""
    with _server() as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(5)
        for _ in range(4):
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = b""
            while not answer.endswith(b"ok"):
                answer += sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 200 ")
            time.sleep(0.3)


def test_an_endless_chunked_trailer_is_refused_like_an_endless_header() -> None:
    """After a chunked body's last chunk, llhttp parses a trailer as header fields, which httptools keeps whole: a
    trailer value that never ends is answered 431 and the connection closed, while a chunked body in small chunks
    with an ordinary trailer is served."""
    with _server() as port:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-Trailer: ")
            try:
                for _ in range(64):  # 4 MiB of one trailer value
                    sock.sendall(b"a" * 65536)
            except OSError:
                pass  # refused and closed while sending
            endless = read_until_closed(sock, 5)
        with socket.create_connection(("127.0.0.1", port)) as sock:
            chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in [b"x" * 100] * 2000)
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                         + chunks + b"0\r\nX-Checksum: abc\r\n\r\n")
            ordinary = read_until_closed(sock, 5)
    assert b"HTTP/1.1 431 " in endless, endless[:400]  # after the app's answer: it answers without reading the body
    assert ordinary.startswith(b"HTTP/1.1 200 "), ordinary[:80]
