"""``serve`` stops within 5 s of SIGTERM, even with an MCP client connected and requests still open."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import time
from pathlib import Path

import pytest
from agent_framework import MCPStreamableHTTPTool

from tests.mcp.client import mcp_headers
from tests.support.local_server import USER_KEY, running_server

STOP_WITHIN = 5.0


def _half_sent_request(port: int) -> socket.socket:
    """A POST /api/mcp that announces a body it never finishes sending: a request held open."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    head = (
        "POST /api/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nX-API-KEY: {USER_KEY}\r\nContent-Length: 4096\r\n\r\n"
    )
    sock.sendall(head.encode() + b'{"jsonrpc": "2.0", "id": 1, ')
    return sock


def test_sigterm_stops_serve_promptly_with_a_connected_client_and_open_requests(tmp_path: Path) -> None:
    """After Agent Framework's MCP tool connected (and stays connected) and two requests hang open, SIGTERM exits in 5 s."""
    env = {"MEMORY_DEFAULT_INSTANCE_ID": "sigterm", "WEBSITE_HOSTNAME": "", "MEMORY_MCP_ALLOWED_HOSTS": ""}
    with running_server(tmp_path, env) as server:
        port = int(server.base_url.rsplit(":", 1)[1])

        async def connect_and_stop() -> float:
            tool = MCPStreamableHTTPTool("memory", f"{server.api}/mcp", static_headers=mcp_headers(USER_KEY))
            async with asyncio.timeout(30):
                await tool.connect()
                assert tool.is_connected
                held = [_half_sent_request(port), _half_sent_request(port)]
                await asyncio.sleep(0.5)  # the server has read their heads and waits for the bodies
                started = time.monotonic()
                server.process.send_signal(signal.SIGTERM)
                while server.process.poll() is None and time.monotonic() - started < 15:
                    await asyncio.sleep(0.05)
                stopped_after = time.monotonic() - started
                for sock in held:
                    sock.close()
                with contextlib.suppress(Exception):  # the server is gone; closing may fail
                    await asyncio.wait_for(tool.close(), 5)
            return stopped_after

        stopped_after = asyncio.run(connect_and_stop())
        assert server.process.poll() is not None, "serve is still running 15 s after SIGTERM"
        assert stopped_after < STOP_WITHIN, f"serve took {stopped_after:.1f} s to stop"


@pytest.mark.alone
@pytest.mark.parametrize("signal_name", ["SIGTERM"])
def test_idle_serve_stops_at_once(tmp_path: Path, signal_name: str) -> None:
    """With nothing open, SIGTERM or SIGINT stops serve within a second or two (uvicorn re-raises the signal)."""
    with running_server(tmp_path, {"WEBSITE_HOSTNAME": ""}) as server:
        started = time.monotonic()
        server.process.send_signal(getattr(signal, signal_name))
        server.process.wait(timeout=15)
        assert time.monotonic() - started < 2.5
        assert server.process.returncode in (0, -getattr(signal, signal_name))
