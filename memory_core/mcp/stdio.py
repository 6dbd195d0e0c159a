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

Every message meets the rules of ``envelope`` before the protocol runs (``StdioFront``):

- a line over the HTTP body limit is refused with a JSON-RPC error and skipped to
  its end; no more than that limit (plus one read) is ever buffered;
- text that is not JSON is a parse error (-32700) and JSON that is not JSON-RPC an
  Invalid Request (-32600), neither echoing what was sent;
- every request is answered within ``REQUEST_TIME_LIMIT_SECONDS`` (an internal
  error past it, its work cancelled);
- the agent's guidance is read for the requests whose answer carries it.

The wire (``stdio_wire``): fd 0 and 1 are claimed so stray output cannot reach
the protocol, and pipes are served by the event loop. End of input ends the
process with status 0 once every request read has been answered; a closed
stdout ends it too. Logging goes to stderr.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.runner import _has_modern_envelope, _serve_legacy_stream, _serve_modern_stream
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    JSONRPCNotification,
    JSONRPCRequest,
)

from memory_core.domain.errors import ConfigurationError, MemoryCoreError
from memory_core.edge.errors import status_for
from memory_core.identity.headers import (
    API_KEY_HEADER,
    AUTHORIZATION_HEADER,
    PLATFORM_IDENTITY_HEADER,
    USER_IDENTITY_HEADER,
)
from memory_core.identity.model import Authentication
from memory_core.mcp.call_targets import (
    AGENT_NAME_HEADER,
    AGENT_OBJECT_ID_HEADER,
    INSTANCE_ID_HEADER,
    SESSION_ID_HEADER,
)
from memory_core.mcp.context import CURRENT_AUTHENTICATION, CURRENT_GUIDANCE
from memory_core.mcp.envelope import (
    REQUEST_TIME_LIMIT_SECONDS,
    UNAUTHENTICATED,
    NotJson,
    decode,
    jsonrpc_error,
    parse_error,
    too_large,
    validate_envelope,
)
from memory_core.mcp.guidance import AgentGuidance, answers_with_guidance
from memory_core.mcp.stdio_streams import Admitted, AdmittedLines, AnswerStream
from memory_core.mcp.stdio_wire import (
    FLUSH_SECONDS,
    BlockingOut,
    PipeOut,
    ReadChunk,
    WireOut,
    claimed_std_streams,
    is_pipe,
    pipe_reader,
    thread_reader,
)

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.server.mcpserver import MCPServer

    from memory_core.composition import Runtime
    from memory_core.mcp.backend import MemoryBackend
    from memory_core.settings import StdioLaunch

log = logging.getLogger("memory_core.mcp.stdio")

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


def explained(error: MemoryCoreError) -> str:
    """A refusal's message with where its headers come from over stdio (the header names stay, for the docs)."""
    return (f"{error.message} (over stdio each header comes from its MEMORY_MCP_* variable: "
            "see `python -m memory_core mcp --help`)")


@dataclass(frozen=True)
class LaunchRequest:
    """What a tool reads as its request over stdio (``Context.headers``): the launching configuration's headers."""

    headers: Mapping[str, str]


class TimeBound:
    """Server middleware: a request not answered within ``limit`` seconds is cancelled and answers an internal error."""

    def __init__(self, limit: float) -> None:
        self.limit = limit

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:
            return await call_next(ctx)
        with anyio.move_on_after(self.limit):
            return await call_next(ctx)
        log.warning("MCP request cancelled after %.0f s", self.limit)
        raise MCPError(INTERNAL_ERROR, f"the request did not finish within {self.limit:g} s; retry later")


async def serve_in_the_opening_era(
    low: Server[Any], reads: AdmittedLines, writes: AnswerStream, lifespan_state: Any
) -> None:
    """The SDK's ``serve_dual_era_loop``, with the client's first request read ahead by ``reads`` itself.

    The SDK's loop peeks at the first request by relaying every message through
    a memory stream and a task of its own (0.03 ms a request in process,
    docs/performance.md); here the read stream keeps it. The decision is the
    SDK's (``mcp.server.runner``, private: mcp is pinned to 2.x, requirements.txt):
    a first request carrying the 2026-07-28 envelope opens a stateless
    connection, anything else (``initialize``) a handshake one, and each loop
    refuses a later request of the other era.
    """
    try:
        opening = await reads.opening_request()
        if opening is not None and opening.method != "initialize" and _has_modern_envelope(opening.params):
            await _serve_modern_stream(low, reads, writes, lifespan_state=lifespan_state, raise_exceptions=False)
        else:
            # init_options None: the instructions are read at initialize, with the agent's guidance
            await _serve_legacy_stream(low, reads, writes, lifespan_state=lifespan_state, session_id=None,
                                       init_options=None, raise_exceptions=False)
    finally:
        await reads.aclose()
        await writes.aclose()


# -- the front --------------------------------------------------------------------------------------------


