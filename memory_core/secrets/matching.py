"""The shape every detector has, and the text-search primitives the detectors share.

Callers may rely on: a ``Detector`` never returns the secret it found, only whether
one occurs, so nothing downstream can echo it; ``Detector.found_in`` needs the text
lowered by ``lower_same_length`` (same indices); ``positions`` and ``prefixed`` search
in linear time.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Detector:
    """One kind of secret: its reported name and how to find it.

    ``hints`` are lower-case substrings of which at least one must occur in
    the lower-cased text before ``matches`` runs (an empty tuple means always
    run); they are a cheap necessary condition, never a decision on their own.
    ``matches(text, lowered)`` decides; it must be pure and thread-safe.
    """

    name: str
    hints: tuple[str, ...]
    matches: Callable[[str, str], bool]
    _any_hint: AnyOf | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_any_hint", AnyOf(self.hints) if self.hints else None)

    def found_in(self, text: str, lowered: str) -> bool:
        """True when this kind of secret occurs in ``text``.

        ``lowered`` must be ``lower_same_length(text)``: the same text lower-cased
        with every character at the same index.
        """
        if self._any_hint is not None and not self._any_hint.occurs_in(lowered):
            return False
        return self.matches(text, lowered)


def starts_alike(literals: tuple[str, ...]) -> bool:
    """True when every literal starts with the same character: see ``AnyOf``."""
    return len({literal[0] for literal in literals}) == 1


class AnyOf:
    """Any of some literal strings in a text: whether one occurs, and where.

    A search of 64 KiB takes about 40 us, whatever it looks for. Literals that share
    their first character are searched in one regex pass: the engine skips to that
    character as fast as ``str.find``, so the pass costs what one search does
    (GitLab's 11 prefixes: 0.03 against 0.36 ms when absent). Literals that start
    differently the engine can only look for by trying every character, which is
    slower than one ``str.find`` each (Slack's two: 0.43 against 0.06 ms), so those
    are searched one after another.
    """

    __slots__ = ("_literals", "_one_pass")

    def __init__(self, literals: tuple[str, ...]) -> None:
        self._literals = literals
        alike = len(literals) > 1 and starts_alike(literals)
        self._one_pass = re.compile("|".join(map(re.escape, literals))) if alike else None

    def occurs_in(self, text: str) -> bool:
        """True when one of the literals occurs in ``text``."""
        if self._one_pass is not None:
            return self._one_pass.search(text) is not None
        return any(literal in text for literal in self._literals)

    def positions(self, text: str) -> Iterator[int]:
        """Where the literals occur in ``text``, not in order; searched in one pass, an occurrence
        overlapping an earlier one is not yielded."""
        if self._one_pass is not None:
            for match in self._one_pass.finditer(text):
                yield match.start()
            return
        for literal in self._literals:
            yield from positions(text, literal)


_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


def lower_same_length(text: str) -> str:
    """``text`` lower-cased so that indices still line up with ``text``.

    ``str.lower`` is used when it keeps the length (almost always); for the
    rare characters whose lower case is longer (such as "İ"), only ASCII
    letters are lowered, which is all the detectors' literals need.
    """
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "_")


def prefixed(prefixes: tuple[str, ...], pattern: str) -> Callable[[str, str], bool]:
    """A matcher for a vendor token: ``pattern`` matches at an occurrence of a literal prefix.

    The prefix must start a token (not follow a letter, digit or "_"), and
    ``pattern`` (which starts with the prefix) must match right there.
    Finding prefixes with ``str.find`` keeps this linear and cheap.
    """
    compiled = re.compile(pattern)

    def matches(text: str, lowered: str) -> bool:
        for prefix in prefixes:
            for index in positions(text, prefix):
                if (index == 0 or text[index - 1] not in _TOKEN_CHARS) and compiled.match(text, index):
                    return True
        return False

    return matches


def positions(lowered: str, needle: str) -> Iterator[int]:
    """Every index at which ``needle`` occurs in ``lowered`` (C-speed search)."""
    index = lowered.find(needle)
    while index != -1:
        yield index
        index = lowered.find(needle, index + 1)
