"""The detectors memory-core adds to detect-secrets, and the shared detector shape.

Every detector answers one question: does this text contain a secret of my
kind? It never returns the secret itself, so nothing downstream can echo it.
All patterns are compiled once at import, are safe to share between threads
(compiled ``re`` patterns hold no per-call state) and avoid unbounded nested
quantifiers, so a hostile 64 KiB write cannot make a scan backtrack for long.

Why each detector exists and how it is tuned is written on the detector; the
overall choices are in ``memory_core.secrets.scanner``.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from detect_secrets.plugins.jwt import JwtTokenDetector

# Names shared with detect-secrets' plugins are spelled as its ``secret_type``
# so one kind of secret is reported under one name.
AWS_ACCESS_KEY = "AWS Access Key"
GITHUB_TOKEN = "GitHub Token"
SLACK_TOKEN = "Slack Token"
STRIPE_ACCESS_KEY = "Stripe Access Key"
OPENAI_TOKEN = "OpenAI Token"
BASIC_AUTH = "Basic Auth Credentials"
SECRET_KEYWORD = "Secret Keyword"
NPM_TOKEN = "NPM Token"  # detect-secrets says "NPM tokens"; the scanner renames it
PRIVATE_KEY = "Private Key"
JWT = "JSON Web Token"
# Names of kinds detect-secrets does not have.
CONNECTION_STRING = "Connection String"
AZURE_SAS_TOKEN = "Azure SAS Token"
AZURE_AD_CLIENT_SECRET = "Azure AD Client Secret"
PAYMENT_CARD = "Payment Card Number"
BEARER_TOKEN = "Bearer Token"
GOOGLE_API_KEY = "Google API Key"
ANTHROPIC_API_KEY = "Anthropic API Key"
HUGGING_FACE_TOKEN = "Hugging Face Token"


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

    def found_in(self, text: str, lowered: str) -> bool:
        """True when this kind of secret occurs in ``text``.

        ``lowered`` must be ``lower_same_length(text)``: the same text lower-cased
        with every character at the same index.
        """
        if self.hints and not any(hint in lowered for hint in self.hints):
            return False
        return self.matches(text, lowered)


_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


def lower_same_length(text: str) -> str:
    """``text`` lower-cased so that indices still line up with ``text``.

    ``str.lower`` is used when it keeps the length (almost always); for the
    rare characters whose lower case is longer (such as "İ"), only ASCII
    letters are lowered, which is all the detectors' literals need.
    """
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


# --------------------------------------------------------------------------
# Value heuristics shared by the detectors below.

_PLACEHOLDER_WORDS = frozenset(
    ["password", "passwd", "pass", "pwd", "secret", "token", "apikey", "api_key", "api-key", "changeme", "change_me", "change-me", "redacted", "removed", "hidden", "example", "placeholder", "username", "user", "none", "null", "nil", "undefined", "empty", "yourpassword", "your_password", "your-password", "mypassword", "my_password", "secretpassword", "your_api_key", "your-api-key", "yourapikey", "your_token", "your-token", "xxxxxxxx", "notasecret", "not-a-secret"]
)
_PLACEHOLDER_START = ("<", "{", "[", "$", "%", "(", "@@", "__")
_MASK_CHARS = frozenset("*xX.•#-_?")


def is_placeholder(value: str) -> bool:
    """True for values that stand for a secret rather than being one.

    Template markers (``<password>``, ``${DB_PASS}``, ``{{ secret }}``,
    ``%(pw)s``), masks (``****``, ``xxxx``) and the usual stand-in words
    (``password``, ``changeme``, ``your-api-key``) are not secrets.
    """
    stripped = value.strip("\"'`")
    if not stripped:
        return True
    lowered = stripped.lower()
    if lowered in _PLACEHOLDER_WORDS or stripped.startswith(_PLACEHOLDER_START):
        return True
    if "{{" in stripped or "}}" in stripped or "${" in stripped:
        return True
    if set(stripped) <= _MASK_CHARS:
        return True
    return lowered.startswith(("your", "my-", "my_", "example", "dummy", "sample", "fake-"))


def shannon_entropy(value: str) -> float:
    """Bits of Shannon entropy per character of ``value`` (0 for an empty string)."""
    if not value:
        return 0.0
    length = len(value)
    return -sum(n / length * math.log2(n / length) for n in Counter(value).values())


_LOWER = frozenset(string.ascii_lowercase)
_UPPER = frozenset(string.ascii_uppercase)
_DIGITS = frozenset(string.digits)
_LETTERS = _LOWER | _UPPER
_ALNUM = _LETTERS | _DIGITS


def _char_classes(chars: frozenset[str] | set[str]) -> int:
    """How many of lower, upper, digit, other (anything else, non-ASCII included) occur."""
    return (
        (not chars.isdisjoint(_LOWER))
        + (not chars.isdisjoint(_UPPER))
        + (not chars.isdisjoint(_DIGITS))
        + (not chars <= _ALNUM)
    )


def looks_random(value: str, *, min_length: int = 16, min_entropy: float = 3.0) -> bool:
    """True for a token-like value: long, letters and digits mixed, high entropy.

    Words, numbers, identifiers like ``getToken()`` and paths fail this; API
    keys, hex digests and base64 blobs pass it.
    """
    if len(value) < min_length or is_placeholder(value):
        return False
    chars = set(value)
    if chars.isdisjoint(_DIGITS) or chars.isdisjoint(_LETTERS):
        return False
    return shannon_entropy(value) >= min_entropy


_WINDOWS_PATH = re.compile(r"[A-Za-z]:\\")
_CALL = re.compile(r"\w\(")


def looks_like_password(value: str) -> bool:
    """True for a value that reads as a chosen password: 8+ characters, 3+ character classes.

    ``hunter2``, ``required``, ``12 characters`` and file paths fail; a value
    like ``Summer2024!`` passes. Random tokens pass through ``looks_random``.
    """
    if len(value) < 8 or is_placeholder(value) or "://" in value or value.startswith(("/", "~", "./", "\\")):
        return False
    if _WINDOWS_PATH.match(value) or _CALL.search(value):
        return False
    if 8 <= len(value) <= 128 and _char_classes(set(value)) >= 3:
        return True
    return looks_random(value)


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


# --------------------------------------------------------------------------
# Private key blocks.
#
# detect-secrets' PrivateKeyDetector fires on the bare phrase
# "BEGIN RSA PRIVATE KEY", so prose about key formats is rejected. This one
# needs the armour line *and* key material after it (40+ base64 characters,
# possibly wrapped, possibly after PEM headers such as Proc-Type/DEK-Info,
# possibly with JSON-escaped "\n" line breaks as in a service-account file).

_NL = r"(?:\s|\\[rn])"
# Matched at each "BEGIN" preceded by 4-5 dashes (and an optional space).
_PEM_PRIVATE_KEY = re.compile(
    r"BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)? ?-{4,5}"
    + _NL
    + r"*+"
    + r"(?:[A-Za-z][A-Za-z0-9-]{0,40}:[^\n\\]{0,200}"
    + _NL
    + r"++){0,8}"
    + r"(?:[A-Za-z0-9+/=]"
    + _NL
    + r"*+){40}"
)
# Matched at each "Private-Lines:" of a PuTTY key file.
_PUTTY_PRIVATE_LINES = re.compile(r"Private-Lines: ?\d+\s+[A-Za-z0-9+/=]{40}")


def has_private_key(text: str, lowered: str = "") -> bool:
    """True when ``text`` holds the material of a PEM, OpenSSH, PGP or PuTTY private key."""
    for index in positions(text, "BEGIN "):
        armoured = text.endswith(("----", "---- "), max(0, index - 5), index)
        if armoured and _PEM_PRIVATE_KEY.match(text, index):
            return True
    for index in positions(text, "Private-Lines:"):
        if text.rfind("PuTTY-User-Key-File-", max(0, index - 4000), index) != -1 and _PUTTY_PRIVATE_LINES.match(
            text, index
        ):
            return True
    return False


# --------------------------------------------------------------------------
# Connection strings and credentials in URLs.
#
# The detectors below find their keyword with ``str.find`` on the lower-cased
# text and only then run a regex anchored at that spot, which is several
# times faster than letting a case-insensitive regex try every position.

_DB_SCHEMES = frozenset(
    ["postgres", "postgresql", "mysql", "mysqlx", "mariadb", "mongodb", "mongodb+srv", "redis", "rediss", "amqp", "amqps", "mssql", "sqlserver", "oracle", "cockroachdb", "clickhouse", "cassandra", "neo4j", "neo4j+s", "bolt", "couchbase", "couchbases", "snowflake", "db2", "memcached", "elasticsearch", "nats", "kafka", "mqtt", "mqtts"]
)
_SCHEME_BEFORE = re.compile(r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{1,20}\Z")
# After "://": user:password@host. Userinfo cannot contain "/" (RFC 3986), so
# a path segment with a colon and an "@" further on is not read as one.
_USERINFO_AFTER = re.compile(r"([^\s/:@]{0,128}):([^\s/@]{1,256})@[A-Za-z0-9\[]")


def _url_passwords(text: str, lowered: str) -> Iterator[tuple[str, str]]:
    """(scheme, password) for every ``scheme://user:password@host`` in ``text``."""
    for index in positions(lowered, "://"):
        if index == 0 or not lowered[index - 1].isalnum():
            continue
        userinfo = _USERINFO_AFTER.match(text, index + 3)
        if userinfo is None:
            continue
        scheme = _SCHEME_BEFORE.search(lowered, max(0, index - 21), index)
        if scheme is not None:
            yield scheme.group(0), userinfo.group(2)


