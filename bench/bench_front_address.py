"""The MCP front's Host/Origin step per request: the edge's rule run again (main) against the edge's address taken.

Run from the project root:

    python bench/bench_front_address.py [--rounds 15] [--number 20000]

Times ``memory_core.mcp.front.addressed_scope`` in process on the scope the Functions bridge builds for a
``serve`` request (its headers as an MCP client sends them, with and without an Origin): once as main ran it, the
scope without the edge's address, so the front reads Host and Origin and runs ``AppNames.admitted`` again; once
with the ``Address`` the edge admitted under ``ADDRESS_SCOPE_KEY``, as the ``mcp`` function hands it over now.
The two are timed in turn, ``--rounds`` times (a pair per round), each over ``--number`` calls; prints the median
over rounds of each one's µs per call and the saving (docs/performance.md, "The MCP HTTP path on ``serve``").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import timeit
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memory_core.edge.names import ADDRESS_SCOPE_KEY, AppNames
from memory_core.mcp.front import addressed_scope
from memory_core.settings import Settings
from tests.support.local_server import identity


def scope(origin: str | None) -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1:7071"), (b"content-type", b"application/json"),
               (b"accept", b"application/json, text/event-stream"), (b"mcp-protocol-version", b"2025-11-25"),
               (b"x-api-key", b"bench-key"), (b"x-user-identity", identity("bench@contoso.com").encode()),
               (b"content-length", b"46"), (b"user-agent", b"python-httpx/0.28.1")]
    headers += [(b"origin", origin.encode())] if origin is not None else []
    return {"type": "http", "method": "POST", "scheme": "http", "path": "/api/mcp", "query_string": b"",
            "headers": headers, "server": ("127.0.0.1", 7071)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=20000)
    args = parser.parse_args()
    names = AppNames.from_settings(Settings(website_hostname=None, memory_allowed_hosts=(),
                                            memory_mcp_allowed_hosts=()))
    print(f"load {os.getloadavg()[0]:.2f}; {args.rounds} rounds of {args.number} calls each, the two ways "
          "alternating in each round; medians over rounds\n")
    print("| request | checked again (main) µs | edge's address taken µs | saved µs |\n|---|---:|---:|---:|")
    for label, origin in (("no Origin", None), ("Origin http://localhost:7071", "http://localhost:7071")):
        checked = scope(origin)
        handed = {**checked, ADDRESS_SCOPE_KEY: names.admitted("127.0.0.1:7071", origin)}
        assert addressed_scope(checked, names)["headers"] == addressed_scope(handed, names)["headers"]
        rounds: dict[str, list[float]] = {"checked": [], "handed": []}
        for _ in range(args.rounds):  # the two ways alternate within each round: a pair per round
            for kind, given in (("checked", checked), ("handed", handed)):
                seconds = timeit.timeit(lambda given=given: addressed_scope(given, names), number=args.number)
                rounds[kind].append(seconds / args.number * 1e6)
        median = {kind: statistics.median(values) for kind, values in rounds.items()}
        print(f"| {label} | {median['checked']:.2f} | {median['handed']:.2f} | "
              f"{median['checked'] - median['handed']:.2f} |")


if __name__ == "__main__":
    main()
