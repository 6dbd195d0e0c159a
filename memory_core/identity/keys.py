"""The key path: X-USER-IDENTITY believed only with a service key in X-API-KEY.

Keys are compared in constant time, and every configured key is compared, so
timing reveals neither a key nor which key matched.
"""

from __future__ import annotations

import functools
import hmac
import json
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory_core.domain.identity import Caller, InvalidCallerId, caller_upn
from memory_core.identity.errors import CredentialRejected
from memory_core.identity.headers import API_KEY_HEADER, USER_IDENTITY_HEADER, header
from memory_core.identity.model import Authentication
from memory_core.identity.modes import AuthMode
from memory_core.wire import json_text
from memory_core.wire.field_names import field_name

_BAD_IDENTITY = "X-USER-IDENTITY is not a valid user identity (JSON with a upn of the form name@domain)"
_BAD_MEMBER = "X-USER-IDENTITY is not a valid user identity: {}"


class UserIdentityHeader(BaseModel):
    """The platform's serialized user identity: X-USER-IDENTITY, and the claims of its identity context.

    The limits bound what one identity can make the service hold, and are documented in
    docs/identity.md. They are far above what a directory issues: an email address (and so a
    UPN) has at most 320 characters, an Entra display name at most 256, and Entra puts at
    most 200 groups in a token before it sends an overage claim instead (150 in SAML), so
    1,024 group ids leave room for a key-path caller that lists a user's groups from the
    directory itself. The largest identity they allow is about 43 KB, within the 64 KiB
    that ``serve`` reads of a request's headers (memory_core.local.protocol).
    """

    model_config = ConfigDict(extra="ignore")

    upn: str = Field(min_length=1, max_length=320)
    name: str | None = Field(default=None, max_length=512)
    user_name: str | None = Field(default=None, max_length=512)
    user_id: str | None = Field(default=None, max_length=256)
    group_ids: list[str] = Field(default_factory=list, max_length=1024)


def identity_problem(error: ValidationError) -> str:
    """What is wrong with an identity document, naming the member and the limit, never a value sent."""
    first = error.errors(include_url=False, include_input=False)[0]
    where = field_name(first["loc"], bracketed_indexes=True)
    kind = first["type"]
    limits = first.get("ctx") or {}
    if not where:
        return "not a JSON object"
    if kind == "missing":
        return f"{where} is missing"
    if kind == "string_too_short":
        return f"{where} is empty"
    if kind == "string_too_long":
        return f"{where} is longer than {limits.get('max_length')} characters"
    if kind == "too_long":
        return f"{where} has more than {limits.get('max_length')} entries"
    if kind == "list_type":
        return f"{where} is not a list of strings"
    if kind == "string_type":
        return f"{where} is not a string"
    return f"{where} is not valid"


def key_matches(presented: str | None, keys: Sequence[str]) -> bool:
    """True when ``presented`` equals one of ``keys``; constant time in the key contents."""
    if not presented or not keys:
        return False
    candidate = presented.encode("utf-8")
    matched = False
    for key in keys:
        matched |= hmac.compare_digest(candidate, key.encode("utf-8"))
    return matched


def caller_from_identity(identity: UserIdentityHeader) -> Caller | None:
    """The caller an identity names, or None when its upn is not a caller identifier (``caller_upn``)."""
    try:
        upn = caller_upn(identity.upn)
    except InvalidCallerId:
        return None
    return Caller(
        upn=upn,
        name=identity.name,
        user_name=identity.user_name,
        user_id=identity.user_id,
        group_ids=tuple(identity.group_ids),
    )


PARSED_IDENTITIES_KEPT = 256
"""Identities ``parse_identity`` keeps parsed (least recently used out), each at most ``MAX_KEPT_IDENTITY_CHARS``."""
MAX_KEPT_IDENTITY_CHARS = 2048
"""A longer X-USER-IDENTITY (up to about 43 KB, ``UserIdentityHeader``) is parsed each time: kept ones stay small."""


def parse_identity(raw: str) -> Caller:
    """Parse X-USER-IDENTITY JSON; ``Unauthenticated`` when it is not a usable identity.

    The caller is a pure function of the exact text (``Caller`` is frozen), so a text seen lately is
    answered from memory: about 50 µs of JSON and validation, on every call of a key caller over REST,
    MCP over HTTP, and each message over stdio (docs/performance.md). A refusal is never kept.
    """
    if len(raw) <= MAX_KEPT_IDENTITY_CHARS:
        return _kept_identity(raw)
    return _parsed_identity(raw)


@functools.lru_cache(maxsize=PARSED_IDENTITIES_KEPT)
def _kept_identity(raw: str) -> Caller:
    return _parsed_identity(raw)


def _parsed_identity(raw: str) -> Caller:
    try:
        document = json_text.loads(raw)
    except ValueError as error:  # JsonRejected: its message names the problem, never the text
        raise CredentialRejected(_BAD_MEMBER.format(error), challenge="") from None
    try:
        identity = UserIdentityHeader.model_validate(document)
    except ValidationError as error:
        raise CredentialRejected(_BAD_MEMBER.format(identity_problem(error)), challenge="") from None
    caller = caller_from_identity(identity)
    if caller is None:
        raise CredentialRejected(_BAD_IDENTITY, challenge="")
    return caller


def identity_json(caller: Caller) -> str:
    """An X-USER-IDENTITY value naming ``caller``."""
    document = {
        "upn": caller.upn,
        "name": caller.name,
        "user_name": caller.user_name,
        "user_id": caller.user_id,
        "group_ids": list(caller.group_ids),
    }
    return json.dumps({k: v for k, v in document.items() if v not in (None, [])})


class KeyPath:
    """Users by service key + X-USER-IDENTITY (mode key)."""

    mode = AuthMode.KEY

    def __init__(self, api_keys: Sequence[str]) -> None:
        self._api_keys = tuple(api_keys)

    def presented(self, headers: Mapping[str, str]) -> bool:
        return bool(header(headers, API_KEY_HEADER))

    def is_user_key(self, presented: str) -> bool:
        return key_matches(presented, self._api_keys)

    def authenticate(self, headers: Mapping[str, str]) -> Authentication:
        presented = header(headers, API_KEY_HEADER)
        if not presented:
            raise CredentialRejected("missing X-API-KEY header", challenge="")
        if not key_matches(presented, self._api_keys):
            raise CredentialRejected("invalid API key", challenge="")
        raw = header(headers, USER_IDENTITY_HEADER)
        if not raw:
            raise CredentialRejected("missing X-USER-IDENTITY header", challenge="")
        return Authentication(parse_identity(raw), AuthMode.KEY, credential=raw)
