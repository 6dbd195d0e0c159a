"""Decoding untrusted JSON text: one decoder for request bodies and identity headers.

``json.loads`` alone lets two kinds of hostile input through to places that
fail later with a 500: nesting deep enough to exhaust the interpreter's
recursion limit, and ``\\ud800``-style escapes that decode to lone surrogates,
which no UTF-8 encoder (SQLite, Cosmos DB, the response writer) accepts.

It also lets an object name a member twice and keeps the last value, where other
parsers keep the first or refuse (RFC 8259, section 4, leaves it open). A gateway that
read ``{"upn": "alex@…", "upn": "bob@…"}`` in X-USER-IDENTITY, or a scope in a body,
one way would see a different request from the one served, so such text is refused.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class JsonRejected(ValueError):
    """The text is not acceptable JSON; the message says why, without quoting it."""


def _check_text(value: Any) -> None:
    """Refuse lone surrogates anywhere in keys or string values (iteratively)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise JsonRejected("JSON text contains an unpaired surrogate escape (\\ud800-\\udfff)")
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) != len(pairs):
        raise JsonRejected("a JSON object names the same member twice")
    return members


def loads(raw: bytes | str) -> Any:
    """The value of JSON text ``raw``. ``JsonRejected`` for invalid JSON or UTF-8, too deep a
    nesting (past the interpreter's recursion limit), a lone surrogate or an object naming a
    member twice."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")  # strict: JSON on the wire is UTF-8, and encoded surrogates are invalid
        except UnicodeDecodeError:
            raise JsonRejected("not valid UTF-8") from None
    else:
        text = raw
        if _SURROGATE.search(text):
            raise JsonRejected("JSON text contains an unpaired surrogate (\\ud800-\\udfff)")
    try:
        value = json.loads(text, object_pairs_hook=_unique_members)
    except JsonRejected:
        raise
    except RecursionError:
        raise JsonRejected("JSON nests too deeply") from None
    except ValueError:
        raise JsonRejected("not valid JSON") from None
    if _SURROGATE_ESCAPE.search(text):  # only escapes can still produce lone surrogates
        _check_text(value)
    return value
