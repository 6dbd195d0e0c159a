"""Look-alike names (``domain/lookalike_names.py``): case and width/font/ligature forms folded, Unicode's confusables
(UTS #39 skeletons) when either name is not all ASCII, and the forms a reader tells apart kept apart."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core.domain import confusable_prototypes
from memory_core.domain.lookalike_names import (
    _ASCII_SHAPED,
    _UNMAPPED_KEPT,
    _UNMAPPED_SEEDED,
    _ascii_refolded,
    _ascii_refolded_deleted,
    _ascii_rests,
    _ascii_skeleton,
    _holds_rest,
    _prototype_table,
    _sibling_forms,
    _skeleton_table,
    _SkeletonTable,
    folded,
    lookalike_of,
    skeleton,
)
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
    # A case twin spelled with another script's capital: "\u0422ax.md" is drawn as "Tax.md", the case twin of "tax.md"
    # (folded first, the Cyrillic capital is a small "\u0442", which the table does not make a "t").
    "cyrillic-capital-te-and-case": ("tax.md", "\u0422ax.md"),
    "cyrillic-capital-ve-and-case": ("bob.md", "\u0412ob.md"),
    "greek-capital-tau-and-case": ("todo.md", "\u03a4ODO.md"),
    "greek-capital-nu-and-case": ("notes.md", "\u039dOTES.md"),
    "cyrillic-capital-ka-and-case": ("key.md", "\u041aEY.md"),
    "cyrillic-capital-ve-all-caps": ("bank.md", "\u0412ANK.md"),
    "cyrillic-capital-en-and-case": ("home.md", "\u041dOME.md"),
    "cyrillic-directory-and-case": ("trip", "\u0422rip"),
    # A dot above on a dotless or soft-dotted letter is drawn as the letter's own dot.
    "dotless-i-dot-above": ("info.md", "\u0131\u0307nfo.md"),
    "dotless-j-dot-above": ("jump.md", "\u0237\u0307ump.md"),
    "i-dot-above": ("info.md", "i\u0307nfo.md"),
    "cyrillic-i-dot-above": ("info.md", "\u0456\u0307nfo.md"),
    "i-ogonek-dot-above": ("\u012fnfo.md", "\u012f\u0307nfo.md"),  # the ogonek below stands between in NFD
    "arabic-indic-one": ("1.md", "\u0661.md"),  # differs in a character that is not ASCII: skeletons compared
    "arabic-indic-one-beside-accent": ("\u00dcbung 1.md", "\u00dcbung \u0661.md"),
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
    # Where two names differ in ASCII characters alone, they are compared by their case alone, as ASCII names are,
    # whatever letters they share.
    "digit-beside-shared-umlaut": ("\u00dcbung 1.md", "\u00dcbung I.md"),
    "digit-beside-shared-cyrillic": ("\u0413\u043b\u0430\u0432\u0430 1.md", "\u0413\u043b\u0430\u0432\u0430 I.md"),
    "digit-and-case-beside-cyrillic": ("\u0413\u043b\u0430\u0432\u0430 1.md", "\u0433\u043b\u0430\u0432\u0430 I.md"),
    "digit-beside-shared-accent": ("caf\u00e9-v1.md", "caf\u00e9-vl.md"),
    "zeros-beside-shared-accents": ("r\u00e9sum\u00e9 2010.md", "r\u00e9sum\u00e9 2O1O.md"),
    "digit-beside-ligature": ("file1.md", "\ufb01lel.md"),  # folded: "filel.md", ASCII
    "cyrillic-small-te": ("tax.md", "\u0442ax.md"),  # drawn as a small capital T
    "dot-above-on-l": ("info.md", "l\u0307nfo.md"),
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


def test_a_dot_above_is_dropped_only_where_it_stands_for_the_letters_own_dot() -> None:
    """On "i", "j", the dotless "\u0131" and "\u0237" (made "i" and "j"), and on Cyrillic "\u0456" (which the table
    makes "i"), past a mark below; not on other letters, nor past a mark above ("i\u0301\u0307" is no plain "i"),
    and the skeleton stays its own skeleton."""
    for dotted, plain in [("\u0131\u0307", "i"), ("\u0237\u0307", "j"), ("i\u0307", "i"), ("j\u0307", "j"),
                          ("\u0456\u0307", "i"), ("i\u0328\u0307", "i\u0328"), ("I\u0307", "l\u0307")]:
        assert skeleton(dotted) == plain, dotted
        assert skeleton(skeleton(dotted)) == skeleton(dotted)
    assert skeleton("i\u0301\u0307") == "i\u0301\u0307" and skeleton("a\u0307") == "a\u0307"
    assert skeleton("\u0131") == "i" and skeleton("\u0237") == "\u0237"  # the table maps only the dotless i


def test_the_ascii_path_computes_the_same_skeleton() -> None:
    """``_ascii_skeleton`` replaces only the ASCII characters the table maps, and the check's first comparison
    deletes those and their prototypes' ASCII characters (``_ASCII_SHAPED``): both must agree with the table."""
    for text in [chr(code) for code in range(0x80)] + ["modern 100% I|1`0\".md", "0123456789abcdef.md"]:
        assert _ascii_skeleton(text) == skeleton(text), text
    mapped = {chr(code) for code in range(0x80) if skeleton(chr(code)) != chr(code)}
    assert set(_ASCII_SHAPED.decode()) == mapped | {c for m in mapped for c in skeleton(m) if c.isascii()}


