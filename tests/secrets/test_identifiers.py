"""US social security numbers are refused like secrets; their look-alikes (and IBANs) are not."""

from __future__ import annotations

import pytest

from memory_core.secrets import SecretScanner
from memory_core.secrets.identifiers import has_us_ssn


def _kinds(scanner: SecretScanner, text: str) -> list[str]:
    return [f.detector for f in scanner.scan(text)]


@pytest.mark.parametrize("text", [
    "Pay rent to IBAN DE89 3704 0044 0532 0130 00 (landlord).",
    "iban=GB82WEST12345698765432",
])
def test_an_iban_is_ordinary_memory(scanner: SecretScanner, text: str) -> None:
    """IBANs exist to be shared (invoices print them): not refused."""
    assert _kinds(scanner, text) == []


@pytest.mark.parametrize("text", [
    "My SSN is 536-22-1234", "social security number: 536 22 1234", "SSN 536221234", "ssn=401-12-0001",
])
def test_an_ssn_named_as_such_is_refused(scanner: SecretScanner, text: str) -> None:
    assert "US Social Security Number" in _kinds(scanner, text)


@pytest.mark.parametrize("text", [
    "Call 536-22-1234 for the office",  # no keyword: could be any id
    "SSN 666-22-1234", "SSN 000-12-1234", "SSN 912-12-1234", "SSN 536-00-1234", "SSN 536-22-0000",  # invalid ranges
    "Never store my SSN; the benefits office phone is 425-555-0100.",
    "SSN reminder on 2024-03-15",
    "ssn\n536-22-1234",  # another line
])
def test_ssn_look_alikes_are_not(scanner: SecretScanner, text: str) -> None:
    assert "US Social Security Number" not in _kinds(scanner, text)


@pytest.mark.alone
def test_crafted_repetition_scans_in_linear_time() -> None:
    """64 KiB of keywords, or of keyword lines: each line is searched once."""
    import time

    start = time.perf_counter()
    for text in ("ssn " * 16_000, "ssn 536-22-123" * 4_600, ("x ssn 536-22-123\n") * 3_800):
        assert not has_us_ssn(text)
    assert time.perf_counter() - start < 1.0
