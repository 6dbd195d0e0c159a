"""Sensitive personal identifiers refused at the door beside secrets: US social security numbers.

Why: the seed's custody floor treats the secret classifier as the fail-closed
backstop for free text, and its guidance keeps "credentials ... or sensitive
personal details" out of memory. A national identity number, like a card
number, enables fraud on its own, and can be told from ordinary numbers:

* **US SSN**: ``AAA-GG-SSSS`` (dashes, spaces or none) in the valid ranges (area
  001-899 but not 666, group 01-99, serial 0001-9999), and only on a line that
  names it ("SSN", "social security"); ASCII digits, as the scanner folds
  other scripts' digits first (``folding``). Without the
  keyword nine digits are as likely an id or a reference number, so a bare
  number is not reported (documented gap).

Left out on purpose: IBANs - they exist to be shared (every invoice prints
one, and "pay rent to IBAN ... (landlord)" is the kind of fact memory is for),
so refusing them would refuse ordinary memory; the ordinary corpus keeps such
lines and the sensitive-values corpus counts IBANs as look-alikes. Passport and
driving-licence numbers (no check digit or shape that sets them apart from
ids), national ids of other countries and ITINs (not asked for yet), phone
numbers, e-mail and postal addresses (ordinary memory holds them by design).
"""

from __future__ import annotations

import heapq
import re

from memory_core.secrets.matching import Detector, lower_same_length, positions

US_SSN = "US Social Security Number"

_SSN_KEYWORD = re.compile(r"\b(?:ssn|social[ -]security(?: (?:number|no\.?|#))?)\b")
_SSN_NUMBER = re.compile(r"(?<![0-9-])([0-9]{3})([- ]?)([0-9]{2})\2([0-9]{4})(?![0-9-])")


def _ssn_in_range(area: str, group: str, serial: str) -> bool:
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def has_us_ssn(text: str, lowered: str = "") -> bool:
    """True when a line names a social security number and holds one in the valid ranges."""
    lowered = lowered or lower_same_length(text)
    searched_to = -1  # each line is searched once, however many keywords it holds
    # Every keyword starts with "ssn" or "social": str.find skips to those far
    # faster than the keyword's regex can try every position of a long text.
    for index in heapq.merge(positions(lowered, "ssn"), positions(lowered, "social")):
        if index < searched_to or not _SSN_KEYWORD.match(lowered, index):
            continue
        line_start = lowered.rfind("\n", 0, index) + 1
        line_end = lowered.find("\n", index)
        searched_to = line_end if line_end != -1 else len(text)
        line = text[line_start:searched_to]
        if any(_ssn_in_range(m.group(1), m.group(3), m.group(4)) for m in _SSN_NUMBER.finditer(line)):
            return True
    return False


IDENTIFIER_DETECTORS: tuple[Detector, ...] = (
    Detector(US_SSN, ("ssn", "social"), has_us_ssn),
)
