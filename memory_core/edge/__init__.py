"""The edge every HTTP function passes through: limits, Host/Origin, content type, identity, errors.

- ``spec``: ``EndpointSpec`` and ``Access``, what a route declares, and its body limits;
- ``admission``: ``admit``, every rule a request passes, in order, and the ``Call`` a handler gets;
- ``function``: ``endpoint`` (the wrapper) and ``EdgeApp``;
- ``names``: the app's own host names and the Host/Origin rule;
- ``errors``: the one mapping from the error family to HTTP answers.

See docs/architecture.md, "How to add an HTTP function".
"""

from memory_core.edge.admission import Call, ValidationFailed, validated
from memory_core.edge.function import EdgeApp, endpoint, json_response, spec_of
from memory_core.edge.spec import (
    SMALL_BODY_BYTES,
    Access,
    EndpointSpec,
    not_stored,
    request_body_limit,
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
    "validated",
    "write_body_limit",
]
