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
_IDEOGRAPHIC_SELECTORS = "\U000e0100-\U000e01ef"
_SELECTORS = f"\ufe00-\ufe0f{_IDEOGRAPHIC_SELECTORS}"
_TAG = re.compile(f"[{_TAGS}]")
_SELECTOR = re.compile(f"[{_SELECTORS}]")
# Both blocks, and the unassigned code points between them: one range less makes the first pass, the only
# one ordinary text takes, about a fifth faster.
_SUSPECT = re.compile("[\ufe00-\ufe0f\U000e0000-\U000e01ef]")
_BLACK_FLAG = "\U0001f3f4"
_FLAG_OR_TAG = re.compile(f"{_BLACK_FLAG}[\U000e0020-\U000e007e]+\U000e007f|[{_TAGS}]")
# The CJK ideographs: the unified blocks, the compatibility ideographs, and planes 2 and 3, which
# hold nothing else. Ranges, not unicodedata names, so that ideographs newer than Python's
# Unicode tables still count.
_IDEOGRAPHS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
# ASCII but "#", "*" and the digits, the only ASCII characters with variants.
_ASCII_WITHOUT_VARIANTS = "\x00-\x22\x24-\x29\x2b-\x2f\x3a-\x7f"
# A selector that varies no character (the module's rule), after the text's first character: one after
# a selector or an ASCII character without variants, or an ideographic one after anything but an
# ideograph. The pattern starts with one character class, so the engine skips to selectors as fast as
# it finds them, and looks behind only there.
_STRAY_SELECTOR = re.compile(
    f"[{_SELECTORS}](?:(?<=[{_SELECTORS}{_ASCII_WITHOUT_VARIANTS}][{_SELECTORS}])"
    f"|(?<=[{_IDEOGRAPHIC_SELECTORS}])(?<![{_IDEOGRAPHS}][{_IDEOGRAPHIC_SELECTORS}]))"
)


def hidden_character(text: str) -> str | None:
    """The first character of ``text`` no reader sees (a tag character outside an emoji tag sequence, or a stray
    variation selector: see the module), or None; always None for ASCII."""
    if text.isascii():
        return None
    suspect = _SUSPECT.search(text)  # one pass answers ordinary text
    if suspect is None:
        return None
    found = [at for at in (_stray_tag(text, suspect.start()), _stray_selector(text, suspect.start())) if at is not None]
    return text[min(found)] if found else None


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


def _stray_tag(text: str, start: int) -> int | None:
    """Where the first tag character at or after ``start`` outside an emoji tag sequence is, or None."""
    first = _TAG.search(text, start)
    if first is None:
        return None
    # Each match is a whole flag, stepped over, or one tag character outside any: the first of those.
    for found in _FLAG_OR_TAG.finditer(text, max(0, first.start() - 1)):
        if found.end() - found.start() == 1:
            return found.start()
    return None


def _stray_selector(text: str, start: int) -> int | None:
    """Where the first variation selector at or after ``start`` that varies no character is, or None."""
    if start == 0 and _SELECTOR.match(text):  # the text's first character: it varies nothing
        return 0
    found = _STRAY_SELECTOR.search(text, start)
    return found.start() if found else None
