"""When two names in one directory of the memory tool would be taken for each other (``lookalike_of``).

Two names are look-alikes when they differ only

* in case or in the width, font or ligature of their characters ("Notes.md", "\uff4eotes.md", "\ufb01le.md" beside
  "notes.md", "file.md"): ``folded`` makes them one; or
* in characters Unicode lists as confusable (UTS #39, its confusables.txt): a Cyrillic "\u043e" or a Greek
  "\u03bf" for a Latin "o", "\u0440\u0430ypal" for "paypal", a Cyrillic "\u0422" in "\u0422ax.md" beside
  "tax.md" (the case twin "Tax.md" spelled with it); compared by their skeletons (``skeleton``) as written, once
  folded, and folded between two skeletons, and only where the two names, once folded, differ in a character that
  is not ASCII.

Where they differ in ASCII characters alone they are compared by their case alone, as two ASCII names always are:
Unicode's table also lists "1" for "l", "0" for "O" and "rn" for "m", which people type apart ("\u00dcbung 1.md"
and "\u00dcbung I.md" are names, as "Teil 1.md" and "Teil I.md" are), and the threat this rule answers is a name
in another script planted beside a person's own (the Arabic-Indic "\u0661.md" beside "1.md" is refused).

A superscript, subscript, fraction, circled or squared form is not folded either: "x\u00b2.md" reads apart from
"x2.md" (NFKC, which made them one before, folds these too).

The table is ``confusable_prototypes.py`` beside this module, generated from Unicode's file by
``scripts/generate_confusable_prototypes.py`` (version and licence in its docstring), imported by the first
check that needs it, not at import: most names are ASCII and never need it.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Collection

# Compatibility forms a reader sees as another thing than the plain character (unicodedata.decomposition's tags):
# x\u00b2 is "x squared", \u00bd a half, \u2460 a circled digit. The other forms (full-width, a font, a ligature, a
# positional form of Arabic) draw the same letters, and are folded.
_FORMS_SEEN_APART = ("<super>", "<sub>", "<fraction>", "<circle>", "<square>")

# Default_Ignorable_Code_Point (Unicode 17.0, DerivedCoreProperties.txt): a skeleton drops them (UTS #39), so a
# name stored with a zero-width character or a bidirectional mark before such names were refused
# (``memory_paths.parse_new_path``) is a twin of the name without it.
_DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)


# The names beside a new one whose fold and skeletons are kept per process (``_sibling_forms``): a directory's own
# (the index holds at most 2,000 files; the appended entries' names are ASCII and never kept), with room for another.
_SIBLING_FORMS_KEPT = 4096

# A dot above (U+0307) drawn on a soft-dotted letter or on a dotless one (after NFD, the skeleton's "i" and "j":
# Unicode's table makes the dotless "\u0131" an "i", not the dotless "\u0237" a "j") replaces the letter's own dot:
# "\u0131\u0307nfo.md" and "i\u0307nfo.md" are drawn as "info.md" (Chromium's IDN spoof checker refuses both).
_DOT_ABOVE = "\u0307"
_DOTTED_BY_IT = {"i": "i", "j": "j", "\u0237": "j"}

# The characters no prototype replaces that a skeleton keeps in its table as themselves, at most: ``str.translate``
# raises and catches a KeyError for each character of a name not in its table (most of the cost of a skeleton of a
# long accented name, whose letters are mostly ASCII and unmapped); a character kept is one lookup. Bounded, as the
# names come from users: a table of about 6,600 prototypes and 4,100 ignorables, and this many more. The blocks
# most names are written in (``_UNMAPPED_SEEDED``) are kept from the start, so names met first (another user's
# flood of rare characters) cannot take their place; once the bound is met, the table stops learning and is a
# plain dict again (``_SkeletonTable.__missing__``): a character it lacks costs main's KeyError, never more.
_UNMAPPED_KEPT = 16_384

# Basic Latin to Cyrillic (ASCII, the accented Latin letters and the combining marks NFD splits them into, IPA,
# Greek, Cyrillic): the unmapped ones among them are kept in the skeleton's table before any name is met.
_UNMAPPED_SEEDED = range(0x0000, 0x0530)

# The ASCII characters Unicode's table maps (``1`` to ``l``, ``m`` to ``rn``, ...) and the ASCII characters of their
# prototypes: the only ones a skeleton of an ASCII name changes or brings. A test holds it to the table.
_ASCII_SHAPED = b"\"%'01Ilmnr`|/O"


def folded(name: str) -> str:
    """The form two names share when they differ only in case or in the width, font or ligature of their characters:
    compatibility forms folded (NFKC, but for the forms a reader sees apart: superscripts, subscripts, fractions,
    circled and squared forms), case-folded ("\u00df" is "ss"), and folded again (folding a case can leave a
    sequence that composes). Names of ASCII only fold by their case, without the tables."""
    if name.isascii():
        return name.lower()
    return _compatibility_folded(_compatibility_folded(name).casefold())


def skeleton(name: str) -> str:
    """UTS #39's skeleton of ``name``: NFD, default-ignorable characters dropped, each character replaced by its
    prototype in Unicode's table of confusables, NFD again; and a dot above a letter drawn with its own dot (or
    a dotless "\u0131" or "\u0237") dropped, the letter made "i" or "j" (``_DOT_ABOVE``). Two strings with one
    skeleton are drawn alike; the skeleton itself is for comparing, never for showing."""
    table = _skeleton_table()
    prototypes = unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).translate(table.frozen or table))
    return _dot_above_dropped(prototypes) if _DOT_ABOVE in prototypes else prototypes


def lookalike_of(name: str, siblings: Collection[str]) -> str | None:
    """The first of ``siblings`` (the names in the directory ``name`` would be made in) that is not ``name`` but
    folds as it does (``folded``) or, where the two folded differ in a character that is not ASCII
    (``_differ_in_ascii_alone``), has one of its skeletons (as written, once folded, folded between two: ``_shapes``),
    or None. A model or a person shown both would take one for the other and read or edit the wrong file; the store
    compares names exactly, so nothing else keeps them apart."""
    key = folded(name)
    shapes = None if name.isascii() else _shapes(name, key)
    # A name folded to ASCII ("\ufb01le1.md") differs from an ASCII one in ASCII characters alone: case only.
    # Against ASCII siblings (most names), the name's skeletons are compared only when an ASCII name could have them
    # (a Latin word spelled with a Cyrillic letter, not an accented or a Cyrillic one), and then first by what no
    # skeleton of ASCII changes: the sibling with the eight characters the table maps, and their prototypes, deleted
    # (a bytes.translate). Both tests are made first over all the siblings at once, one line each (``_holds_line``):
    # a call per name is most of the check's cost (``bench/bench_lookalike_names.py``). When no ASCII name could be
    # a twin and every name is ASCII, there is none; otherwise the names are compared one by one.
    lines = "\n".join(siblings).encode("utf-8", "surrogatepass")
    lowered = lines.lower()
    rests = _ascii_rests(shapes) if shapes is not None and not key.isascii() else None
    if rests is not None and not _holds_rest(lines, lowered, rests):
        rests = None
    if rests is None and lines.isascii() and not (key.isascii() and _holds_line(lowered, key.encode("ascii"))):
        return None
    for sibling in siblings:
        if sibling == name:
            continue
        # ``folded`` spelled out for ASCII: most names are, and a call per name is most of the check's cost.
        if sibling.isascii():
            sibling_key = sibling.lower()
            if sibling_key == key:
                return sibling
            # Both folded to ASCII (case alone), or no ASCII name is drawn as this one. Else ``key`` holds a
            # character that is not ASCII, which no prefix or suffix shared with an ASCII name holds.
            if rests is None or shapes is None:
                continue
            ascii_bytes = sibling.encode("ascii")
            lowered_bytes = ascii_bytes.lower()
            if ((ascii_bytes.translate(None, _ASCII_SHAPED) == rests[0] and _ascii_skeleton(sibling) == shapes[0])
                    or (lowered_bytes.translate(None, _ASCII_SHAPED) == rests[1]
                        and _ascii_skeleton(sibling_key) == shapes[1])
                    or (lowered_bytes.translate(None, _ascii_refolded_deleted()[0]) == rests[2]
                        and _ascii_refolded(sibling) == shapes[2])):
                return sibling
            continue
        sibling_key, written, once_folded, refolded = _sibling_forms(sibling)
        if sibling_key == key:
            return sibling
        if shapes is None:
            shapes = _shapes(name, key)
        if ((written == shapes[0] or once_folded == shapes[1] or refolded == shapes[2])
                and not _differ_in_ascii_alone(key, sibling_key)):
            return sibling
    return None


def _differ_in_ascii_alone(key: str, other: str) -> bool:
    """Whether what is left of two folded names, once the start and the end they share are taken off, is ASCII in
    both ("i" and "1" in "\u00fcbung i.md" and "\u00fcbung 1.md"): such names are compared by their case alone."""
    start, shortest = 0, min(len(key), len(other))
    while start < shortest and key[start] == other[start]:
        start += 1
    end = 0
    while end < shortest - start and key[-1 - end] == other[-1 - end]:
        end += 1
    return key[start:len(key) - end].isascii() and other[start:len(other) - end].isascii()


def _shapes(name: str, key: str) -> tuple[str, str, str]:
    """The skeletons of ``name`` as written (a Cyrillic "\u0412" is a Latin "B"), of its folded form ``key``
    (a Cyrillic "\u043e" in "N\u043etes.md" is the "o" of "notes.md"), and of its skeleton folded (a Cyrillic
    "\u0422" is a Latin "T", whose case twin is "t": "\u0422ax.md" is "tax.md"; folded first it is a "\u0442",
    which the table maps to a small capital)."""
    written = skeleton(name)
    refolded = folded(written)
    # An ASCII fold (a Latin word with a Cyrillic letter) needs only the ASCII characters' prototypes; a name that is
    # its own fold (lower case, most names in a script without case forms to fold) has one skeleton for both.
    return (written, written if key == name else skeleton(key),
            _ascii_skeleton(refolded) if refolded.isascii() else skeleton(refolded))


@functools.lru_cache(maxsize=_SIBLING_FORMS_KEPT)
def _sibling_forms(name: str) -> tuple[str, str, str, str]:
    """``folded(name)`` and ``_shapes`` of it, kept per process for the latest ``_SIBLING_FORMS_KEPT`` names: each
    command on a directory compares a new name with the same names beside it, and each costs a fold and three
    skeletons (about 7 to 12 \u00b5s) for a name that is not all ASCII. Pure functions of the exact name, so a kept
    one is never stale."""
    key = folded(name)
    return key, *_shapes(name, key)


Rests = tuple[bytes | None, bytes | None, bytes | None]


def _holds_rest(lines: bytes, lowered: bytes, rests: Rests) -> bool:
    """False only when no ASCII name of ``lines`` (names joined by line feeds, as UTF-8; ``lowered``: the same
    lowered) keeps ``rests[0]`` as written or ``rests[1]`` once lowered, with ``_ASCII_SHAPED`` deleted, or
    ``rests[2]`` once lowered, with ``_ascii_refolded_deleted`` deleted (``_ascii_rests``): the per-name test of the
    check, made over all the names at once. No deletion removes a line feed, so each name's rest stays a line of its
    own; a name holding a line feed may give a True no name earns, and one not all ASCII keeps bytes no ASCII rest
    has."""
    written, once_lowered, refolded = rests
    return ((written is not None and _holds_line(lines.translate(None, _ASCII_SHAPED), written))
            or (once_lowered is not None and _holds_line(lowered.translate(None, _ASCII_SHAPED), once_lowered))
            or (refolded is not None
                and _holds_line(lowered.translate(None, _ascii_refolded_deleted()[0]), refolded)))


def _holds_line(lines: bytes, line: bytes) -> bool:
    """Whether ``line`` is one of the line-feed separated ``lines`` (a search, not a split: no list of names)."""
    return (lines == line or lines.startswith(line + b"\n") or lines.endswith(b"\n" + line)
            or b"\n" + line + b"\n" in lines)


def _ascii_skeleton(text: str) -> str:
    """``skeleton`` of an ASCII ``text``: the eight ASCII characters Unicode's table maps, replaced (a third of the
    time of ``str.translate`` over the whole table; their prototypes map to nothing further)."""
    for character, prototype in _ascii_prototypes():
        if character in text:
            text = text.replace(character, prototype)
    return text


def _ascii_rests(shapes: tuple[str, str, str]) -> Rests | None:
    """What each of ``shapes`` keeps once the characters an ASCII name's shape of that kind may change or bring are
    deleted (``_ascii_shaped_deleted`` for the first two, ``_ascii_refolded_deleted`` for the third), as ASCII bytes;
    None for a shape no ASCII name has, and None for all when none has one."""
    deleted = _ascii_shaped_deleted()
    kept = (shapes[0].translate(deleted), shapes[1].translate(deleted),
            shapes[2].translate(_ascii_refolded_deleted()[1]))
    rests = tuple(rest.encode("ascii") if rest.isascii() else None for rest in kept)
    return None if rests == (None, None, None) else (rests[0], rests[1], rests[2])


@functools.cache
def _ascii_shaped_deleted() -> dict[int, None]:
    """``str.translate``'s table deleting ``_ASCII_SHAPED`` and every character of the ASCII ones' prototypes."""
    return {ord(c): None for c in _ASCII_SHAPED.decode("ascii")} | {
        ord(c): None for _, prototype in _ascii_prototypes() for c in prototype}


def _ascii_refolded(text: str) -> str:
    """``skeleton(folded(skeleton(text)))`` of an ASCII ``text`` (``_shapes``' third), by ``_ascii_skeleton``."""
    written = _ascii_skeleton(text)
    return _ascii_skeleton(written.lower()) if written.isascii() else skeleton(folded(written))


@functools.cache
def _ascii_refolded_deleted() -> tuple[bytes, dict[int, None]]:
    """The characters to delete from an ASCII name lowered and from ``_shapes``' third of another name for the two to
    keep one rest when the name's third shape is the other's: the lowered form of each ASCII character whose third
    shape is not its lowered form, and every character of that shape, until no ASCII character whose lowered form is
    among them brings another ("0" brings "o", so "O" must go too). As bytes (its ASCII ones, for
    ``bytes.translate``) and as ``str.translate``'s table."""
    deleted = {chr(code) for code in _ascii_shaped_deleted()}
    while True:
        more = {c for code in range(0x80) for c in _ascii_refolded_changes(chr(code), deleted)} - deleted
        if not more:
            break
        deleted |= more
    ascii_ones = bytes(sorted(ord(c) for c in deleted if c.isascii()))
    return ascii_ones, {ord(c): None for c in deleted}


def _ascii_refolded_changes(character: str, deleted: set[str]) -> set[str]:
    refolded, lowered = _ascii_refolded(character), character.lower()
    return {lowered, *refolded} if refolded != lowered or lowered in deleted else set()


def _dot_above_dropped(text: str) -> str:
    """``text`` (NFD) with each ``_DOT_ABOVE`` on an "i", a "j" or a dotless "\u0237" dropped (marks drawn below the
    letter may stand between, as NFD orders them) and the letter made "i" or "j"."""
    kept: list[str] = []
    for character in text:
        if character == _DOT_ABOVE:
            at = len(kept) - 1
            while at >= 0 and unicodedata.combining(kept[at]) not in (0, 230):
                at -= 1
            if at >= 0 and kept[at] in _DOTTED_BY_IT:
                kept[at] = _DOTTED_BY_IT[kept[at]]
                continue
        kept.append(character)
    return "".join(kept)


@functools.cache
def _ascii_prototypes() -> tuple[tuple[str, str], ...]:
    table = _prototype_table()
    return tuple((chr(code), prototype or "") for code, prototype in table.items() if code < 0x80)


def _compatibility_folded(text: str) -> str:
    """NFKC of ``text``, but for the characters whose compatibility form a reader sees apart (``_FORMS_SEEN_APART``),
    which are kept as they are."""
    # Decomposed with no compatibility form (a skeleton, mostly): NFKC is NFC, so no form is to be kept. Asked first:
    # its check is a quick scan, where a decomposed text's NFKC check composes it (half the cost of a long name's
    # third skeleton went to checking and making both forms).
    if unicodedata.is_normalized("NFKD", text):
        return unicodedata.normalize("NFC", text)
    if unicodedata.is_normalized("NFKC", text):
        return text
    # NFKC that only composes (a skeleton is NFD) changes no compatibility form, so none is to be kept: the loop's
    # answer, without its call per character (most of the cost of a long name's third skeleton).
    compatible = unicodedata.normalize("NFKC", text)
    if compatible == unicodedata.normalize("NFC", text):
        return compatible
    parts: list[str] = []
    start = 0
    for at, character in enumerate(text):
        if unicodedata.decomposition(character).startswith(_FORMS_SEEN_APART):
            parts += (unicodedata.normalize("NFKC", text[start:at]), character)
            start = at + 1
    parts.append(unicodedata.normalize("NFKC", text[start:]))
    return unicodedata.normalize("NFC", "".join(parts))


class _SkeletonTable(dict[int, str | int | None]):
    """``_prototype_table`` for ``str.translate``, which learns the characters it lacks (each is itself): the
    unmapped ones of ``_UNMAPPED_SEEDED`` from the start, then the first met, up to ``_UNMAPPED_KEPT`` more. The
    same translation as the prototype table's, faster. Once full, ``frozen`` holds a plain dict of it, which
    ``skeleton`` translates by instead: a ``__missing__`` call per character costs more than the KeyError of a
    plain dict's lookup."""

    def __init__(self, prototypes: dict[int, str | None]) -> None:
        super().__init__(prototypes)
        self.update((code, code) for code in _UNMAPPED_SEEDED if code not in prototypes)
        self.bound = len(self) + _UNMAPPED_KEPT
        self.frozen: dict[int, str | int | None] | None = None

    def __missing__(self, code: int) -> int:
        if len(self) < self.bound:
            self[code] = code
        elif self.frozen is None:
            # Once, in the call that meets the bound; two threads meeting it both copy the same table.
            self.frozen = dict(self)
        return code


@functools.cache
def _skeleton_table() -> _SkeletonTable:
    return _SkeletonTable(_prototype_table())


@functools.cache
def _prototype_table() -> dict[int, str | None]:
    """``str.translate``'s table for a skeleton: each confusable character to its prototype, each default-ignorable
    one to nothing. Built once per process, on the first skeleton (about 6,600 characters, 1 to 2 ms)."""
    from memory_core.domain import confusable_prototypes as unicode_data

    table: dict[int, str | None] = dict(zip(map(ord, unicode_data.SOURCES),
                                            unicode_data.PROTOTYPES.split(unicode_data.SEPARATOR), strict=True))
    # Dropped before any is mapped (UTS #39): the Hangul filler U+3164 is ignorable, though the table maps it.
    table.update((code, None) for first, last in _DEFAULT_IGNORABLE for code in range(first, last + 1))
    return table
