"""Look-alike names (``domain/lookalike_names.py``): case and width/font/ligature forms folded, Unicode's confusables
(UTS #39 skeletons) when either name is not all ASCII, and the forms a reader tells apart kept apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core.domain import confusable_prototypes
from memory_core.domain.lookalike_names import _ASCII_SHAPED, _ascii_skeleton, lookalike_of, skeleton
from memory_core.domain.memory_paths import parse_path

ROOT = Path(__file__).resolve().parents[2]

# (a name, its twin): each pair a reader or a model would take one for the other.
TWINS = {
    "ligature": ("file.md", "\ufb01le.md"),
    "fullwidth": ("file.md", "\uff46ile.md"),
    "case": ("notes.md", "NOTES.md"),
    "kelvin": ("k.md", "\u212a.md"),
    "sharp-s": ("strasse.md", "STRAßE.md"),
    "accent-case": ("café.md", "CAF\u0045\u0301.md"),
    "small-hyphen": ("a-b.md", "a\ufe63b.md"),
    "cyrillic-o": ("notes.md", "n\u043etes.md"),
    "greek-omicron": ("notes.md", "n\u03bftes.md"),
    "armenian-oh": ("notes.md", "n\u0585tes.md"),
    "cyrillic-a-paypal": ("paypal.md", "p\u0430ypal.md"),
    "whole-script-cyrillic": ("coco.md", "\u0441\u043e\u0441\u043e.md"),
    "cyrillic-capital-ve": ("Bob.md", "\u0412ob.md"),  # only the capital is drawn as a Latin B
    "cyrillic-and-case": ("notes.md", "N\u043etes.md"),
    "cyrillic-capital-i": ("ignore.md", "\u0406gnore.md"),
    "mathematical-bold": ("notes.md", "\U0001d427otes.md"),
    "mixed-scripts": ("report.md", "r\u0435p\u043ert.md"),  # Cyrillic e and o among Latin letters
    "dotless-i": ("kirmizi.md", "k\u0131rm\u0131z\u0131.md"),  # Unicode's table: a dotless i is drawn as an i
}

# Names a reader tells apart, beside each other.
APART = {
    "superscript": ("x2.md", "x\u00b2.md"),
    "subscript": ("h2o.md", "h\u2082o.md"),
    "fraction": ("1\u20442.md", "\u00bd.md"),
    "circled": ("1.md", "\u2460.md"),
    "squared": ("kg.md", "\u338f.md"),
    "ascii-digit-one": ("file1.md", "filel.md"),  # Unicode lists 1 for l: people type them apart
    "ascii-zero": ("v0.md", "vO.md"),
    "ascii-rn": ("modern.md", "rnodern.md"),
    "accent": ("cafe.md", "café.md"),
    "cyrillic-small-ve": ("bob.md", "\u0432ob.md"),  # drawn as a small capital B
    "cyrillic-words": ("\u041f\u0440\u0438\u0432\u0435\u0442.md", "\u043f\u0440\u0438\u0432\u0435\u0442-2.md"),
    "greek-word": ("\u03bb\u03cc\u03b3\u03bf\u03c2.md", "logos.md"),
    "other-letters": ("notes.md", "nötes.md"),
}


@pytest.mark.parametrize(("name", "twin"), list(TWINS.values()), ids=list(TWINS))
def test_names_that_differ_only_in_case_form_or_characters_drawn_alike_are_look_alikes(name: str, twin: str) -> None:
    """Either way round: a twin is named whichever of the two stands first."""
    stored = parse_path(f"/memories/{twin}").parts[0]  # names are compared as stored: NFC
    assert lookalike_of(stored, ["other.md", name]) == name
    assert lookalike_of(name, [stored, "other.md"]) == stored


@pytest.mark.parametrize(("name", "other"), list(APART.values()), ids=list(APART))
def test_names_a_reader_tells_apart_are_no_look_alikes(name: str, other: str) -> None:
    """Superscripts, fractions and circled forms are not folded (NFKC made "x\u00b2.md" "x2.md"); ASCII names are
    compared by case alone; other letters are other names; a name is no twin of itself."""
    assert lookalike_of(name, [other, name]) is None
    assert lookalike_of(other, [name, other]) is None


@pytest.mark.parametrize("invisible", ["\u200b", "\u200f", "\u202e", "\u2060", "\ufeff", "\u00ad"])
def test_a_name_stored_with_a_character_no_one_sees_is_a_twin_of_the_name_without_it(invisible: str) -> None:
    """New names cannot hold them (``parse_new_path``), but an older release stored some: the skeleton drops
    Unicode's default-ignorable characters, so "notes.md" is refused beside "notes\u200b.md"."""
    assert lookalike_of("notes.md", [f"no{invisible}tes.md"]) == f"no{invisible}tes.md"
    assert lookalike_of("n\u043etes.md", [f"no{invisible}tes.md"]) == f"no{invisible}tes.md"


