"""The request headers that carry credentials, and reading them from any header mapping."""

from __future__ import annotations

from collections.abc import Mapping

AUTHORIZATION_HEADER = "authorization"
"""``Bearer <Entra ID access token>`` (mode entra)."""
PLATFORM_IDENTITY_HEADER = "x-platform-identity"
"""The platform-issued identity context, a signed JWT (mode platform)."""
CLIENT_PRINCIPAL_HEADER = "x-ms-client-principal"
"""App Service authentication's principal, base64 JSON (mode easyauth)."""
API_KEY_HEADER = "x-api-key"
"""A service key (MEMORY_API_KEYS) or an operator key (MEMORY_OPERATOR_KEYS)."""
USER_IDENTITY_HEADER = "x-user-identity"
"""The platform's user identity JSON, believed only with a service key (mode key)."""

MAX_CREDENTIAL_CHARS = 16 * 1024
"""Longer credentials are refused unread (Entra access tokens are a few KB)."""


def header(headers: Mapping[str, str], name: str) -> str | None:
    """The value of header ``name`` (lower case), from a case-insensitive or a plain mapping."""
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value


def present(headers: Mapping[str, str], name: str) -> str | None:
    """The stripped value of header ``name``, or None when absent or blank."""
    value = header(headers, name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of ``Authorization: Bearer <token>``; None unless the scheme is Bearer.

    A Bearer scheme with an empty token answers ``""`` (a presented, unusable credential).
    """
    value = present(headers, AUTHORIZATION_HEADER)
    if value is None:
        return None
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip()


def carries_signed_token(headers: Mapping[str, str]) -> bool:
    """Whether the request carries a signed token (``Authorization`` or ``X-PLATFORM-IDENTITY``), whose check may
    fetch an identity provider's keys over HTTP; a key, an identity header or App Service's principal is checked
    without any I/O."""
    return present(headers, AUTHORIZATION_HEADER) is not None or present(headers, PLATFORM_IDENTITY_HEADER) is not None
