"""Benchmark: what a key caller's authentication costs, on the stdio launch headers.

Run from the repository root (``--root`` times another checkout's code, main's for an A/B pair):

    python bench/bench_key_identity.py [--number 20000] [--repeat 5] [--root PATH]

The headers are those ``python -m memory_core mcp`` authenticates every message with
(``stdio.launch_headers`` on ``stdio_env``'s key and identity, as ``bench_stdio_in_process.py``
builds them). Times three calls: ``Authenticator.authenticate`` (the key compared, then the
identity parsed), ``resolve_target`` as a tool calls it without the front's authentication, and
``parse_identity`` alone. Prints the least over ``--repeat`` runs of ``--number`` calls, in
microseconds per call: the least is the one the load disturbed least.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path


def _calls() -> dict[str, Callable[[], object]]:
    from memory_core import composition
    from memory_core.identity.keys import USER_IDENTITY_HEADER, parse_identity
    from memory_core.mcp.call_targets import resolve_target
    from memory_core.mcp.stdio import launch_headers
    from memory_core.settings import stdio_launch_from
    from tests.support.stdio_server import stdio_env

    env = stdio_env(Path(tempfile.mkdtemp()) / "memory.db", MEMORY_DEFAULT_INSTANCE_ID="bench",
                    MEMORY_MCP_INSTANCE_ID="bench")
    for name in [n for n in os.environ if n.startswith(("MEMORY_", "COSMOS_"))]:
        del os.environ[name]
    os.environ.update(env)
    composition.declare_stdio()
    rt = composition.runtime()
    headers = launch_headers(stdio_launch_from())
    raw = headers[USER_IDENTITY_HEADER.lower()]
    return {
        "Authenticator.authenticate": lambda: rt.auth.authenticate(headers),
        "resolve_target (authenticating)": lambda: resolve_target(headers, rt.auth, "bench"),
        "parse_identity": lambda: parse_identity(raw),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20_000, help="calls per run")
    parser.add_argument("--repeat", type=int, default=5, help="runs; the least is printed")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the checkout whose code is timed")
    args = parser.parse_args()
    sys.path.insert(0, str(args.root.resolve()))
    print(f"{args.root}; load {os.getloadavg()[0]:.2f}; least of {args.repeat} runs of {args.number} calls\n")
    print("| call | µs |\n|---|---:|")
    for name, call in _calls().items():
        best = min(timeit.repeat(call, number=args.number, repeat=args.repeat)) / args.number
        print(f"| {name} | {best * 1e6:.2f} |")


if __name__ == "__main__":
    main()
