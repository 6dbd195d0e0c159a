"""A local stand-in for the Anthropic Messages API that scripts ``tool_use`` turns.

It serves ``POST /v1/messages`` on loopback: each call answers the next scripted
assistant turn (tool_use blocks, then a final text turn) and records the request,
so a test can read the tool_result blocks the SDK's tool runner sent back. No
network: the anthropic client is pointed at it with ``base_url``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class MessagesStandIn:
    url: str
    turns: list[list[dict[str, Any]]]
    requests: list[dict[str, Any]] = field(default_factory=list)

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool_result block the client sent, in order."""
        results = []
        for request in self.requests:
            last = request["messages"][-1]
            if last["role"] == "user" and isinstance(last["content"], list):
                results += [b for b in last["content"] if b.get("type") == "tool_result"]
        return results


def _message(number: int, content: list[dict[str, Any]]) -> dict[str, Any]:
    tool_use = any(block["type"] == "tool_use" for block in content)
    return {
        "id": f"msg_{number}", "type": "message", "role": "assistant", "model": "claude-stand-in",
        "content": content, "stop_reason": "tool_use" if tool_use else "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


@contextmanager
def messages_stand_in(turns: list[list[dict[str, Any]]]) -> Iterator[MessagesStandIn]:
    """Serve ``turns`` (each a list of content blocks) in order; the last one should be text only."""
    stand_in = MessagesStandIn("", turns)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            with lock:
                stand_in.requests.append(body)
                number = len(stand_in.requests)
            content = turns[min(number, len(turns)) - 1]
            payload = json.dumps(_message(number, content)).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stand_in.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield stand_in
    finally:
        server.shutdown()
        server.server_close()
