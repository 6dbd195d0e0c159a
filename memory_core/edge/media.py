"""The one content-type rule for a request body, on every route: REST (``admission.admit``) and /api/mcp
(``memory_core.mcp.front``) alike.

A body is JSON when its media type, without parameters and case, is ``application/json`` or a structured syntax
suffix type ``application/*+json`` (RFC 6839: JSON by definition). The same rule holds on /api/mcp although the MCP
specification has clients send ``application/json``: the spec binds clients, and a ``+json`` body is still parsed
by the same strict decoder and checked as JSON-RPC, so accepting it costs nothing, while refusing it there alone
would make one edge answer one Content-Type two ways. Parameters (``charset``) are ignored: JSON is UTF-8
(RFC 8259), and the decoder refuses any other bytes.
"""

from __future__ import annotations

from memory_core.domain.errors import UnsupportedMediaType
from memory_core.edge.errors import JSON

NOT_JSON = "send the request body as JSON with Content-Type: application/json"


def is_json(content_type: str | None) -> bool:
    """True when ``content_type`` (a Content-Type header value; None: none sent) names JSON (module docstring)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == JSON or (media.startswith("application/") and media.endswith("+json"))


def require_json(content_type: str | None) -> None:
    """Raises ``UnsupportedMediaType`` (415 ``unsupported_media_type``) unless ``is_json(content_type)``."""
    if not is_json(content_type):
        raise UnsupportedMediaType(NOT_JSON)
