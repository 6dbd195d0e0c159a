"""Caller authentication shared by every entry point (REST, MCP).

The caller's identity comes only from trusted request headers: X-USER-IDENTITY
is believed only when X-API-KEY matches a configured key. Keys are compared in
constant time, and every configured key is compared, so timing reveals neither
a key nor which key matched.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory_core.domain.errors import Forbidden, Unauthenticated
from memory_core.domain.identity import Caller
from memory_core.domain.models import normalize_upn

API_KEY_HEADER = "x-api-key"
USER_IDENTITY_HEADER = "x-user-identity"


class UserIdentityHeader(BaseModel):
    """The platform's serialized user identity, as sent in X-USER-IDENTITY."""

    model_config = ConfigDict(extra="ignore")

    upn: str = Field(min_length=1, max_length=320)
    name: str | None = Field(default=None, max_length=512)
    user_name: str | None = Field(default=None, max_length=512)
    user_id: str | None = Field(default=None, max_length=256)
    group_ids: list[str] = Field(default_factory=list, max_length=1024)


def key_matches(presented: str | None, keys: Sequence[str]) -> bool:
    """True when ``presented`` equals one of ``keys``; constant time in the key contents."""
    if not presented or not keys:
        return False
    candidate = presented.encode("utf-8")
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(candidate, key.encode("utf-8"))
    return matched


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value


def parse_identity(raw: str) -> Caller:
    """Parse X-USER-IDENTITY JSON; ``Unauthenticated`` when it is not a usable identity."""
    try:
        identity = UserIdentityHeader.model_validate(json.loads(raw))
    except (ValueError, ValidationError):
        raise Unauthenticated("X-USER-IDENTITY is not a valid user identity (JSON with a non-empty upn)") from None
    upn = normalize_upn(identity.upn)
    if not upn:
        raise Unauthenticated("X-USER-IDENTITY is not a valid user identity (JSON with a non-empty upn)")
    return Caller(
        upn=upn,
        name=identity.name,
        user_name=identity.user_name,
        user_id=identity.user_id,
        group_ids=tuple(identity.group_ids),
    )


class KeyAuthenticator:
    """Authenticates users by service key + identity header, and operators by operator key."""

    def __init__(self, api_keys: Sequence[str], operator_keys: Sequence[str]) -> None:
        self._api_keys = tuple(api_keys)
        self._operator_keys = tuple(operator_keys)

    def user(self, headers: Mapping[str, str]) -> Caller:
        """The calling user. Raises ``Unauthenticated`` for a missing or wrong credential."""
        presented = _header(headers, API_KEY_HEADER)
        if not presented:
            raise Unauthenticated("missing X-API-KEY header")
        if not key_matches(presented, self._api_keys):
            raise Unauthenticated("invalid API key")
        raw = _header(headers, USER_IDENTITY_HEADER)
        if not raw:
            raise Unauthenticated("missing X-USER-IDENTITY header")
        return parse_identity(raw)

    def operator(self, headers: Mapping[str, str]) -> str:
        """An operator's label for the audit trail. A user key never opens operator routes."""
        presented = _header(headers, API_KEY_HEADER)
        if not presented:
            raise Unauthenticated("missing X-API-KEY header")
        if key_matches(presented, self._operator_keys):
            return "operator-key"
        if key_matches(presented, self._api_keys):
            raise Forbidden("this endpoint needs an operator key; a user API key cannot open it")
        raise Unauthenticated("invalid API key")
