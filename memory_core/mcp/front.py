"""The front of the MCP SDK's streamable HTTP app: every rule that holds before the protocol runs.

``McpHttpApp`` wraps the SDK's app (see its docstring for the order of the
rules). It is loaded with the SDK on the first MCP request, never at import
of ``function_app`` (``memory_core.mcp.transport`` imports it lazily).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
from mcp_types import INTERNAL_ERROR, INVALID_REQUEST
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memory_core.domain.errors import MemoryCoreError
from memory_core.edge.body import header_value, read_bounded_body
from memory_core.edge.errors import JSON, headers_for, status_for
from memory_core.edge.media import require_json
from memory_core.edge.names import ADDRESS_SCOPE_KEY, Address, AppNames
from memory_core.identity.headers import carries_signed_token
from memory_core.identity.model import Authentication
from memory_core.mcp.context import CURRENT_AUTHENTICATION, CURRENT_GUIDANCE, CURRENT_PLACE
from memory_core.mcp.envelope import (
    REQUEST_TIME_LIMIT_SECONDS,
    NotJson,
    decode,
    decode_error,
    envelope_error,
    jsonrpc_error,
    refusal_code,
    request_id_of,
    too_large,
)
from memory_core.mcp.exchange import SingleExchange
from memory_core.mcp.guidance import (
    GUIDANCE_TIME_LIMIT_SECONDS,
    AgentGuidance,
    answers_with_guidance,
    guidance_within,
)
from memory_core.mcp.stalled import AbandonedCalls, HeldPlace, answers_without_the_store, share_of
from memory_core.mcp.transport import MCP_PATH

log = logging.getLogger("memory_core.mcp")



async def _send_json(send: Send, status: int, document: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
    await _send_body(send, status, json.dumps(document).encode(), headers)


async def _send_body(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    """A whole JSON response: ``body`` already serialized."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A receive that yields the already-read ``body`` once, then defers to the server's."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class McpHttpApp:
    """The front of the SDK's streamable HTTP app: every rule that holds before the protocol runs.

    For each request, in this order:

    1. anything but POST answers 405 (a stateless server has no stream to
       resume and no session to end);
    2. the Host and Origin are the ones the edge admitted (``Call.address``, handed over in the scope), taken
       without a second check; a request that comes without them (a caller without the edge) is checked here by
       the edge's rule (``names``, ``AppNames.admitted``): a Host or Origin that is not this app's answers 421 or
       403 as the edge answers it. A Content-Type the edge's rule refuses (``memory_core.edge.media``) answers
       415, before anything else is read; every later step, and the SDK, sees the request with the canonical
       Host, Origin and Content-Type (``addressed_scope``);
    3. a body over ``max_body_bytes`` answers 413; JSON that is not a JSON-RPC
       message answers 400 without echoing any value, and so does a header value
       that is not UTF-8 (``header_text``);
    Steps 4 and 5 run within ``time_limit`` seconds; past it the request
    answers 503 (JSON-RPC internal error, Retry-After) and its work is cancelled.
    While too many calls abandoned this way still run (``abandoned``, ``memory_core.mcp.stalled``: a stalled
    store), a request answers 503 with Retry-After before step 4, unless it needs no store
    (``stalled.answers_without_the_store``: a ping, the handshake, the tool list, a notification). Once step 4 has
    named the caller, such a request takes a place in the user's share of the worker threads (``AbandonedCalls.hold``,
    ``stalled.share_of``: the authenticated user, whatever instance the request names), which its store calls run in:
    while the user's own calls fill the share, it waits in the share's line (first come, first served) behind fewer
    than ``queue_length`` others for at most ``queue_wait`` seconds (and half the time limit), and past either answers
    429 ``too_many_calls`` with Retry-After; while every place is held by an abandoned call (a stalled store), the same
    503 at once. So one user's calls wait for or refuse that user, not everyone. A wait ends when the request is
    cancelled (the host's, when its client goes away: ``memory_core.local.host``) and leaves the line.

    4. the caller is authenticated (``authenticate``; for a signed token in a
       worker thread: its check may fetch an identity provider's keys): a missing or bad credential
       answers 401 with ``WWW-Authenticate`` (``challenge`` may extend it,
       e.g. with the OAuth resource metadata URL); keys that cannot be fetched
       answer 503 with Retry-After. Nothing about the agent, not even its
       guidance, is read before this succeeds. The result is the request's
       ``CURRENT_AUTHENTICATION``, which the tools use;
    5. the agent's guidance is read (for a request whose answer carries it:
       ``guidance.answers_with_guidance``; a tools/call does not read the
       agent's settings), given up for the base text past
       ``guidance.guidance_within``'s share of the bound, and the SDK answers.
       A handshake-era request that ``exchange`` accepts is answered by it
       (the SDK's single-exchange kernel, without a per-request session);
       anything else by ``inner``.
    """

    def __init__(
        self,
        inner: ASGIApp,
        path: str = MCP_PATH,
        guidance: Callable[[Mapping[str, str]], Awaitable[AgentGuidance | None]] | None = None,
        *,
        authenticate: Callable[[Mapping[str, str]], Authentication] | None = None,
        challenge: Callable[[Scope, str], str] | None = None,
        names: AppNames | None = None,
        max_body_bytes: int = 1024 * 1024,
        time_limit: float = REQUEST_TIME_LIMIT_SECONDS,
        exchange: SingleExchange | None = None,
        abandoned: AbandonedCalls | None = None,
        queue_length: int = 0,
        queue_wait: float = 0.0,
    ) -> None:
        """``exchange`` answers the requests it accepts without ``inner`` (``memory_core.mcp.exchange``).
        ``abandoned``: the count of abandoned worker-thread calls this front checks and adds its own to (default: a
        count of this front's own; ``build_asgi_app`` passes the one its backend joins, the process's).
        ``names``: the app's names, for step 2 when the edge's address is not handed over (None: no check, for a
        test's app).
        ``queue_length``, ``queue_wait``: a user's line for a place in their share (MEMORY_MCP_QUEUE_LENGTH and
        MEMORY_MCP_QUEUE_WAIT; the defaults here: no line, refused at once)."""
        self._exchange = exchange
        self._abandoned = abandoned if abandoned is not None else AbandonedCalls()
        self._inner = inner
        self._path = path
        self._guidance = guidance
        self._authenticate = authenticate
        self._challenge = challenge
        self._names = names
        self._max_body_bytes = max_body_bytes
        self._time_limit = time_limit
        self._queue_length = queue_length
        self._queue_wait = min(queue_wait, time_limit / 2)  # a call that waited has time left to run

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._inner(scope, receive, send)
            return
        if scope["method"].upper() != "POST":
            error = jsonrpc_error(None, INVALID_REQUEST,
                                  "Method Not Allowed: this stateless MCP endpoint takes POST only")
            await _send_json(send, 405, error, [(b"allow", b"POST")])
            return
        try:
            scope = addressed_scope(scope, self._names)
        except MemoryCoreError as refused:  # the body is not read: id null, as the edge's own refusal
            await self._refuse_caller(scope, send, None, refused)
            return
        body = await read_bounded_body(receive, self._max_body_bytes)
        if body is None:
            refusal = too_large(self._max_body_bytes, "request body")
            await _send_json(send, 413, jsonrpc_error(None, INVALID_REQUEST, refusal), [])
            return
        decoded = decode(body)
        if isinstance(decoded, NotJson):  # the SDK's own parser would let some of it through
            await _send_json(send, 400, decode_error(decoded), [])
            return
        invalid = envelope_error(decoded)
        if invalid is not None:
            await _send_json(send, 400, jsonrpc_error(invalid[0], INVALID_REQUEST, invalid[1]), [])
            return
        if self._abandoned.full and not answers_without_the_store(decoded):
            # the store has stalled: no new request starts a thread to wait on it as well
            await self._refuse_caller(scope, send, decoded, self._abandoned.refusal())
            return
        headers = header_text(scope)
        if headers is None:
            await _send_json(send, 400, jsonrpc_error(request_id_of(decoded), INVALID_REQUEST,
                                                      "header values must be UTF-8 text"), [])
            return
        await self._answer_in_time(send, decoded, lambda out: self._answer(scope, body, receive, out, decoded, headers))

    async def _answer(self, scope: Scope, body: bytes, receive: Receive, send: Send, decoded: Any,
                      headers: Mapping[str, str]) -> None:
        """Steps 4 and 5 (the caller, the guidance, the protocol's answer), all within the time bound."""
        authentication = None
        if self._authenticate is not None:
            try:
                if carries_signed_token(headers):
                    # Off the event loop: a token naming a key not seen yet makes the verifier fetch the
                    # key set over HTTP (up to its timeout), which must not hold up every other request.
                    # Abandoned at the time bound; the fetch's own timeout ends the thread.
                    authentication = await self._abandoned.run(self._authenticate, headers)
                else:  # a key compared, a header parsed: no I/O, and a thread's hop would cost 0.1-0.2 ms a call
                    authentication = self._authenticate(headers)
            except MemoryCoreError as error:
                await self._refuse_caller(scope, send, decoded, error)
                return
        held: HeldPlace | None = None
        if authentication is not None and not answers_without_the_store(decoded):
            try:  # this user's own calls fill their share: this one waits or is refused, others are still served
                held = await self._abandoned.hold(share_of(authentication.caller), line=self._queue_length,
                                                  wait=self._queue_wait)
            except MemoryCoreError as error:
                await self._refuse_caller(scope, send, decoded, error)
                return
        try:
            await self._answer_holding(scope, body, receive, send, decoded, headers, authentication, held)
        finally:
            if held is not None:
                self._abandoned.give_back(held)  # or, with a call abandoned in it, as that call returns

    async def _answer_holding(self, scope: Scope, body: bytes, receive: Receive, send: Send, decoded: Any,
                              headers: Mapping[str, str], authentication: Authentication | None,
                              held: HeldPlace | None) -> None:
        """Step 5, the request's calls running in ``held`` (``CURRENT_PLACE``)."""
        inner_scope = {**scope, "path": self._path, "raw_path": self._path.encode(), "root_path": ""}
        caller_token = CURRENT_AUTHENTICATION.set(authentication)
        place_token = CURRENT_PLACE.set(held)
        guidance = None
        if self._guidance is not None and answers_with_guidance(decoded):
            limit = min(GUIDANCE_TIME_LIMIT_SECONDS, self._time_limit / 2)
            guidance = await guidance_within(self._guidance, headers, limit)
        token = CURRENT_GUIDANCE.set(guidance)
        try:
            if self._exchange is not None and self._exchange.accepts(decoded, headers):
                await self._single_exchange(decoded, headers, inner_scope, send)
            else:
                await self._inner(inner_scope, _replaying(body, receive), send)
        finally:
            CURRENT_GUIDANCE.reset(token)
            CURRENT_PLACE.reset(place_token)
            CURRENT_AUTHENTICATION.reset(caller_token)

    async def _refuse_caller(self, scope: Scope, send: Send, decoded: Any, error: MemoryCoreError) -> None:
        """The refusal's status, JSON-RPC code (``refusal_code``) and headers (``headers_for``, as REST sends them);
        a 401's challenge extended by ``challenge`` (e.g. with the OAuth resource metadata URL)."""
        status = status_for(error)
        headers = headers_for(error)
        if status == 401 and self._challenge is not None:
            headers["WWW-Authenticate"] = self._challenge(scope, headers["WWW-Authenticate"])
        document = jsonrpc_error(request_id_of(decoded), refusal_code(status), error.message, error.code)
        await _send_json(send, status, document,
                         [(k.lower().encode(), v.encode("latin-1", "replace")) for k, v in headers.items()])

    async def _single_exchange(self, message: dict[str, Any], headers: Mapping[str, str], scope: Scope,
                               send: Send) -> None:
        assert self._exchange is not None
        await _send_body(send, 200, await self._exchange.answer(message, headers, scope), [])

    async def _answer_in_time(self, send: Send, decoded: Any, answer: Callable[[Send], Awaitable[None]]) -> None:
        """Run ``answer`` (it sends the whole response through the send it is given) within the time limit.

        Past the limit its work is cancelled and, if nothing was sent yet, the answer is a 503.
        """
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        with anyio.move_on_after(self._time_limit) as bound:
            await answer(tracking_send)
        if bound.cancelled_caught:
            log.warning("MCP request cancelled after %.0f s", self._time_limit)
            if not started:
                message = f"the request did not finish within {self._time_limit:g} s; retry later"
                await _send_json(send, 503, jsonrpc_error(request_id_of(decoded), INTERNAL_ERROR, message),
                                 [(b"retry-after", b"1")])