def has_db_url_password(text: str, lowered: str) -> bool:
    """True for a database/broker URL with a real password (``postgres://u:pw@host``)."""
    return any(
        scheme in _DB_SCHEMES and not is_placeholder(password) for scheme, password in _url_passwords(text, lowered)
    )


def has_basic_auth_url(text: str, lowered: str) -> bool:
    """True for a non-database URL with ``user:password@`` (placeholders such as
    ``user:<password>@`` or ``user:****@`` do not count).

    Replaces detect-secrets' BasicAuthDetector, which lets the userinfo run
    across "/" and so reads paths like ``/wiki/Help:Contents@x`` as credentials,
    and which flags documentation placeholders.
    """
    return any(
        scheme not in _DB_SCHEMES and not is_placeholder(password) for scheme, password in _url_passwords(text, lowered)
    )


_PARAM_VALUE = re.compile(r"[^&;\s#\"']{1,256}")
_WHITESPACE = re.compile(r"\s")


def has_url_password_param(text: str, lowered: str) -> bool:
    """True for a URL with a ``password=`` / ``pwd=`` query parameter (JDBC style)."""
    for needle in ("password=", "passwd=", "pwd="):
        for index in positions(lowered, needle):
            if not index or lowered[index - 1] not in "?&;":
                continue
            url_start = lowered.rfind("://", max(0, index - 300), index)
            if url_start == -1 or _WHITESPACE.search(lowered, url_start, index):
                continue
            value = _PARAM_VALUE.match(text, index + len(needle))
            if value is not None and not is_placeholder(value.group(0)):
                return True
    return False


