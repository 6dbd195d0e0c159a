"""Measured behaviour of the scanner on the two corpora.

False positives are held at zero on ordinary memory; the detection rate on
fake secrets is measured, printed and held at or above DETECTION_THRESHOLD.
"""

from __future__ import annotations

import pytest

from memory_core.secrets import SecretScanner
from tests.secrets.corpus.fake_secrets import FAKE_SECRETS, FakeSecret
from tests.secrets.corpus.sensitive_values import HELD_OUT, TUNE, Labelled

# Measured 82/85 = 0.965 with detect-secrets 1.5.0; the three misses are the
# kinds documented as out of scope (``expected=None`` in the corpus).
DETECTION_THRESHOLD = 0.95


def test_ordinary_corpus_has_at_least_200_lines(ordinary_memory: list[str]) -> None:
    """The false-positive corpus is big enough to mean something (>= 200 writes)."""
    assert len(ordinary_memory) >= 200


def test_fake_secret_corpus_has_at_least_50_entries(fake_secrets: list[FakeSecret]) -> None:
    """The detection corpus is big enough to mean something (>= 50 secrets)."""
    assert len(fake_secrets) >= 50


def test_no_false_positives_on_ordinary_memory(scanner: SecretScanner, ordinary_memory: list[str]) -> None:
    """No line of ordinary memory (ids, hashes, prose about passwords, URLs, numbers) is flagged."""
    flagged = {line: [f.detector for f in scanner.scan(line)] for line in ordinary_memory}
    flagged = {line: names for line, names in flagged.items() if names}
    print(f"\nfalse positives: {len(flagged)}/{len(ordinary_memory)}")
    assert flagged == {}


def test_ordinary_memory_as_one_write_is_not_flagged(scanner: SecretScanner, ordinary_memory: list[str]) -> None:
    """The whole ordinary corpus joined into one multi-line write is not flagged either."""
    assert scanner.scan("\n".join(ordinary_memory)) == []


def test_detection_rate_meets_threshold(scanner: SecretScanner, fake_secrets: list[FakeSecret]) -> None:
    """At least DETECTION_THRESHOLD of the fake secrets are detected; the rate and misses are printed."""
    missed = [secret.kind for secret in fake_secrets if not scanner.scan(secret.text)]
    detected = len(fake_secrets) - len(missed)
    rate = detected / len(fake_secrets)
    print(f"\ndetection rate: {detected}/{len(fake_secrets)} = {rate:.4f}; missed: {missed}")
    assert rate >= DETECTION_THRESHOLD


def test_only_documented_gaps_are_missed(scanner: SecretScanner, fake_secrets: list[FakeSecret]) -> None:
    """Every undetected fake secret is one of the kinds documented as out of scope."""
    undocumented_misses = [s.kind for s in fake_secrets if s.expected is not None and not scanner.scan(s.text)]
    assert undocumented_misses == []


@pytest.mark.parametrize("secret", [s for s in FAKE_SECRETS if s.expected is not None], ids=lambda s: s.kind)
def test_each_fake_secret_is_reported_by_its_detector(scanner: SecretScanner, secret: FakeSecret) -> None:
    """Each in-scope fake secret is reported under the detector name meant for its kind."""
    assert secret.expected in [f.detector for f in scanner.scan(secret.text)]


def _rates(scanner: SecretScanner, items: list[Labelled]) -> tuple[float, list[str]]:
    sensitive = [i for i in items if i.sensitive]
    refused = sum(1 for i in sensitive if scanner.scan(i.text))
    false_positives = [i.text for i in items if not i.sensitive and scanner.scan(i.text)]
    return refused / len(sensitive), false_positives


@pytest.mark.parametrize("part", ["tune", "held_out"])
def test_cards_ibans_and_ssns_are_refused_and_look_alikes_are_not(scanner: SecretScanner, part: str) -> None:
    """On each part of the sensitive-values corpus: >= 95% of cards and SSNs refused, no look-alike flagged.

    The held-out part was never used while tuning; docs/performance.md reports its figures.
    """
    items = TUNE if part == "tune" else HELD_OUT
    rate, false_positives = _rates(scanner, items)
    print(f"\n{part}: refused {rate:.4f} of {sum(i.sensitive for i in items)}; "
          f"false positives {len(false_positives)}/{sum(not i.sensitive for i in items)}")
    assert false_positives == []
    assert rate >= DETECTION_THRESHOLD


def test_held_out_part_is_a_third_of_every_class() -> None:
    """The split deals each class into both parts, a third held out."""
    for kind in ("card", "ssn", "iban", "phone", "order"):
        tune = sum(1 for i in TUNE if i.kind == kind)
        held = sum(1 for i in HELD_OUT if i.kind == kind)
        assert held > 0 and abs(held * 2 - tune) <= 2
