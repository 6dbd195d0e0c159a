"""Tokens found by their own shape: JSON Web Tokens, ``Authorization`` header
credentials (bearer tokens, basic auth) and Entra ID client secrets.

Callers may rely on: a JWT counts only when its header and payload decode to JSON; a
bearer token only when it is long, mixed and high-entropy; a basic-auth header only when
it decodes to ``user:password`` with a real password. All patterns are compiled once at
import, are safe to share between threads and avoid unbounded nested quantifiers, so a
hostile 64 KiB write cannot make a scan backtrack for long.
"""

from __future__ import annotations

import base64
import binascii
import re
import string

from detect_secrets.plugins.jwt import JwtTokenDetector

from memory_core.secrets.matching import positions
from memory_core.secrets.values import is_placeholder, looks_random

# detect-secrets' JwtTokenDetector has the right validation (header and
# payload must be base64url-encoded JSON) but its pattern is quadratic on
# crafted input: 64 KiB of "eyJeyJeyJ..." takes seconds. This detector uses
# a linear pattern (possessive runs, no start inside a longer run) and then
# the library's own ``is_formally_valid`` on the header and payload.

_JWT_AT = re.compile(r"eyJ[A-Za-z0-9_-]{2,}+={0,2}\.[A-Za-z0-9_-]{2,}+={0,2}")
_JWT_RUN_CHARS = frozenset(string.ascii_letters + string.digits + "_-")


def has_jwt(text: str, lowered: str = "") -> bool:
    """True for a JWT (or JWS/JWE) whose header and payload decode to JSON."""
    for index in positions(text, "eyJ"):
        if index and text[index - 1] in _JWT_RUN_CHARS:
            continue  # inside a longer run: not where a token starts
        match = _JWT_AT.match(text, index)
        if match is not None and JwtTokenDetector.is_formally_valid(match.group(0)):
            return True
    return False


# --------------------------------------------------------------------------
# Authorization headers.

_BEARER_VALUE = re.compile(r"[ \t]+([A-Za-z0-9\-._~+/]{20,}=*)")
_BASIC_HEADER = re.compile(r"authorization[\"']?[ \t]*[:=][ \t]*[\"']?basic[ \t]+")
_BASE64_VALUE = re.compile(r"[A-Za-z0-9+/]{8,}={0,2}")


def has_bearer_token(text: str, lowered: str) -> bool:
    """True for ``Bearer <token>`` where the token is long, mixed and high-entropy."""
    for index in positions(lowered, "bearer"):
        value = _BEARER_VALUE.match(text, index + 6)
        if value is not None and looks_random(value.group(1)):
            return True
    return False


def has_basic_auth_header(text: str, lowered: str) -> bool:
    """True for ``Authorization: Basic <base64 of user:password>``."""
    for header in _BASIC_HEADER.finditer(lowered):
        value = _BASE64_VALUE.match(text, header.end())
        if value is None:
            continue
        try:
            decoded = base64.b64decode(value.group(0), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            continue
        _user, sep, password = decoded.partition(":")
        if sep and password and not is_placeholder(password):
            return True
    return False


# --------------------------------------------------------------------------
# Entra ID (Azure AD) client secrets: 3 characters, a digit, "Q~", then 31-34
# more, e.g. "abc8Q~...". Found at each "Q~".

_ENTRA_SECRET_CHARS = frozenset(string.ascii_letters + string.digits + "_~.-")
_ENTRA_SECRET = re.compile(r"[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])")


def has_entra_client_secret(text: str, lowered: str = "") -> bool:
    """True for an Entra ID application client secret."""
    for index in positions(text, "Q~"):
        start = index - 4
        if start < 0 or (start and text[start - 1] in _ENTRA_SECRET_CHARS):
            continue
        if _ENTRA_SECRET.match(text, start):
            return True
    return False