# Azure storage / Cosmos DB / Service Bus / Event Hubs / SignalR keys:
# "AccountKey=", "SharedAccessKey=", "AccessKey=" followed by a base64 key.
_AZURE_KEY_VALUE = re.compile(r"[ \t]*=[ \t]*([A-Za-z0-9+/]{32,}={0,2})")


def has_azure_key(text: str, lowered: str) -> bool:
    """True for ``AccountKey=`` / ``SharedAccessKey=`` / ``AccessKey=`` with a random base64 key."""
    for needle in ("accountkey", "accesskey"):
        for index in positions(lowered, needle):
            if index and lowered[index - 1].isalpha() and not lowered.endswith("shared", 0, index):
                continue
            value = _AZURE_KEY_VALUE.match(text, index + len(needle))
            if value is not None and looks_random(value.group(1), min_length=32, min_entropy=4.0):
                return True
    return False


# ADO.NET / ODBC style "Server=...;User ID=...;Password=...;".
_KV_PASSWORD_VALUE = re.compile(r"[ \t]*=[ \t]*(?:\"([^\"\n]{1,256})\"|'([^'\n]{1,256})'|([^;\s\"']{1,256}))")
_KV_CONNECTION_CONTEXT = re.compile(
    r"(?:^|[;\s\"'])(?:server|data source|host|address|addr|hostname|user id|uid|database|initial catalog|dsn)"
    r"[ \t]*=[^;\n]{0,200};"
)


