"""Entry tags: the Foundry memory-type convention and the seed's session/agent hash tags."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable

from memory_core.domain.errors import InvalidInput

MEM_TYPE_PREFIX = "mem_type:"
MEM_TYPES = frozenset({"mem_type:procedural", "mem_type:user-profile", "mem_type:chat-summary"})
SESSION_TAG_PREFIX = "session_id:"
AGENT_TAG_PREFIX = "agent_id:"


def _b64url_sha256(domain: bytes, value: str) -> str:
    digest = hashlib.sha256(domain + value.encode("utf-8")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def session_tag(session_id: str) -> str:
    """session_id:base64url(SHA-256("sdw-ms-session-v1\\0" + session_id))."""
    return SESSION_TAG_PREFIX + _b64url_sha256(b"sdw-ms-session-v1\0", session_id)


def agent_tag(agent_id: str) -> str:
    """agent_id:base64url(SHA-256("sdw-ms-agent-v1\\0" + agent_id))."""
    return AGENT_TAG_PREFIX + _b64url_sha256(b"sdw-ms-agent-v1\0", agent_id)


def normalize_tags(tags: Iterable[str], *, session_id: str | None, agent_id: str | None) -> tuple[str, ...]:
    """Validated, de-duplicated tags plus the session and agent hash tags.

    Raises ``InvalidInput`` for an unknown mem_type or more than one mem_type.
    """
    result: list[str] = []
    for tag in tags:
        tag = tag.strip()
        if not tag or tag in result:
            continue
        if tag.startswith(MEM_TYPE_PREFIX) and tag not in MEM_TYPES:
            allowed = ", ".join(sorted(MEM_TYPES))
            raise InvalidInput(f"unknown memory type tag {tag!r}; use one of {allowed}", code="invalid_tag")
        result.append(tag)
    if sum(t.startswith(MEM_TYPE_PREFIX) for t in result) > 1:
        raise InvalidInput("an entry carries at most one mem_type tag", code="invalid_tag")
    for derived in (session_tag(session_id) if session_id else None, agent_tag(agent_id) if agent_id else None):
        if derived and derived not in result:
            result.append(derived)
    return tuple(result)
