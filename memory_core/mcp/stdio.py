"""MCP over stdio: ``python -m memory_core mcp``, the hosted endpoint's server for a local client.

A local MCP client (Claude Desktop, Claude Code, agent_framework's ``MCPStdioTool``,
any client configured with a "command") starts this process and speaks JSON-RPC
over its stdin and stdout, one message per line. It serves the same server as the
hosted endpoint (``tools.build_server``: the same tools, results and errors) over
the same composition root, store and custody rules.

Identity comes from the launching configuration, never from a message: the
MEMORY_MCP_* variables (``settings.StdioLaunch``) stand in for the request headers
the hosted endpoint would get (``LAUNCH_HEADERS``), and are authenticated with the
same authenticator (MEMORY_AUTH_MODE) before anything is served, then again for
every message, so a credential that stops being valid (an expired token) stops
being served. MEMORY_AUTH_MODE=local is accepted here: no socket listens, only the
process that started this one can reach it.

Every message meets the rules of ``envelope`` before the protocol runs
(``stdio_front.StdioFront``: size, JSON-RPC, authentication, the time bound).

The wire (``stdio_wire``): fd 0 and 1 are claimed so stray output cannot reach
the protocol, and pipes are served by the event loop. End of input ends the
process with status 0 once every request read has been answered; a closed
stdout ends it too. Logging goes to stderr.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memory_core.domain.errors import ConfigurationError, MemoryCoreError, Unavailable
from memory_core.identity.headers import (
    API_KEY_HEADER,
    AUTHORIZATION_HEADER,
    PLATFORM_IDENTITY_HEADER,
    USER_IDENTITY_HEADER,
)
from memory_core.mcp.call_targets import (
    AGENT_NAME_HEADER,
    AGENT_OBJECT_ID_HEADER,
    INSTANCE_ID_HEADER,
    SESSION_ID_HEADER,
)
from memory_core.mcp.stdio_front import StdioFront, explained
from memory_core.mcp.stdio_wire import claimed_std_streams

if TYPE_CHECKING:
    from memory_core.composition import Runtime
    from memory_core.mcp.backend import MemoryBackend
    from memory_core.settings import Settings, StdioLaunch


LAUNCH_HEADERS: dict[str, str] = {
    "MEMORY_MCP_API_KEY": API_KEY_HEADER,
    "MEMORY_MCP_USER_IDENTITY": USER_IDENTITY_HEADER,
    "MEMORY_MCP_BEARER_TOKEN": AUTHORIZATION_HEADER,
    "MEMORY_MCP_PLATFORM_IDENTITY": PLATFORM_IDENTITY_HEADER,
    "MEMORY_MCP_INSTANCE_ID": INSTANCE_ID_HEADER,
    "MEMORY_MCP_AGENT_OBJECT_ID": AGENT_OBJECT_ID_HEADER,
    "MEMORY_MCP_AGENT_NAME": AGENT_NAME_HEADER,
    "MEMORY_MCP_SESSION_ID": SESSION_ID_HEADER,
    "MEMORY_MCP_MEMORY_MODE": "x-memory-mode",
}
"""The environment variable standing in for each request header of the hosted endpoint.