def has_kv_connection_password(text: str, lowered: str) -> bool:
    """True for ``Password=<value>`` / ``Pwd=<value>`` inside a key=value connection string.

    "Inside" means a ``Server=``/``Host=``/``User ID=``/... pair ending in ";"
    occurs earlier on the same line, within 1000 characters. Those pairs are
    found once per text, so many ``password=`` decoys cost linear time.
    """
    context_ends: list[int] | None = None
    for needle in ("password", "pwd"):
        for index in positions(lowered, needle):
            if index and lowered[index - 1] not in _KV_KEY_BOUNDARY:
                continue
            value = _KV_PASSWORD_VALUE.match(text, index + len(needle))
            if value is None:
                continue
            if context_ends is None:
                context_ends = [match.end() for match in _KV_CONNECTION_CONTEXT.finditer(lowered)]
            window_start = max(lowered.rfind("\n", 0, index) + 1, index - 1000)
            nearest = bisect.bisect_right(context_ends, index) - 1
            if nearest >= 0 and context_ends[nearest] > window_start and not is_placeholder(_first_group(value)):
                return True
    return False


_KV_KEY_BOUNDARY = frozenset("; \t\r\n\"'")


def _first_group(match: re.Match[str]) -> str:
    return next((group for group in match.groups() if group), "")


# Shared access signatures: a URL or connection string carrying "sig=".
_SAS_SIGNATURE = re.compile(r"[?&;]sig=([A-Za-z0-9%+/]{30,}(?:%3D|=){0,2})", re.IGNORECASE)


def has_sas_token(text: str, lowered: str) -> bool:
    """True for an Azure shared access signature (``sv=...&sig=<signature>``)."""
    return "sv=" in lowered and _SAS_SIGNATURE.search(text) is not None


# --------------------------------------------------------------------------
# Payment card numbers.
#
# 13-19 digits, either contiguous or in the groupings printed on cards
# (4-4-4-4[-1..3], Amex 4-6-5, Diners 4-6-4) with one consistent separator,
# not part of a longer run of digits, starting with a real issuer prefix for
# that length, not all one digit, and passing the Luhn check. ISBNs (978/979),
# epoch timestamps (1...), IBANs (letters first, groups of 4 with a short
# tail) and order/phone numbers do not fit all of these. The pattern starts
# with a plain digit so the regex engine skips non-digits quickly; the
# boundary checks are look-behinds from that first digit.

_CARD_CANDIDATE = re.compile(
    r"\d(?<![\d.,/]\d)(?<!\d[ -]\d)"
    r"(?:\d{12,18}"
    r"|\d{3}([ -])\d{4}\1\d{4}\1\d{4}(?:\1\d{1,3})?"
    r"|\d{3}([ -])\d{6}\2\d{4,5})"
    r"(?![ -]?\d)(?!\.\d)"
)

