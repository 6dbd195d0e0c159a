"""A secret written with other scripts' digits, full-width forms or wide spaces is refused as in ASCII.

Each transform (``corpus/written_forms.py``) writes an ASCII text as a person could
type or paste it. The scanner must answer for the transformed text what it answers
for the ASCII one, on every corpus the scanner is held to.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from memory_core.secrets import SecretFinding, SecretScanner
from memory_core.secrets.folding import ascii_folded
from tests.secrets.corpus.fake_secrets import FAKE_SECRETS
from tests.secrets.corpus.sensitive_values import ALL as SENSITIVE_VALUES
from tests.secrets.corpus.written_forms import TRANSFORMS


@pytest.mark.parametrize("transform", TRANSFORMS.values(), ids=TRANSFORMS.keys())
def test_every_fake_secret_is_found_as_written_in_ascii(scanner: SecretScanner, transform: Callable[[str], str]) -> None:
    """Each fake secret, transformed, gives the findings its ASCII text gives."""
    differ = [
        (secret.kind, scanner.scan(secret.text), scanner.scan(transform(secret.text)))
        for secret in FAKE_SECRETS
        if scanner.scan(transform(secret.text)) != scanner.scan(secret.text)
    ]
    assert differ == []


@pytest.mark.parametrize("transform", TRANSFORMS.values(), ids=TRANSFORMS.keys())
def test_cards_ssns_and_their_look_alikes_answer_as_in_ascii(
    scanner: SecretScanner, transform: Callable[[str], str]
) -> None:
    """Every card number, SSN, IBAN, order, phone number and date of the sensitive corpus, transformed,
    is refused exactly when its ASCII text is."""
    differ = [
        item.text
        for item in SENSITIVE_VALUES
        if bool(scanner.scan(transform(item.text))) != bool(scanner.scan(item.text))
    ]
    assert differ == []
    assert any(scanner.scan(transform(item.text)) for item in SENSITIVE_VALUES)


@pytest.mark.parametrize("transform", TRANSFORMS.values(), ids=TRANSFORMS.keys())
def test_ordinary_memory_stays_ordinary(
    scanner: SecretScanner, ordinary_memory: list[str], transform: Callable[[str], str]
) -> None:
    """No line of the ordinary corpus is refused once transformed."""
    assert [line for line in ordinary_memory if scanner.scan(transform(line))] == []


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("カード番号は４１１１ １１１１ １１１１ １１１１です", "Payment Card Number"),  # full-width digits, ASCII spaces
        ("卡号：４１１１－１１１１－１１１１－１１１１", "Payment Card Number"),  # full-width hyphens
        ("شماره کارت ۶۰۱۱۰۰۰۹۹۰۱۳۹۴۲۴", "Payment Card Number"),  # Persian digits in right-to-left text
        ("card 4111\u00a01111\u00a01111\u00a01111 (copied from the bank's page)", "Payment Card Number"),
        ("ＳＳＮ： ０７８－０５－１１２０", "US Social Security Number"),
        ("ｐａｓｓｗｏｒｄ＝Ｔｒ０ｕｂ４ｄｏｒ＆３ｘ", "Secret Keyword"),
    ],
)
def test_written_the_way_people_type_it(scanner: SecretScanner, text: str, kind: str) -> None:
    """Secrets as input methods and copied pages produce them are refused, named as in ASCII."""
    assert scanner.scan(text) == [SecretFinding(kind)]


@pytest.mark.parametrize(
    "text",
    [
        "電話番号は０３－１２３４－５６７８です",  # a phone number in full-width digits
        "２０２６年１２月５日\u3000午前１０時に会議",  # a date and a time
        "注文番号：１２３４５６７８９０１２",  # an order number that fails Luhn
        "ราคา ๑๒๓๔ บาท",  # a price in Thai digits
        "🎉 誕生日おめでとう！",  # nothing to fold
    ],
)
def test_ordinary_non_ascii_text_is_not_refused(scanner: SecretScanner, text: str) -> None:
    assert scanner.scan(text) == []


def test_ascii_and_text_with_nothing_to_fold_are_not_folded() -> None:
    assert ascii_folded("card 4111 1111 1111 1111") is None
    assert ascii_folded("誕生日は三月です 🎂") is None


def test_folding_keeps_every_character_at_its_index() -> None:
    """Each folded character becomes one ASCII character; everything else is left as it is."""
    text = "ｐｗ：\u3000٤٢ ४२\u00a0𝟒𝟐 ④ ﬁ ﷺ — 漢字"
    folded = ascii_folded(text)
    assert folded == "pw: 42 42 42 ④ ﬁ ﷺ — 漢字"
    assert folded is not None and len(folded) == len(text)


@pytest.mark.parametrize(
    "text",
    [
        "４" * 65_536,  # a run of full-width digits: every index a card candidate's start
        "４１１１\u3000" * 13_108,  # full-width digit groups
        "\ufdfa" * 21_845,  # NFKC would make each of these 18 characters
        "ｐａｓｓｗｏｒｄ＝" * 7_282,
    ],
    ids=["full-width-digits", "full-width-groups", "expanding-ligature", "full-width-password="],
)
def test_crafted_non_ascii_input_scans_quickly(scanner: SecretScanner, text: str) -> None:
    """A crafted 64 KiB write that folds is scanned twice at most, and quickly (< 0.5 s)."""
    started = time.perf_counter()
    scanner.scan(text[:65_536])
    assert time.perf_counter() - started < 0.5


def test_a_lone_surrogate_is_kept_and_the_rest_folded(scanner: SecretScanner) -> None:
    """JSON can carry a lone surrogate ("\\ud800"); folding keeps it and still reads the digits around it."""
    assert ascii_folded("\ud800 ４２") == "\ud800 42"
    assert scanner.scan("card ４１１１ １１１１ １１１１ １１１１ \udfff") == [SecretFinding("Payment Card Number")]
