"""The stdio front: every message of a local MCP client through the rules of ``envelope``, then the server.

``StdioFront`` serves ``tools.build_server``'s server over one input and one
output (``stdio_wire``), each line one JSON-RPC message, under the launching
configuration's identity (``stdio.launch_headers``):

- a line over the HTTP body limit is refused with a JSON-RPC error and skipped to
  its end; no more than that limit (plus one read) is ever buffered;
- text that is not JSON is a parse error (-32700) and JSON that is not JSON-RPC an
  Invalid Request (-32600), neither echoing what was sent;
- every message is authenticated from the launching headers, so a credential that
  stops being valid (an expired token) stops being served;
- every request is answered within ``REQUEST_TIME_LIMIT_SECONDS`` (an internal
  error past it, its work cancelled);
- input is read no faster than it is answered: a request is held, and no line after
  it read, while ``MAX_REQUESTS_IN_FLIGHT`` are unanswered or while the output is
  full (the client not reading), so a client that pipelines requests cannot grow
  the process's memory without bound (``_room``). Notifications ahead of the held
  request, a cancellation among them, are still read and served;
- a request whose id is that of a request not yet answered is refused at once
  (-32600, with that id) and never served: JSON-RPC wants ids unique among the
  requests outstanding, and the bound above counts one request per id;
- the agent's guidance is read for the requests whose answer carries it.

The process around it (settings, the composition root, exit status) is ``stdio``.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.runner import _has_modern_envelope, _serve_legacy_stream, _serve_modern_stream
from mcp.shared.dispatcher import as_request_id, coerce_request_id
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    JSONRPCNotification,
    JSONRPCRequest,
    RequestId,
)

from memory_core.domain.errors import MemoryCoreError
from memory_core.edge.errors import status_for
from memory_core.identity.model import Authentication
from memory_core.mcp.context import CURRENT_AUTHENTICATION, CURRENT_GUIDANCE
from memory_core.mcp.envelope import (
    REQUEST_TIME_LIMIT_SECONDS,
    NotJson,
    decode,
    decode_error,
    jsonrpc_error,
    refusal_code,
    too_large,
    validate_envelope,
)
from memory_core.mcp.guidance import (
    GUIDANCE_TIME_LIMIT_SECONDS,
    AgentGuidance,
    answers_with_guidance,
    guidance_within,
)
from memory_core.mcp.stdio_streams import Admitted, AdmittedLines, AnswerStream
from memory_core.mcp.stdio_wire import (
    FLUSH_SECONDS,
    BlockingOut,
    PipeOut,
    ReadChunk,
    WireOut,
    is_pipe,
    pipe_reader,
    thread_reader,
)

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.server.mcpserver import MCPServer

log = logging.getLogger("memory_core.mcp.stdio_front")

MAX_REQUESTS_IN_FLIGHT = 32
"""Requests read and not yet answered, at most: the next waits unread (``StdioFront._room``).

Each costs a task and its answer in memory: unbounded, 20,000 pipelined ``tools/list`` to a
client not reading took the process from 54 MB to 1.7 GB (docs/mcp.md; 87 MB with the limit).
One client's requests are served on one event loop, so more in flight would not answer
sooner. A cancellation still gets through: it is a notification, read while a request waits.
"""

ID_IN_USE = ("Invalid Request: this id is already in use by a request not yet answered "
             "(JSON-RPC request ids must be unique among outstanding requests)")
"""Why a request reusing the id of one in flight is refused (``StdioFront._admit``)."""

STALE_AFTER_LIMIT_SECONDS = 5.0
"""An unanswered request is no longer counted this long past the time limit.