# (prefix width, prefix range low, high, allowed card lengths)
_ISSUERS: tuple[tuple[int, int, int, frozenset[int]], ...] = (
    (1, 4, 4, frozenset({13, 16, 19})),  # Visa
    (2, 51, 55, frozenset({16})),  # Mastercard
    (4, 2221, 2720, frozenset({16})),  # Mastercard 2-series
    (2, 34, 34, frozenset({15})),  # American Express
    (2, 37, 37, frozenset({15})),
    (4, 6011, 6011, frozenset({16, 17, 18, 19})),  # Discover
    (3, 644, 649, frozenset({16, 17, 18, 19})),
    (2, 65, 65, frozenset({16, 17, 18, 19})),
    (4, 3528, 3589, frozenset({16, 17, 18, 19})),  # JCB
    (3, 300, 305, frozenset({14, 15, 16, 17, 18, 19})),  # Diners Club
    (2, 36, 36, frozenset({14, 15, 16, 17, 18, 19})),
    (2, 38, 39, frozenset({14, 15, 16, 17, 18, 19})),
    (2, 62, 62, frozenset({16, 17, 18, 19})),  # UnionPay
    (2, 50, 50, frozenset({16, 17, 18, 19})),  # Maestro
    (2, 56, 58, frozenset({16, 17, 18, 19})),
    (4, 6304, 6304, frozenset({16, 17, 18, 19})),
    (4, 6759, 6759, frozenset({16, 17, 18, 19})),
    (4, 6761, 6763, frozenset({16, 17, 18, 19})),
    (4, 2200, 2204, frozenset({16, 17, 18, 19})),  # Mir
)


