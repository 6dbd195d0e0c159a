"""The rules every MCP message meets before the protocol runs, whatever carried it (HTTP or stdio).

Both fronts (``memory_core.mcp.front`` for streamable HTTP, ``memory_core.mcp.stdio``
for a local process) pass every message through these, so the two answer a hostile
or broken message alike:

- a message over ``max_message_bytes`` is refused (Invalid Request) unread;
- text that is not JSON is a parse error; JSON that is not a JSON-RPC message is
  an Invalid Request whose message names where and what is wrong, never the value
  found there (``envelope_error``);
- JSON the strict decoder refuses (a lone surrogate escape, a member named twice) is
  an Invalid Request answered with the request's id, read leniently, so a client can
  match the refusal to its request instead of waiting for its own timeout (``decode``);
- a request whose id is not a string or an integer (null, a number with a fraction,
  true, an object) is an Invalid Request answered with id null, as JSON-RPC 2.0 asks,
  instead of passing for a notification that nobody answers (``BAD_REQUEST_ID``);
- a request is answered within ``REQUEST_TIME_LIMIT_SECONDS``;
- a caller refused before the protocol runs answers ``refusal_code`` of the HTTP status: a
  missing or bad credential ``UNAUTHENTICATED``, a service that cannot check credentials now
  (503) an internal error, anything else an Invalid Request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp_types import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    JSONRPCMessage,
    JSONRPCNotification,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from memory_core.wire import json_text
from memory_core.wire.field_names import field_name

if TYPE_CHECKING:
    from memory_core.settings import Settings

REQUEST_TIME_LIMIT_SECONDS = 30.0
"""Every MCP request is answered within this bound (a tool call normally takes milliseconds).

It stays well under the Functions timeout, so a stuck store call cannot hold a
worker until the host kills it."""

UNAUTHENTICATED = -32001
"""JSON-RPC code of a 401: in the implementation-defined server-error range, as other MCP servers use it."""


def refusal_code(status: int) -> int:
    """The JSON-RPC code of a caller refused before the protocol runs, from the refusal's HTTP status.

    401: ``UNAUTHENTICATED``; a server-side status (503: the identity provider's keys cannot be
    fetched) or 429 (the caller's calls past their share's line): internal error, which a client may
    retry, as it retries a request past the time bound (and as 429 was answered as a 503 before);
    anything else (an unusable X-USER-IDENTITY, 400/403/421): Invalid Request.
    """
    if status == 401:
        return UNAUTHENTICATED
    return INTERNAL_ERROR if status >= 500 or status == 429 else INVALID_REQUEST


def max_message_bytes(settings: Settings) -> int:
    """The largest JSON-RPC message accepted: room for the largest write, JSON-escaped (as REST allows)."""
    from memory_core.edge import write_body_limit

    return write_body_limit(settings)


def too_large(limit: int, what: str = "message") -> str:
    """The message refusing a ``what`` (the message, a request body) over ``limit`` bytes."""
    return f"Payload Too Large: the {what} exceeds {limit} bytes"


def jsonrpc_error(request_id: Any, code: int, message: str, reason: str | None = None) -> dict[str, Any]:
    """A JSON-RPC error response; ``reason``: the REST error code of a refusal (``MemoryCoreError.code``), as the
    error's ``data.code``, so a client tells refusals apart without reading the message."""
    error: dict[str, Any] = {"code": code, "message": message}
    if reason is not None:
        error["data"] = {"code": reason}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


BAD_REQUEST_ID = "Invalid Request: a request's id must be a string or an integer"
"""Why a request with an unusable id is refused (the id itself is never echoed)."""

@dataclass(frozen=True)
class NotJson:
    """What ``decode`` answers for text that is not (acceptable) JSON: why, never quoting the text.

    ``is_json``: the text is JSON by RFC 8259's grammar, refused only by the strict decoder's
    rules (a lone surrogate escape, a member named twice); ``request_id`` is then its id as a
    lenient reading finds it (None if it has none usable).
    """

    reason: str
    is_json: bool = False
    request_id: str | int | None = None


