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
  letter hides data in plain English), when it follows a letter, mark, space, punctuation or
  control character of any other script that has none (one after each letter hides half a byte
  per letter of Cyrillic, Greek, Arabic, Devanagari or accented Latin just as well), and, for
  U+E0100-U+E01EF, when it does not follow a CJK ideograph, the only characters those vary.
  Symbols, digits and emoji keep one, and so do the scripts and characters with standardized
  variants: Myanmar, Phags-pa, Manichaean, Egyptian hieroglyphs, the script and math letters, and
  the punctuation that has an emoji or a positional form. Every standardized and emoji variation
  sequence of Unicode 15 passes.
- A Mongolian free variation selector (U+180B-U+180D, U+180F) picks the form of the Mongolian
  letter before it, and is refused after anything else (one after each Latin letter hides two
  bits a letter), at the start and after another selector. All 60 Mongolian variation sequences
  of Unicode 15 pass.

Text that shows something else than agents read is refused too: a bidirectional override
(U+202D left-to-right, U+202E right-to-left) draws the characters after it in the order it
forces, so a person reviewing the memory reads a sentence while agents read it backwards, or
the other way round ("Trojan Source", CVE-2021-42574). Nothing written for a reader needs one:
right-to-left text is ordered by the characters themselves, and the marks and isolates that
adjust it (U+200E, U+200F, U+2066-U+2069) are kept.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from memory_core.domain.errors import HiddenText

_TAGS = "\U000e0000-\U000e007f"
_IDEOGRAPHIC_SELECTORS = "\U000e0100-\U000e01ef"
_MONGOLIAN_SELECTORS = "\u180b-\u180d\u180f"
_SELECTORS = f"{_MONGOLIAN_SELECTORS}\ufe00-\ufe0f{_IDEOGRAPHIC_SELECTORS}"
_TAG = re.compile(f"[{_TAGS}]")
_SELECTOR = re.compile(f"[{_SELECTORS}]")
_MONGOLIAN_SELECTOR = re.compile(f"[{_MONGOLIAN_SELECTORS}]")
# Every character hidden text begins with: the selectors, the tags and the unassigned code points between tags
# and ideographic selectors, and the overrides. The first pass, the only one ordinary text takes, looks for them.
# Its speed depends on how the engine stores the class, not on its size: these five ranges cost what the two
# blocks alone did (228-248 µs per 64 KiB of ordinary text), where those two and the Mongolian selectors as a
# third range cost a third more (306 µs).
_SUSPECT = re.compile("[\u180b-\u180d\u180f\u202d\u202e\ufe00-\ufe0f\U000e0000-\U000e01ef]")
_BIDI_OVERRIDES = ("\u202d", "\u202e")
# The Mongolian block: the letters a Mongolian free variation selector may follow (all 60 sequences' are there).
_MONGOLIAN = "\u1800-\u18af"
_BLACK_FLAG = "\U0001f3f4"
_FLAG_OR_TAG = re.compile(f"{_BLACK_FLAG}[\U000e0020-\U000e007e]+\U000e007f|[{_TAGS}]")
# The CJK ideographs: the unified blocks, the compatibility ideographs, and planes 2 and 3, which
# hold nothing else. Ranges, not unicodedata names, so that ideographs newer than Python's
# Unicode tables still count.
_IDEOGRAPHS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
# ASCII but "#", "*" and the digits, the only ASCII characters with variants.
_ASCII_WITHOUT_VARIANTS = "\x00-\x22\x24-\x29\x2b-\x2f\x3a-\x7f"
# Beyond ASCII, what a selector U+FE00-U+FE0F may follow though it is no symbol or digit: every standardized and
# emoji variation sequence of Unicode 15 whose base is a letter, mark or punctuation. Whole blocks for the
# scripts (Myanmar and its extensions, Phags-pa, Manichaean, Egyptian hieroglyphs) and the letterlike and math
# letters, so that variants added to them later pass; the punctuation one by one (in its blocks are spaces and
# invisible format characters, which must not carry one).
_VARIED_SCRIPTS = (
    "\u1000-\u109f\ua9e0-\ua9ff\uaa60-\uaa7f\ua840-\ua87f\U00010ac0-\U00010aff\U00013000-\U000143ff"
    "\u2100-\u214f\U0001d400-\U0001d7ff"
)
_VARIED_PUNCTUATION = "\u203c\u2049\u3001\u3002\u3030\u303d\uff01\uff0c\uff0e\uff1a\uff1b\uff1f"
# Symbols and emoji, which keep a selector: the blocks from arrows to miscellaneous symbols, enclosed CJK and
# CJK compatibility, and the emoji planes' blocks, whose characters are all symbols or numbers but for 60
# brackets (U+2308-U+230B, U+2329, U+232A, U+2768-U+2775, U+27C5, U+27C6, U+27E6-U+27EF, U+2983-U+2998,
# U+29D8-U+29DB, U+29FC, U+29FD), punctuation with no variant, cut out. Left out of the search below for speed
# alone (text full of emoji finds nothing to look at): the brackets must be looked at like any punctuation.
_SYMBOL_BLOCKS = (
    "\u00a9\u00ae\u2190-\u2307\u230c-\u2328\u232b-\u2767\u2776-\u27c4\u27c7-\u27e5\u27f0-\u2982"
    "\u2999-\u29d7\u29dc-\u29fb\u29fe-\u2bff\u3200-\u33ff\U0001f000-\U0001faff"
)
# Where a selector varies no character (the module's rule), after the text's first character, for certain: after
# a selector or an ASCII character without variants, an ideographic one after anything but an ideograph, or a
# Mongolian one after anything but a Mongolian letter.
_CERTAINLY_STRAY = (
    f"(?<=[{_SELECTORS}{_ASCII_WITHOUT_VARIANTS}][{_SELECTORS}])"
    f"|(?<=[{_IDEOGRAPHIC_SELECTORS}])(?<![{_IDEOGRAPHS}][{_IDEOGRAPHIC_SELECTORS}])"
    f"|(?<=[{_MONGOLIAN_SELECTORS}])(?<![{_MONGOLIAN}][{_MONGOLIAN_SELECTORS}])"
)
# One pass over the text finds both those and every selector U+FE00-U+FE0F after a character beyond ASCII that may
# have no variant, that character captured (``_stray_selector`` asks the category of each different one; a stray
# for certain captures nothing). The pattern starts with one character class, so the engine skips to selectors
# as fast as it finds them, and looks behind only there.
_SUSPECT_SELECTOR = re.compile(
    f"[{_SELECTORS}](?:{_CERTAINLY_STRAY}"
    f"|(?<=([^\x00-\x7f{_SELECTORS}{_IDEOGRAPHS}{_VARIED_SCRIPTS}{_VARIED_PUNCTUATION}{_SYMBOL_BLOCKS}])"
    f"[\ufe00-\ufe0f]))"
)
# Where the first stray is: a walk over the first pass's matches in Python (about 0.25 µs a match) up to this many,
# else a pattern naming the characters before the strays, compiled for the text (about 1 ms, as Python keeps only
# 512 compiled patterns and refused texts differ) and searched in one pass.
_WALKED_AT_MOST = 4096
_STRAY_SELECTOR = re.compile(f"[{_SELECTORS}](?:{_CERTAINLY_STRAY})")
# Letters, marks, spaces, punctuation and controls: what no selector varies outside the blocks above. Unassigned
# code points (Cn in Python's tables, perhaps assigned since) are given the benefit of the doubt.
_CATEGORIES_WITHOUT_VARIANTS = frozenset({"Cc", "Cf", "Co"})
_CLASSES_WITHOUT_VARIANTS = frozenset("LMPZ")


