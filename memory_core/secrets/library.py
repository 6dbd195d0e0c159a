"""detect-secrets' plugins, adapted for scanning writes quickly.

We use an explicit allow-list of detect-secrets' regex plugins and call only
their ``analyze_string`` (pure regex work, no settings, no network
verification). detect-secrets scans line by line; so do we, but only the
lines where a cheap *locator* has found a candidate: for each plugin a
locator finds positions that every match of the plugin's own patterns must
touch (a vendor prefix, or a keyword followed by an assignment and a value of
the right shape). A line without a candidate cannot match, so skipping it
changes no result; it just keeps a 64 KiB write from paying for ~20 full
regex passes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from memory_core.secrets.matching import AnyOf, Detector, positions, starts_alike
from memory_core.secrets.values import looks_random

# (text, lowered) -> candidate positions; lines without one are not scanned.
Locator = Callable[[str, str], Iterator[int]]


def at_hints(*hints: str) -> Locator:
    """Candidates: every occurrence of a literal, lower-case hint in the lower-cased text
    (``AnyOf.positions``: one overlapping an earlier one may be left out, being on the same line)."""
    any_hint = AnyOf(hints)

    def locate(text: str, lowered: str) -> Iterator[int]:
        return any_hint.positions(lowered)

    return locate


def where(anchors: tuple[str, ...], pattern: str, *, case_sensitive: bool = False) -> Locator:
    """Candidates: occurrences of an anchor at which ``pattern`` matches.

    Anchors and pattern apply to the lower-cased text, or to the text itself
    when ``case_sensitive``; ``pattern`` starts with an anchor (a look-behind
    goes after it) and never matches a newline. Finding anchors with
    ``str.find`` and matching only there is far cheaper than letting a regex
    try every position. When the anchors start alike the pattern is searched
    in one pass instead (see ``AnyOf`` for why): a candidate
    overlapping an earlier one (on the same line, so scanned with it) is then
    not yielded.
    """
    compiled = re.compile(pattern)
    one_pass = starts_alike(anchors)

    def locate(text: str, lowered: str) -> Iterator[int]:
        subject = text if case_sensitive else lowered
        if one_pass:
            for match in compiled.finditer(subject):
                yield match.start()
            return
        for anchor in anchors:
            for index in positions(subject, anchor):
                if compiled.match(subject, index):
                    yield index

    return locate


def _telegram(text: str, lowered: str) -> Iterator[int]:
    # "<8-10 digits>:<35 characters>"; most colons follow no digit.
    for index in positions(lowered, ":"):
        if index >= 8 and lowered[index - 1].isdigit() and _TELEGRAM_AFTER_COLON.match(lowered, index):
            yield index


_TELEGRAM_AFTER_COLON = re.compile(r"(?<=\d{8}):[0-9a-z_-]{35}")
# What detect-secrets' build_assignment_regex allows between keyword and value.
_ASSIGN = r"[\"']?\]?[ \t]*(?:=>|:=|::|=|:| +)[ \t]*[\"']?"
_DELIMITERS = " \t\r\n=:\"'"


def _strict_value(value: str) -> bool:
    """Accept a match only if the value is long, mixes letters and digits, and has high entropy."""
    return looks_random(value.strip(_DELIMITERS), min_length=20, min_entropy=3.5)


# (plugin, hints, locator, acceptance test on the matched value or None).
# Hints are lower-case substrings one of which every match of the plugin contains.
LibraryEntry = tuple[type[RegexBasedDetector], tuple[str, ...], Locator, "Callable[[str], bool] | None"]


def _hinted(plugin: type[RegexBasedDetector], *hints: str) -> LibraryEntry:
    return (plugin, hints, at_hints(*hints), None)


LIBRARY_PLUGINS: tuple[LibraryEntry, ...] = (
    _hinted(AWSKeyDetector, "a3t", "abia", "acca", "akia", "asia", "aws"),
    (
        ArtifactoryDetector,
        ("akc", "ap"),
        where(("AKC", "AP"), r"(?:AKC|AP[0-9A-F])[a-zA-Z0-9]{8}", case_sensitive=True),
        # Its "AP" + hex digit + 8 alphanumerics pattern also matches order and
        # reference numbers such as AP2024001234.
        _strict_value,
    ),
    (
        CloudantDetector,
        ("cl",),
        where(("cl",), r"cl(?:oudant|ou)?[_-]?(?:api)?[_-]?(?:key|pwd|pw|pass|token)|cloudant\.com"),
        None,
    ),
    (
        DiscordBotTokenDetector,
        (".",),
        where((".",), r"\.[a-z0-9_-]{6}\.[a-z0-9_-]{27}"),
        # Its pattern also matches long dotted identifiers.
        _strict_value,
    ),
    _hinted(GitHubTokenDetector, "ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    _hinted(
        GitLabTokenDetector,
        "glpat-",
        "gldt-",
        "glft-",
        "glsoat-",
        "glrt-",
        "gr1348941",
        "glcbt-",
        "glimt-",
        "glptt-",
        "glagent-",
        "gloas-",
    ),
    (
        IbmCloudIamDetector,
        ("key", "pwd", "pass", "token"),
        where(("key", "pwd", "pass", "token"), r"(?:key|pwd|password|pass|token)" + _ASSIGN + r"[a-z0-9_-]{44}"),
        None,
    ),
    (
        IbmCosHmacDetector,
        ("secret",),
        where(("secret",), r"secret[-_]?(?:access)?[-_]?key" + _ASSIGN + r"[a-f0-9]{48}"),
        None,
    ),
    (MailchimpDetector, ("-us",), where(("-us",), r"-us(?<=[0-9a-z]{32}-us)[0-9]"), None),
    _hinted(NpmDetector, "_authtoken"),
    _hinted(OpenAIDetector, "t3blbkfj"),
    _hinted(PypiTokenDetector, "pypi-"),
    _hinted(SendGridDetector, "sg."),
    _hinted(SlackDetector, "xox", "hooks.slack.com"),
    (
        SoftlayerDetector,
        ("sl", "softlayer"),
        where(("softlayer", "sl"), r"softlayer|sl[_-]?(?:api)?[_-]?(?:key|pwd|pass|token)"),
        None,
    ),
    _hinted(SquareOAuthDetector, "sq0csp-"),
    _hinted(StripeDetector, "k_live_"),
    (TelegramBotTokenDetector, (":",), _telegram, None),
    # Its patterns are case-sensitive: "AC" or "SK", then 32 lower-case letters or digits.
    (TwilioKeyDetector, ("ac", "sk"), where(("AC", "SK"), r"(?:AC|SK)[a-z0-9]{32}", case_sensitive=True), None),
)

# Upstream secret_type -> the name we report, where upstream's is unclear.
RENAMED = {"NPM tokens": "NPM Token"}


def library_detector(
    plugin_class: type[RegexBasedDetector],
    hints: tuple[str, ...],
    locate: Locator,
    accept: Callable[[str], bool] | None,
) -> Detector:
    """A Detector that runs one detect-secrets plugin on the lines ``locate`` points at."""
    plugin = plugin_class()
    name = str(plugin_class.secret_type)

    def matches(text: str, lowered: str) -> bool:
        scanned: set[int] = set()
        for index in locate(text, lowered):
            start = text.rfind("\n", 0, index) + 1
            if start in scanned:
                continue
            scanned.add(start)
            end = text.find("\n", index)
            line = text[start:] if end == -1 else text[start:end]
            for value in plugin.analyze_string(line):
                if accept is None or accept(value):
                    return True
        return False

    return Detector(RENAMED.get(name, name), hints, matches)


def library_detectors() -> tuple[Detector, ...]:
    """One Detector per allowed detect-secrets plugin, in a fixed order."""
    return tuple(library_detector(*entry) for entry in LIBRARY_PLUGINS)