def test_the_third_shape_of_an_ascii_name_keeps_its_rest() -> None:
    """The quick test for the third shape (``skeleton(folded(skeleton(x)))``) deletes the same characters from an
    ASCII name lowered and from its third shape and must find one rest: held for every ASCII character and for random
    ASCII strings, whose shapes are made character by character; ``_ascii_refolded`` is the rule's own."""
    ascii_deleted, deleted = _ascii_refolded_deleted()
    assert "\n" not in {chr(code) for code in deleted} and {chr(b) for b in ascii_deleted} == {
        chr(code) for code in deleted if code < 0x80}
    shuffled = random.Random(34)
    texts = [chr(code) for code in range(0x80)] + [
        "".join(shuffled.choice([chr(code) for code in range(0x20, 0x7f)]) for _ in range(12)) for _ in range(500)]
    for text in texts:
        assert _ascii_refolded(text) == skeleton(folded(skeleton(text))), text
        assert (_ascii_refolded(text).translate(deleted).encode()
                == text.lower().encode().translate(None, ascii_deleted)), text


@pytest.mark.parametrize(
    "twin", ["m\u043ed\u0435rn.md", "M\u043eDERN.md", "\u0399O.md", "\u0406\u041e.md", "\u0131o.md", "\u0422AX.md",
             "\u041cODERN.md"])
def test_a_look_alike_among_many_ascii_names_is_found_whichever_ascii_characters_it_maps(twin: str) -> None:
    """Among 2,000 ASCII names, the one the twin is drawn as, though Unicode maps some of its letters ("m" to "rn",
    "0" to "O", "I" to "l"): the check's quick comparison lets through every name whose skeleton may match."""
    others = [f"note-{n:04d}.md" for n in range(2_000)]
    first = {"m\u043ed\u0435rn.md": "modern.md", "M\u043eDERN.md": "modern.md", "\u0399O.md": "I0.md",
             "\u0406\u041e.md": "IO.md", "\u0131o.md": "io.md", "\u0422AX.md": "tax.md",
             "\u041cODERN.md": "modern.md"}[twin]
    assert lookalike_of(twin, [*others, first]) == first
    assert lookalike_of(twin, others) is None


def _shared(one: str, other: str) -> int:
    """How many characters ``one`` and ``other`` share from their start."""
    return next((at for at, (a, b) in enumerate(zip(one, other, strict=False)) if a != b), min(len(one), len(other)))


def _lookalike_by_the_rule(name: str, siblings: list[str]) -> str | None:
    """The rule as the module's docstring states it, name by name, with no shortcut and nothing kept."""
    for sibling in siblings:
        if sibling == name:
            continue
        if folded(sibling) == folded(name):
            return sibling
        start = _shared(folded(name), folded(sibling))
        ends = [folded(name)[start:][::-1], folded(sibling)[start:][::-1]]
        if all(rest[_shared(*ends):].isascii() for rest in ends):  # they differ in ASCII characters alone
            continue
        if any(shape(sibling) == shape(name) for shape in (
                skeleton, lambda x: skeleton(folded(x)), lambda x: skeleton(folded(skeleton(x))))):
            return sibling
    return None


