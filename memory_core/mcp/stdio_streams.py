"""The stdio server's read and write streams: the wire handed to the SDK with no task or memory stream between.

The SDK's serving loop reads messages from a ``ReadStream`` and writes answers
to a ``WriteStream`` (``mcp.shared._stream_protocols``). A memory stream and a
task of their own between the wire and the server cost a task switch per
message each way: together 0.045 ms of a 0.35 ms ``get_memory`` served in
process (docs/performance.md, "The stdio front without relays"). Here:

- ``AdmittedLines`` reads, checks and admits the next line of input when the
  server asks for its next message, in the task that asks, and can read the
  first request ahead (``opening_request``) so the protocol era is chosen
  without the SDK's relay;
- ``AnswerStream`` writes each answer to the output in the task that answers.
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import AsyncGenerator, Callable

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCRequest, JSONRPCResponse, RequestId

from memory_core.mcp.stdio_wire import StdoutClosed, WireOut

Admitted = tuple[contextvars.Context, SessionMessage]
"""A message the front let through, with the context it is to be served in (the caller's authentication, guidance)."""

FRAMES_KEPT_BEFORE_THE_FIRST_REQUEST = 8
"""Notifications kept to be served after the first request is seen; later ones are dropped (as the SDK's loop does)."""


class AdmittedLines:
    """The server's read stream: ``messages`` advanced one message at a time, as the server asks.

    ``last_context`` is the context of the message last received: the SDK
    serves each message in its own (``ReadStream``'s documented duck typing).
    A closed output while refusing a line (``StdoutClosed``) calls
    ``output_closed`` and ends the stream.
    """

    def __init__(self, messages: AsyncGenerator[Admitted], output_closed: Callable[[], None]) -> None:
        self._messages = messages
        self._output_closed = output_closed
        self._lead: deque[Admitted] = deque()
        self.last_context: contextvars.Context | None = None

    async def opening_request(self) -> JSONRPCRequest | None:
        """The first request (None if input ends first), read ahead: ``receive`` still returns it and what came before.

        At most ``FRAMES_KEPT_BEFORE_THE_FIRST_REQUEST`` notifications before it are kept.
        """
        while True:
            try:
                admitted = await self._next()
            except anyio.EndOfStream:
                return None
            message = admitted[1].message
            if isinstance(message, JSONRPCRequest):
                self._lead.append(admitted)
                return message
            if len(self._lead) < FRAMES_KEPT_BEFORE_THE_FIRST_REQUEST:
                self._lead.append(admitted)

    async def receive(self) -> SessionMessage | Exception:
        """The next admitted message. Raises ``anyio.EndOfStream`` at end of input or of output."""
        self.last_context, message = self._lead.popleft() if self._lead else await self._next()
        return message

    async def _next(self) -> Admitted:
        try:
            return await anext(self._messages)
        except StopAsyncIteration:
            raise anyio.EndOfStream from None
        except StdoutClosed:
            self._output_closed()
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        await self._messages.aclose()

    def __aiter__(self) -> AdmittedLines:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> AdmittedLines:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class AnswerStream:
    """The server's write stream: each message one ``out.write`` of a whole line, by the task that sends it.

    Lines never interleave: a ``WireOut`` takes a whole line in one step
    (``PipeOut`` hands it to the event loop's buffer, ``BlockingOut`` writes it
    without awaiting). ``answered`` is called with a response's id as it is
    written. A closed output calls ``output_closed`` and raises
    ``anyio.BrokenResourceError``, which the SDK takes as a gone client; a send
    after ``aclose`` raises ``anyio.ClosedResourceError``.
    """

    def __init__(self, out: WireOut, answered: Callable[[RequestId], None], output_closed: Callable[[], None]) -> None:
        self._out = out
        self._answered = answered
        self._output_closed = output_closed
        self._closed = False

    async def send(self, sent: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        message = sent.message
        if isinstance(message, (JSONRPCResponse, JSONRPCError)) and message.id is not None:
            self._answered(message.id)
        try:
            await self._out.write(message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")
        except StdoutClosed:
            self._output_closed()
            raise anyio.BrokenResourceError from None

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> AnswerStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