def luhn_valid(digits: str) -> bool:
    """True when the digit string passes the Luhn (mod 10) check."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if index % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _has_issuer_prefix(digits: str) -> bool:
    return any(len(digits) in lengths and low <= int(digits[:width]) <= high for width, low, high, lengths in _ISSUERS)


def is_card_number(candidate: str) -> bool:
    """True when ``candidate`` (digits, spaces, dashes) is a plausible payment card number."""
    digits = candidate.replace(" ", "").replace("-", "")
    if not 13 <= len(digits) <= 19 or not digits.isdigit() or len(set(digits)) == 1:
        return False
    return _has_issuer_prefix(digits) and luhn_valid(digits)


def has_card_number(text: str, lowered: str = "") -> bool:
    """True when ``text`` contains a Luhn-valid number shaped like a payment card."""
    return any(is_card_number(match.group(0)) for match in _CARD_CANDIDATE.finditer(text))


# --------------------------------------------------------------------------
# Secret keyword assignments.
#
# detect-secrets' KeywordDetector flags any "password ... = ..." and so
# rejects prose like "password policy: 12 characters minimum". This one needs
# a keyword, an assignment (=, :, :=, =>, "is", "was", "equals") and a value
# that is secret-shaped: for password keywords 8+ characters in 3+ character
# classes, for token/key keywords a long, mixed, high-entropy value (see
# ``looks_random``). Keys naming metadata about a secret (..._id, ..._name,
# ..._url, ..._policy, ...) and placeholders/templates are skipped.
#
# Keywords are found with str.find on the lower-cased text: "pass", "pwd",
# "secret", "token", "credential", and "key" when preceded by api/access/
# private/signing/... .

_PASSWORD_ANCHORS = ("pass", "pwd")
_TOKEN_ANCHORS = ("secret", "token", "credential", "key")
_KEY_QUALIFIER = re.compile(
    r"(?:api|access|private|signing|encryption|master|account|subscription|auth|secret)[_.-]?\Z"
)
_PASSWORD_WORD = re.compile(r"pass(?:word|wd|phrase)?|pwd")
_ASSIGNMENT_TAIL = re.compile(
    r"(?P<suffix>[a-z0-9_.-]{0,40}+)[\"'\]]{0,2}+[ \t]{0,3}+"
    r"(?::=|=>|==?|:|(?<=[ \t])(?:is|was|equals)(?=[ \t]))[ \t]{0,3}+[\"'`]?"
    r"(?P<value>[^\s\"'`,;<>()\[\]{}]{1,200})"
)
_METADATA_SUFFIX = re.compile(
    r"(?:[_.-]|^)(?:id|ids|name|names|url|uri|path|file|type|count|length|len|ttl|expiry|expires"
    r"|expiration|at|version|policy|policies|hint|ref|env|var|header|field|format|hash|algorithm"
    r"|rotation|manager|store|vault|prefix|limit|size|endpoint|scope|scopes|budget|usage)\Z"
)


def _assigned_value(text: str, lowered: str, keyword_end: int) -> tuple[str, int] | None:
    """The value assigned right after a keyword ending at ``keyword_end``, and where it ends."""
    tail = _ASSIGNMENT_TAIL.match(lowered, keyword_end)
    if tail is None or _METADATA_SUFFIX.search(tail.group("suffix")):
        return None
    return text[tail.start("value") : tail.end("value")].rstrip(".:"), tail.end()


def has_secret_assignment(text: str, lowered: str) -> bool:
    """True for ``password=...`` / ``api_key: ...`` / ``my token is ...`` with a secret-shaped value.

    A keyword inside a value already judged is not examined again, which
    keeps crafted input ("password=password=...") linear.
    """
    for anchors, is_password in ((_PASSWORD_ANCHORS, True), (_TOKEN_ANCHORS, False)):
        for anchor in anchors:
            judged_until = -1
            for index in positions(lowered, anchor):
                if index < judged_until:
                    continue
                if is_password:
                    word = _PASSWORD_WORD.match(lowered, index)
                    if word is None:
                        continue
                    end = word.end()
                    if end - index <= 4 and (  # bare "pass"/"pwd" must stand alone: not "passport", "bypass"
                        (index and lowered[index - 1].isalpha()) or (end < len(lowered) and lowered[end].isalpha())
                    ):
                        continue
                else:
                    if anchor == "key" and not _KEY_QUALIFIER.search(lowered, max(0, index - 13), index):
                        continue
                    end = index + len(anchor)
                assigned = _assigned_value(text, lowered, end)
                if assigned is None:
                    continue
                value, judged_until = assigned
                if looks_like_password(value) if is_password else looks_random(value):
                    return True
    return False


# --------------------------------------------------------------------------
# JSON Web Tokens.
#
# detect-secrets' JwtTokenDetector has the right validation (header and
# payload must be base64url-encoded JSON) but its pattern is quadratic on
# crafted input: 64 KiB of "eyJeyJeyJ..." takes seconds. This detector uses
# a linear pattern (possessive runs, no start inside a longer run) and then
# the library's own ``is_formally_valid`` on the header and payload.

_JWT_AT = re.compile(r"eyJ[A-Za-z0-9_-]{2,}+={0,2}\.[A-Za-z0-9_-]{2,}+={0,2}")
_JWT_RUN_CHARS = frozenset(string.ascii_letters + string.digits + "_-")


def has_jwt(text: str, lowered: str = "") -> bool:
    """True for a JWT (or JWS/JWE) whose header and payload decode to JSON."""
    for index in positions(text, "eyJ"):
        if index and text[index - 1] in _JWT_RUN_CHARS:
            continue  # inside a longer run: not where a token starts
        match = _JWT_AT.match(text, index)
        if match is not None and JwtTokenDetector.is_formally_valid(match.group(0)):
            return True
    return False


# --------------------------------------------------------------------------
# Authorization headers.

_BEARER_VALUE = re.compile(r"[ \t]+([A-Za-z0-9\-._~+/]{20,}=*)")
_BASIC_HEADER = re.compile(r"authorization[\"']?[ \t]*[:=][ \t]*[\"']?basic[ \t]+")
_BASE64_VALUE = re.compile(r"[A-Za-z0-9+/]{8,}={0,2}")


def has_bearer_token(text: str, lowered: str) -> bool:
    """True for ``Bearer <token>`` where the token is long, mixed and high-entropy."""
    for index in positions(lowered, "bearer"):
        value = _BEARER_VALUE.match(text, index + 6)
        if value is not None and looks_random(value.group(1)):
            return True
    return False


def has_basic_auth_header(text: str, lowered: str) -> bool:
    """True for ``Authorization: Basic <base64 of user:password>``."""
    for header in _BASIC_HEADER.finditer(lowered):
        value = _BASE64_VALUE.match(text, header.end())
        if value is None:
            continue
        try:
            decoded = base64.b64decode(value.group(0), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            continue
        _user, sep, password = decoded.partition(":")
        if sep and password and not is_placeholder(password):
            return True
    return False


# --------------------------------------------------------------------------
# Entra ID (Azure AD) client secrets: 3 characters, a digit, "Q~", then 31-34
# more, e.g. "abc8Q~...". Found at each "Q~".

_ENTRA_SECRET_CHARS = frozenset(string.ascii_letters + string.digits + "_~.-")
_ENTRA_SECRET = re.compile(r"[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])")


def has_entra_client_secret(text: str, lowered: str = "") -> bool:
    """True for an Entra ID application client secret."""
    for index in positions(text, "Q~"):
        start = index - 4
        if start < 0 or (start and text[start - 1] in _ENTRA_SECRET_CHARS):
            continue
        if _ENTRA_SECRET.match(text, start):
            return True
    return False


# --------------------------------------------------------------------------
# Token formats detect-secrets 1.5.0 does not know. Each is vendor-prefixed,
# so a match is specific enough to decide on its own.

_E = r"(?![A-Za-z0-9_])"  # token end: not followed by more token characters

EXTRA_TOKEN_DETECTORS: tuple[Detector, ...] = (
    Detector(GITHUB_TOKEN, ("github_pat_",), prefixed(("github_pat_",), r"github_pat_[A-Za-z0-9_]{36,255}" + _E)),
    Detector(
        STRIPE_ACCESS_KEY,
        ("_test_", "_live_"),
        prefixed(("sk_test_", "rk_test_", "sk_live_", "rk_live_"), r"[sr]k_(?:test|live)_[0-9A-Za-z]{24,247}" + _E),
    ),
    Detector(
        OPENAI_TOKEN,
        ("sk-",),
        prefixed(("sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-"), r"sk-[A-Za-z]+-[A-Za-z0-9_-]{40,300}" + _E),
    ),
    Detector(
        ANTHROPIC_API_KEY,
        ("sk-ant-",),
        prefixed(("sk-ant-",), r"sk-ant-(?:api|admin|oat)\d{2}-[A-Za-z0-9_-]{40,200}" + _E),
    ),
    Detector(GOOGLE_API_KEY, ("aiza",), prefixed(("AIza",), r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])")),
    Detector(HUGGING_FACE_TOKEN, ("hf_",), prefixed(("hf_",), r"hf_[A-Za-z]{34,40}" + _E)),
    Detector(
        SLACK_TOKEN,
        ("xapp-", "xoxe"),
        prefixed(
            ("xapp-", "xoxe"),
            r"xapp-\d-[A-Z0-9]{8,}-\d{8,}-[a-f0-9]{32,}" + _E + r"|xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9]{40,}" + _E,
        ),
    ),
    Detector(NPM_TOKEN, ("npm_",), prefixed(("npm_",), r"npm_[A-Za-z0-9]{36}" + _E)),
    Detector(AZURE_AD_CLIENT_SECRET, ("q~",), has_entra_client_secret),
)

CUSTOM_DETECTORS: tuple[Detector, ...] = (
    Detector(PRIVATE_KEY, ("private key", "putty-user-key-file"), has_private_key),
    Detector(CONNECTION_STRING, ("://",), has_db_url_password),
    Detector(CONNECTION_STRING, ("password=", "passwd=", "pwd="), has_url_password_param),
    Detector(CONNECTION_STRING, ("accountkey", "accesskey"), has_azure_key),
    Detector(CONNECTION_STRING, ("password", "pwd"), has_kv_connection_password),
    Detector(BASIC_AUTH, ("://",), has_basic_auth_url),
    Detector(BASIC_AUTH, ("basic",), has_basic_auth_header),
    Detector(AZURE_SAS_TOKEN, ("sig=",), has_sas_token),
    Detector(PAYMENT_CARD, (), has_card_number),
    Detector(SECRET_KEYWORD, ("pass", "pwd", "secret", "token", "key", "credential"), has_secret_assignment),
    Detector(BEARER_TOKEN, ("bearer",), has_bearer_token),
    Detector(JWT, ("eyj",), has_jwt),
    *EXTRA_TOKEN_DETECTORS,
)
