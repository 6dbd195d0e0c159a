"""Text no reader sees: Unicode tag characters outside an emoji flag, and stray variation selectors.

Both carry data in characters that no font draws and that every model reads. Written into
memory, they reach a model on every later turn while the person and the operator reviewing
that memory see nothing ("ASCII smuggling", "emoji smuggling"). So wherever text is stored
for a model to read, a character of either kind is refused unless it has its one visible use:

- Tag characters (U+E0000-U+E007F) mirror ASCII. Their one use in text is an emoji tag
  sequence: U+1F3F4 (a black flag), tag letters or digits, then U+E007F (cancel tag), as in the
  flags of England, Scotland and Wales.
- A variation selector (U+FE00-U+FE0F, U+E0100-U+E01EF) picks a glyph for the one character
  before it: an emoji's colour or text form, a math symbol's variant, an ideograph's registered
  shape. Each is refused when it follows no character or another selector (a run is how data is
  hidden: a byte per selector after one emoji), when it follows an ASCII character other than
  ``#``, ``*`` or a digit (no ASCII letter, space or punctuation has a variant, and one after each
  letter hides data in plain English), and, for U+E0100-U+E01EF, when it does not follow a CJK
  ideograph, the only characters those vary. Every standardized and emoji variation sequence of
  Unicode 15 passes.

Mongolian free variation selectors (U+180B-U+180F) are not screened: they are part of writing
Mongolian and vary its letters by position.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memory_core.domain.errors import HiddenText

_TAGS = "\U000e0000-\U000e007f"
_SELECTORS = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
_TAG = re.compile(f"[{_TAGS}]")
_SELECTOR = re.compile(f"[{_SELECTORS}]")
_SUSPECT = re.compile(f"[{_TAGS}{_SELECTORS}]")
_BLACK_FLAG = "\U0001f3f4"
_FLAG_SEQUENCE = re.compile(_BLACK_FLAG + "[\U000e0020-\U000e007e]+\U000e007f")
# The CJK ideographs: the unified blocks, the compatibility ideographs, and planes 2 and 3, which
# hold nothing else. Ranges, not unicodedata names, so that ideographs newer than Python's
# Unicode tables still count.
_IDEOGRAPH = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff]")
_ASCII_WITH_VARIANTS = frozenset("#*0123456789")
_FIRST_IDEOGRAPHIC_SELECTOR = 0xE0100


def hidden_character(text: str) -> str | None:
    """The first character of ``text`` no reader sees (a tag character outside an emoji tag sequence, or a stray
    variation selector: see the module), or None; always None for ASCII."""
    if text.isascii():
        return None
    flag_end = 0  # one pass: the tag characters of a flag are stepped over whole
    for found in _SUSPECT.finditer(text):
        at, character = found.start(), found.group()
        if at < flag_end:
            continue
        if _TAG.match(character):
            flag = _FLAG_SEQUENCE.match(text, at - 1) if at and text[at - 1] == _BLACK_FLAG else None
            if flag is None:
                return character
            flag_end = flag.end()
        elif _strays(text, at):
            return character
    return None


def is_tag_character(character: str) -> bool:
    """Whether ``character`` is in the Tags block (U+E0000-U+E007F), hidden text unless in a flag."""
    return _TAG.match(character) is not None


def first_hidden(fields: Iterable[tuple[str, str | None]]) -> tuple[str, str] | None:
    """(name, character) of the first of ``fields`` (name, text) whose text holds such a character, or None."""
    for name, text in fields:
        character = hidden_character(text) if text else None
        if character is not None:
            return name, character
    return None


def refuse_hidden_text(text: str | None, where: str) -> None:
    """Raise ``HiddenText`` naming ``where`` and the first such character when ``text`` holds one."""
    found = first_hidden([(where, text)])
    if found is not None:
        raise HiddenText(*found)


def _strays(text: str, at: int) -> bool:
    """Whether the variation selector at ``text[at]`` varies no character."""
    before = text[at - 1] if at else ""
    return (
        not before
        or _SELECTOR.match(before) is not None
        or (before.isascii() and before not in _ASCII_WITH_VARIANTS)
        or (ord(text[at]) >= _FIRST_IDEOGRAPHIC_SELECTOR and not _IDEOGRAPH.match(before))
    )
