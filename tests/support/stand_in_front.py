"""A front of the test's own between the browser and ``serve``: it passes requests on, or answers some itself.

It stands in for what sits in front of the service in a deployment (App Service's front end) or for a failure the
service cannot be made to answer, on a loopback port of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx

#: Headers not passed on either way: the front's own connection's, or the length of a body it re-frames.
_REQUEST_HEADERS_KEPT_OUT = ("host", "origin", "content-length")
_ANSWER_HEADERS_KEPT_OUT = ("content-length", "transfer-encoding", "connection", "content-encoding")


class PassingFront(BaseHTTPRequestHandler):
    """Passes every request to ``backend`` (``serve``'s base URL), with ``added_headers()``, and the answer back as
    it came (10 s at most a request). A subclass answers a request itself by overriding ``answers_itself`` to
    write its answer (``reply``) and return True."""

    backend: ClassVar[str] = ""

    def log_message(self, *args: object) -> None:
        pass

    def answers_itself(self) -> bool:
        return False

    def added_headers(self) -> dict[str, str]:
        return {}

    def reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _serve(self) -> None:
        if self.answers_itself():
            return
        length = int(self.headers.get("Content-Length") or 0)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _REQUEST_HEADERS_KEPT_OUT}
        answer = httpx.request(self.command, f"{self.backend}{self.path}", content=self.rfile.read(length),
                               headers={**headers, **self.added_headers()}, timeout=10)
        self.send_response(answer.status_code)
        for name, value in answer.headers.items():
            if name.lower() not in _ANSWER_HEADERS_KEPT_OUT:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)

    do_GET = do_POST = do_DELETE = do_PUT = _serve  # noqa: N815 - BaseHTTPRequestHandler's method names


@contextmanager
def serving(front: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``front`` served on a loopback port of its own (a daemon thread); its base URL, ``http://127.0.0.1:port``.
    Shut down and its socket closed when the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), front)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
