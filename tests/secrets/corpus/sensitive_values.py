"""A labelled corpus of sensitive values and ordinary look-alikes, split into tune and held-out parts.

Built separately from ``fake_secrets.py`` and ``ordinary_memory.txt``, for the
sensitive classes of issue #14: payment card numbers of every major brand (with
and without spaces or dashes) and US social security numbers - and the
ordinary numbers memory is full of that look like them: order and invoice
numbers, phone numbers, dates, versions, ids, tracking numbers, amounts, and
valid IBANs (kept as ordinary: they exist to be shared).

Every item is generated from a seeded random source and a set of sentence
templates, then dealt into three parts by position: parts 0 and 1 are the
**tune** corpus (the tests and the detectors were developed against it), part 2
is the **held-out** corpus, never looked at while tuning; its rates are what
docs/performance.md reports (``python bench/bench_sensitive_holdout.py``).

No value here belongs to anyone: card numbers are random digits behind issuer
prefixes with a computed Luhn digit, IBANs random account numbers with a
computed mod-97 check, SSNs random numbers in the valid ranges.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

SEED = "memory-core-issue-14-sensitive-corpus"


@dataclass(frozen=True)
class Labelled:
    kind: str  # "card", "ssn" for sensitive items; the look-alike's kind ("iban", "phone", ...) for ordinary ones
    text: str
    sensitive: bool


# -- sensitive values -----------------------------------------------------------

# (brand, prefixes, length, grouping)
_BRANDS = (
    ("visa", ("4",), 16, (4, 4, 4, 4)),
    ("visa-13", ("4",), 13, None),
    ("mastercard", ("51", "52", "53", "54", "55"), 16, (4, 4, 4, 4)),
    ("mastercard-2", ("2221", "2300", "2500", "2720"), 16, (4, 4, 4, 4)),
    ("amex", ("34", "37"), 15, (4, 6, 5)),
    ("discover", ("6011", "644", "65"), 16, (4, 4, 4, 4)),
    ("jcb", ("3528", "3550", "3589"), 16, (4, 4, 4, 4)),
    ("diners", ("300", "305", "36", "38"), 14, (4, 6, 4)),
    ("unionpay", ("62",), 16, (4, 4, 4, 4)),
    ("unionpay-19", ("62",), 19, None),
    ("maestro", ("6759", "6304", "50"), 16, (4, 4, 4, 4)),
)

_CARD_TEMPLATES = (
    "- My card number is {n}",
    "Card: {n}, expires 09/28",
    "Use my {brand} {n} for the hotel booking.",
    "Pay the invoice with {n} (company card).",
    "Corporate card {n} exp 11/27 cvv on file",
    "{n}",
    "Remember my credit card {n} for next time",
    "Billing: {brand} ending... actually the full number is {n}",
    "debit card = {n}",
    "Book flights on the travel card {n}.",
)


def _luhn_digit(partial: str) -> str:
    total = 0
    for index, char in enumerate(reversed(partial)):
        value = int(char)
        if index % 2 == 0:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return str((10 - total % 10) % 10)


def _card(rng: random.Random, prefix: str, length: int) -> str:
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    return body + _luhn_digit(body)


def _group(number: str, grouping: tuple[int, ...] | None, separator: str) -> str:
    if grouping is None or not separator:
        return number
    parts, at = [], 0
    for width in grouping:
        parts.append(number[at:at + width])
        at += width
    return separator.join(parts)


def _cards(rng: random.Random, count: int) -> list[Labelled]:
    items = []
    for index in range(count):
        brand, prefixes, length, grouping = _BRANDS[index % len(_BRANDS)]
        number = _card(rng, rng.choice(prefixes), length)
        separator = rng.choice(("", " ", "-")) if grouping else ""
        text = rng.choice(_CARD_TEMPLATES).format(n=_group(number, grouping, separator), brand=brand.split("-")[0])
        items.append(Labelled("card", text, True))
    return items


# (country, BBAN shape: "n" digit, "a" upper-case letter, "c" letter or digit)
_IBAN_COUNTRIES = (
    ("DE", "n" * 18), ("GB", "aaaa" + "n" * 14), ("FR", "n" * 10 + "c" * 11 + "nn"), ("NL", "aaaa" + "n" * 10),
    ("ES", "n" * 20), ("IT", "a" + "n" * 10 + "c" * 12), ("CH", "n" * 5 + "c" * 12), ("BE", "n" * 12),
    ("AT", "n" * 16), ("IE", "aaaa" + "n" * 14), ("PL", "n" * 24), ("SE", "n" * 20), ("NO", "n" * 11),
    ("DK", "n" * 14), ("PT", "n" * 21),
)

_IBAN_TEMPLATES = (
    "- My IBAN is {n}",
    "Salary goes to {n}.",
    "Bank account (IBAN): {n}",
    "Transfer the deposit to {n}, account holder A. Example",
    "{n}",
    "Rent is paid from IBAN {n} on the 1st.",
    "Refunds to my account {n} please",
    "iban={n}",
)


def _iban(rng: random.Random, country: str, shape: str) -> str:
    alphabet = {"n": string.digits, "a": string.ascii_uppercase, "c": string.ascii_uppercase + string.digits}
    bban = "".join(rng.choice(alphabet[c]) for c in shape)
    numeric = "".join(str(int(ch, 36)) for ch in bban + country + "00")
    return f"{country}{98 - int(numeric) % 97:02d}{bban}"


def _ibans(rng: random.Random, count: int) -> list[Labelled]:
    items = []
    for index in range(count):
        country, shape = _IBAN_COUNTRIES[index % len(_IBAN_COUNTRIES)]
        iban = _iban(rng, country, shape)
        if rng.random() < 0.5:
            iban = " ".join(iban[i:i + 4] for i in range(0, len(iban), 4))
        # Not sensitive: IBANs exist to be shared (see memory_core.secrets.identifiers).
        items.append(Labelled("iban", rng.choice(_IBAN_TEMPLATES).format(n=iban), False))
    return items


_SSN_TEMPLATES = (
    "- My SSN is {n}",
    "Social security number: {n}",
    "SSN {n} (needed for the benefits form)",
    "ssn: {n}",
    "For the tax form my social security no. is {n}",
    "My Social Security # is {n}",
    "Daughter's SSN = {n}",
)


def _ssns(rng: random.Random, count: int) -> list[Labelled]:
    items = []
    for _ in range(count):
        area = rng.choice([a for a in range(1, 900) if a != 666])
        number = f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"
        if rng.random() < 0.25:
            number = number.replace("-", rng.choice(("", " ")))
        items.append(Labelled("ssn", rng.choice(_SSN_TEMPLATES).format(n=number), True))
    return items


# -- ordinary look-alikes -----------------------------------------------------------


def _digits(rng: random.Random, n: int) -> str:
    return rng.choice("123456789") + "".join(rng.choice(string.digits) for _ in range(n - 1))


def _ordinary(rng: random.Random, count: int) -> list[Labelled]:
    d = lambda n: _digits(rng, n)  # noqa: E731 - a local shorthand keeps the templates readable
    hexs = lambda n: "".join(rng.choice("0123456789abcdef") for _ in range(n))  # noqa: E731
    makers = (
        ("order", lambda: f"Amazon order {d(3)}-{d(7)}-{d(7)} arrives Tuesday."),
        ("order", lambda: f"Order #{d(8)} from the hardware store is ready for pickup."),
        ("order", lambda: f"PO-{rng.randint(2019, 2027)}-{d(6)} covers the new laptops."),
        ("invoice", lambda: f"Invoice INV-{d(6)} was paid on {rng.randint(1, 28)} March."),
        ("invoice", lambda: f"Reference number {d(10)} for the insurance claim."),
        ("phone", lambda: f"Call the office at +1 (425) {d(3)}-{d(4)} after 9am."),
        ("phone", lambda: f"Mobile: +44 7{d(3)} {d(6)}"),
        ("phone", lambda: f"Dentist's number is {d(3)}-{d(3)}-{d(4)}."),
        ("phone", lambda: f"Reach Anna on +49 151 {d(4)} {d(4)} in the evening."),
        ("phone", lambda: f"Support hotline 1-800-{d(3)}-{d(4)}, extension {d(4)}"),
        ("phone", lambda: f"Work phone +33 1 {d(2)} {d(2)} {d(2)} {d(2)}"),
        ("date", lambda: f"Passport renewal due {rng.randint(2025, 2031)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}."),
        ("date", lambda: f"Born {rng.randint(1, 28):02d}/{rng.randint(1, 12):02d}/{rng.randint(1950, 2010)}; birthday lunch every year."),
        ("date", lambda: f"Timestamp of the incident: {rng.randint(2020, 2026)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z"),
        ("date", lambda: f"Epoch millis of the deploy: {rng.randint(1_600_000_000_000, 1_800_000_000_000)}"),
        ("version", lambda: f"Runs Python {rng.randint(3, 3)}.{rng.randint(8, 13)}.{rng.randint(0, 20)} and Node {rng.randint(16, 22)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}."),
        ("version", lambda: f"Pinned azure-cosmos=={rng.randint(4, 4)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}; build {d(4)}.{d(5)}.{d(4)}"),
        ("version", lambda: f"Windows build 10.0.{d(5)}.{d(4)} on the work laptop."),
        ("id", lambda: f"Ticket JIRA-{d(5)} tracks the migration."),
        ("id", lambda: f"Employee id {d(6)}; badge {d(8)}."),
        ("id", lambda: f"Subscription {hexs(8)}-{hexs(4)}-{hexs(4)}-{hexs(4)}-{hexs(12)} is the dev one."),
        ("id", lambda: f"Commit {hexs(40)} fixed the flaky test."),
        ("id", lambda: f"Customer number {d(9)} at the utility company."),
        ("id", lambda: f"Frequent flyer number {d(9)} with SAS."),
        ("id", lambda: f"Library card number {d(14)}."),
        ("id", lambda: f"Pull request #{d(4)} and issue #{d(3)} are related."),
        ("tracking", lambda: f"UPS tracking 1Z{''.join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))}"),
        ("tracking", lambda: f"USPS tracking {d(4)} {d(4)} {d(4)} {d(4)} {d(4)} {d(2)}"),
        ("tracking", lambda: f"FedEx {d(12)} should arrive Thursday."),
        ("amount", lambda: f"Budget for the offsite is {rng.randint(1, 99)},{d(3)}.{d(2)} EUR."),
        ("amount", lambda: f"Salary band {d(2)},{d(3)}-{d(3)},{d(3)} USD."),
        ("amount", lambda: f"Mortgage balance 3{d(5)}.{d(2)} as of last month."),
        ("address", lambda: f"Lives at {rng.randint(1, 999)} Main Street, ZIP {d(5)}-{d(4)}."),
        ("address", lambda: f"Office: Building {rng.randint(1, 120)}, floor {rng.randint(1, 30)}, room {d(4)}."),
        ("isbn", lambda: f"Reading ISBN 978-{d(1)}-{d(3)}-{d(5)}-{d(1)} next."),
        ("measure", lambda: f"Ran {rng.randint(3, 42)}.{rng.randint(0, 9)} km in {rng.randint(15, 59)}:{rng.randint(10, 59)}; heart rate {rng.randint(120, 190)}."),
        ("network", lambda: f"Home router at 192.168.{rng.randint(0, 255)}.{rng.randint(1, 254)}, port {rng.randint(1024, 65535)}."),
        ("card-partial", lambda: f"Card ending in {d(4)} is the personal one; do not use it for work."),
        ("bank-partial", lambda: f"Savings account ends with {d(4)}; bank is in Oslo."),
        ("ssn-prose", lambda: "Never store my SSN; ask me each time for the benefits form."),
        ("iban-prose", lambda: "The IBAN field on the form is optional for domestic transfers."),
        ("sort-code", lambda: f"Branch sort code {d(2)}-{d(2)}-{d(2)} (just the branch, not my account)."),
    )
    return [Labelled(kind, make(), False) for kind, make in (makers[i % len(makers)] for i in range(count))]


def _build() -> list[Labelled]:
    rng = random.Random(SEED)
    items = _cards(rng, 132) + _ibans(rng, 60) + _ssns(rng, 42) + _ordinary(rng, 336)
    return items


ALL = _build()
TUNE = [item for index, item in enumerate(ALL) if index % 3 != 2]
HELD_OUT = [item for index, item in enumerate(ALL) if index % 3 == 2]