def test_the_skeleton_is_unicodes() -> None:
    """UTS #39's own example, and its rule that a skeleton is its own skeleton, for every character the table maps
    (the generator took each prototype to its skeleton, so one pass is enough)."""
    assert skeleton("\U0001d52d\U0001d4b6\u1eff\U0001d561\U0001d552\u2113") == "paypal"
    prototypes = confusable_prototypes.PROTOTYPES.split(confusable_prototypes.SEPARATOR)
    assert len(prototypes) == len(confusable_prototypes.SOURCES) > 6000
    assert [c for c in confusable_prototypes.SOURCES if skeleton(skeleton(c)) != skeleton(c)] == []
    assert skeleton("\u3164") == ""  # default-ignorable: dropped before the table, which maps it too


def test_the_ascii_path_computes_the_same_skeleton() -> None:
    """``_ascii_skeleton`` replaces only the ASCII characters the table maps, and the check's first comparison
    deletes those and their prototypes' ASCII characters (``_ASCII_SHAPED``): both must agree with the table."""
    for text in [chr(code) for code in range(0x80)] + ["modern 100% I|1`0\".md", "0123456789abcdef.md"]:
        assert _ascii_skeleton(text) == skeleton(text), text
    mapped = {chr(code) for code in range(0x80) if skeleton(chr(code)) != chr(code)}
    assert set(_ASCII_SHAPED.decode()) == mapped | {c for m in mapped for c in skeleton(m) if c.isascii()}


@pytest.mark.parametrize(
    "twin", ["m\u043ed\u0435rn.md", "M\u043eDERN.md", "\u0399O.md", "\u0406\u041e.md", "\u0131o.md"])
def test_a_look_alike_among_many_ascii_names_is_found_whichever_ascii_characters_it_maps(twin: str) -> None:
    """Among 2,000 ASCII names, the one the twin is drawn as, though Unicode maps some of its letters ("m" to "rn",
    "0" to "O", "I" to "l"): the check's quick comparison lets through every name whose skeleton may match."""
    others = [f"note-{n:04d}.md" for n in range(2_000)]
    first = {"m\u043ed\u0435rn.md": "modern.md", "M\u043eDERN.md": "modern.md", "\u0399O.md": "I0.md",
             "\u0406\u041e.md": "IO.md", "\u0131o.md": "io.md"}[twin]
    assert lookalike_of(twin, [*others, first]) == first
    assert lookalike_of(twin, others) is None


def test_the_table_loads_with_the_first_name_that_is_not_all_ascii() -> None:
    """The table (6,565 characters) loads on the first check that needs it: not at import, not for an ASCII name
    among ASCII ones (compared by case alone); the first name that is not all ASCII loads it."""
    probe = (
        "import json, sys\n"
        "from memory_core.domain.lookalike_names import lookalike_of\n"
        "loaded = lambda: 'memory_core.domain.confusable_prototypes' in sys.modules\n"
        "steps = [loaded()]\n"
        "lookalike_of('notes.md', ['a.md', 'Notes.md', 'b.md']); steps.append(loaded())\n"
        "lookalike_of('caf\u00e9.md', ['a.md', 'b.md']); steps.append(loaded())\n"
        "assert lookalike_of('n\u043etes.md', ['notes.md']) == 'notes.md'; steps.append(loaded())\n"
        "print(json.dumps(steps))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            check=True)
    assert json.loads(result.stdout) == [False, False, True, True]