def hidden_character(text: str) -> str | None:
    """The first character of ``text`` no reader sees (a tag character outside an emoji tag sequence, a stray
    variation selector, or a bidirectional override: see the module), or None; always None for ASCII."""
    if text.isascii():
        return None
    suspect = _SUSPECT.search(text)  # one pass answers ordinary text
    if suspect is None:
        return None
    start = suspect.start()
    # An override is refused wherever it is: where the first one is, found from the first suspect on.
    overrides = [at for at in (text.find(override, start) for override in _BIDI_OVERRIDES) if at >= 0]
    found = [at for at in (_stray_tag(text, start), _stray_selector(text, start), *overrides) if at is not None]
    return text[min(found)] if found else None


def is_tag_character(character: str) -> bool:
    """Whether ``character`` is in the Tags block (U+E0000-U+E007F), hidden text unless in a flag."""
    return _TAG.match(character) is not None


def is_bidi_override(character: str) -> bool:
    """Whether ``character`` is a bidirectional override, which shows text in another order than it is read."""
    return character in _BIDI_OVERRIDES


def is_mongolian_selector(character: str) -> bool:
    """Whether ``character`` is a Mongolian free variation selector, hidden text unless after a Mongolian letter."""
    return _MONGOLIAN_SELECTOR.match(character) is not None


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
    """Where the first variation selector at or after ``start`` that varies no character is, or None.

    One pass collects the selectors that are strays for certain and the characters before those that may be;
    each different character is looked up once. Only a text holding a stray takes a second pass, which stops at
    the first: text of thousands of emoji or symbols, each with its selector, costs one pass, and a refused text
    costs about what it would if it passed (a few µs for a line, a few ms for 64 KiB of symbols with selectors)."""
    if start == 0 and _SELECTOR.match(text):  # the text's first character: it varies nothing
        return 0
    suspects = _SUSPECT_SELECTOR.findall(text, start)
    if not suspects:
        return None
    strays = {base for base in set(suspects) if base and _varies_nothing(base)}
    if not strays and "" not in suspects:
        return None
    if len(suspects) <= _WALKED_AT_MOST:
        # A stray for certain captures no character (None here, "" in findall's list). The first pass found one.
        return next(found.start() for found in _SUSPECT_SELECTOR.finditer(text, start)
                    if found.group(1) is None or found.group(1) in strays)
    stray = _STRAY_SELECTOR
    if strays:
        stray = re.compile(f"[{_SELECTORS}](?:{_CERTAINLY_STRAY}"
                           f"|(?<=[{''.join(re.escape(base) for base in strays)}][\ufe00-\ufe0f]))")
    found = stray.search(text, start)
    return found.start() if found else None


def _varies_nothing(character: str) -> bool:
    category = unicodedata.category(character)
    return category[0] in _CLASSES_WITHOUT_VARIANTS or category in _CATEGORIES_WITHOUT_VARIANTS
