"""Cutting one rendered section to fit a budget (``budget.fill_scope``, for the newest entry alone).

Whole lines first; when not even the first line of text fits, inside that line, never inside a
character cluster (a base and its combining marks, an emoji sequence joined by ZWJ, a flag's
regional-indicator pair, a Hangul syllable's jamo): a cluster longer than ``_LONGEST_CLUSTER``
code points is the only one that may be split. A marker line (``CUT_MARKER``) says what was cut.
"""

from __future__ import annotations

import unicodedata

CUT_MARKER = "[memory-core: entry cut to fit the budget; "


def cut_section(section: str, room: int) -> str | None:
    """The longest run of ``section``'s first whole lines that, with a marker line, fits in ``room``.

    It holds the heading (if any) and at least one non-blank line of text. When even
    that does not fit, the first line of text is cut (``_cut_in_line``). None when not
    one character of it fits. Lines are split on "\\n" only, so a "\\r\\n" pair stays whole.
    """
    lines = section.split("\n")
    heading = 1 if lines and lines[0].startswith("## ") else 0
    first_text = next((i for i in range(heading, len(lines)) if lines[i].strip()), None)
    if first_text is None:
        return None
    best: str | None = None
    length = sum(len(line) + 1 for line in lines[: first_text + 1]) - 1
    for count in range(first_text + 1, len(lines) + 1):
        if count > first_text + 1:
            length += 1 + len(lines[count - 1])
        marker = f"{CUT_MARKER}{count} of {len(lines)} lines shown]"
        if length + 1 + len(marker) > room:
            break
        best = "\n".join(lines[:count]) + "\n" + marker
    return best if best is not None else _cut_in_line(lines, first_text, room)


def _cut_in_line(lines: list[str], index: int, room: int) -> str | None:
    """``lines`` before ``index`` whole, then as much of line ``index`` as fits in ``room`` with the marker.

    The cut ends between two grapheme clusters (``_cluster_start``), unless one runs on for
    more than ``_LONGEST_CLUSTER`` code points; None when the part that fits has no text
    (blank, or only a list or quote marker).
    """
    line = lines[index]
    before = "".join(f"{text}\n" for text in lines[:index])

    def marker(shown: int | str) -> str:
        return (f"{CUT_MARKER}{index} of {len(lines)} lines shown, then {shown} of {len(line)} characters "
                f"of line {index + 1}]")

    fixed = len(before) + 1 + len(marker(""))  # the lines before, the newline before the marker, the marker
    fits = 0
    for digits in range(1, len(str(len(line))) + 1):  # the count's own digits are part of the room
        fits = max(fits, min(room - fixed - digits, 10**digits - 1))
    fits = min(fits, len(line) - 1)
    if fits <= 0:
        return None
    end, floor = fits, max(0, fits - _LONGEST_CLUSTER)
    while end > floor and not _cluster_start(line, end):
        end -= 1
    if end == floor > 0 and not _cluster_start(line, end):
        end = fits  # no text is written in clusters this long (a letter under a pile of accents): cut anyway
    if not _has_text(line[:end]):
        return None
    return f"{before}{line[:end]}\n{marker(end)}"


def _has_text(part: str) -> bool:
    return bool(part.lstrip(" \t-*+>").strip())


_ZWJ = "\u200d"
# Longer than any grapheme cluster of written text or emoji (a ZWJ family is 7 code points, a tag flag 7).
_LONGEST_CLUSTER = 32


def _cluster_start(text: str, at: int) -> bool:
    """Whether a grapheme cluster starts at ``text[at]`` (0 < ``at`` < ``len(text)``): not a combining mark,
    a joiner or what a joiner joins, a variation selector, an emoji modifier or tag, a Hangul vowel or final,
    nor the second regional indicator of a flag. (Unicode's segmentation, for the clusters text is written in.)"""
    after, before = text[at], text[at - 1]
    code = ord(after)
    if (after == _ZWJ or before == _ZWJ or unicodedata.category(after).startswith("M")
            or 0xFE00 <= code <= 0xFE0F or 0x1F3FB <= code <= 0x1F3FF or 0xE0020 <= code <= 0xE01EF
            or 0x1160 <= code <= 0x11FF or 0xD7B0 <= code <= 0xD7FF):
        return False
    if _regional(after) and _regional(before):
        run = 0
        while at - 1 - run >= 0 and _regional(text[at - 1 - run]):
            run += 1
        return run % 2 == 0
    return True


def _regional(char: str) -> bool:
    return 0x1F1E6 <= ord(char) <= 0x1F1FF