The time bound answers every request within the limit; one still counted past it is one
the SDK settled without an answer carrying its id, and must not hold up reading for good.
"""


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
        max_in_flight: int = MAX_REQUESTS_IN_FLIGHT,
    ) -> None:
        self._low = server._lowlevel_server  # private API: mcp is pinned to 2.x (requirements.txt)
        self._low.middleware.append(TimeBound(time_limit))
        self._headers = dict(headers)
        self._metadata = ServerMessageMetadata(request_context=LaunchRequest(self._headers))
        self._authenticate = authenticate
        self._guidance = guidance
        self._limit = max_message_bytes
        self._time_limit = time_limit
        self._max_in_flight = max_in_flight
        # Each request admitted and not yet answered, by id (as the SDK correlates ids: "7" is 7), with when it was
        # admitted (loop time). One entry per admission: a request whose id is here is refused, never admitted
        # over it, so len() is the count of requests in flight, which ``_room`` bounds.
        self._pending: dict[RequestId, float] = {}
        self._answered = asyncio.Event()
        self._progress = asyncio.Event()  # set whenever a request is answered
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

    def _settle(self, request_id: RequestId) -> None:
        self._pending.pop(coerce_request_id(request_id), None)
        self._progress.set()
        if not self._pending:
            self._answered.set()

    async def _refuse(self, out: WireOut, request_id: Any, code: int, message: str) -> None:
        await self._write(out, jsonrpc_error(request_id, code, message))

    @staticmethod
    async def _write(out: WireOut, document: dict[str, Any]) -> None:
        await out.write(json.dumps(document, separators=(",", ":")).encode() + b"\n")

    async def _room(self, out: WireOut) -> None:
        """Returns once fewer than ``max_in_flight`` requests are unanswered and ``out`` takes more.

        Called with a request read and not yet admitted: nothing after it is read meanwhile,
        so neither input nor answers pile up in memory. A notification read before it (a
        cancellation) has been served already; one sent after it waits with it, for at most
        the time limit (every request in flight is answered or cancelled within it).
        """
        loop = asyncio.get_running_loop()
        while len(self._pending) >= self._max_in_flight:
            self._progress.clear()
            stale_at = min(self._pending.values()) + self._time_limit + STALE_AFTER_LIMIT_SECONDS
            with anyio.move_on_after(max(0.0, stale_at - loop.time())):
                await self._progress.wait()
            stale = [rid for rid, admitted in self._pending.items()
                     if admitted + self._time_limit + STALE_AFTER_LIMIT_SECONDS <= loop.time()]
            for request_id in stale:
                log.warning("MCP request never answered with its id; no longer counted as in flight")
                self._settle(request_id)
        await out.writable()

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
        """One line: refused as the envelope's rules say (None), or the message with the launching identity's
        context."""
        if not line.strip():
            return None
        decoded = decode(line)
        if isinstance(decoded, NotJson):
            await self._write(out, decode_error(decoded))
            return None
        message = validate_envelope(decoded)
        if isinstance(message, tuple):
            await self._refuse(out, message[0], INVALID_REQUEST, message[1])
            return None
        is_request = isinstance(message, JSONRPCRequest)
        if is_request:
            assert isinstance(message, JSONRPCRequest)
            if coerce_request_id(message.id) in self._pending:
                # Not served: its answer could not be told from the first's, and admitting it would put two
                # requests in flight under one entry (the SDK overwrites its own, too), past ``_room``'s bound.
                await self._refuse(out, message.id, INVALID_REQUEST, ID_IN_USE)
                return None
            await self._room(out)
        context = contextvars.copy_context()
        try:
            context.run(CURRENT_AUTHENTICATION.set, self._authenticate(self._headers))
        except MemoryCoreError as error:
            if is_request:
                assert isinstance(message, JSONRPCRequest)
                await self._refuse(out, message.id, refusal_code(status_for(error)), explained(error))
            return None
        guidance = None
        if self._guidance is not None and answers_with_guidance(decoded):
            guidance = await guidance_within(
                self._guidance, self._headers, min(GUIDANCE_TIME_LIMIT_SECONDS, self._time_limit / 2))
        context.run(CURRENT_GUIDANCE.set, guidance)
        if is_request:
            assert isinstance(message, JSONRPCRequest)
            # Still not in: only answers and cancellations (removals) ran while this request waited for room.
            self._pending[coerce_request_id(message.id)] = asyncio.get_running_loop().time()
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            cancelled = as_request_id((message.params or {}).get("requestId"))
            if cancelled is not None:
                self._settle(cancelled)
        return context, SessionMessage(message, metadata=self._metadata)
