"""A secret written with other scripts' digits, full-width forms, wide spaces or typographic hyphens
is refused as in ASCII.

Each transform (``corpus/written_forms.py``) writes an ASCII text as a person could
type or paste it. The scanner must answer for the transformed text what it answers
for the ASCII one, on every corpus the scanner is held to.
"""

from __future__ import annotations

import time
import unicodedata
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
        ("token from the chat: ghp_A1b2C3d4E5f6\u200bG7h8I9j0A1b2C3d4\u200bE5f6G7h8I9j0", "GitHub Token"),
        ("SSN 078\u201105\u20111120 (copied from the HR portal)", "US Social Security Number"),  # non-breaking hyphens
        ("card 4111\u20121111\u20121111\u20121111", "Payment Card Number"),  # figure dashes
        ("card 4111\u20131111\u20131111\u20131111 from the PDF statement", "Payment Card Number"),  # en dashes
        ("my SSN is 078\u201405\u20141120", "US Social Security Number"),  # em dashes
        ("card 4111\u20151111\u20151111\u20151111", "Payment Card Number"),  # horizontal bars
        ("SSN \u0660\u0667\u0668\u2014\u0660\u0665\u2014\u0661\u0661\u0662\u0660", "US Social Security Number"),
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
        "می‌خواهم 👩‍💻",  # a zero-width non-joiner in Persian, a joiner in an emoji: kept, nothing to fold
        "Stand-up 10:00\u201310:30, pages 12\u201315, 2019\u20132024",  # en dashes in ranges
        "Call +1 555\u20110100 or 020\u20127946\u20120018",  # phone numbers with non-breaking hyphens, figure dashes
        "It was \u22125 \u00b0C \u2014 cold \u2014 and the fare was 1234\u20145678",  # minus sign; em dashes kept
        "The years 2019\u20142024\u2014pages 12\u201415\u2014were the busiest\u2014by far",  # em dashes in prose
    ],
)
def test_ordinary_non_ascii_text_is_not_refused(scanner: SecretScanner, text: str) -> None:
    assert scanner.scan(text) == []


def test_ascii_and_text_with_nothing_to_fold_are_not_folded() -> None:
    assert ascii_folded("card 4111 1111 1111 1111") is None
    assert ascii_folded("誕生日は三月です 🎂") is None
    assert ascii_folded("می\u200cخواهم 👩\u200d💻") is None
    assert ascii_folded("a long day \u2014 and a longer night\u20141 of 3 \u2015 x\u20142") is None


def test_a_zero_width_joiner_or_non_joiner_between_ascii_characters_reads_as_nothing(scanner: SecretScanner) -> None:
    """No script or emoji needs one between two ASCII characters: there it splits a secret's token, which a model
    reads whole. Between Persian letters or emoji it stays, and such a text is not folded."""
    assert ascii_folded("AKIAIOSF\u200cODNN7EXAMPLE") == "AKIAIOSFODNN7EXAMPLE"
    assert ascii_folded("ghp_ab\u200d\u200ccd") == "ghp_abcd"
    assert ascii_folded("\uff21\u200c\uff22") == "AB"  # full-width letters, ASCII once folded
    assert ascii_folded("a \u200cb") is None and ascii_folded("\u200cab") is None
    assert ascii_folded("می\u200cخواهم 👩\u200d💻 ok") is None
    assert scanner.scan("key AKIAIOSF\u200cODNN7EXAMPLE") == [SecretFinding("AWS Access Key")]
    assert scanner.scan("token ghp_aB3dE5fG\u200d7hI9jK1lM3nO5pQ7rS9tU1vW3xY5") == [SecretFinding("GitHub Token")]


def test_an_em_dash_reads_as_a_hyphen_between_two_digits_only() -> None:
    """Between two digits (of any script, once folded) an em dash, horizontal bar or small em dash reads "-";
    next to a letter, a space or another dash it stays, and a text with only those is not folded."""
    assert ascii_folded("078\u201405\u20141120") == "078-05-1120"
    assert ascii_folded("1\u20152\ufe583") == "1-2-3"
    assert ascii_folded("\u0661\u2014\u0662 \u2014 x") == "1-2 \u2014 x"
    assert ascii_folded("\uff11\u2014\uff12") == "1-2"  # full-width digits
    assert ascii_folded("1\u200b\u20142") == "1-2"  # around an invisible space, gone once folded
    assert ascii_folded("1\u2014\u20142") is None
    assert ascii_folded("\u00e9t\u00e9 1\u2014 2") is None


def test_an_em_dash_between_digits_is_found_after_many_in_prose(scanner: SecretScanner) -> None:
    """Past the dashes looked at one by one, the search of the whole text still finds the one between digits,
    and a text made of dashes alone is folded as nothing, quickly."""
    prose = "and then \u2014 as always \u2014 " * 100
    assert scanner.scan(prose + "SSN 078\u201405\u20141120") == [SecretFinding("US Social Security Number")]
    assert ascii_folded(prose + "1\u20152") == prose + "1-2"
    assert ascii_folded("\u2014" * 65_536) is None


def test_folding_reads_each_character_as_ascii_or_as_nothing() -> None:
    """Each folded character becomes one ASCII character, invisible formatting goes; nothing else changes."""
    text = "ｐｗ：\u3000٤٢ ४२\u00a0𝟒𝟐 ④ ﬁ ﷺ — 漢字 to\u200bk\u00aden\ufeff \u202e21\u202c 👩\u200d💻 1\u20112\u22123"
    assert ascii_folded(text) == "pw: 42 42 42 ④ ﬁ ﷺ — 漢字 token 21 👩\u200d💻 1-2-3"


@pytest.mark.alone
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


INVISIBLE = {0x00AD, 0x180E, 0x200B, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2060, 0x2065),
             *range(0x2066, 0x206A), 0xFEFF}
HYPHENS = {0x2010, 0x2011, 0x2012, 0x2013, 0x2212, 0xFE63}  # hyphen, non-breaking, figure dash, en dash, minus, small


def _reads_as(char: str) -> str | None:
    """What the module promises a character reads as, from Unicode's own data; None: itself."""
    code = ord(char)
    if char.isdecimal():
        return str(unicodedata.decimal(char))
    if 0xFF01 <= code <= 0xFF5E:
        return chr(code - 0xFEE0)
    if unicodedata.normalize("NFKC", char) == " ":
        return " "
    if code in HYPHENS:
        return "-"
    if code in (0x200C, 0x200D):  # the joiners, between two ASCII characters (as the test puts each)
        return ""
    return "" if code in INVISIBLE else None


def test_every_character_of_the_first_three_planes_folds_as_promised() -> None:
    """Every non-ASCII code point below U+30000 (every decimal digit Unicode has is there) folds to what
    Unicode's data says it reads as, and a text of characters that read as themselves is not folded."""
    wrong = []
    for code in range(0x80, 0x30000):
        char = chr(code)
        if unicodedata.category(char) == "Cs":
            continue
        expected = _reads_as(char)
        folded = ascii_folded(f"a{char}b")
        if folded != (None if expected is None else f"a{expected}b"):
            wrong.append((hex(code), folded))
    assert wrong == []
