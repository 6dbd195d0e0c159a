"""Servers that do no work: they answer each request with bytes recorded from memory-core.

A zero-work server runs on uvicorn with the same HTTP parser ``python -m memory_core serve``
uses, so a client's time against it is what the socket, the HTTP server and the client cost
for the same answer: the part of memory-core's time that no change to memory-core can remove.

- ``--protocol mcp`` (bench/bench_vs_reference.py): the answers file maps ``initialize``,
  ``tools/list`` and each tool name to the JSON-RPC ``result`` memory-core gave for it; a
  notification is acknowledged 202.
- ``--protocol http`` (bench/bench_http.py): it maps ``"METHOD path?query"`` to
  ``{"status", "content_type", "body"}``.

``running`` starts one on a free loopback port for the length of a ``with`` block.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.local_server import free_port


async def _body(receive: Any) -> bytes:
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def _send(send: Any, status: int, content_type: bytes, body: bytes) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def mcp_app(answers: dict[str, Any]) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        request = json.loads(await _body(receive))
        if "id" not in request:
            await _send(send, 202, b"application/json", b"")
            return
        key = request["params"]["name"] if request["method"] == "tools/call" else request["method"]
        reply = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": answers[key]}).encode()
        await _send(send, 200, b"application/json", reply)

    return app


def http_app(answers: dict[str, dict[str, Any]]) -> Any:
    replies = {key: (a["status"], a["content_type"].encode(), a["body"].encode()) for key, a in answers.items()}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await _body(receive)
        query = scope["query_string"].decode()
        reply = replies.get(f"{scope['method']} {scope['path']}" + (f"?{query}" if query else ""))
        await _send(send, *(reply or (404, b"text/plain", b"not recorded")))

    return app


@contextlib.contextmanager
def running(protocol: str, answers: dict[str, Any], tmp: Path) -> Iterator[str]:
    """A zero-work server replaying ``answers`` until the block ends; yields ``http://127.0.0.1:PORT``."""
    path = tmp / f"zero-work-{protocol}-answers.json"
    path.write_text(json.dumps(answers), encoding="utf-8")
    port = free_port()
    process = subprocess.Popen([sys.executable, str(Path(__file__)), "--protocol", protocol, "--port", str(port),
                                "--answers", str(path)])
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.post(base, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the zero-work server did not start") from None
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", choices=("mcp", "http"), required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--answers", type=Path, required=True)
    args = parser.parse_args()
    answers = json.loads(args.answers.read_text(encoding="utf-8"))
    app = mcp_app(answers) if args.protocol == "mcp" else http_app(answers)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", lifespan="off")


if __name__ == "__main__":
    main()
