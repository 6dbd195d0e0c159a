"""Run ``python -m memory_core mcp`` as a real process: its environment, and raw exchanges of lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.client.stdio import StdioServerParameters

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
