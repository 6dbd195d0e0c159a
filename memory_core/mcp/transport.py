"""The MCP endpoint's transport: streamable HTTP, stateless, JSON responses, in an Azure Function.

- ``mcp``: the Azure Function, behind the edge (``memory_core.edge``) like
  every route: body limit, Host and Origin, JSON content type, one error
  mapping (``Access.PER_MESSAGE``: the edge leaves authentication to the
  endpoint, which checks the caller on every request before the protocol
  runs and answers a JSON-RPC 401 carrying the OAuth discovery challenge).
- ``security_settings``: the SDK's DNS-rebinding protection stays on as a
  second line, built from the edge's own list of the app's names; the front
  gives it the Host and Origin in the canonical form the edge admitted
  (``Call.address``, ``memory_core.mcp.front.addressed_scope``), so it never
  refuses for case alone what the edge accepted.
- ``build_asgi_app``: the SDK's app behind ``memory_core.mcp.front.McpHttpApp``:
  POST only (405 otherwise), the Host and Origin the edge admitted (checked by the edge's rule only when a
  caller without the edge, a test's, hands none), the body bounded and checked
  as JSON-RPC without echoing it, the caller authenticated (401 with
  ``WWW-Authenticate``) before the agent's guidance is read, and every request
  answered within a time bound.
- ``FunctionsMcpEndpoint`` and ``mcp``: the Functions glue. The ASGI app is
  built on the first request from ``composition.runtime()`` (nothing at import
  time) and its lifespan, which the SDK's session manager needs, is started
  once per process with ``AsgiMiddleware.notify_startup()``; each request goes
  to it through ``memory_core.mcp.functions_bridge`` (the middleware's per-request
  conversion, without its WSGI fields).

Any instance of a scaled-out app answers any request: no session id is issued
and nothing is kept between requests.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import azure.functions as func

from memory_core import composition
from memory_core.composition import Runtime
from memory_core.domain.errors import MemoryCoreError
from memory_core.edge import Access, Call, EndpointSpec, endpoint, write_body_limit
from memory_core.edge.errors import JSON, headers_for, internal_error, status_for
from memory_core.edge.names import LOOPBACK_NAMES, Address, AppNames, is_local

# The MCP SDK, the tools and the backend load on the first MCP request, not at
# import: the SDK alone costs about 0.35 s, paid by every cold instance (issue #15).
if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

    from memory_core.identity import Authenticator
    from memory_core.mcp.backend import MemoryBackend
    from memory_core.mcp.front import McpHttpApp
    from memory_core.mcp.stalled import AbandonedCalls
    from memory_core.settings import Settings


log = logging.getLogger("memory_core.mcp")

MCP_PATH = "/api/mcp"
"""The path the SDK app serves: the request's whole path, /api route prefix included, as
``functions_bridge.scope_of`` gives it (and AsgiMiddleware did)."""

__all__ = ["is_local"]


def security_settings(settings: Settings) -> TransportSecuritySettings:
    """DNS-rebinding protection accepting only this app's host names (``AppNames``), with or without a port.

    Origins are https for deployed names; http or https for loopback names. The SDK compares exact strings
    (case too): it accepts the canonical forms ``AppNames.admitted`` answers, which is what the front gives it.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    hosts: list[str] = []
    origins: list[str] = []
    for name in AppNames.from_settings(settings).names:
        hosts += [name, f"{name}:*"]
        schemes = ("http", "https") if name in LOOPBACK_NAMES else ("https",)
        origins += [f"{scheme}://{name}{port}" for scheme in schemes for port in ("", ":*")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def max_request_bytes(settings: Settings) -> int:
    """The largest JSON-RPC body accepted: room for the largest write, JSON-escaped (as REST allows)."""
    from memory_core.mcp.envelope import max_message_bytes

    return max_message_bytes(settings)


def build_asgi_app(
    settings: Settings, backend: MemoryBackend, auth: Authenticator, *, abandoned: AbandonedCalls,
    single_exchange: bool = True,
) -> McpHttpApp:
    """The whole MCP HTTP app: tools over ``backend``, stateless JSON streamable HTTP, POST only.

    In front of the SDK, ``McpHttpApp`` authenticates every request with ``auth`` (a 401 names the
    OAuth metadata in entra mode), reads the agent's guidance only after that, and bounds each
    request in time. With ``single_exchange`` (the default) a handshake-era request is answered
    by ``memory_core.mcp.exchange`` without a per-request SDK session; False sends every request
    through the SDK's app (tests compare the two). ``abandoned``: the count of abandoned worker-thread
    calls the front checks and adds to; pass the one ``backend`` joins, so the bound on them holds
    for both (``memory_core.mcp.stalled``). A user's calls past their share wait in a line of
    MEMORY_MCP_QUEUE_LENGTH for at most MEMORY_MCP_QUEUE_WAIT seconds (``McpHttpApp``), in this process.
    """
    from memory_core.mcp.authorization import with_resource_metadata
    from memory_core.mcp.exchange import SingleExchange
    from memory_core.mcp.front import McpHttpApp, origin_of_scope
    from memory_core.mcp.guidance import guidance_reader
    from memory_core.mcp.tools import build_server

    mcp_logger = logging.getLogger("mcp")
    if mcp_logger.level == logging.NOTSET:
        mcp_logger.setLevel(logging.WARNING)  # the SDK logs every stateless request at INFO
    server = build_server(backend, auth, settings.memory_default_instance_id)
    inner = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=security_settings(settings),
        max_request_body_size=max_request_bytes(settings),
    )
    low = server._lowlevel_server  # private API: mcp is pinned to 2.x (requirements.txt)
    exchange = SingleExchange(low, lambda: low.session_manager._lifespan_state) if single_exchange else None
    return McpHttpApp(
        inner,
        exchange=exchange,
        guidance=guidance_reader(settings, backend),
        authenticate=auth.authenticate,
        challenge=lambda scope, challenge: with_resource_metadata(challenge, settings, origin_of_scope(scope)),
        names=AppNames.from_settings(settings),
        max_body_bytes=max_request_bytes(settings),
        time_limit=settings.memory_mcp_request_timeout,
        abandoned=abandoned,
        queue_length=settings.memory_mcp_queue_length,
        queue_wait=settings.memory_mcp_queue_wait,
    )


