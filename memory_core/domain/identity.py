"""Who is calling, and the one grammar of caller identifiers.

Memory is partitioned by owner: a caller's normalized UPN, or an internal
owner of the service's own records (team-shared and legacy memory, deletion
requests, agent settings). The two can never meet: ``caller_upn`` accepts
only ``local@domain`` with exactly one "@", and every internal owner is
"~name" with none (``internal_owner``). Whatever a credential, a header or an
operator names, it reaches the store only through ``caller_upn``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memory_core.domain.hidden_text import DRAWN_AS_NOTHING

MAX_UPN_CHARS = 320
#: An instance id (the ``{instanceId}`` of every route, X-INSTANCE-ID, MEMORY_DEFAULT_INSTANCE_ID).
INSTANCE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"

# RFC 5322 atext without "/", "?" and "\": the local part of a UPN or e-mail
# address as directories issue them, guest forms ("alex_contoso.com#EXT#") included.
_LOCAL_PART = r"[a-z0-9!#$%&'*+=^_`{|}~.-]{1,256}"
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_UPN = re.compile(rf"{_LOCAL_PART}@{_LABEL}(?:\.{_LABEL})*")
# What a UPN is trimmed of: ASCII spaces only (str.strip would also trim Unicode spaces and separators).
_ASCII_SPACES = " \t\r\n"


class InvalidCallerId(ValueError):
    """A value that is not a caller identifier; the message says which rule it breaks, never the value."""


def caller_upn(raw: str) -> str:
    """The normalized owner key of a caller's UPN: trimmed of ASCII spaces, lower-cased, and checked against the
    grammar.

    ``local@domain``: a local part of letters, digits and ``!#$%&'*+=^_`{|}~.-``,
    one "@", and a DNS name (ASCII; internationalized names in punycode).
    Raises ``InvalidCallerId`` for anything else.
    """
    upn = raw.strip(_ASCII_SPACES)
    if not upn:
        raise InvalidCallerId("a user principal name is required")
    if len(upn) > MAX_UPN_CHARS:
        raise InvalidCallerId(f"a user principal name has at most {MAX_UPN_CHARS} characters")
    # ASCII is checked before lower-casing: Python lower-cases the Kelvin sign U+212A to "k", so
    # "\u212aate@contoso.com" would otherwise be kate@contoso.com, another caller's memory.
    if not upn.isascii():
        raise InvalidCallerId("a user principal name is ASCII (internationalized domain names in punycode)")
    upn = upn.lower()
    if not _UPN.fullmatch(upn):
        raise InvalidCallerId("a user principal name has the form name@domain (letters, digits, '.', '-', '_')")
    return upn


# What an identifier (an agent's object id) must not hold: controls, format characters (bidirectional overrides,
# zero-width ones, tags), separators, surrogates, and the default-ignorable letters and marks and selectors, which
# draw nothing. "trusted-\u202etob-lizziw" is shown as "trusted-wizzil-bot" wherever the id is shown.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_DRAWN_AS_NOTHING = DRAWN_AS_NOTHING | frozenset("\u180b\u180c\u180d\u180f")  # and the Mongolian selectors


def invisible_in_identifier(value: str) -> str | None:
    """The first character of ``value`` that draws nothing or reorders or formats text, or None."""
    for character in value:
        code = ord(character)
        if (unicodedata.category(character) in _INVISIBLE_CATEGORIES or character in _DRAWN_AS_NOTHING
                or 0xFE00 <= code <= 0xFE0F or 0xE0000 <= code <= 0xE0FFF):
            return character
    return None


def is_caller_upn(value: str) -> bool:
    """True when ``value`` is already a normalized caller UPN."""
    try:
        return caller_upn(value) == value
    except InvalidCallerId:
        return False


def internal_owner(name: str) -> str:
    """The partition owner "~name" of the service's own records: no caller UPN can take this form."""
    if not re.fullmatch(r"[a-z]{1,32}", name):
        raise ValueError("internal owner names are 1-32 lower-case letters")
    return f"~{name}"


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated user. ``upn`` is already normalized (``caller_upn``) and owns the memory."""

    upn: str
    name: str | None = None
    user_name: str | None = None
    user_id: str | None = None
    group_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AgentContext:
    """The agent a call is made for (agent scope), as the platform names it."""

    object_id: str
    name: str | None = None
