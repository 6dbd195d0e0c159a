"""The wire of ``python -m memory_core mcp``: stdin and stdout, claimed from the process, read and written by lines' bytes.

While serving, fd 0 reads /dev/null and fd 1 writes to stderr, so a stray print
or a child process cannot corrupt the protocol (the SDK's own stdio transport
does the same); the wire itself is a private duplicate of each
(``claimed_std_streams``). Over pipes and sockets it is read and written by the
event loop (``pipe_reader``, ``PipeOut``: no thread hop per line, which the SDK's
transport pays); a terminal or a file is read by a daemon thread
(``thread_reader``) and written in place (``BlockingOut``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

READ_CHUNK_BYTES = 64 * 1024
FLUSH_SECONDS = 10.0
"""How long the last answers may take to reach a client that reads slowly, once input has ended."""


class StdoutClosed(Exception):
    """The client stopped reading: nothing more can be answered."""


class WireOut:
    """Where answers go: whole lines, in order. ``write`` raises ``StdoutClosed`` once the reader is gone."""

    async def write(self, data: bytes) -> None:
        raise NotImplementedError

    async def closed(self) -> None:
        """Returns when the reader is gone (never, where that cannot be told without writing)."""
        await asyncio.Event().wait()

    async def writable(self) -> None:
        """Returns when more may be written without piling up in memory: at once, unless the reader is behind."""


class _PipeOutProtocol(asyncio.BaseProtocol):
    def __init__(self) -> None:
        self.lost = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.set()
        self._writable.set()


class PipeOut(WireOut):
    """A pipe or socket written by the event loop; a full pipe waits (other requests go on being served)."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: _PipeOutProtocol) -> None:
        self._transport = transport
        self._protocol = protocol

    @classmethod
    async def open(cls, fd: int) -> PipeOut:
        loop = asyncio.get_running_loop()
        pipe = os.fdopen(os.dup(fd), "wb", buffering=0)
        transport, protocol = await loop.connect_write_pipe(_PipeOutProtocol, pipe)
        return cls(transport, protocol)

    async def write(self, data: bytes) -> None:
        if self._protocol.lost.is_set() or self._transport.is_closing():
            raise StdoutClosed
        self._transport.write(data)
        await self._protocol._writable.wait()
        if self._protocol.lost.is_set():
            raise StdoutClosed

    async def closed(self) -> None:
        await self._protocol.lost.wait()

    async def writable(self) -> None:
        """Waits while the event loop's buffer is past its high-water mark (the transport paused writing)."""
        await self._protocol._writable.wait()

    async def aclose(self, flush_within: float) -> None:
        """Close once everything written has reached the pipe, or after ``flush_within`` seconds of a reader not reading.

        The event loop writes what the pipe could not take yet later: a loop
        that ended before that would lose the last answers.
        """
        self._transport.close()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(flush_within):
                await self._protocol.lost.wait()


class BlockingOut(WireOut):
    """A terminal or a file: written in place (a terminal or disk never waits on the client)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as error:
            raise StdoutClosed from error


ReadChunk = Callable[[], Awaitable[bytes]]
"""The next bytes of input; b"" at its end."""


@contextlib.asynccontextmanager
async def pipe_reader(fd: int) -> AsyncIterator[ReadChunk]:
    """Chunks of a pipe or socket, read by the event loop."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_CHUNK_BYTES)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(os.dup(fd), "rb", buffering=0)
    )
    try:
        yield lambda: reader.read(READ_CHUNK_BYTES)
    finally:
        transport.close()


@contextlib.asynccontextmanager
async def thread_reader(fd: int) -> AsyncIterator[ReadChunk]:
    """Chunks of a terminal or a file, read by a daemon thread (it never holds up the process's exit)."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue(maxsize=4)

    def pump() -> None:
        while True:
            try:
                chunk = os.read(fd, READ_CHUNK_BYTES)
            except OSError:
                chunk = b""
            try:
                asyncio.run_coroutine_threadsafe(chunks.put(chunk), loop).result()
            except RuntimeError:  # the loop is gone
                return
            if not chunk:
                return

    threading.Thread(target=pump, name="memory-core-stdin", daemon=True).start()
    yield chunks.get


def is_pipe(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return sys.platform != "win32" and (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode))


@contextlib.contextmanager
def claimed_std_streams() -> Iterator[tuple[int, int]]:
    """(wire in, wire out): private duplicates of fd 0 and 1, which meanwhile read /dev/null and write to stderr.

    Both are restored on exit. What the process or a child prints goes to stderr,
    never onto the protocol.
    """
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)  # not inherited by children (PEP 446)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        try:
            os.dup2(2, 1)
        except OSError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    finally:
        os.close(null)
    try:
        yield wire_in, wire_out
    finally:
        sys.stdout.flush()
        for fd, wire in ((0, wire_in), (1, wire_out)):
            with contextlib.suppress(OSError):
                os.dup2(wire, fd)
            os.close(wire)
