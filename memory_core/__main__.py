"""Command line.

``python -m memory_core serve [--host 127.0.0.1] [--port 7071]`` serves function_app.py locally;
``python -m memory_core mcp`` serves the MCP tools over stdio to the local client that started it;
``python -m memory_core operator --instance I list|approve|reject|dismiss|purge|sweep|audit`` acts as an operator.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

MCP_HELP = """\
Serve memory-core's MCP tools (get_memory, append_memory, clear_memory, search_memory
and Claude's memory tool) over stdin/stdout, one JSON-RPC message per line, to the
local MCP client that started this process. Same server, store and custody rules as
the hosted /api/mcp endpoint; the store is configured as for `serve` (MEMORY_STORE,
MEMORY_SQLITE_PATH, ...). Logs go to stderr. End of input exits with status 0.

Who is served comes from the environment, never from a message or a command-line
argument (each variable stands for the hosted endpoint's request header):

  MEMORY_MCP_API_KEY            X-API-KEY: a service key (MEMORY_API_KEYS)
  MEMORY_MCP_USER_IDENTITY      X-USER-IDENTITY: the user's identity JSON (with a key)
  MEMORY_MCP_BEARER_TOKEN       Authorization: Bearer <token> (MEMORY_AUTH_MODE=entra)
  MEMORY_MCP_PLATFORM_IDENTITY  X-PLATFORM-IDENTITY (MEMORY_AUTH_MODE=platform)
  MEMORY_MCP_INSTANCE_ID        X-INSTANCE-ID (else MEMORY_DEFAULT_INSTANCE_ID)
  MEMORY_MCP_AGENT_OBJECT_ID    X-AGENT-OBJECT-ID (scope=agent needs it)
  MEMORY_MCP_AGENT_NAME         X-AGENT-NAME
  MEMORY_MCP_SESSION_ID         X-SESSION-ID (provenance of appends)
  MEMORY_MCP_MEMORY_MODE        X-MEMORY-MODE (off: nothing read or stored)

MEMORY_AUTH_MODE=local serves one local user with no credential (no socket listens).
A missing or refused credential exits with status 2 and the reason on stderr.

Where memory is kept: MEMORY_SQLITE_PATH; unset, the user's own file, whatever the
directory the client starts the process in: $XDG_DATA_HOME/memory-core/memory.db, else
~/.local/share/memory-core/memory.db (Windows: %LOCALAPPDATA%\\memory-core\\memory.db).
The file used is said on stderr at start.

Example client configuration (Claude Desktop; Claude Code takes the same as --env):
PYTHONPATH names the checkout, since the client starts the process in a directory
of its own.

  {"command": "python", "args": ["-m", "memory_core", "mcp"],
   "env": {"PYTHONPATH": "/path/to/memory-core",
           "MEMORY_AUTH_MODE": "local", "MEMORY_DEFAULT_INSTANCE_ID": "personal"}}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memory_core", description="memory-core service")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve function_app.py locally, as the Functions host would")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=7071, help="port (default 7071, as Core Tools; 0 picks a free one, printed on the first line)")
    serve.add_argument("--app-dir", type=Path, default=Path.cwd(), help="folder holding function_app.py")
    commands.add_parser(
        "mcp", help="serve the MCP tools over stdio, for a local MCP client that starts this process",
        description=MCP_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from memory_core import operator_cli

    operator_cli.add_parser(commands)
    args = parser.parse_args(argv)
    # The operator command's output is its answer: its HTTP client's request lines would only be noise on stderr.
    level = logging.WARNING if args.command == "operator" else logging.INFO
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "serve":
        from memory_core.local.serve import serve as run

        return run(args.host, args.port, args.app_dir.resolve())
    if args.command == "mcp":
        from memory_core.mcp.stdio import run as run_stdio

        return run_stdio()
    if args.command == "operator":
        return operator_cli.run(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
