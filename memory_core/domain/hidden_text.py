"""Text no reader sees: Unicode tag characters outside an emoji flag.

The Tags block (U+E0000-U+E007F) mirrors ASCII in characters that no font draws and
that every model reads. Written into memory, they carry instructions that reach a
model on every later turn while the person and the operator reviewing that memory
see nothing ("ASCII smuggling"). Their one use in text is an emoji tag sequence:
U+1F3F4 (a black flag), tag letters or digits, then U+E007F (cancel tag), as in the
flags of England, Scotland and Wales. Those are kept; any other tag character is
refused wherever text is stored for a model to read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memory_core.domain.errors import HiddenText

_TAG = re.compile("[\U000e0000-\U000e007f]")
_FLAG_SEQUENCE = re.compile("\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f")


def hidden_character(text: str) -> str | None:
    """The first tag character of ``text`` outside an emoji tag sequence, or None (always None for ASCII)."""
    if text.isascii() or _TAG.search(text) is None:
        return None
    found = _TAG.search(_FLAG_SEQUENCE.sub("", text))
    return found.group() if found else None


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
