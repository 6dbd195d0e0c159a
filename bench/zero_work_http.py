"""An HTTP server that does no work: it answers each request with bytes recorded from memory-core.

Run by bench/bench_http.py as ``python bench/zero_work_http.py --port P --answers FILE``.
FILE maps ``"METHOD path?query"`` to ``{"status", "content_type", "body"}``. It runs on
uvicorn with the same HTTP parser ``python -m memory_core serve`` uses, so a client's
time against it is what the socket, uvicorn and the client cost for the same answer:
the part of memory-core's HTTP time that no change to memory-core can remove.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import uvicorn


def app_answering(answers: dict[str, dict[str, Any]]) -> Any:
    replies = {key: (a["status"], a["content_type"].encode(), a["body"].encode()) for key, a in answers.items()}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        query = scope["query_string"].decode()
        status, content_type, body = replies[f"{scope['method']} {scope['path']}" + (f"?{query}" if query else "")]
        headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

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
