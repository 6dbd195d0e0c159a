"""The HTTP/1.1 protocol ``serve`` runs: uvicorn's httptools protocol with a bound on each request's head.

httptools (llhttp) has no limit on the request line or the headers: it keeps an unfinished
header value in memory however long it grows, so one unauthenticated connection sending a
header that never ends made the server grow without bound (64 MiB sent, about 100 MiB
kept). This subclass counts the bytes of each request's head (request line and headers)
as they arrive and, past ``HEAD_LIMIT_BYTES``, answers 431 and closes the connection; a
head that is not complete ``HEAD_TIMEOUT_SECONDS`` after its first byte (or after the
connection opened) is answered 408 and closed, so a client trickling a head cannot hold
its connection for ever. Bodies are bounded elsewhere: by each function's own limit, in
``memory_core.local.host``.

Counting happens in ``data_received``, before the parser sees the bytes, because the parser
reports a header only once it is complete: a count kept in ``on_header`` would never see
the header that does not end. The bytes are fed to the parser in pieces no larger than
what is left of the limit (or than the limit, within a body), so a head is refused once it
passes the limit; a pipelined head that began inside the piece that ended the previous
message is counted from the next piece, so it can pass the limit by at most one piece.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from memory_core.edge.errors import error_response

HEAD_LIMIT_BYTES = 64 * 1024
"""The largest request line plus headers ``serve`` reads. The largest X-USER-IDENTITY the key
path accepts (1,024 group ids, the longest name, user name and user id: about 43 KB; see
memory_core.identity.keys) fits with room for a bearer token and the ordinary headers; a
URL is well within it (names and query parameters are short)."""

HEAD_TIMEOUT_SECONDS = 30.0
"""How long a request's head may take to arrive, from its first byte or from the connection's opening."""

_STATUS_TEXT = {408: b"Request Timeout", 431: b"Request Header Fields Too Large"}


def _refusal(status: int, code: str, message: str) -> bytes:
    """A complete HTTP/1.1 answer that closes the connection, with the edge's error body."""
    body = error_response(status, code, message).get_body()
    return b"".join([
        b"HTTP/1.1 %d %s\r\n" % (status, _STATUS_TEXT[status]),
        b"content-type: application/json\r\n",
        b"content-length: %d\r\n" % len(body),
        b"connection: close\r\n\r\n",
        body,
    ])


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` that refuses a request head past ``HEAD_LIMIT_BYTES`` or ``HEAD_TIMEOUT_SECONDS``."""

    head_limit_bytes = HEAD_LIMIT_BYTES
    head_timeout_seconds = HEAD_TIMEOUT_SECONDS

    _in_head = True
    _head_bytes = 0
    _message = 0
    _body_bytes = 0
    _framing_bytes = 0
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self.transport.is_closing():
            if not self._in_head:  # a body: fed in pieces too, so a pipelined head after it is counted
                piece, view = view[:self.head_limit_bytes], view[self.head_limit_bytes:]
                self._feed_body(bytes(piece))
                continue
            room = self.head_limit_bytes - self._head_bytes
            if room <= 0:
                self._refuse(431, "request_header_fields_too_large",
                             f"the request line and headers are longer than this server reads "
                             f"({self.head_limit_bytes} bytes)")
                return
            if self._head_timer is None:
                self._start_head_timer()
            piece, view = view[:room], view[room:]
            self._head_bytes += len(piece)
            super().data_received(bytes(piece))

    def _feed_body(self, piece: bytes) -> None:
        """Feed ``piece`` of a message's body. What the parser keeps that is not body (a chunked body's framing and
        its trailer, which llhttp parses as header fields and httptools keeps whole) may not pass
        ``head_limit_bytes`` plus the body's own size: an endless trailer is refused like an endless header."""
        message, body_before = self._message, self._body_bytes
        super().data_received(piece)
        if self._message != message or self.transport.is_closing():
            return  # the message ended inside the piece: its framing is whole, the next head is counted from here
        self._framing_bytes += len(piece) - (self._body_bytes - body_before)
        if self._framing_bytes > self.head_limit_bytes + self._body_bytes:
            self._refuse(431, "request_header_fields_too_large",
                         f"the request's chunk framing and trailer are longer than this server reads "
                         f"({self.head_limit_bytes} bytes beyond the body)")

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        super().on_body(body)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._stop_head_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._start_head(timer=False)  # the keep-alive timeout covers a connection idle between requests
        super().on_message_complete()

    def _start_head(self, *, timer: bool = True) -> None:
        self._in_head = True
        self._head_bytes = 0
        self._message += 1
        self._body_bytes = self._framing_bytes = 0
        self._stop_head_timer()
        if timer:
            self._start_head_timer()

    def _start_head_timer(self) -> None:
        self._head_timer = self.loop.call_later(self.head_timeout_seconds, self._head_timed_out)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._in_head and not self.transport.is_closing():
            if self._head_bytes:
                self._refuse(408, "request_timeout",
                             f"the request line and headers did not arrive within {self.head_timeout_seconds:g} s")
            else:
                self.transport.close()

    def _refuse(self, status: int, code: str, message: str) -> None:
        self._stop_head_timer()
        self.transport.write(_refusal(status, code, message))
        self.transport.close()
