"""The edge every HTTP function passes through: limits, Host/Origin, content type, identity, errors.

- ``function``: ``EndpointSpec``, ``Access``, ``endpoint`` (the wrapper), ``Call`` and ``EdgeApp``;
- ``names``: the app's own host names and the Host/Origin rule;
- ``errors``: the one mapping from the error family to HTTP answers.

See docs/architecture.md, "How to add an HTTP function".
"""

from memory_core.edge.function import (
    SMALL_BODY_BYTES,
    Access,
    Call,
    EdgeApp,
    EndpointSpec,
    ValidationFailed,
    endpoint,
    json_response,
    not_stored,
    request_body_limit,
    spec_of,
    write_body_limit,
)

__all__ = [
    "SMALL_BODY_BYTES",
    "Access",
    "Call",
    "EdgeApp",
    "EndpointSpec",
    "ValidationFailed",
    "endpoint",
    "json_response",
    "not_stored",
    "request_body_limit",
    "spec_of",
    "write_body_limit",
]
