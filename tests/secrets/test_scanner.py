"""Guarantees of SecretScanner and SecretFinding that callers rely on."""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from memory_core.secrets import SecretFinding, SecretScanner, rejection_message
from tests.secrets.corpus.fake_secrets import FAKE_SECRETS, FakeSecret

AWS_KEY_ID = "AK" + "IA" + "FAKEKEY0EXAMPLE1"


def _chunks(secret: str, size: int = 8) -> list[str]:
    return [secret[i : i + size] for i in range(0, max(1, len(secret) - size + 1), 4)]


@pytest.mark.parametrize("secret", FAKE_SECRETS, ids=lambda s: s.kind)
def test_findings_never_contain_the_secret(scanner: SecretScanner, secret: FakeSecret) -> None:
    """No finding, and no rejection message, contains the secret or any 8-character piece of it."""
    findings = scanner.scan(secret.text)
    rendered = repr(findings) + rejection_message(findings)
    leaked = [chunk for chunk in _chunks(secret.secret) if chunk in rendered]
    assert leaked == []


def test_finding_has_only_the_detector_field() -> None:
    """A SecretFinding carries the detector name and nothing else."""
    assert [f.name for f in dataclasses.fields(SecretFinding)] == ["detector"]


def test_finding_is_immutable() -> None:
    """A SecretFinding cannot be changed after it is made."""
    finding = SecretFinding("JSON Web Token")
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.detector = "other"  # type: ignore[misc]


def test_empty_text_has_no_findings(scanner: SecretScanner) -> None:
    """Scanning the empty string finds nothing."""
    assert scanner.scan("") == []


def test_findings_are_distinct_and_sorted(scanner: SecretScanner) -> None:
    """Two secrets of one kind give one finding; kinds come back sorted by name."""
    text = f"{AWS_KEY_ID} and again {AWS_KEY_ID}\ncard 4111 1111 1111 1111"
    assert scanner.scan(text) == [SecretFinding("AWS Access Key"), SecretFinding("Payment Card Number")]


def test_scan_is_deterministic(scanner: SecretScanner) -> None:
    """The same text always yields the same findings in the same order."""
    text = "\n".join(s.text for s in FAKE_SECRETS)
    assert scanner.scan(text) == scanner.scan(text)


def test_secret_among_ordinary_text_is_found(scanner: SecretScanner, ordinary_memory: list[str]) -> None:
    """A secret buried in the middle of a long ordinary write is still found."""
    lines = list(ordinary_memory)
    lines.insert(len(lines) // 2, "aws key " + AWS_KEY_ID)
    assert scanner.scan("\n".join(lines)) == [SecretFinding("AWS Access Key")]


def test_text_whose_lower_case_is_longer_is_scanned(scanner: SecretScanner) -> None:
    """Text with characters whose lower case is longer ("İ") is scanned with aligned positions."""
    text = "İİİ İstanbul office wifi; password: " + "Xk9#" + "mP2$vL7q"
    assert scanner.scan(text) == [SecretFinding("Secret Keyword")]


def test_scanner_is_thread_safe(scanner: SecretScanner, fake_secrets: list[FakeSecret]) -> None:
    """Concurrent scans from many threads give the same results as sequential scans."""
    texts = [s.text for s in fake_secrets] * 4
    expected = [scanner.scan(text) for text in texts]
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(scanner.scan, texts)) == expected


def test_detector_names_lists_every_kind(scanner: SecretScanner, fake_secrets: list[FakeSecret]) -> None:
    """detector_names covers every name the scanner reports for the corpus."""
    reported = {f.detector for s in fake_secrets for f in scanner.scan(s.text)}
    assert reported <= set(scanner.detector_names)


def test_rejection_message_names_detectors() -> None:
    """The message follows the documented format and lists the detector kinds."""
    message = rejection_message([SecretFinding("AWS Access Key"), SecretFinding("JSON Web Token")])
    assert message == (
        "content looks like it contains a secret (detectors: AWS Access Key, JSON Web Token); nothing was stored"
    )


@pytest.mark.alone
@pytest.mark.parametrize(
    "text",
    [
        "eyJ" * 21_846,  # detect-secrets' own JWT pattern takes seconds on this
        "password=" * 7_282,
        "://" * 21_846,
        ":" * 65_536,
        "-----BEGIN RSA PRIVATE KEY-----\n" * 2_048,
        "4111 " * 13_108,
        "api_key=" * 8_192,
    ],
    ids=["eyJ", "password=", "scheme-sep", "colons", "pem-headers", "digit-groups", "api_key="],
)
def test_crafted_64_kib_input_scans_quickly(scanner: SecretScanner, text: str) -> None:
    """Repetitive crafted input of 64 KiB cannot make the scan backtrack for long (< 0.5 s)."""
    started = time.perf_counter()
    scanner.scan(text[:65_536])
    assert time.perf_counter() - started < 0.5
