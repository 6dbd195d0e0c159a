"""A server that answers headers at once and then trickles the body a byte a second, for ever: every read
arrives within any per-read timeout, so only a total deadline ends a request to it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.local_server import free_port


async def _drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    _open.add(writer)
    try:
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
            pass
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n")
        for _ in range(600):
            await writer.drain()
            await asyncio.sleep(0.5)
            writer.write(b" ")
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        _open.discard(writer)
        writer.close()


_open: set[asyncio.StreamWriter] = set()


@contextmanager
def trickling_server() -> Iterator[str]:
    """A CoreAPI base URL (``http://127.0.0.1:<port>/api``) served by the trickling server, on its own thread."""
    port = free_port()
    loop = asyncio.new_event_loop()
    started = threading.Event()
    holder: dict[str, asyncio.base_events.Server] = {}

    async def start() -> None:
        holder["server"] = await asyncio.start_server(_drip, "127.0.0.1", port)
        started.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True)
    thread.start()
    started.wait(10)
    try:
        yield f"http://127.0.0.1:{port}/api"
    finally:
        async def stop() -> None:
            holder["server"].close()
            for writer in list(_open):
                writer.transport.abort()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()
            await asyncio.sleep(0.1)
            loop.stop()

        asyncio.run_coroutine_threadsafe(stop(), loop)
        thread.join(10)
        loop.close()