class StdioFront:
    """Serves ``server`` over one input and one output, every message through the rules of ``envelope``.

    ``headers`` are the launching configuration's (``launch_headers``): every
    message is authenticated from them (``authenticate``; a refusal answers
    -32001 for a missing or bad credential) and tools read them as their
    request's headers. ``guidance`` reads the agent's guidance for a message
    whose answer carries it. The time bound is added to ``server``'s own
    middleware (``TimeBound``): serve each server through one front.
    """

    def __init__(
        self,
        server: MCPServer,
        headers: Mapping[str, str],
        authenticate: Callable[[Mapping[str, str]], Authentication],
        guidance: Callable[[Mapping[str, str]], Awaitable[AgentGuidance | None]] | None = None,
        *,
        max_message_bytes: int,
        time_limit: float = REQUEST_TIME_LIMIT_SECONDS,
    ) -> None:
        self._low = server._lowlevel_server  # private API: mcp is pinned to 2.x (requirements.txt)
        self._low.middleware.append(TimeBound(time_limit))
        self._headers = dict(headers)
        self._metadata = ServerMessageMetadata(request_context=LaunchRequest(self._headers))
        self._authenticate = authenticate
        self._guidance = guidance
        self._limit = max_message_bytes
        self._time_limit = time_limit
        self._pending: set[str | int] = set()
        self._answered = asyncio.Event()
        self.stdout_closed = False

    async def serve_fds(self, wire_in: int, wire_out: int) -> None:
        """Serve until end of input (every request read answered first) or until the output closes."""
        out: WireOut
        if is_pipe(wire_out):
            out = await PipeOut.open(wire_out)
        else:
            out = BlockingOut(wire_out)
        reader = pipe_reader if is_pipe(wire_in) else thread_reader
        try:
            async with reader(wire_in) as read_chunk:
                await self.serve(read_chunk, out)
        finally:
            if isinstance(out, PipeOut):
                await out.aclose(FLUSH_SECONDS)

    async def serve(self, read_chunk: ReadChunk, out: WireOut) -> None:
        async with anyio.create_task_group() as group:
            answers = AnswerStream(out, self._settle, lambda: self._stop(group))
            server_reads = AdmittedLines(self.admitted(read_chunk, out), lambda: self._stop(group))

            async def run_server() -> None:
                async with self._low.lifespan(self._low) as lifespan_state:
                    await serve_in_the_opening_era(self._low, server_reads, answers, lifespan_state)
                group.cancel_scope.cancel()

            async def watch_output() -> None:
                await out.closed()
                self._stop(group)

            group.start_soon(run_server)
            group.start_soon(watch_output)

    def _stop(self, group: anyio.abc.TaskGroup) -> None:
        if not self.stdout_closed:
            log.info("stdout closed: the client is gone; stopping")
        self.stdout_closed = True
        group.cancel_scope.cancel()

    def _settle(self, request_id: str | int) -> None:
        self._pending.discard(request_id)
        if not self._pending:
            self._answered.set()

    async def _refuse(self, out: WireOut, request_id: Any, code: int, message: str) -> None:
        await self._write(out, jsonrpc_error(request_id, code, message))

    @staticmethod
    async def _write(out: WireOut, document: dict[str, Any]) -> None:
        await out.write(json.dumps(document, separators=(",", ":")).encode() + b"\n")

    async def admitted(self, read_chunk: ReadChunk, out: WireOut) -> AsyncGenerator[Admitted]:
        """Each message of input the server is to see, with the context it is served in; the rest refused here.

        At end of input, every request already read is answered (bounded by the time limit) before this ends.
        """
        async for line in self._lines(read_chunk):
            if line is None:
                await self._refuse(out, None, INVALID_REQUEST, too_large(self._limit))
            elif (admitted := await self._admit(line, out)) is not None:
                yield admitted
        with anyio.move_on_after(self._time_limit + 5):
            while self._pending:
                self._answered.clear()
                await self._answered.wait()

    async def _lines(self, read_chunk: ReadChunk) -> AsyncIterator[bytes | None]:
        """Each line of input (without its end), None for one over the limit (skipped to its end).

        At most the limit plus one chunk is ever held.
        """
        buffer = bytearray()
        skipping = False
        while chunk := await read_chunk():
            buffer += chunk
            start = 0
            while (end := buffer.find(b"\n", start)) >= 0:
                if skipping:
                    skipping = False
                elif end - start > self._limit:
                    yield None
                else:
                    yield bytes(buffer[start:end])
                start = end + 1
            del buffer[:start]
            if len(buffer) > self._limit:
                if not skipping:
                    yield None
                skipping = True
                buffer.clear()
        if buffer and not skipping:
            yield bytes(buffer)

    async def _admit(self, line: bytes, out: WireOut) -> Admitted | None:
        """One line: refused as the envelope's rules say (None), or the message with the launching identity's context."""
        if not line.strip():
            return None
        decoded = decode(line)
        if isinstance(decoded, NotJson):
            await self._write(out, parse_error(decoded))
            return None
        message = validate_envelope(decoded)
        if isinstance(message, tuple):
            await self._refuse(out, message[0], INVALID_REQUEST, message[1])
            return None
        is_request = isinstance(message, JSONRPCRequest)
        context = contextvars.copy_context()
        try:
            context.run(CURRENT_AUTHENTICATION.set, self._authenticate(self._headers))
        except MemoryCoreError as error:
            if is_request:
                assert isinstance(message, JSONRPCRequest)
                code = UNAUTHENTICATED if status_for(error) == 401 else INVALID_REQUEST
                await self._refuse(out, message.id, code, explained(error))
            return None
        guidance = None
        if self._guidance is not None and answers_with_guidance(decoded):
            guidance = await self._guidance(self._headers)
        context.run(CURRENT_GUIDANCE.set, guidance)
        if is_request:
            assert isinstance(message, JSONRPCRequest)
            self._pending.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = (message.params or {}).get("requestId")
            if isinstance(cancelled, (str, int)):
                self._settle(cancelled)
        return context, SessionMessage(message, metadata=self._metadata)


# -- the process ------------------------------------------------------------------------------------------


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
    nothing served, for unusable settings or a missing or refused credential.
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
        except ConfigurationError as error:
            print(f"memory-core mcp: {error}", file=sys.stderr)
            return 2
        except MemoryCoreError as error:
            print(f"memory-core mcp: refused: {explained(error)}", file=sys.stderr)
            return 2
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
