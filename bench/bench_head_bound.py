"""The round trip of uvicorn's HTTP protocols on a trivial ASGI app: httptools, serve's bounded httptools, h11.

Run from the project root: ``python bench/bench_head_bound.py``. Each protocol serves on its own free
loopback port (all three in this process); a raw keep-alive client sends the same GET, with the key
path's headers, 2,000 times to each, alternating, ten rounds, and prints p50 and p99 in ms.
"""

from __future__ import annotations

import socket
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.local.protocol import BoundedHttpToolsProtocol
from memory_core.local.serve import bound_listener

BODY = b'{"ok":true}' * 20
REQUEST = (
    b"GET /api/instances/local/memory?scope=user HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-KEY: local-dev-key\r\n"
    b'X-USER-IDENTITY: {"upn": "alex@contoso.com", "name": "Alex"}\r\nAccept: */*\r\nUser-Agent: bench\r\n\r\n'
)


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": BODY})


def start(protocol: type) -> int:
    listener = bound_listener("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, http=protocol, log_level="warning", lifespan="off"))
    threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return int(listener.getsockname()[1])


def round_trips(port: int, n: int) -> list[float]:
    times = []
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(n):
            started = time.perf_counter()
            sock.sendall(REQUEST)
            received = b""
            while not received.endswith(BODY):
                received += sock.recv(65536)
            times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    protocols = {"httptools": HttpToolsProtocol, "bounded httptools": BoundedHttpToolsProtocol, "h11": H11Protocol}
    ports = {name: start(protocol) for name, protocol in protocols.items()}
    results: dict[str, list[float]] = {name: [] for name in ports}
    for _ in range(10):
        for name, port in ports.items():
            results[name] += round_trips(port, 2000)
    for name, times in results.items():
        ordered = sorted(times)
        p99 = ordered[int(len(ordered) * 0.99)]
        print(f"{name}: p50 {statistics.median(ordered):.4f} ms  p99 {p99:.4f} ms  n={len(ordered)}")


if __name__ == "__main__":
    main()
