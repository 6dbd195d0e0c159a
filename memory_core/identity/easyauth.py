"""App Service authentication ("Easy Auth"): the X-MS-CLIENT-PRINCIPAL header (mode easyauth).

App Service validates the sign-in and then injects the principal as base64
JSON, ``{"auth_typ", "name_typ", "role_typ", "claims": [{"typ", "val"}]}``,
after removing any copy a client sent. That removal is the only reason the
header can be believed, so it is read only in this mode, and the mode is
refused at start unless App Service reports authentication as enabled
(WEBSITE_AUTH_ENABLED).
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Mapping
from typing import Any

from memory_core.domain.identity import Caller, InvalidCallerId, caller_upn
from memory_core.identity.errors import CredentialRejected
from memory_core.identity.headers import CLIENT_PRINCIPAL_HEADER, present
from memory_core.identity.model import Authentication
from memory_core.identity.modes import AuthMode
from memory_core.wire import json_text

log = logging.getLogger("memory_core.identity")

MAX_PRINCIPAL_CHARS = 64 * 1024
INVALID_PRINCIPAL = "invalid client principal"

UPN_TYPES = ("http://schemas.xmlsoap.org/ws/2005/05/identity/claims/upn", "upn", "preferred_username")
OID_TYPES = ("http://schemas.microsoft.com/identity/claims/objectidentifier", "oid")
DEFAULT_ROLE_TYPE = "http://schemas.microsoft.com/ws/2008/06/identity/claims/role"


def _rejected(reason: str) -> CredentialRejected:
    log.info("client principal rejected: %s", reason)
    return CredentialRejected(INVALID_PRINCIPAL, challenge="")


def decode_principal(raw: str) -> dict[str, Any]:
    """The principal document of an X-MS-CLIENT-PRINCIPAL value."""
    if len(raw) > MAX_PRINCIPAL_CHARS:
        raise _rejected("oversized")
    try:
        document = json_text.loads(base64.b64decode(raw + "=" * (-len(raw) % 4), validate=False))
    except (binascii.Error, ValueError):
        raise _rejected("not base64 JSON") from None
    if not isinstance(document, dict) or not isinstance(document.get("claims"), list):
        raise _rejected("no claims")
    return document


def principal_caller(document: Mapping[str, Any]) -> tuple[Caller, frozenset[str]]:
    """The caller and app roles of a principal document."""
    values: dict[str, list[str]] = {}
    for claim in document.get("claims", []):
        if isinstance(claim, dict) and isinstance(claim.get("typ"), str) and isinstance(claim.get("val"), str):
            values.setdefault(claim["typ"], []).append(claim["val"])

    def first(*types: str, limit: int = 512) -> str | None:
        for typ in types:
            for value in values.get(typ, []):
                if value:
                    return value[:limit]
        return None

    raw_upn = first(*UPN_TYPES, limit=320)
    if not raw_upn:
        raise _rejected("no upn or preferred_username claim")
    try:
        upn = caller_upn(raw_upn)
    except InvalidCallerId as error:
        raise _rejected(f"upn claim: {error}") from None
    declared_role_type = document.get("role_typ")
    role_type = declared_role_type if isinstance(declared_role_type, str) else DEFAULT_ROLE_TYPE
    roles = frozenset(values.get(role_type, []) + values.get("roles", []))
    caller = Caller(
        upn=upn,
        name=first("name"),
        user_name=raw_upn,
        user_id=first(*OID_TYPES, limit=256),
        group_ids=tuple(values.get("groups", [])[:1024]),
    )
    return caller, roles


class EasyAuthPath:
    """Users by App Service authentication's X-MS-CLIENT-PRINCIPAL (mode easyauth)."""

    mode = AuthMode.EASYAUTH

    def presented(self, headers: Mapping[str, str]) -> bool:
        return present(headers, CLIENT_PRINCIPAL_HEADER) is not None

    def authenticate(self, headers: Mapping[str, str]) -> Authentication:
        caller, roles = principal_caller(decode_principal(present(headers, CLIENT_PRINCIPAL_HEADER) or ""))
        return Authentication(caller, AuthMode.EASYAUTH, roles)
