"""The scanner's shortcuts find exactly what a search of the whole text finds.

Detectors skip to candidates with ``str.find``, ``bytes.find`` or one regex pass
instead of trying every position (docs/performance.md, "Secret scan cost on a
write"). Each test below builds texts from fragments that make candidates,
near-misses and line breaks, and checks the shortcut against the plain search it
replaced: the same answer on every text. Hypothesis runs are derandomized and
bounded, so the suite stays fast and repeatable.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memory_core.secrets import connection_strings, identifiers, payment_cards
from memory_core.secrets.library import LIBRARY_PLUGINS, LibraryEntry, library_detector
from memory_core.secrets.matching import Detector, lower_same_length
from tests.secrets.conftest import load_ordinary_memory
from tests.secrets.corpus.fake_secrets import FAKE_SECRETS

BOUNDED = settings(max_examples=300, deadline=None, derandomize=True, database=None)


def _both(text: str) -> tuple[str, str]:
    return text, lower_same_length(text)


def texts_of(*fragments: str, max_size: int = 40) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(fragments), max_size=max_size).map("".join)


# --- key=value connection strings: pairs searched per line, not in the whole text


def kv_password_whole_text(text: str, lowered: str) -> bool:
    """``has_kv_connection_password`` as it was: the pairs found once in the whole text."""
    context_ends: list[int] | None = None
    for needle in ("password", "pwd"):
        for index in connection_strings.positions(lowered, needle):
            if index and lowered[index - 1] not in connection_strings._KV_KEY_BOUNDARY:
                continue
            value = connection_strings._KV_PASSWORD_VALUE.match(text, index + len(needle))
            if value is None:
                continue
            if context_ends is None:
                context_ends = [m.end() for m in connection_strings._KV_CONNECTION_CONTEXT.finditer(lowered)]
            window_start = max(lowered.rfind("\n", 0, index) + 1, index - 1000)
            nearest = bisect.bisect_right(context_ends, index) - 1
            if nearest >= 0 and context_ends[nearest] > window_start and not connection_strings.is_placeholder(
                connection_strings._first_group(value)
            ):
                return True
    return False


KV_TEXTS = texts_of(
    "Server=db.example.net;", "User ID=app;", "Data Source=s;", "uid=u;", "Password=Tr0ub4dor&3x", "Pwd = 'Tr0ub4dor&3x'",
    'password="Tr0ub4dor&3x"', "Password=<password>", "password policy", "pwd", "=", ";", " ", "\t", "\n", "\r\n",
    "x", "é", "a" * 250,
)


@BOUNDED
@given(KV_TEXTS)
@example("note\nServer=db;Password=Tr0ub4dor&3x")  # a pair at the start of a later line
@example("Server=db; " + "a" * 990 + " Password=Tr0ub4dor&3x")  # a pair within 1000 characters
@example("Server=db; " + "a" * 998 + " Password=Tr0ub4dor&3x")  # and one just beyond
@example("Server=db;Password=<password>\n" * 40 + "Server=db;Password=Tr0ub4dor&3x")  # past the lines searched alone
@example("Server=db;Password=<password>\n" * 40 + "Password=Tr0ub4dor&3x")
def test_connection_string_pairs_searched_per_line_find_what_the_whole_text_search_finds(text: str) -> None:
    lowered = lower_same_length(text)
    assert connection_strings.has_kv_connection_password(text, lowered) == kv_password_whole_text(text, lowered)


def test_a_pair_on_the_line_before_does_not_count() -> None:
    """The pair must be on the password's own line, as before: searching per line keeps that."""
    assert connection_strings.has_kv_connection_password(*_both("Server=db;User ID=app;Password=Tr0ub4dor&3x"))
    assert not connection_strings.has_kv_connection_password(*_both("Server=db;User ID=app;\nPassword=Tr0ub4dor&3x"))


# --- US SSNs: keywords found with str.find, not a regex tried at every position


def ssn_whole_text(text: str, lowered: str) -> bool:
    """``has_us_ssn`` as it was: the keyword regex run over the whole text."""
    searched_to = -1
    for keyword in identifiers._SSN_KEYWORD.finditer(lowered):
        if keyword.start() < searched_to:
            continue
        line_start = lowered.rfind("\n", 0, keyword.start()) + 1
        line_end = lowered.find("\n", keyword.end())
        searched_to = line_end if line_end != -1 else len(text)
        line = text[line_start:searched_to]
        if any(identifiers._ssn_in_range(m.group(1), m.group(3), m.group(4))
               for m in identifiers._SSN_NUMBER.finditer(line)):
            return True
    return False


