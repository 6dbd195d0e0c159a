"""The console's mirror of the hidden-text rule agrees with the domain's.

The person's view spells out hidden text (``memory_core/console/assets/hidden_text.js``); a write refuses it
(``memory_core/domain/hidden_text.py``). The two are written twice, in two languages, over two Unicode tables
(Python's ``unicodedata`` and node's ICU), so nothing but a test keeps them alike: the view must spell out
something in exactly the texts a write refuses. Node runs the console's module as the browser loads it; the rule
is a pure function, so no browser is needed.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_core.domain.hidden_text import hidden_character
from tests.support.hidden_text_pieces import PIECES

_MODULE = Path(__file__).resolve().parents[2] / "memory_core" / "console" / "assets" / "hidden_text.js"
# Reads one JSON array of texts a line; answers, a line each, the runs hiddenRuns spells for each text, and
# whether node's Unicode tables assign every character of it.
_DRIVER = f"""
import {{ hiddenRuns }} from {json.dumps(_MODULE.as_uri())};
import readline from "node:readline";
const unassigned = /\\p{{Cn}}/u;
for await (const line of readline.createInterface({{ input: process.stdin }})) {{
  const texts = JSON.parse(line);
  process.stdout.write(JSON.stringify(texts.map((t) => [hiddenRuns(t), !unassigned.test(t)])) + "\\n");
}}
"""


class ConsoleRule:
    """The console's module in a node process of its own, asked a batch of texts at a time."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._process = process

    def runs(self, texts: list[str]) -> list[tuple[list[str], bool]]:
        """For each text, the runs the view spells out and whether node knows every character of it."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(texts) + "\n")
        self._process.stdin.flush()
        return [(runs, known) for runs, known in json.loads(self._process.stdout.readline())]


@pytest.fixture(scope="module")
def console_rule() -> Iterator[ConsoleRule]:
    node = shutil.which("node")
    assert node, "node is needed (scripts/test checks it for the Cosmos DB test server)"
    with subprocess.Popen([node, "--input-type=module", "-e", _DRIVER], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True, encoding="utf-8") as process:
        yield ConsoleRule(process)
        assert process.stdin is not None
        process.stdin.close()


def _refused(text: str) -> bool:
    return hidden_character(text) is not None


def _compared(console_rule: ConsoleRule, texts: list[str]) -> list[tuple[str, bool]]:
    """Each of ``texts`` whose characters node's tables all assign, with whether the view spells anything out."""
    return [(text, bool(runs)) for text, (runs, known) in zip(texts, console_rule.runs(texts), strict=True) if known]


def _disagreements(compared: Iterable[tuple[str, bool]]) -> list[tuple[bytes, bool]]:
    """The texts where the view spells something out and a write would keep it, or the other way round."""
    return [(text.encode("unicode_escape"), by_view) for text, by_view in compared if by_view != _refused(text)]


def test_after_every_character_both_tables_know_the_view_spells_out_the_selectors_a_write_refuses(
        console_rule: ConsoleRule) -> None:
    """Each character Python's and node's Unicode tables both assign, followed by a selector of each kind (U+FE00,
    an ideographic one, a Mongolian one): about 850,000 texts, one verdict each, and the two rules agree on all.

    A character only node's newer tables know is left out on purpose: the domain gives a code point its tables
    call unassigned the benefit of the doubt, while the view spells out a selector after a letter it knows."""
    characters = [chr(code) for code in range(0x110000)
                  if not 0xD800 <= code <= 0xDFFF and unicodedata.category(chr(code)) != "Cn"]
    texts = [character + selector for character in characters for selector in ("\ufe00", "\U000e0100", "\u180b")]
    compared = _compared(console_rule, texts)
    assert len(compared) > 0.99 * len(texts)
    assert _disagreements(compared) == []
    assert sum(spelled for _, spelled in compared) > len(compared) // 3  # most are refused: letters are most


def test_for_any_two_invisible_characters_together_the_view_spells_out_what_a_write_refuses(
        console_rule: ConsoleRule) -> None:
    """Every pair of the format characters and spaces both Unicode tables assign, of the selectors U+FE00-U+FE0F and of
    the default-ignorable characters of the BMP, between two letters (about 45,000 texts): the rules agree on which
    zero-width characters, overrides and selectors make hidden text."""
    invisible = [chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF
                 and (unicodedata.category(chr(code)) in ("Cf", "Zs") or 0xFE00 <= code <= 0xFE0F
                      or chr(code) in "\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0")]
    texts = [f"x{a}{b}y" for a in invisible for b in invisible]
    compared = _compared(console_rule, texts)
    assert len(compared) > 0.99 * len(texts)
    assert _disagreements(compared) == []


def test_in_every_three_pieces_in_a_row_the_view_spells_out_hidden_text_where_a_write_refuses_it(
        console_rule: ConsoleRule) -> None:
    """Every sequence of three pieces (about 100,000 texts): each flag cut short, each selector after each kind of
    character and after another selector, each tag character beside a flag."""
    texts = ["".join(three) for three in itertools.product(PIECES, repeat=3)]
    spelled = [bool(runs) for runs, _ in console_rule.runs(texts)]
    assert _disagreements(zip(texts, spelled, strict=True)) == []


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join))
def test_in_any_mix_of_pieces_the_view_spells_out_hidden_text_where_a_write_refuses_it(
        console_rule: ConsoleRule, text: str) -> None:
    """Runs of selectors, flags, tag characters inside and outside them, joiners and overrides, in any order."""
    [(runs, _)] = console_rule.runs([text])
    assert bool(runs) == _refused(text), (text.encode("unicode_escape"), runs)
