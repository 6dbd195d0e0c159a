"""The ASCII a text reads as: other scripts' digits, full-width forms, wide spaces and
typographic hyphens folded, invisible formatting removed.

Why: the detectors look for secrets as they are printed, in ASCII. A person who
types with a Japanese or Chinese input method in full-width mode writes a card
number in full-width digits (U+FF10-U+FF19), a Persian keyboard writes its own
digits (U+06F0-U+06F9), and text copied from a web page or PDF separates groups
with no-break spaces and non-breaking hyphens. A reader (or a model) reads each
of them as the ASCII number; the scanner must too.

Callers may rely on:

* ``ascii_folded(text)`` is ``None`` when folding changes nothing, which is
  every ASCII text (answered at once: ``str.isascii`` reads a flag).
* Otherwise it is the text with every character that reads as one ASCII
  character replaced by it, every character that reads as nothing removed,
  and nothing else changed:

  - every decimal digit of any script (Unicode category Nd: Arabic-Indic,
    Devanagari, full-width, mathematical bold...) to its ASCII digit;
  - the full-width forms of ASCII (U+FF01-U+FF5E) to ASCII;
  - spaces that are not ASCII (no-break, narrow no-break, figure, thin,
    ideographic...) to " ";
  - the hyphens and dashes typesetting puts between digits to "-": the
    hyphen, the non-breaking hyphen and the figure dash (U+2010-U+2012; web
    pages write phone and account numbers with them so they never break), the
    en dash (U+2013; typeset documents and PDFs put it between numbers), the
    minus sign (U+2212) and the small hyphen-minus (U+FE63); and the em dash,
    the horizontal bar and the small em dash (U+2014, U+2015, U+FE58) between
    two digits only: typesetting never groups numbers with them, but a person
    can ("078—05—1120"), and prose, models' prose above all, is full of them
    between words, which must not cost a second scan;
  - invisible formatting removed: the zero-width space, the word joiner, soft
    hyphens, the byte-order mark, direction marks, embeddings and isolates.
    Chat apps and web pages put some of them into long strings so they can
    wrap, and right-to-left editors around numbers; a reader never sees them.
    The zero-width joiner and non-joiner stay: Persian and Indic writing and
    emoji use them, and folding them would scan such texts twice for nothing;
    but between two visible ASCII characters, where no script or emoji needs
    them ("AKIAIOSF\u200cODNN7EXAMPLE"), they go too.

* Not NFKC, on purpose: it can make a text far longer (U+FDFA becomes 18
  characters, so a 64 KiB write could be scanned as over 390,000), and most of
  what it folds (ligatures, superscripts, units) is not how secrets are
  written. Circled numbers, other dashes, and em dashes that are not between
  two digits are left as they are.
"""

from __future__ import annotations

import re
import unicodedata

# Full-width forms, spaces, hyphens and invisible formatting by str.translate (in C); the
# digits of other scripts, fewer and spread over 64 blocks (Unicode 14), one by one.
_INVISIBLE = (0x00AD, 0x180E, 0x200B, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2060, 0x2065),
              *range(0x2066, 0x206A), 0xFEFF)
_FOLDS: dict[int, int | None] = (
    {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
    | dict.fromkeys((0x00A0, *range(0x2000, 0x200B), 0x202F, 0x205F, 0x3000), 0x20)  # those NFKC maps to " "
    | dict.fromkeys((*range(0x2010, 0x2014), 0x2212, 0xFE63), 0x2D)  # hyphens, figure and en dash, minus
    | dict.fromkeys(_INVISIBLE)
)
_OTHER_DIGIT_CLASS = r"[^\D0-9]"  # a decimal digit (Unicode category Nd) that is not ASCII
_EM_DASHES = "\u2014\u2015\ufe58"  # em dash, horizontal bar, small em dash
# The dash first: the search stops at dashes only, and the replacement is a literal "-".
_EM_DASH_BETWEEN_DIGITS = re.compile(f"[{_EM_DASHES}](?<=[0-9].)(?=[0-9])")
_DASHES_LOOKED_AT = 64
_OTHER_DIGIT = re.compile(_OTHER_DIGIT_CLASS)
# What is searched for: such a digit, or a character of the table.
_READ_AS_ASCII = re.compile(_OTHER_DIGIT_CLASS + "|[" + "".join(re.escape(chr(code)) for code in sorted(_FOLDS)) + "]")
_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")
# The zero-width non-joiner and joiner between two visible ASCII characters (once folded): no writing needs them there,
# and one splits a token the detectors read whole, which a reader (a model above all) reads whole all the same.
_JOINERS = "\u200c\u200d"
_JOINER_IN_ASCII = re.compile(f"(?<=[\x21-\x7e])[{_JOINERS}]+(?=[\x21-\x7e])")
_ASCII_BYTES = bytes(range(128))


def _ascii_digit(digit: re.Match[str]) -> str:
    return chr(48 + unicodedata.decimal(digit.group()))


def _folded_run(run: re.Match[str]) -> str:
    return _OTHER_DIGIT.sub(_ascii_digit, run.group().translate(_FOLDS))


def ascii_folded(text: str) -> str | None:
    """``text`` as it reads in ASCII, or ``None`` when that is ``text`` itself (see the module)."""
    if text.isascii():
        return None
    # Deleting every ASCII byte from the UTF-8 leaves the other characters whole and in order
    # (no byte of a longer sequence is ASCII), so the regex reads those alone: in C, about
    # 60 us for 64 KiB of mostly English text, against 1 ms for the regex over the text.
    others = text.encode("utf-8", "surrogatepass").translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")
    dashed = any(dash in others for dash in _EM_DASHES)
    joined = any(joiner in others for joiner in _JOINERS)
    if _READ_AS_ASCII.search(others) is None and not (dashed and _dash_between_digits(text)) and not (
            joined and _JOINER_IN_ASCII.search(text)):
        return None
    folded = _NOT_ASCII.sub(_folded_run, text)
    if joined:  # after the folds, so that a joiner between full-width letters goes too
        folded = _JOINER_IN_ASCII.sub("", folded)
    # After the digits are folded, so that Arabic-Indic digits around an em dash read "1-2" too.
    return _EM_DASH_BETWEEN_DIGITS.sub("-", folded) if dashed and _dash_between_digits(folded) else folded


def _dash_between_digits(text: str) -> bool:
    """Whether an em dash of ``_EM_DASHES`` stands between two ASCII digits of ``text``.

    Each dash is found with ``str.find`` (a fast search in C), so prose with a few of them costs
    microseconds; past ``_DASHES_LOOKED_AT`` of them, one regex search of the text answers (at most
    about 0.7 ms for 64 KiB, made of dashes), so no text costs more than that.
    """
    looked_at = 0
    for dash in _EM_DASHES:
        at = text.find(dash)
        while at != -1:
            if 0 < at < len(text) - 1 and "0" <= text[at - 1] <= "9" and "0" <= text[at + 1] <= "9":
                return True
            looked_at += 1
            if looked_at > _DASHES_LOOKED_AT:
                return _EM_DASH_BETWEEN_DIGITS.search(text) is not None
            at = text.find(dash, at + 1)
    return False