# Names the check's shortcuts could get wrong: ASCII ones whose rest (``_ASCII_SHAPED`` deleted) is another's, line
# feeds (the quick test joins the names by them), names not all ASCII among ASCII ones, and each kind of twin.
AWKWARD = [
    "modern.md", "rnodern.md", "m\u043ed\u0435rn.md", "M\u043eDERN.md", "mode\nrn.md", "m\u043ede\nrn.md",
    "\nmodern.md",
    "odern.md", "IO.md", "I0.md", "\u0406\u041e.md", "lO.md", "io.md", "\u0131o.md", "100%.md", "l00\u00ba/\u2080.md",
    "notes.md", "N\u043etes.md", "n\u03bftes.md", "\ufb01le.md", "file.md", "x\u00b2.md", "x2.md", "caf\u00e9.md",
    "\u0441\u043e\u0441\u043e.md", "coco.md", "\u0412ob.md", "Bob.md", "\u0432ob.md", "a\n", "\n", "",
    "tax.md", "\u0422AX.md", "\u0422ax.md", "\u0442ax.md", "TAX.md", "\u0422AXI.md", "taxl.md", "tax1.md", "Tax|.md",
    "\u00dcbung 1.md", "\u00dcbung I.md", "\u00fcbung l.md", "\u00dcbung \u0661.md", "\ufb01le1.md", "filel.md",
    "\u041cODERN.md", "modern%.md", "M\u043eDERN%.md", "MODERN\u2030.md", "info.md", "\u0131\u0307nfo.md",
    "INFO.md", "\u0406NFO.md", "l\u0307nfo.md", "\u0422ax\n.md", "tax\n.md",
]


@pytest.mark.parametrize("kept", [False, True], ids=["nothing-kept", "forms-kept"])
def test_the_check_finds_the_twin_the_rule_names_among_awkward_names(kept: bool) -> None:
    """Each name against all the others, in two orders, and against each alone: the check answers as the rule name by
    name does, whether the siblings' forms were kept from an earlier check or not (``_sibling_forms``)."""
    if not kept:
        _sibling_forms.cache_clear()
    for order in (AWKWARD, AWKWARD[::-1]):
        for name in order:
            siblings = [other for other in order if other != name]
            assert lookalike_of(name, siblings) == _lookalike_by_the_rule(name, siblings), (name, siblings)
            pairs = {other: lookalike_of(name, [other]) for other in siblings}
            assert pairs == {other: _lookalike_by_the_rule(name, [other]) for other in siblings}, name


def test_a_look_alike_among_many_names_is_found_where_it_stands() -> None:
    """Among 2,000 ASCII names and 200 Cyrillic ones, or the ASCII ones alone, the twin is found wherever it stands
    (first, last, between), and the first of two twins is the one named."""
    others = [f"\u0437\u0430\u043c\u0435\u0442\u043a\u0430-{n:04d}.md" if n % 10 == 0 else f"note-{n:04d}.md"
              for n in range(2_200)]
    for at in (0, 1_000, len(others)):
        assert lookalike_of("n\u043ete-0042.md", [*others[:at], "note-0042x.md", *others[at:]]) == "note-0042.md"
        assert lookalike_of("n\u043ete-x.md", [*others[:at], "note-x.md", *others[at:]]) == "note-x.md"
        twins = [*others[:at], "\u043fote-x.md", "note-x.md", *others[at:]]
        assert lookalike_of("N\u043eTE-X.md", twins) == "note-x.md"
        twins = [*others[:at], "n\u043ete-x.md", "NOTE-X.md", *others[at:]]
        assert lookalike_of("note-x.md", twins) == "n\u043ete-x.md"
    ascii_only = [other for other in others if other.isascii()]
    for at in (0, 1_000, len(ascii_only)):
        for twin in ("note-x.md", "note\nx.md"):  # a line feed: no name holds one, but the check takes any string
            assert lookalike_of(twin.upper(), [*ascii_only[:at], twin, *ascii_only[at:]]) == twin
            assert lookalike_of(twin.replace("o", "\u043e"), [*ascii_only[:at], twin, *ascii_only[at:]]) == twin
        assert lookalike_of("note-x.md", [*ascii_only[:at], "note-x.md", *ascii_only[at:]]) is None  # itself
    assert lookalike_of("n\u043ete-x.md", others) is None
    assert lookalike_of("n\u043ete-x.md", ascii_only) is None and lookalike_of("NOTE-X.md", ascii_only) is None
    assert lookalike_of("\u0437\u0430\u043c\u0435\u0442\u043a\u0430-x.md", others) is None


