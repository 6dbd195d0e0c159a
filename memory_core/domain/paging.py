"""Pages of a listing and their continuation tokens.

A listing answers at most ``limit`` items and, when more follow, a
continuation token: an opaque string the client sends back to get the next
page. Tokens are keyset positions (the sort key of the last item answered),
never offsets, so a page costs the same however deep the client has walked,
and items written or erased meanwhile cause no duplicate and no gap among
the items that stay. A token names its listing; one listing's token is
refused by another with ``InvalidInput`` (code ``invalid_continuation``).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from memory_core.domain.errors import InvalidInput

T = TypeVar("T")

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
MAX_TOKEN_CHARS = 2048


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """Up to one page of a listing; ``continuation`` is None on the last page."""

    items: list[T]
    continuation: str | None = None


def encode_token(listing: str, position: Sequence[str]) -> str:
    """The token that continues ``listing`` after ``position`` (the last item's sort key)."""
    raw = json.dumps({"l": listing, "p": list(position)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def decode_token(listing: str, token: str | None) -> list[str] | None:
    """The position a token of ``listing`` continues after; None for no token.

    Raises ``InvalidInput`` (``invalid_continuation``) for a token that is
    malformed, too long, made by another listing, or whose position is not
    text UTF-8 can encode (a lone surrogate): every position answered can be
    handed to a store.
    """
    if token is None or token == "":
        return None
    try:
        if len(token) > MAX_TOKEN_CHARS:
            raise ValueError("too long")
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        position = data["p"]
        if data["l"] != listing or not isinstance(position, list) or not all(isinstance(p, str) for p in position):
            raise ValueError("another listing")
        for p in position:  # a lone surrogate ("\ud800" in the JSON) no store can bind: UnicodeEncodeError there
            p.encode("utf-8")
    # RecursionError: json.loads of a token nesting ~1,000 brackets, which fits under MAX_TOKEN_CHARS.
    except (ValueError, KeyError, TypeError, RecursionError, binascii.Error, UnicodeError):
        raise InvalidInput(
            "continuation is not a token this listing answered; start again without it", code="invalid_continuation"
        ) from None
    return position


def check_page_size(limit: int, maximum: int = MAX_PAGE_SIZE) -> int:
    """``limit``, when it is 1 to ``maximum``; else ``InvalidInput`` (``invalid_limit``)."""
    if not 1 <= limit <= maximum:
        raise InvalidInput(f"limit must be between 1 and {maximum}", code="invalid_limit")
    return limit
