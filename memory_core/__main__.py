"""Command line.

``python -m memory_core serve [--host 127.0.0.1] [--port 7071]`` serves function_app.py locally;
``python -m memory_core operator --instance I list|approve|reject|purge|sweep|audit`` acts as an operator.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memory_core", description="memory-core service")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve function_app.py locally, as the Functions host would")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=7071, help="port (default 7071, as Core Tools)")
    serve.add_argument("--app-dir", type=Path, default=Path.cwd(), help="folder holding function_app.py")
    from memory_core import operator_cli

    operator_cli.add_parser(commands)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "serve":
        from memory_core.local.serve import serve as run

        return run(args.host, args.port, args.app_dir.resolve())
    if args.command == "operator":
        return operator_cli.run(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