def test_the_ascii_names_are_compared_by_case_alone_when_none_could_have_the_skeleton() -> None:
    """The quick test over all the names joined says no when no ASCII name keeps the rest of the new name's skeleton
    (names holding it are other rests), so each is compared by its case alone; it says yes when one does, as written
    or lowered, wherever it stands."""
    name = "n\u043ete-x.md"
    rests = _ascii_rests((skeleton(name), skeleton(folded(name)), skeleton(folded(skeleton(name)))))
    assert rests is not None
    others = [f"note-{n:04d}.md" for n in range(2_000)] + ["a-note-x.md", "note-x.md.bak", "\u043f.md"]
    def held(names: list[str]) -> bool:
        lines = "\n".join(names).encode()
        return _holds_rest(lines, lines.lower(), rests)

    assert not held(others)
    for twin in ("note-x.md", "NOTE-X.md", "nOte-x.md"):
        assert held([twin, *others]) and held([*others, twin]) and held([others[0], twin, *others]) and held([twin])


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
    assert _probe_printed(probe) == [False, False, True, True]


def test_the_skeleton_table_translates_as_unicodes_table_and_keeps_a_bounded_number_of_unmapped_characters() -> None:
    """The table a skeleton translates by keeps the unmapped characters it meets as themselves, up to its bound:
    the translation is the prototype table's, before and once full, and a name of many characters (a hostile one)
    grows it no further."""
    prototypes = _prototype_table()
    table = _SkeletonTable(prototypes)
    table.bound = len(table) + 100
    text = "".join(chr(code) for code in range(0x20, 0x3400) if not 0xD800 <= code < 0xE000)
    for _ in range(2):
        assert text.translate(table) == text.translate(prototypes)
        assert len(table) == table.bound
    assert all(table[code] == code for code in table.keys() - prototypes.keys())
    assert len(_skeleton_table()) <= len(prototypes) + len(_UNMAPPED_SEEDED) + _UNMAPPED_KEPT


def test_a_flood_of_rare_characters_leaves_the_common_blocks_kept_and_a_full_table_a_plain_dict() -> None:
    """In a process, another user's names of more rare characters than the table keeps: the unmapped characters of
    Latin, Greek and Cyrillic stay kept (seeded before any name), and once full the skeleton translates by a plain
    dict copy of the table (no Python ``__missing__`` call per character it lacks: a miss costs what it did before
    the table learned), with the same skeletons as Unicode's table gives."""
    probe = (
        "import json, unicodedata\n"
        "from memory_core.domain import lookalike_names as names\n"
        "prototypes = names._prototype_table()\n"
        "names.skeleton('\\u00dcbung.md')\n"
        "table = names._skeleton_table()\n"
        "seeded = [code for code in names._UNMAPPED_SEEDED if code not in prototypes]\n"
        "for k in range(80):\n"
        "    names.skeleton(''.join(chr(0x4E00 + k * 240 + i) for i in range(240)) + '.md')\n"
        "missed = []\n"
        "learning = names._SkeletonTable.__missing__\n"
        "names._SkeletonTable.__missing__ = lambda self, code: (missed.append(code), learning(self, code))[1]\n"
        "hiragana = ''.join(map(chr, range(0x3041, 0x3097))) + '-\\u0440\\u0430ypal \\u00fcber.md'\n"
        "expected = unicodedata.normalize('NFD', unicodedata.normalize('NFD', hiragana).translate(prototypes))\n"
        "print(json.dumps([type(table.frozen) is dict, table.frozen == table, len(table) == table.bound,\n"
        "                  names.skeleton(hiragana) == expected, len(missed),\n"
        "                  all(dict.get(table, code) == code for code in seeded)]))\n"
    )
    assert _probe_printed(probe) == [True, True, True, True, 0, True]


def _probe_printed(probe: str) -> object:
    """What ``probe`` prints as JSON, run in a fresh interpreter (a process whose tables nothing has loaded yet)."""
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60,
                            check=True)
    return json.loads(result.stdout)