SSN_TEXTS = texts_of(
    "ssn", "SSN", "social security", "Social-Security number", "social security no.", " #", " ", "\n", ":",
    "536-22-1234", "536 22 1234", "536221234", "666-22-1234", "a", "-", "1", "x", "socials", "assn", "_",
)


@BOUNDED
@given(SSN_TEXTS)
def test_ssn_keywords_found_by_find_find_what_the_keyword_regex_finds(text: str) -> None:
    lowered = lower_same_length(text)
    assert identifiers.has_us_ssn(text, lowered) == ssn_whole_text(text, lowered)


# --- payment cards: runs of four digits found with bytes.find


def card_whole_text(text: str) -> bool:
    """``has_card_number`` as it was: the candidate regex tried at every digit."""
    return any(payment_cards.is_card_number(m.group(0)) for m in payment_cards._CARD_CANDIDATE.finditer(text))


CARD_TEXTS = texts_of(
    "4111", "1111", "4111111111111111", "378282246310005", "3782 822463 10005", "5500", "0000", "0004", "12",
    "4", "9", " ", "-", ".", ",", "/", "x", "é", "\n", "\u0663", "\uff12", "30569309025904",
)


@BOUNDED
@given(CARD_TEXTS)
def test_card_runs_found_by_find_find_what_the_candidate_regex_finds(text: str) -> None:
    assert payment_cards.has_card_number(text) == card_whole_text(text)


def test_a_card_after_wide_characters_is_found() -> None:
    """Each non-ASCII character is one byte in the digits' map, so indices still line up with the text."""
    assert payment_cards.has_card_number("日本語の文章 😀 card 4111 1111 1111 1111 ok")
    assert payment_cards.has_card_number("😀" * 500 + "4111111111111111")
    assert not payment_cards.has_card_number("😀" * 500 + "4111111111111112")  # Luhn fails


# --- hints: alike hints looked for in one regex pass


def _always(text: str, lowered: str) -> bool:
    return True


HINTS = st.lists(st.text("ab.-_", min_size=1, max_size=3), min_size=1, max_size=4).map(tuple)


@BOUNDED
@given(HINTS, st.text("ab.-_\n", max_size=30))
def test_a_detector_runs_exactly_when_one_of_its_hints_occurs(hints: tuple[str, ...], lowered: str) -> None:
    assert Detector("kind", hints, _always).found_in(lowered, lowered) == any(hint in lowered for hint in hints)


# --- detect-secrets' plugins: only the lines the locators point at are scanned


def every_line(entry: LibraryEntry) -> Callable[[str], bool]:
    """The plugin run on every line of the text, with the same acceptance test: what locators may not change."""
    plugin_class, _hints, _locate, accept = entry
    plugin = plugin_class()

    def found(text: str) -> bool:
        return any(accept is None or accept(value) for line in text.split("\n") for value in plugin.analyze_string(line))

    return found


_PLUGIN_FRAGMENTS = (
    *(secret.text for secret in FAKE_SECRETS), *(secret.secret for secret in FAKE_SECRETS), *load_ordinary_memory()[:60],
    "\n", " ", ".", ":", "-us1", "AP", "AKC", "key=", "sk", "ac", "cl", "sl_", "secret_key: ", "0123456789abcdef" * 3,
)


@pytest.mark.parametrize("entry", LIBRARY_PLUGINS, ids=lambda entry: entry[0].__name__)
def test_a_plugin_finds_on_the_located_lines_what_it_finds_on_every_line(entry: LibraryEntry) -> None:
    detector = library_detector(*entry)
    reference = every_line(entry)
    for fragment in _PLUGIN_FRAGMENTS:  # each alone first: a candidate at the very start of a text
        assert detector.found_in(fragment, lower_same_length(fragment)) == reference(fragment), fragment

    @settings(max_examples=150, deadline=None, derandomize=True, database=None)
    @given(texts_of(*_PLUGIN_FRAGMENTS, max_size=12))
    def check(text: str) -> None:
        assert detector.found_in(text, lower_same_length(text)) == reference(text)

    check()