class FunctionsMcpEndpoint:
    """The MCP app inside an async HTTP trigger: built on first use, lifespan started once.

    One instance serves a whole process (the worker runs async functions on
    one event loop). A failure to build or start answers HTTP 500 with an
    incident id (a JSON-RPC internal error) and is retried on the next request.
    """

    def __init__(
        self,
        runtime_factory: Callable[[], Runtime] = composition.runtime,
        backend_factory: Callable[[Runtime], MemoryBackend] = composition.build_mcp_backend,
        *,
        abandoned: AbandonedCalls | None = None,
        single_exchange: bool = True,
    ) -> None:
        """``runtime_factory`` and ``backend_factory`` come from the composition root (tests pass their own).

        ``abandoned``: the count the front checks (``build_asgi_app``); the composition root passes the process's,
        which its backends join. None: a count of this endpoint's own, built with the app.
        ``single_exchange``: as ``build_asgi_app``'s.
        """
        self._abandoned = abandoned
        self._single_exchange = single_exchange
        self._runtime_factory = runtime_factory
        self._backend_factory = backend_factory
        self._middleware: func.AsgiMiddleware | None = None  # the app's lifespan (and its state)
        self._app: McpHttpApp | None = None
        self._backend: MemoryBackend | None = None
        self._lock: asyncio.Lock | None = None
        self.startups = 0

    @property
    def is_built(self) -> bool:
        return self._middleware is not None

    async def _started(self) -> tuple[McpHttpApp, func.AsgiMiddleware]:
        if self._app is not None and self._middleware is not None:
            return self._app, self._middleware
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._app is None or self._middleware is None:
                from memory_core.mcp.stalled import AbandonedCalls

                rt = self._runtime_factory()
                backend = self._backend_factory(rt)
                abandoned = self._abandoned if self._abandoned is not None else AbandonedCalls()
                app = build_asgi_app(rt.settings, backend, rt.auth, abandoned=abandoned,
                                     single_exchange=self._single_exchange)
                middleware = func.AsgiMiddleware(app)
                if not await middleware.notify_startup():
                    await backend.aclose()
                    raise RuntimeError("the MCP server's ASGI lifespan did not start")
                self._backend = backend
                self._app, self._middleware = app, middleware
                self.startups += 1
            return self._app, self._middleware

    async def __call__(self, req: func.HttpRequest, context: Any = None, *,
                       address: Address | None = None) -> func.HttpResponse:
        """``req`` answered by the MCP app. ``address``: the canonical Host and Origin the edge admitted
        (``Call.address``), which the front hands the SDK without checking them again; None (a caller without the
        edge, a test's): the front checks them by the edge's rule itself."""
        from memory_core.mcp.functions_bridge import answer_with  # with the SDK, on first use (issue #15)

        try:
            app, middleware = await self._started()
            return await answer_with(app, req, middleware.state, address)
        except Exception as error:
            return jsonrpc_refusal(error)

    async def aclose(self) -> None:
        """Stop the lifespan and close the backend (tests; the worker just exits)."""
        middleware, backend = self._middleware, self._backend
        self._middleware = self._backend = self._app = None
        if middleware is not None:
            await middleware.notify_shutdown()
        if backend is not None:
            await backend.aclose()


def jsonrpc_refusal(error: BaseException) -> func.HttpResponse:
    """An error raised before the MCP app runs (the edge's 413, 415, 421, 403; the app failing to start), answered as
    REST answers it (status, Retry-After, WWW-Authenticate) but with a JSON-RPC error body, id ``null`` (the body is
    not read yet), the error's code as ``data.code``: the official clients surface a JSON-RPC error's message at any
    status, and replace everything else with a generic "Server returned an error response" (-32603)."""
    from memory_core.mcp.envelope import jsonrpc_error, refusal_code  # the SDK's types load on first use (issue #15)

    if isinstance(error, MemoryCoreError):
        status, message, headers, reason = status_for(error), error.message, headers_for(error), error.code
    else:
        status, headers = 500, {}
        reason, message = internal_error(error)
    document = jsonrpc_error(None, refusal_code(status), message, reason)
    return func.HttpResponse(json.dumps(document), status_code=status, mimetype=JSON, headers=headers)


@endpoint(EndpointSpec(summary="The hosted MCP endpoint", tag="mcp", access=Access.PER_MESSAGE,
                       body_limit=write_body_limit, methods=("POST",), in_openapi=False, refusal=jsonrpc_refusal))
async def mcp(call: Call) -> func.HttpResponse:
    """The ``mcp`` function (route ``mcp``): the MCP protocol over streamable HTTP.

    POST answers JSON-RPC as JSON; GET and DELETE answer 405; OPTIONS answers
    ``Allow: POST, OPTIONS``; a Host or Origin that is not this app's answers
    421 or 403 (the edge).
    """
    return await composition.mcp_endpoint()(call.request, call.context, address=call.address)