def decode(body: bytes) -> Any:
    """The body as JSON (the project's strict decoder), or ``NotJson`` saying why it is refused.

    Refused: invalid UTF-8 or JSON, unpaired surrogates, nesting past the recursion limit, an
    object naming a member twice.
    """
    try:
        return json_text.loads(body)
    except ValueError as error:
        lenient = _read_leniently(body)
        if lenient is None:
            return NotJson(str(error))
        return NotJson(str(error), is_json=True, request_id=request_id_of(lenient[0]))


def _first_member_wins(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members: dict[str, Any] = {}
    for name, value in pairs:
        members.setdefault(name, value)
    return members


def _read_leniently(body: bytes) -> tuple[Any] | None:
    """(value,) of text the strict decoder refused, read as the stdlib reads JSON, or None if even that fails.

    Only to find the id to answer a refusal with: the value is never served. The stdlib
    keeps lone surrogates; a member named twice keeps its first value here. Invalid UTF-8
    and nesting past the recursion limit stay unreadable (no id: a parse error).
    """
    try:
        return (json.loads(body.decode("utf-8"), object_pairs_hook=_first_member_wins),)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None


def decode_error(refused: NotJson) -> dict[str, Any]:
    """The JSON-RPC error answering a body or line ``decode`` refused.

    Text that is not JSON: a parse error (-32700) with id null, there being no id to read.
    JSON only the strict rules refuse: an Invalid Request (-32600, "not a valid Request
    object") with the request's id, so the client can match it; null if it has none usable.
    """
    if refused.is_json:
        return jsonrpc_error(refused.request_id, INVALID_REQUEST, f"Invalid Request: {refused.reason}")
    return jsonrpc_error(None, PARSE_ERROR, f"Parse error: {refused.reason}")


def validate_envelope(decoded: Any) -> JSONRPCMessage | tuple[Any, str]:
    """The JSON-RPC message ``decoded`` (JSON, not ``NotJson``) is, or (id, message) saying why it is none.

    The message names where and what is wrong, never the value found there: the
    SDK's own message for this case carries pydantic's ``input_value``, which
    would echo a caller's secret back.
    """
    try:
        message = jsonrpc_message_adapter.validate_python(decoded, by_name=False)
    except ValidationError as error:
        first = error.errors(include_input=False, include_url=False, include_context=False)[0]
        where = field_name(first["loc"], whole="message")
        return request_id_of(decoded), f"Invalid Request: not a JSON-RPC 2.0 message ({where}: {first['msg']})"
    except RecursionError:
        return None, "Invalid Request: the message is nested too deeply"
    # The SDK's notification model ignores members it does not know, so a request whose id
    # is null (MCP forbids it) or not a string or an integer validates as a notification and
    # would go unanswered: the client waits for its timeout. A notification method keeps the
    # SDKs' leniency (some clients send notifications with "id": null).
    if (isinstance(message, JSONRPCNotification) and isinstance(decoded, dict) and "id" in decoded
            and not message.method.startswith("notifications/")):
        return None, BAD_REQUEST_ID
    return message


def envelope_error(decoded: Any) -> tuple[Any, str] | None:
    """(id, message) when the body (``decoded`` by ``decode``) is JSON but not a JSON-RPC message; None otherwise.

    A body that is not JSON at all is None here: it is a parse error (``decode_error``).
    """
    if isinstance(decoded, NotJson):
        return None
    found = validate_envelope(decoded)
    return found if isinstance(found, tuple) else None


def request_id_of(decoded: Any) -> Any:
    """The request's id, for an error answering it: a string or an integer, else None."""
    found = decoded.get("id") if isinstance(decoded, dict) else None
    return found if isinstance(found, (str, int)) and not isinstance(found, bool) else None
