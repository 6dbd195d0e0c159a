"""Ways a person may write an ASCII text: other scripts' digits, full-width forms, wide spaces,
typographic hyphens, em dashes between digits, invisible formatting.

Each transform gives the text as an input method or a copied page produces it: a
CJK input method in full-width mode, a Persian or Hindi keyboard's digits, text
copied with no-break spaces or non-breaking hyphens, a typeset document's dashes,
or from a chat app that puts zero-width spaces or soft hyphens into long strings so
they can wrap. A reader reads each as the ASCII text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# A hyphen between two digits: where a person may type an em dash instead ("078—05—1120").
_BETWEEN_DIGITS = re.compile("(?<=[0-9])-(?=[0-9])")

# The zero of each script's digits (Unicode category Nd, ten in a row).
DIGIT_ZEROS = {
    "arabic-indic": 0x0660,
    "persian": 0x06F0,
    "devanagari": 0x0966,
    "bengali": 0x09E6,
    "thai": 0x0E50,
    "full-width": 0xFF10,
    "mathematical-bold": 0x1D7CE,
}


def digits_of(zero: int) -> Callable[[str], str]:
    """A transform writing ASCII digits as the ten digits from ``zero``."""
    table = {ord("0") + n: chr(zero + n) for n in range(10)}
    return lambda text: text.translate(table)


def full_width(text: str) -> str:
    """Every printable ASCII character as its full-width form, spaces as the ideographic space."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else "\u3000" if c == " " else c for c in text)


TRANSFORMS: dict[str, Callable[[str], str]] = {
    **{f"{name}-digits": digits_of(zero) for name, zero in DIGIT_ZEROS.items()},
    "full-width": full_width,
    "no-break-spaces": lambda text: text.replace(" ", "\u00a0"),
    "narrow-no-break-spaces": lambda text: text.replace(" ", "\u202f"),
    "non-breaking-hyphens": lambda text: text.replace("-", "\u2011"),
    "figure-dashes": lambda text: text.replace("-", "\u2012"),
    "en-dashes": lambda text: text.replace("-", "\u2013"),
    "minus-signs": lambda text: text.replace("-", "\u2212"),
    "em-dashes-between-digits": lambda text: _BETWEEN_DIGITS.sub("\u2014", text),
    "horizontal-bars-between-digits": lambda text: _BETWEEN_DIGITS.sub("\u2015", text),
    "zero-width-spaces": lambda text: every(3, "\u200b", text),
    "soft-hyphens": lambda text: every(5, "\u00ad", text),
}


def every(step: int, mark: str, text: str) -> str:
    """``mark`` after every ``step`` characters of ``text``."""
    return mark.join(text[i : i + step] for i in range(0, len(text), step))
