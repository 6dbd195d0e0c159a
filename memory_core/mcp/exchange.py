"""One JSON-RPC request in, one JSON reply out: the stateless exchange of the handshake-era protocol.

In stateless JSON mode every request of the 2024-11-05 … 2025-11-25 revisions
is already a self-contained exchange: no session id, no stream to resume, no
back channel for server-initiated requests, and request-scoped notifications
have no wire. The SDK still serves each one by building a streamable-HTTP
transport, a JSON-RPC dispatcher over memory streams and a task group, then
tearing them down: about half of a small tool call's time on the server
(docs/performance.md, "Where the time went"). ``SingleExchange`` hands the
message straight to the SDK's own single-exchange kernel (``serve_one``, the
entry the SDK uses for 2026-07-28 requests), so validation, the tool handlers,
result serialization and the OpenTelemetry middleware (its span made while a tracer
provider is set: ``server.SpansWhenTraced``) are the SDK's.

Only requests ``accepts`` says yes to take this path; everything else (the
2026-07-28 era, notifications, responses, batches, a client that does not take
JSON, ``subscriptions/listen``) goes to the SDK's app as before.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_one
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import DEFAULT_NEGOTIATED_VERSION, INTERNAL_ERROR, ErrorData, RequestId
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import Scope

from memory_core.mcp.envelope import request_id_of

log = logging.getLogger("memory_core.mcp")

@dataclass
class _ExchangeContext:
    """The SDK's ``DispatchContext`` for one stateless request: no back channel, no notification wire.

    As the SDK's stateless JSON transport: a server-initiated request raises
    ``NoBackChannelError``; notifications and progress scoped to the request are
    dropped (a JSON reply has no room for them).
    """

    request_id: RequestId
    message_metadata: ServerMessageMetadata
    transport: TransportContext = field(
        default_factory=lambda: TransportContext(kind="streamable-http", can_send_request=False)
    )
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = field(default=False, init=False)

    async def send_raw_request(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> None:
        return None

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


def _accepts_json(accept: str) -> bool:
    # As the SDK's check_accept_headers: application/json, application/* or */*.
    types = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return bool(types & {"application/json", "application/*", "*/*"})


class SingleExchange:
    """Answers one handshake-era JSON-RPC request through the SDK's ``serve_one``.

    ``server`` is the SDK's low-level server; ``lifespan_state`` returns what its
    lifespan yielded (read per request: the lifespan starts after this is built).
    """

    def __init__(self, server: Server[Any], lifespan_state: Callable[[], Any]) -> None:
        self._server = server
        self._lifespan_state = lifespan_state

    @staticmethod
    def accepts(message: object, headers: Mapping[str, str]) -> bool:
        """True for one JSON-RPC request of a handshake-era revision from a client that takes JSON.

        ``headers``: the request's headers, names in lower case.
        """
        # A usable id (a string or an integer), not merely an "id" member: a notification that
        # carries "id": null is a notification, left to the SDK's own entry as the SDK reads it.
        if not isinstance(message, dict) or request_id_of(message) is None:
            return False
        if not isinstance(message.get("method"), str):
            return False
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return False  # the 2026-07-28 era (or a version to refuse): the SDK's own entry
        return message["method"] != "subscriptions/listen" and _accepts_json(headers.get("accept", ""))

    async def answer(self, message: dict[str, Any], headers: Mapping[str, str], scope: Scope) -> bytes:
        """The JSON-RPC reply (result or error) to ``message``, serialized; never raises for a handler's failure.

        A handler's unexpected exception is logged and answered as a generic internal
        error, never with its text (the SDK's legacy path would send ``str(exc)``).
        """
        request_id: RequestId = message["id"]
        params = message.get("params")
        connection = Connection.from_envelope(headers.get(MCP_PROTOCOL_VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION),
                                              None, None)
        context = _ExchangeContext(request_id, ServerMessageMetadata(request_context=Request(scope)))
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        try:
            reply["result"] = await serve_one(self._server, context, message["method"], params,
                                              connection=connection, lifespan_state=self._lifespan_state())
        except Exception as error:
            data = handler_exception_to_error_data(error)
            if data is None:
                log.exception("MCP handler for %r raised", message["method"])
                data = ErrorData(code=INTERNAL_ERROR, message="Internal server error")
            reply["error"] = data.model_dump(by_alias=True, exclude_none=True, mode="json")
        return json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode()
