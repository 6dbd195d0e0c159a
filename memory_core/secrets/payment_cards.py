"""Payment card numbers: Luhn-valid numbers with a real issuer prefix, as printed on cards.

Callers may rely on: ISBNs, epoch timestamps, IBANs and order or phone numbers are not
card numbers. Only ASCII digits are read as a card's digits (the Luhn check is defined on
them); the scanner folds other scripts' digits to ASCII first (``memory_core.secrets.folding``).
All patterns are compiled once at import, are safe to share between threads and avoid
unbounded nested quantifiers, so a hostile 64 KiB write cannot make a scan backtrack for long.
"""

from __future__ import annotations

import re

# 13-19 ASCII digits (as cards print them), either contiguous or in the
# groupings printed on cards (4-4-4-4[-1..3], Amex 4-6-5, Diners 4-6-4) with
# one consistent separator, not part of a longer run of digits, starting with a
# real issuer prefix for that length, not all one digit, and passing the Luhn
# check. ISBNs (978/979), epoch timestamps (1...), IBANs (letters first, groups
# of 4 with a short tail) and order/phone numbers do not fit all of these. The
# boundary checks are look-behinds from the first digit.

_CARD_CANDIDATE = re.compile(
    r"[0-9](?<![0-9.,/][0-9])(?<![0-9][ -][0-9])"
    r"(?:[0-9]{12,18}"
    r"|[0-9]{3}([ -])[0-9]{4}\1[0-9]{4}\1[0-9]{4}(?:\1[0-9]{1,3})?"
    r"|[0-9]{3}([ -])[0-9]{6}\2[0-9]{4,5})"
    r"(?![ -]?[0-9])(?!\.[0-9])"
)

# Every candidate starts with four ASCII digits at the start of a run of digits.
# The text, one byte per character with every digit as "0", lets bytes.find skip
# to such runs: a regex tried at each digit costs about 0.15 us a digit, and
# ordinary memory is full of dates and numbers.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_FOUR_DIGITS = b"0000"

# (prefix width, prefix range low, high, allowed card lengths)
_ISSUERS: tuple[tuple[int, int, int, frozenset[int]], ...] = (
    (1, 4, 4, frozenset({13, 16, 19})),  # Visa
    (2, 51, 55, frozenset({16})),  # Mastercard
    (4, 2221, 2720, frozenset({16})),  # Mastercard 2-series
    (2, 34, 34, frozenset({15})),  # American Express
    (2, 37, 37, frozenset({15})),
    (4, 6011, 6011, frozenset({16, 17, 18, 19})),  # Discover
    (3, 644, 649, frozenset({16, 17, 18, 19})),
    (2, 65, 65, frozenset({16, 17, 18, 19})),
    (4, 3528, 3589, frozenset({16, 17, 18, 19})),  # JCB
    (3, 300, 305, frozenset({14, 15, 16, 17, 18, 19})),  # Diners Club
    (2, 36, 36, frozenset({14, 15, 16, 17, 18, 19})),
    (2, 38, 39, frozenset({14, 15, 16, 17, 18, 19})),
    (2, 62, 62, frozenset({16, 17, 18, 19})),  # UnionPay
    (2, 50, 50, frozenset({16, 17, 18, 19})),  # Maestro
    (2, 56, 58, frozenset({16, 17, 18, 19})),
    (4, 6304, 6304, frozenset({16, 17, 18, 19})),
    (4, 6759, 6759, frozenset({16, 17, 18, 19})),
    (4, 6761, 6763, frozenset({16, 17, 18, 19})),
    (4, 2200, 2204, frozenset({16, 17, 18, 19})),  # Mir
)


def luhn_valid(digits: str) -> bool:
    """True when the digit string passes the Luhn (mod 10) check."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if index % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _has_issuer_prefix(digits: str) -> bool:
    return any(len(digits) in lengths and low <= int(digits[:width]) <= high for width, low, high, lengths in _ISSUERS)


def is_card_number(candidate: str) -> bool:
    """True when ``candidate`` (digits, spaces, dashes) is a plausible payment card number."""
    digits = candidate.replace(" ", "").replace("-", "")
    if not 13 <= len(digits) <= 19 or not digits.isdigit() or len(set(digits)) == 1:
        return False
    return _has_issuer_prefix(digits) and luhn_valid(digits)


def has_card_number(text: str, lowered: str = "") -> bool:
    """True when ``text`` contains a Luhn-valid number shaped like a payment card."""
    # "replace" encodes each non-ASCII character as one "?", so indices still match ``text``.
    marked = text.encode("ascii", "replace").translate(_DIGITS_AS_ZERO)
    index = marked.find(_FOUR_DIGITS)
    while index != -1:
        # Inside a run or a card's later group the candidate's look-behinds fail at once.
        candidate = _CARD_CANDIDATE.match(text, index)
        if candidate is not None and is_card_number(candidate.group(0)):
            return True
        index = marked.find(_FOUR_DIGITS, index + 4 if candidate is None else candidate.end())
    return False
