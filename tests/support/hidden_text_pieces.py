"""Pieces of text that hidden text is made of, or hides among, for property tests of the hidden-text rule.

A text drawn as a list of these pieces, joined, mixes what the rule must tell apart: ASCII with and without
variants, letters of other scripts, marks, spaces, ideographs, emoji, a flag, joiners, tag characters inside and
outside a flag, every kind of selector, the characters selectors may follow beyond ASCII (Myanmar, letterlike and
math letters, punctuation with variants, symbols), brackets among the symbols (which have none), Mongolian,
the bidirectional controls kept and refused, and zero-width characters (one is kept, two in a row refused).
"""

from __future__ import annotations


def tags(text: str) -> str:
    """``text`` spelled in Unicode tag characters: the same letters, drawn by no font."""
    return "".join(chr(0xE0000 + ord(ch)) for ch in text)


SCOTLAND = "\U0001f3f4" + tags("gbsct") + "\U000e007f"

PIECES = [
    "a", " ", "1", "#", "\u00e9", "\u845b", "\U00020000", "\u2764", "\U0001f600", "\U0001f3f4", "\u200d",
    "\ufe0f", "\ufe0e", "\ufe00", "\U000e0100", "\U000e01ef", "\U000e0067", "\U000e0062", "\U000e007f",
    "\U000e0001", "\U000e0020", "\U000e007e", SCOTLAND,
    "\u043f", "\u0301", "\u00a0", "\u3000", "\u200b", "\u20ac", "\u0663", "\u2139", "\u1000", "\uff01", "\u3001",
    "\U0001d49c", "\U00013091", "\u00a9", "\u23f0", "\u2308", "\u27e8", "\u1820", "\u180b", "\u180e", "\u180f",
    "\u202e", "\u202d", "\u2067", "\u200c", "\u2060", "\u2062", "\ufeff",
    "\u200e", "\u2069", "\u034f", "\u00ad", "\u3164",
]
