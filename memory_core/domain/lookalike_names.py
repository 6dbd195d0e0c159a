"""When two names in one directory of the memory tool would be taken for each other (``lookalike_of``).

Two names are look-alikes when they differ only

* in case or in the width, font or ligature of their characters ("Notes.md", "\uff4eotes.md", "\ufb01le.md" beside
  "notes.md", "file.md"): ``folded`` makes them one; or
* in characters Unicode lists as confusable (UTS #39, its confusables.txt): a Cyrillic "\u043e" or a Greek
  "\u03bf" for a Latin "o", "\u0440\u0430ypal" for "paypal"; compared by their skeletons (``skeleton``), as
  written and once folded, and only when one of the two names is not all ASCII.

ASCII names are compared by their case alone, as before: Unicode's table also lists "1" for "l", "0" for "O"
and "rn" for "m", which people type apart, and the threat this rule answers is a name in another script planted
beside a person's own. A superscript, subscript, fraction, circled or squared form is not folded either: "x\u00b2.md"
reads apart from "x2.md" (NFKC, which made them one before, folds these too).

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
    prototype in Unicode's table of confusables, NFD again. Two strings with one skeleton are drawn alike; the
    skeleton itself is for comparing, never for showing."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).translate(_prototype_table()))


def lookalike_of(name: str, siblings: Collection[str]) -> str | None:
    """The first of ``siblings`` (the names in the directory ``name`` would be made in) that is not ``name`` but
    folds as it does (``folded``) or, when either is not all ASCII, has its skeleton as written or once folded, or
    None. A model or a person shown both would take one for the other and read or edit the wrong file; the store
    compares names exactly, so nothing else keeps them apart."""
    key = folded(name)
    shapes = None if name.isascii() else _shapes(name, key)
    # Against ASCII siblings (most names), the name's skeletons are compared only when an ASCII name could have them
    # (a Latin word spelled with a Cyrillic letter, not an accented or a Cyrillic one), and then first by what no
    # skeleton of ASCII changes: the sibling with the eight characters the table maps, and their prototypes, deleted
    # (a bytes.translate). Both tests are made first over all the siblings at once, one line each (``_holds_line``):
    # a call per name is most of the check's cost (``bench/bench_lookalike_names.py``). When no ASCII name could be
    # a twin and every name is ASCII, there is none; otherwise the names are compared one by one.
    lines = "\n".join(siblings).encode("utf-8", "surrogatepass")
    lowered = lines.lower()
    rests = _ascii_rests(shapes) if shapes is not None else None
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
            if rests is None or shapes is None:  # both ASCII (case alone), or no ASCII name is drawn as this one
                continue
            ascii_bytes = sibling.encode("ascii")
            if ((ascii_bytes.translate(None, _ASCII_SHAPED) == rests[0] and _ascii_skeleton(sibling) == shapes[0])
                    or (ascii_bytes.lower().translate(None, _ASCII_SHAPED) == rests[1]
                        and _ascii_skeleton(sibling_key) == shapes[1])):
                return sibling
            continue
        sibling_key, written, once_folded = _sibling_forms(sibling)
        if sibling_key == key:
            return sibling
        if shapes is None:
            shapes = _shapes(name, key)
        if written == shapes[0] or once_folded == shapes[1]:
            return sibling
    return None


def _shapes(name: str, key: str) -> tuple[str, str]:
    """The skeletons of ``name`` as written (a Cyrillic "\u0412" is a Latin "B") and of its folded form ``key``
    (a Cyrillic "\u043e" in "N\u043etes.md" is the "o" of "notes.md")."""
    return skeleton(name), skeleton(key)


@functools.lru_cache(maxsize=_SIBLING_FORMS_KEPT)
def _sibling_forms(name: str) -> tuple[str, str, str]:
    """``folded(name)`` and ``_shapes`` of it, kept per process for the latest ``_SIBLING_FORMS_KEPT`` names: each
    command on a directory compares a new name with the same names beside it, and each costs a fold and two skeletons
    (about 5 \u00b5s) for a name that is not all ASCII. Pure functions of the exact name, so a kept one is never
    stale."""
    key = folded(name)
    return key, *_shapes(name, key)


def _holds_rest(lines: bytes, lowered: bytes, rests: tuple[bytes | None, bytes | None]) -> bool:
    """False only when no ASCII name of ``lines`` (names joined by line feeds, as UTF-8; ``lowered``: the same
    lowered) keeps ``rests[0]`` as written or ``rests[1]`` once lowered, with ``_ASCII_SHAPED`` deleted
    (``_ascii_rests``): the per-name test of the check, made over all the names at once. No deletion removes a line
    feed, so each name's rest stays a line of its own; a name holding a line feed may give a True no name earns, and
    one not all ASCII keeps bytes no ASCII rest has."""
    written, once_lowered = rests
    return ((written is not None and _holds_line(lines.translate(None, _ASCII_SHAPED), written))
            or (once_lowered is not None and _holds_line(lowered.translate(None, _ASCII_SHAPED), once_lowered)))


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


def _ascii_rests(shapes: tuple[str, str]) -> tuple[bytes | None, bytes | None] | None:
    """What each of ``shapes`` keeps once ``_ASCII_SHAPED`` and the prototypes' other characters are deleted, as ASCII
    bytes; None for a shape no ASCII name has as its skeleton, and None for both when neither has one."""
    deleted = _ascii_shaped_deleted()
    rests = tuple(rest.encode("ascii") if rest.isascii() else None for rest in (s.translate(deleted) for s in shapes))
    return None if rests == (None, None) else (rests[0], rests[1])


@functools.cache
def _ascii_shaped_deleted() -> dict[int, None]:
    """``str.translate``'s table deleting ``_ASCII_SHAPED`` and every character of the ASCII ones' prototypes."""
    return {ord(c): None for c in _ASCII_SHAPED.decode("ascii")} | {
        ord(c): None for _, prototype in _ascii_prototypes() for c in prototype}


@functools.cache
def _ascii_prototypes() -> tuple[tuple[str, str], ...]:
    table = _prototype_table()
    return tuple((chr(code), prototype or "") for code, prototype in table.items() if code < 0x80)


def _compatibility_folded(text: str) -> str:
    """NFKC of ``text``, but for the characters whose compatibility form a reader sees apart (``_FORMS_SEEN_APART``),
    which are kept as they are."""
    if unicodedata.is_normalized("NFKC", text):
        return text
    parts: list[str] = []
    start = 0
    for at, character in enumerate(text):
        if unicodedata.decomposition(character).startswith(_FORMS_SEEN_APART):
            parts += (unicodedata.normalize("NFKC", text[start:at]), character)
            start = at + 1
    parts.append(unicodedata.normalize("NFKC", text[start:]))
    return unicodedata.normalize("NFC", "".join(parts))


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
