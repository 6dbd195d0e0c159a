"""A streamable-HTTP MCP server that does no work: it answers each call with bytes recorded from memory-core.

Run by bench/bench_vs_reference.py as ``python bench/zero_work_mcp.py --port P --answers FILE``.
FILE maps ``initialize``, ``tools/list`` and each tool name to the JSON-RPC ``result``
memory-core gave for it; a notification is acknowledged 202. It runs on uvicorn with
the same HTTP parser ``python -m memory_core serve`` uses, so the official client's
time against it is the least any HTTP MCP server can take for the same answers:
the floor under memory-core's column that no server-side change can go below.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import uvicorn


def app_answering(answers: dict[str, Any]) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body)
        if "id" not in request:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        key = request["params"]["name"] if request["method"] == "tools/call" else request["method"]
        reply = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": answers[key]}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(reply)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": reply})

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--answers", type=Path, required=True)
    args = parser.parse_args()
    answers = json.loads(args.answers.read_text(encoding="utf-8"))
    uvicorn.run(app_answering(answers), host="127.0.0.1", port=args.port, log_level="warning", lifespan="off")


if __name__ == "__main__":
    main()
