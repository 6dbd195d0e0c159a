"""Run ``python -m memory_core mcp`` as a real process: its environment, and raw exchanges of lines.

``StdioFront`` driven in process too: lines read from memory (``serve_in_memory``) or through real OS pipes
(``serve_through_pipes``), for what the real command cannot be made to do (a tool that never finishes).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.client.stdio import StdioServerParameters

from memory_core.mcp.stdio_front import StdioFront
from memory_core.mcp.stdio_wire import WireOut
from tests.support.local_server import OPERATOR_KEY, PROJECT_ROOT, USER_KEY, identity

COMMAND = [sys.executable, "-m", "memory_core", "mcp"]
TIME_LIMIT = 60
"""Seconds any one stdio process may take in a test."""


def stdio_env(sqlite_path: Path, upn: str | None = "alex@contoso.com", **values: str) -> dict[str, str]:
    """The environment of a stdio server on ``sqlite_path`` serving ``upn`` with the test's user key.

    ``values`` (variable names) override or add; an empty string leaves a variable unset for the server.
    Nothing of the caller's MEMORY_* or COSMOS_* environment leaks in.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "COSMOS_"))}
    env.update({
        "MEMORY_STORE": "sqlite",
        "MEMORY_SQLITE_PATH": str(sqlite_path),
        "MEMORY_API_KEYS": USER_KEY,
        "MEMORY_OPERATOR_KEYS": OPERATOR_KEY,
        "MEMORY_DELETION_MODE": "immediate",
        "WEBSITE_HOSTNAME": "",
        "MEMORY_MCP_API_KEY": USER_KEY,
        "PYTHONUNBUFFERED": "1",
    })
    if upn is not None:
        env["MEMORY_MCP_USER_IDENTITY"] = identity(upn)
    env.update(values)
    return {k: v for k, v in env.items() if v != ""}


def parameters(env: Mapping[str, str]) -> StdioServerParameters:
    """What the official client's ``stdio_client`` starts: this project's ``mcp`` command in ``env``."""
    return StdioServerParameters(command=COMMAND[0], args=COMMAND[1:], env=dict(env), cwd=PROJECT_ROOT)


@dataclass
class Exchange:
    """What a stdio server wrote and how it ended, for lines sent before closing its input."""

    answers: list[dict[str, Any]]
    stdout: bytes
    stderr: str
    returncode: int

    def answer(self, request_id: Any) -> dict[str, Any]:
        return next(a for a in self.answers if a.get("id") == request_id)


class Collected(WireOut):
    """An in-memory output for ``StdioFront.serve``: every line written, decoded."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    async def write(self, data: bytes) -> None:
        self.lines.append(json.loads(data))


def initialize(request_id: int = 0, version: str = "2025-11-25") -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "initialize",
               "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    return json.dumps(message).encode() + b"\n" + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


def tool_call(request_id: int | str, name: str, arguments: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    return json.dumps(message).encode() + b"\n"


def exchange(env: Mapping[str, str], stdin: bytes, timeout: float = TIME_LIMIT) -> Exchange:
    """Start the server, send ``stdin``, close it, and wait (bounded) for the process to end."""
    result = subprocess.run(COMMAND, input=stdin, env=dict(env), cwd=PROJECT_ROOT, capture_output=True,
                            timeout=timeout, check=False)
    answers = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return Exchange(answers, result.stdout, result.stderr.decode("utf-8", "replace"), result.returncode)


def reading(*chunks: bytes, pause: float = 0) -> Callable[[], Awaitable[bytes]]:
    """A ``read_chunk`` for ``StdioFront.serve``: each of ``chunks`` in turn (``pause`` seconds before each read),
    then ``b""``, the input's end."""
    pending = list(chunks)

    async def read_chunk() -> bytes:
        await asyncio.sleep(pause)
        return pending.pop(0) if pending else b""

    return read_chunk


async def serve_in_memory(front: StdioFront, *chunks: bytes, pause: float = 0,
                          timeout: float = 20) -> list[dict[str, Any]]:
    """Serve ``chunks`` (as ``reading`` hands them out) through ``front`` until it stops, ``timeout`` seconds at
    most; every line it wrote, decoded, in order."""
    out = Collected()
    async with asyncio.timeout(timeout):
        await front.serve(reading(*chunks, pause=pause), out)
    return out.lines


def serve_through_pipes(front: StdioFront, stdin: bytes, *, stall: float, read_size: int = 4096,
                        on_reading: Callable[[], None] = lambda: None, timeout: float = 30) -> list[dict[str, Any]]:
    """Serve ``stdin`` through ``front`` over real OS pipes (``serve_fds``), to a client that writes all of it at
    once, reads nothing for ``stall`` seconds, calls ``on_reading``, then reads the output ``read_size`` bytes at a
    time to its end. Every line the client received, decoded, in order; serving is bounded by ``timeout`` seconds
    and both threads are joined (10 s at most each) before it returns."""
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    received = bytearray()

    def feed() -> None:
        with os.fdopen(in_write, "wb") as pipe:
            pipe.write(stdin)

    def drain() -> None:
        time.sleep(stall)  # a client busy elsewhere
        on_reading()
        with os.fdopen(out_read, "rb", buffering=0) as pipe:
            while chunk := pipe.read(read_size):
                received.extend(chunk)

    threads = [threading.Thread(target=feed), threading.Thread(target=drain)]
    for thread in threads:
        thread.start()

    async def serve() -> None:
        async with asyncio.timeout(timeout):
            await front.serve_fds(in_read, out_write)

    try:
        asyncio.run(serve())
    finally:
        os.close(in_read)
        os.close(out_write)
        for thread in threads:
            thread.join(timeout=10)
    return [json.loads(line) for line in bytes(received).splitlines()]
