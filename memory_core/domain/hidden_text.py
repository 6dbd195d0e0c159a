"""Text no reader sees: Unicode tag characters outside an emoji flag, stray variation selectors, zero-width
characters in a row, and bidirectional overrides, which show text in another order than it is read.

Tag characters and selectors carry data in characters that no font draws and that every model reads. Written into
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

Zero-width characters in a row are refused: U+200B (zero-width space), U+200C (non-joiner), U+200D (joiner),
U+2060 (word joiner), U+2061-U+2064 (invisible operators), U+FEFF (zero-width no-break space) and U+180E
(Mongolian vowel separator), and with them the other characters Unicode makes default-ignorable (drawn as
nothing) in the BMP and plane 14 that no text needs two of: the soft hyphen, the combining grapheme joiner
U+034F, the Khmer inherent vowels, the Hangul filler U+3164 and its half-width form, the deprecated format
characters U+206A-U+206F, and the code points reserved as default-ignorable. One at a time each has its use (a
joiner in an emoji sequence or in Devanagari, a non-joiner in Persian, a break opportunity in a long word), but
two or more together are how zero-width steganography writes bits between two visible letters. Bidirectional
marks, embeddings and isolates (U+061C, U+200E, U+200F, U+202A-U+202C, U+2066-U+2069) are not counted, as
right-to-left text formatted by software writes them in runs (nested isolates opened and closed at once, a mark
beside an isolate), but neither do they break a run: two zero-width characters with only such controls between
them are a run. The conjoining Hangul fillers (U+115F, U+1160) are letters of a syllable, and not counted.
(The shorthand and musical format controls, U+1BCA0-U+1BCA3 and U+1D173-U+1D17A, are not looked for: see
``_ZERO_WIDTH_BMP``.) The second zero-width character of a run is the one named.

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

from memory_core.domain.errors import HiddenKind, HiddenText

_TAGS = "\U000e0000-\U000e007f"
_IDEOGRAPHIC_SELECTORS = "\U000e0100-\U000e01ef"
_MONGOLIAN_SELECTORS = "\u180b-\u180d\u180f"
_SELECTORS = f"{_MONGOLIAN_SELECTORS}\ufe00-\ufe0f{_IDEOGRAPHIC_SELECTORS}"
_TAG = re.compile(f"[{_TAGS}]")
_SELECTOR = re.compile(f"[{_SELECTORS}]")
_MONGOLIAN_SELECTOR = re.compile(f"[{_MONGOLIAN_SELECTORS}]")
# The default-ignorable code points (DerivedCoreProperties) that no text needs two of: not the selectors and tag
# characters (rules of their own), the bidirectional controls (``_BIDI_CONTROLS``), the conjoining Hangul fillers
# (letters of a syllable), or those outside the BMP and plane 14 (the shorthand and musical format controls); as a
# character class's contents. Where a class is what the engine scans the text for, its part beyond the BMP is one
# range: each range there costs every character of the text a comparison (a class with the three of plane 14 and
# those two blocks as well searched 64 KiB of ordinary text in 514 µs, against 218 µs with one).
_ZERO_WIDTH_BMP = (
    "\u00ad\u034f\u17b4\u17b5\u180e\u200b-\u200d\u2060-\u2065\u206a-\u206f\u3164\ufeff\uffa0\ufff0-\ufff8"
)
_ZERO_WIDTH = f"{_ZERO_WIDTH_BMP}\U000e0080-\U000e00ff\U000e01f0-\U000e0fff"
_ZERO_WIDTH_CHARACTER = re.compile(f"[{_ZERO_WIDTH}]")
DRAWN_AS_NOTHING = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0")
"""The default-ignorable characters that are letters or marks, not format characters (Cf), and are no selector: the
combining grapheme joiner, the Hangul fillers and the Khmer inherent vowels. A name or an identifier holding one
reads as the same without it."""
# Selectors and zero-width characters together, scanned for: plane 14 from U+E0080 on holds nothing else.
_SELECTORS_OR_ZERO_WIDTH = f"{_MONGOLIAN_SELECTORS}\ufe00-\ufe0f{_ZERO_WIDTH_BMP}\U000e0080-\U000e0fff"
# Bidirectional marks, embeddings and isolates: neither counted in a run nor breaking one.
_IN_BETWEEN = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u2066\u2067\u2068\u2069")
_BIDI_CONTROLS = "".join(sorted(_IN_BETWEEN))  # as a character class's contents
# After a zero-width character matched, another follows, with only bidirectional controls between: the match is a
# run's first, and that other the first character that is hidden text.
_NEXT_IN_RUN = f"(?=[{_BIDI_CONTROLS}]*[{_ZERO_WIDTH}])"
_RUN = f"(?<=[{_ZERO_WIDTH}]){_NEXT_IN_RUN}"
# Where hidden text may begin: a selector, a tag character or an unassigned code point between tags and
# ideographic selectors, an override, or a zero-width character followed by another (one alone is kept, so text
# with a joiner or non-joiner here and there is answered by this pass alone). The first pass, the only one
# ordinary text takes, looks for these. It starts with one character class, so the engine skips to such
# characters as fast as it finds them, and looks around only there. Its speed depends on how the engine stores
# the class, not on its size: with five ranges or more it is a bitmap, and these cost what the two blocks alone
# did (228-248 µs per 64 KiB of ordinary text), where those two and the Mongolian selectors as a third range cost
# a third more (306 µs).
_SUSPECT = re.compile(
    f"[{_MONGOLIAN_SELECTORS}\u202d\u202e\ufe00-\ufe0f{_ZERO_WIDTH_BMP}\U000e0000-\U000e0fff]"
    f"(?:(?<=[^{_ZERO_WIDTH}])|{_NEXT_IN_RUN})"
)
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
# One pass over the text finds those, every selector U+FE00-U+FE0F after a character beyond ASCII that may have
# no variant, that character captured (``_stray`` asks the category of each different one), and the first
# character of each run of zero-width characters; a stray for certain and a run capture nothing (``_named`` tells
# them apart by the character matched). The pattern starts with one character class, so the engine skips to
# selectors and zero-width characters as fast as it finds them, and looks around only there: a pass of its own for
# the runs cost as much again (170 µs per 64 KiB), and capturing their first character 50% more (findall's pairs).
_SUSPECT_SELECTOR = re.compile(
    f"[{_SELECTORS_OR_ZERO_WIDTH}](?:{_CERTAINLY_STRAY}"
    f"|(?<=([^\x00-\x7f{_SELECTORS}{_IDEOGRAPHS}{_VARIED_SCRIPTS}{_VARIED_PUNCTUATION}{_SYMBOL_BLOCKS}])"
    f"[\ufe00-\ufe0f])|{_RUN})"
)
# Where the first stray is: a walk over the first pass's matches in Python (about 0.25 µs a match) up to this many,
# else a pattern naming the characters before the strays, compiled for the text (about 1 ms, as Python keeps only
# 512 compiled patterns and refused texts differ) and searched in one pass.
_WALKED_AT_MOST = 4096
_STRAY_SELECTOR = re.compile(f"[{_SELECTORS_OR_ZERO_WIDTH}](?:{_CERTAINLY_STRAY}|{_RUN})")
# Letters, marks, spaces, punctuation and controls: what no selector varies outside the blocks above. Unassigned
# code points (Cn in Python's tables, perhaps assigned since) are given the benefit of the doubt.
_CATEGORIES_WITHOUT_VARIANTS = frozenset({"Cc", "Cf", "Co"})
_CLASSES_WITHOUT_VARIANTS = frozenset("LMPZ")


def hidden_character(text: str) -> str | None:
    """The first character of ``text`` no reader sees (a tag character outside an emoji tag sequence, a stray
    variation selector, a bidirectional override, or the second zero-width character of a run: see the module),
    or None; always None for ASCII."""
    if text.isascii():
        return None
    suspect = _SUSPECT.search(text)  # one pass answers ordinary text
    if suspect is None:
        return None
    start = suspect.start()
    # An override is refused wherever it is: where the first one is, found from the first suspect on.
    overrides = [at for at in (text.find(override, start) for override in _BIDI_OVERRIDES) if at >= 0]
    found = [at for at in (_stray_tag(text, start), _stray(text, start), *overrides) if at is not None]
    return text[min(found)] if found else None


def kind_of(character: str) -> HiddenKind:
    """Which kind of hidden text ``character``, as ``hidden_character`` named it, is (what a refusal explains)."""
    if character in _BIDI_OVERRIDES:
        return "bidi_override"
    if _TAG.match(character):
        return "tag"
    if _MONGOLIAN_SELECTOR.match(character):
        return "mongolian_selector"
    if _SELECTOR.match(character):
        return "selector"
    return "zero_width_run"


# What a label may not hold even once: controls, format characters (zero-width ones, bidirectional marks, the
# soft hyphen; tag characters are ``hidden_character``'s, which keeps a flag), separators and surrogates.
_NOT_IN_LABELS = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def invisible_in_label(label: str) -> str | None:
    """The first character of a tag or an agent's name that draws nothing or formats text, even one alone, or None.

    Labels are shown and matched as they are: "wo\u200brk" reads as "work" and is another tag, matching other
    entries, and "Hel\u200bper" reads as another agent's name. Longer text keeps a lone zero-width character
    (``hidden_character``); a label, a word or two, has no use for one. Refused: controls, format characters (Cf:
    zero-width spaces and joiners, direction marks and isolates, the soft hyphen), line and paragraph separators,
    surrogates, and the characters that draw nothing without being format characters (``DRAWN_AS_NOTHING``).
    Tag characters and variation selectors are left to ``hidden_character``: a flag, and one selector after the
    character it varies (an emoji's colour form), are visible. A zero-width joiner or non-joiner between two
    letters, marks or symbols beyond ASCII is kept: scripts (Persian, the Indic ones) and emoji sequences need it,
    and it changes what is drawn there."""
    if label.isascii() and label.isprintable():
        return None
    for at, character in enumerate(label):
        if character in _JOINERS and _joins(label, at):
            continue
        if ((unicodedata.category(character) in _NOT_IN_LABELS and not _TAG.match(character))
                or character in DRAWN_AS_NOTHING):
            return character
    return None


# A joiner a script or an emoji needs: Persian writes many words with a zero-width non-joiner between two letters,
# Indic scripts use both joiners, and emoji sequences join symbols with a zero-width joiner. There it changes what is
# drawn, so two labels that differ by it look different; between ASCII letters it draws nothing.
_JOINERS = frozenset("\u200c\u200d")
_JOINED_CATEGORIES = ("L", "M", "S")


def _joins(label: str, at: int) -> bool:
    """Whether the joiner at ``at`` stands between two characters beyond ASCII that are letters, marks or symbols."""
    if at == 0 or at == len(label) - 1:
        return False
    return all(not neighbour.isascii() and unicodedata.category(neighbour)[0] in _JOINED_CATEGORIES
               for neighbour in (label[at - 1], label[at + 1]))


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
        raise refusal(*found)


def refusal(where: str, character: str) -> HiddenText:
    """The ``HiddenText`` error for ``character`` (as ``hidden_character`` named it) found in ``where``."""
    return HiddenText(where, character, kind_of(character))


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


def _stray(text: str, start: int) -> int | None:
    """Where the first variation selector at or after ``start`` that varies no character, or the second character
    of a run of zero-width characters, is, or None.

    One pass collects the selectors that are strays for certain, the characters before those that may be, and the
    runs; each different character is looked up once. Only a text holding a stray takes a second pass, which stops
    at the first: text of thousands of emoji or symbols, each with its selector, costs one pass, and a refused text
    costs about what it would if it passed (a few µs for a line, a few ms for 64 KiB of symbols with selectors)."""
    if start == 0 and _SELECTOR.match(text):  # the text's first character: it varies nothing
        return 0
    suspects = _SUSPECT_SELECTOR.findall(text, start)  # the character before a selector, or "" for certain
    if not suspects:
        return None
    strays = {base for base in set(suspects) if base and _varies_nothing(base)}
    if not strays and "" not in suspects:
        return None
    if len(suspects) <= _WALKED_AT_MOST:
        # A stray for certain captures no character (None here, "" in findall's list), and neither does a run.
        # The first pass found a stray, so the walk finds one.
        return next(_named(text, found) for found in _SUSPECT_SELECTOR.finditer(text, start)
                    if found.group(1) is None or found.group(1) in strays)
    stray = _STRAY_SELECTOR
    if strays:
        stray = re.compile(f"[{_SELECTORS_OR_ZERO_WIDTH}](?:{_CERTAINLY_STRAY}|{_RUN}"
                           f"|(?<=[{''.join(re.escape(base) for base in strays)}][\ufe00-\ufe0f]))")
    found = stray.search(text, start)
    return None if found is None else _named(text, found)


def _named(text: str, stray: re.Match[str]) -> int:
    """Where the hidden character of a match of a stray is: the selector matched, or, when the match is the first
    of a run of zero-width characters, the next one (past any bidirectional controls between)."""
    if not _ZERO_WIDTH_CHARACTER.match(text, stray.start()):
        return stray.start()
    at = stray.start() + 1
    while text[at] in _IN_BETWEEN:
        at += 1
    return at


def _varies_nothing(character: str) -> bool:
    category = unicodedata.category(character)
    return category[0] in _CLASSES_WITHOUT_VARIANTS or category in _CATEGORIES_WITHOUT_VARIANTS