def header_text(scope: Scope) -> dict[str, str] | None:
    """The request's headers as text, names in lower case (a repeated name: its last value); None when a value is
    not UTF-8. UTF-8 is how ``memory_core.mcp.functions_bridge`` (like ``AsgiMiddleware``) encodes the text the
    Functions host hands over, so this is the text a REST function reads from ``req.headers``."""
    try:
        return {k.decode("utf-8").lower(): v.decode("utf-8") for k, v in scope.get("headers", [])}
    except UnicodeDecodeError:  # only an app served without the bridge (a test's server) sees raw bytes
        return None


def _authority_of_scope(scope: Scope) -> str:
    """The Host header, else the scope's server (ASGI's reading: what ``AsgiMiddleware`` and
    ``functions_bridge.scope_of`` take from the URL the edge checked when there is no Host); "" for neither."""
    host = header_value(scope.get("headers", []), b"host")
    if host is None and scope.get("server"):
        name, port = scope["server"]
        host = f"[{name}]:{port}" if ":" in name else f"{name}:{port}"
    return host or ""


def addressed_scope(scope: Scope, names: AppNames | None) -> Scope:
    """``scope`` with its Host and Origin headers replaced by their canonical forms, and its Content-Type by
    ``application/json``.

    The canonical forms are the ``Address`` the edge admitted, when the scope carries it (``ADDRESS_SCOPE_KEY``:
    the ``mcp`` function's request, through ``functions_bridge.answer_with``), taken as they are: the edge has
    checked them (``edge.admission.admit``), and the rule is not run twice. Else, for a caller without the edge
    (the endpoint or this app called directly, as tests do), the edge's rule is run here (``AppNames.admitted``:
    lower case, an Origin without its ``/``; a missing Host given as the server the scope names), and with
    ``names`` None Host and Origin are left as they are (a test's app).

    Raises what ``AppNames.admitted`` raises when it runs: ``MisdirectedRequest`` (421), ``Forbidden`` (403); then
    ``UnsupportedMediaType`` (415) for a Content-Type that is not JSON by the edge's rule (``edge.media.is_json``:
    ``application/json`` in any case and with any parameters, or ``application/*+json``; its docstring says why
    /api/mcp takes ``+json`` as every route does), or none. The edge checks it only for a body that is not empty;
    here it holds for every request, as the SDK's own check would.

    Why canonical headers rather than the SDK's checks turned off: the edge's rules are the only ones that decide
    (one place; host names compare without case, RFC 9110 4.2.3; media types too, RFC 9110 8.3.1), and the SDK's
    checks, which compare strings exactly and answer plain text (its DNS-rebinding check's 421, 403 and 400
    ``Invalid Content-Type header``) or a 415 of their own, stay on behind them as a second line configured from
    the same names (``transport.security_settings``): given only what the edge accepted, in the form those
    settings list, they accept it, and they still refuse a request that reaches them without passing here.
    """
    headers = scope.get("headers", [])
    address = scope.get(ADDRESS_SCOPE_KEY)
    if not isinstance(address, Address) and names is not None:
        address = names.admitted(_authority_of_scope(scope), header_value(headers, b"origin"))
    require_json(header_value(headers, b"content-type"))
    canonical = [(b"content-type", JSON.encode("ascii"))]
    if isinstance(address, Address):
        canonical.append((b"host", address.host.encode("ascii")))
        if address.origin is not None:
            canonical.append((b"origin", address.origin.encode("ascii")))
    replaced = {b"content-type", b"host", b"origin"} if isinstance(address, Address) else {b"content-type"}
    kept = [(k, v) for k, v in headers if k.lower() not in replaced]
    return {**scope, "headers": [*kept, *canonical]}


def origin_of_scope(scope: Scope) -> str:
    """``scheme://host`` of a request whose Host has already been checked against this app's names."""
    return f"{scope.get('scheme', 'https')}://{_authority_of_scope(scope) or 'localhost'}"
