"""What an HTTP route declares to the edge: who may call it, what it reads, what it answers.

Every function the edge serves is described by an ``EndpointSpec`` (also its OpenAPI entry);
``Access`` says who may call it, with no default to forget; the body limits are here because a
route's limit is part of its declaration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

import azure.functions as func
from pydantic import BaseModel

from memory_core.domain.modes import OFF_WRITE_NOTICE
from memory_core.edge.errors import JSON
from memory_core.wire.memory import NotStoredResponse

if TYPE_CHECKING:
    from memory_core.edge.admission import Answer, Call  # which imports this module
    from memory_core.settings import Settings  # pydantic-settings loads with the composition root (issue #15)

SMALL_BODY_BYTES = 64 * 1024
"""The body limit of routes that take no write content (operator decisions, settings, bodiless POSTs)."""


class Access(Enum):
    """Who may call a route. Every route declares one; there is no default to forget."""

    USER = "user"
    """A user credential of MEMORY_AUTH_MODE; the handler gets ``call.caller``."""
    OPERATOR = "operator"
    """An operator key or the operator app role; the handler gets ``call.operator`` (the audit label)."""
    PUBLIC = "public"
    """No credential: documents anyone may read (the OpenAPI document, static pages, OAuth metadata)."""
    PER_MESSAGE = "per_message"
    """The MCP endpoint: it authenticates every request itself, with the same Authenticator, before the protocol
    runs, so its 401 is a JSON-RPC error whose challenge names the OAuth metadata (memory_core.mcp.transport)."""


def request_body_limit(max_write_bytes: int) -> int:
    """The largest request body accepted for writes of up to ``max_write_bytes``.

    JSON escaping can grow text up to 6x (\\uXXXX); the content limit itself is
    enforced on the decoded text by the service, with a precise message.
    """
    return max_write_bytes * 6 + 64 * 1024


def write_body_limit(settings: Settings) -> int:
    """The body limit of routes that carry memory content (MEMORY_MAX_WRITE_BYTES, JSON-escaped)."""
    return request_body_limit(settings.memory_max_write_bytes)


@dataclass(frozen=True)
class EndpointSpec:
    """What a route declares: who may call it, what it reads, what it answers (also its OpenAPI entry).

    ``body_limit`` is the largest body accepted (bytes, or a function of the
    settings); by default routes with a ``body`` model take memory content and
    others take at most ``SMALL_BODY_BYTES``. ``statuses`` are further success
    statuses beside ``success_status`` (e.g. 202 when a deletion waits for approval).
    ``query_or_body`` declares a route that takes one input either way: the ``query`` model from
    the query string on GET (and HEAD), the ``body`` model (which extends it) from the JSON body on
    its other methods (search: POST keeps the words out of URLs); the handler reads
    ``call.input(query model)``, and the OpenAPI entry documents each method with its own input.
    Without it a route reads every model it declares (PUT agent-settings: a query and a body).
    ``methods`` (when set) are the methods the route serves, for OPTIONS answers.
    ``memory_off`` (user routes) answers a request under X-MEMORY-MODE: off
    instead of the handler: ``not_stored`` for writes, an empty answer for reads.
    ``headers`` (of the settings, None when they cannot be read) are headers every answer of the route
    carries, its refusals included: the edge adds them (``memory_core.edge.function``), so no answer can
    leave without them (the console's security headers).
    ``idempotency_key``: the route takes an ``Idempotency-Key`` header (``domain.idempotency``), validated by
    the edge (400) into ``Call.idempotency_key`` and documented in OpenAPI; other routes ignore the header.
    ``refusal`` answers an error raised before the handler runs (the edge's 413, 415, 421, 403, and a host's 405 for
    a method and 413 for the body limit) with the same status and headers in the route's own protocol; None: the
    REST error body (``response_for_error``). The MCP endpoint answers them as JSON-RPC errors, the only body its
    clients read.
    """

    summary: str
    tag: str
    access: Access
    response: type[BaseModel] | None = None
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    errors: tuple[int, ...] = (400, 401)
    content_type: str = JSON
    success_status: int = 200
    statuses: dict[int, type[BaseModel]] = field(default_factory=dict)
    description: str = ""
    body_limit: int | Callable[[Settings], int] | None = None
    methods: tuple[str, ...] = ()
    in_openapi: bool = True
    memory_off: Callable[[Call], Answer] | None = None
    headers: Callable[[Settings | None], dict[str, str]] | None = None
    query_or_body: bool = False
    idempotency_key: bool = False
    refusal: Callable[[BaseException], func.HttpResponse] | None = None

    def __post_init__(self) -> None:
        if self.query_or_body and not (
            self.query is not None and self.body is not None and issubclass(self.body, self.query)
        ):
            raise TypeError("query_or_body needs a query model and a body model that extends it")

    def max_body_bytes(self, settings: Settings) -> int:
        if callable(self.body_limit):
            return self.body_limit(settings)
        if self.body_limit is not None:
            return self.body_limit
        return write_body_limit(settings) if self.body is not None else SMALL_BODY_BYTES


def not_stored(call: Call) -> NotStoredResponse:
    """The answer of a write under X-MEMORY-MODE: off: nothing was stored, and it says so."""
    return NotStoredResponse(message=OFF_WRITE_NOTICE)
