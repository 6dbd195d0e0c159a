"""Whose memory an MCP call touches: resolved from trusted request headers only.

Never from the model's arguments, so a prompt cannot steer a call to someone else's
memory:

- the user: X-USER-IDENTITY, believed only with a valid X-API-KEY (as for REST), or
  any other credential MEMORY_AUTH_MODE accepts;
- the agent: X-AGENT-OBJECT-ID and X-AGENT-NAME, static values configured on
  the agent's MCP tool (scope=agent needs them; scope=combined without them
  reads user memory only);
- the instance: X-INSTANCE-ID, else the MEMORY_DEFAULT_INSTANCE_ID setting;
- optional provenance: X-SESSION-ID and X-OPERATION-ID, recorded on appends.

Raises only the domain's errors: ``Unauthenticated`` as the REST API does, and
``InvalidInput`` for an unusable instance, an over-long header or a missing agent.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import TypeAdapter, ValidationError

from memory_core.domain.errors import InvalidInput
from memory_core.domain.hidden_text import invisible_in_label
from memory_core.domain.identity import AgentContext, invisible_in_identifier
from memory_core.domain.models import Scope
from memory_core.identity import Authenticator, AuthMode, identity_json
from memory_core.mcp.backend import CallTarget
from memory_core.mcp.context import CURRENT_AUTHENTICATION
from memory_core.wire.memory import InstanceId

AGENT_OBJECT_ID_HEADER = "x-agent-object-id"
AGENT_NAME_HEADER = "x-agent-name"
INSTANCE_ID_HEADER = "x-instance-id"
SESSION_ID_HEADER = "x-session-id"
OPERATION_ID_HEADER = "x-operation-id"

MAX_AGENT_OBJECT_ID = 1024
MAX_SHORT_TEXT = 1024

_INSTANCE_ID = TypeAdapter(InstanceId)


def _header(headers: Mapping[str, str], name: str, label: str, max_length: int) -> str | None:
    value = (headers.get(name) or "").strip()
    if not value:
        return None
    if len(value) > max_length:
        raise InvalidInput(f"the {label} header must be at most {max_length} characters", code="invalid_header")
    return value


def resolve_target(
    headers: Mapping[str, str] | None, auth: Authenticator, default_instance_id: str | None
) -> CallTarget:
    """The caller, instance and agent of a call, from its HTTP headers (``headers`` is case-insensitive).

    The caller is authenticated exactly as for REST (any credential MEMORY_AUTH_MODE
    accepts: bearer token, platform identity context, App Service principal, key,
    local), or is the one the front already authenticated from these same headers
    (``CURRENT_AUTHENTICATION``). Raises ``Unauthenticated`` as the REST API does,
    and ``InvalidInput`` for an unusable instance or an over-long header.
    """
    headers = headers if headers is not None else {}
    authentication = CURRENT_AUTHENTICATION.get() or auth.authenticate(headers)
    caller = authentication.caller
    instance = (headers.get(INSTANCE_ID_HEADER) or "").strip() or (default_instance_id or "").strip()
    if not instance:
        raise InvalidInput(
            "no instance: send the X-INSTANCE-ID header or set MEMORY_DEFAULT_INSTANCE_ID",
            code="instance_required",
        )
    try:
        instance = _INSTANCE_ID.validate_python(instance)
    except ValidationError:
        raise InvalidInput(
            "instanceId must be 1-128 characters: letters, digits, '.', '_', ':' or '-'", code="invalid_instance_id"
        ) from None
    object_id = _header(headers, AGENT_OBJECT_ID_HEADER, "X-AGENT-OBJECT-ID", MAX_AGENT_OBJECT_ID)
    # As REST refuses it in a body or query: an id that shows as another (a soft hyphen or a C1 control, which a
    # latin-1 header can carry; anything through stdio's MEMORY_MCP_AGENT_OBJECT_ID) would be another agent's memory.
    invisible = invisible_in_identifier(object_id) if object_id else None
    if invisible is not None:
        raise InvalidInput(f"the X-AGENT-OBJECT-ID header holds a character that draws nothing or reorders text "
                           f"(U+{ord(invisible):04X})", code="invalid_header")
    name = _header(headers, AGENT_NAME_HEADER, "X-AGENT-NAME", MAX_SHORT_TEXT)
    # As REST refuses it in agent_name and agentName: "Hel\u200bper" would read as another agent's name.
    invisible = invisible_in_label(name) if name else None
    if invisible is not None:
        raise InvalidInput(f"the X-AGENT-NAME header holds a character that draws nothing or formats text "
                           f"(U+{ord(invisible):04X})", code="invalid_header")
    return CallTarget(
        caller=caller,
        identity_header=(
            authentication.credential or "" if authentication.mode is AuthMode.KEY else identity_json(caller)
        ),
        instance_id=instance,
        agent=AgentContext(object_id, name) if object_id else None,
        session_id=_header(headers, SESSION_ID_HEADER, "X-SESSION-ID", MAX_SHORT_TEXT),
        operation_id=_header(headers, OPERATION_ID_HEADER, "X-OPERATION-ID", MAX_SHORT_TEXT),
        authentication=authentication,
    )


def effective_scope(target: CallTarget, scope: Scope) -> Scope:
    """The scope to use: combined without an agent header reads user memory; agent without one is an error."""
    if target.agent is not None or scope is Scope.USER:
        return scope
    if scope is Scope.COMBINED:
        return Scope.USER
    raise InvalidInput(
        f"scope={scope.value} needs the agent: configure the X-AGENT-OBJECT-ID header "
        "(and X-AGENT-NAME) on this agent's MCP tool",
        code="agent_required",
    )
