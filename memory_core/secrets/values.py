"""Value heuristics: whether an assigned value is a real secret or stands for one.

Callers may rely on: every function here is pure, thread-safe and never raises;
placeholders (templates, masks, stand-in words) are never secrets.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter

_PLACEHOLDER_WORDS = frozenset(
    ["password", "passwd", "pass", "pwd", "secret", "token", "apikey", "api_key", "api-key", "changeme", "change_me", "change-me", "redacted", "removed", "hidden", "example", "placeholder", "username", "user", "none", "null", "nil", "undefined", "empty", "yourpassword", "your_password", "your-password", "mypassword", "my_password", "secretpassword", "your_api_key", "your-api-key", "yourapikey", "your_token", "your-token", "xxxxxxxx", "notasecret", "not-a-secret"]
)
_PLACEHOLDER_START = ("<", "{", "[", "$", "%", "(", "@@", "__")
_MASK_CHARS = frozenset("*xX.•#-_?")


def is_placeholder(value: str) -> bool:
    """True for values that stand for a secret rather than being one.

    Template markers (``<password>``, ``${DB_PASS}``, ``{{ secret }}``,
    ``%(pw)s``), masks (``****``, ``xxxx``) and the usual stand-in words
    (``password``, ``changeme``, ``your-api-key``) are not secrets.
    """
    stripped = value.strip("\"'`")
    if not stripped:
        return True
    lowered = stripped.lower()
    if lowered in _PLACEHOLDER_WORDS or stripped.startswith(_PLACEHOLDER_START):
        return True
    if "{{" in stripped or "}}" in stripped or "${" in stripped:
        return True
    if set(stripped) <= _MASK_CHARS:
        return True
    return lowered.startswith(("your", "my-", "my_", "example", "dummy", "sample", "fake-"))


def shannon_entropy(value: str) -> float:
    """Bits of Shannon entropy per character of ``value`` (0 for an empty string)."""
    if not value:
        return 0.0
    length = len(value)
    return -sum(n / length * math.log2(n / length) for n in Counter(value).values())


_LOWER = frozenset(string.ascii_lowercase)
_UPPER = frozenset(string.ascii_uppercase)
_DIGITS = frozenset(string.digits)
_LETTERS = _LOWER | _UPPER
_ALNUM = _LETTERS | _DIGITS


def _char_classes(chars: frozenset[str] | set[str]) -> int:
    """How many of lower, upper, digit, other (anything else, non-ASCII included) occur."""
    return (
        (not chars.isdisjoint(_LOWER))
        + (not chars.isdisjoint(_UPPER))
        + (not chars.isdisjoint(_DIGITS))
        + (not chars <= _ALNUM)
    )


def looks_random(value: str, *, min_length: int = 16, min_entropy: float = 3.0) -> bool:
    """True for a token-like value: long, letters and digits mixed, high entropy.

    Words, numbers, identifiers like ``getToken()`` and paths fail this; API
    keys, hex digests and base64 blobs pass it.
    """
    if len(value) < min_length or is_placeholder(value):
        return False
    chars = set(value)
    if chars.isdisjoint(_DIGITS) or chars.isdisjoint(_LETTERS):
        return False
    return shannon_entropy(value) >= min_entropy


_WINDOWS_PATH = re.compile(r"[A-Za-z]:\\")
_CALL = re.compile(r"\w\(")


def looks_like_password(value: str) -> bool:
    """True for a value that reads as a chosen password: 8+ characters, 3+ character classes.

    ``hunter2``, ``required``, ``12 characters`` and file paths fail; a value
    like ``Summer2024!`` passes. Random tokens pass through ``looks_random``.
    """
    if len(value) < 8 or is_placeholder(value) or "://" in value or value.startswith(("/", "~", "./", "\\")):
        return False
    if _WINDOWS_PATH.match(value) or _CALL.search(value):
        return False
    if 8 <= len(value) <= 128 and _char_classes(set(value)) >= 3:
        return True
    return looks_random(value)