MEMORY_MCP_BEARER_TOKEN is the bare token (sent as ``Authorization: Bearer <token>``).
App Service's X-MS-CLIENT-PRINCIPAL has none: only the platform can vouch for it,
and here anyone who starts the process could write it.
"""

def launch_headers(launch: StdioLaunch) -> dict[str, str]:
    """The request headers (lower-case names) the launching configuration stands for; unset ones left out."""
    values: dict[str, str | None] = {
        "MEMORY_MCP_API_KEY": launch.api_key.get_secret_value() if launch.api_key else None,
        "MEMORY_MCP_USER_IDENTITY": launch.user_identity,
        "MEMORY_MCP_BEARER_TOKEN": (
            f"Bearer {launch.bearer_token.get_secret_value()}" if launch.bearer_token else None
        ),
        "MEMORY_MCP_PLATFORM_IDENTITY": (
            launch.platform_identity.get_secret_value() if launch.platform_identity else None
        ),
        "MEMORY_MCP_INSTANCE_ID": launch.instance_id,
        "MEMORY_MCP_AGENT_OBJECT_ID": launch.agent_object_id,
        "MEMORY_MCP_AGENT_NAME": launch.agent_name,
        "MEMORY_MCP_SESSION_ID": launch.session_id,
        "MEMORY_MCP_MEMORY_MODE": launch.memory_mode,
    }
    return {LAUNCH_HEADERS[name]: value for name, value in values.items() if value}


def where_memory_is(settings: Settings) -> list[str]:
    """What ``run`` says on stderr at start (stdout is the protocol) about where memory is kept: the SQLite file
    (absolute), the Cosmos DB account or the CoreAPI; and a note when the working folder holds the file this
    command used by default before (``.data/memory.sqlite3``) while the user's default is used now."""
    from memory_core.settings import SERVE_SQLITE_PATH, sqlite_path

    if settings.memory_coreapi_base_url:
        return [f"memory-core mcp: memory served by the CoreAPI at {settings.memory_coreapi_base_url}"]
    if settings.memory_store == "cosmos":
        return [f"memory-core mcp: memory in Cosmos DB at {settings.cosmos_endpoint} "
                f"({settings.cosmos_database}/{settings.cosmos_container})"]
    used = Path(settings.memory_sqlite_path or "").resolve()
    lines = [f"memory-core mcp: memory in {used} (MEMORY_SQLITE_PATH to change)"]
    earlier = Path(SERVE_SQLITE_PATH).resolve()
    try:
        default = Path(sqlite_path(settings.model_copy(update={"memory_sqlite_path": None}), stdio=True)).resolve()
    except ConfigurationError:  # no home folder: MEMORY_SQLITE_PATH is what is used
        return lines
    if used == default and earlier != used and earlier.is_file():
        lines.append(f"memory-core mcp: note: {earlier} holds memory this command kept here before it kept it in "
                     f"{used}; it is not read now: set MEMORY_SQLITE_PATH={earlier} to go on with it")
    return lines


def build_front(rt: Runtime, headers: Mapping[str, str]) -> tuple[StdioFront, MemoryBackend]:
    """The front ``run`` serves for ``headers`` (``launch_headers``) on ``rt``, and the backend to close after it."""
    from memory_core import composition
    from memory_core.mcp.envelope import max_message_bytes
    from memory_core.mcp.guidance import guidance_reader
    from memory_core.mcp.tools import build_server

    backend = composition.build_mcp_backend(rt, one_client=True)
    server = build_server(backend, rt.auth, rt.settings.memory_default_instance_id)
    front = StdioFront(
        server, headers, rt.auth.authenticate, guidance_reader(rt.settings, backend),
        max_message_bytes=max_message_bytes(rt.settings),
    )
    return front, backend


def run() -> int:
    """``python -m memory_core mcp``: serve MCP over stdio until end of input. The process's exit status.

    0 at end of input or when stdout closes; 2, with the reason on stderr and
    nothing served, for unusable settings, a store that cannot be opened, or a
    missing or refused credential (only a refusal points at the MEMORY_MCP_* variables).
    """
    from memory_core import composition
    from memory_core.mcp.call_targets import resolve_target
    from memory_core.settings import stdio_launch_from

    logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK logs every request at INFO
    with claimed_std_streams() as (wire_in, wire_out):
        composition.declare_stdio()
        try:
            rt = composition.runtime()
            headers = launch_headers(stdio_launch_from())
            # The caller and instance are checked before anything is served.
            resolve_target(headers, rt.auth, rt.settings.memory_default_instance_id)
        except (ConfigurationError, Unavailable) as error:
            # Unavailable: a store that cannot be opened (a bad MEMORY_SQLITE_PATH), or an identity provider
            # that cannot be reached; said as it is, as `serve` says it: it is no credential's refusal.
            print(f"memory-core mcp: {error}", file=sys.stderr)
            return 2
        except MemoryCoreError as error:
            print(f"memory-core mcp: refused: {explained(error)}", file=sys.stderr)
            return 2
        for line in where_memory_is(rt.settings):
            print(line, file=sys.stderr)
        front, backend = build_front(rt, headers)

        async def serve() -> None:
            try:
                await front.serve_fds(wire_in, wire_out)
            finally:
                await backend.aclose()

        try:
            asyncio.run(serve())
        finally:
            composition.reset_runtime()
        return 0
