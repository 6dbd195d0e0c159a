"""Secret scanning for writes: find credentials before anything is stored.

``SecretScanner.scan(text)`` returns the kinds of secret found in a write, as
``SecretFinding``s naming the detector only. A caller that gets a non-empty
list rejects the write (HTTP 422, code ``secret_detected``) with
``rejection_message(findings)``. Nothing here ever returns, logs or formats
the secret value.

What callers can rely on:

* ``scan`` is pure and thread-safe; build one ``SecretScanner`` per process
  and share it (construction imports and instantiates the plugins).
* Findings are distinct by detector name and sorted by name, so the same text
  always yields the same list.
* A 1 KiB write scans in well under 1 ms (median; see
  ``bench/bench_secret_scan.py``); the cost is linear in the text's length.
* Zero false positives on the ordinary-memory corpus in
  ``tests/secrets/corpus/ordinary_memory.txt``; the detection rate on
  ``tests/secrets/corpus/fake_secrets.py`` is asserted by the tests.

Design decisions
----------------

1. **detect-secrets (Yelp, pinned 1.5.0) for vendor token formats.** It is the
   most widely used maintained Python secret scanner whose detectors work
   offline (ggshield needs GitGuardian's API; the bc-detect-secrets fork has
   fewer plugins). We instantiate an explicit allow-list of its regex plugins
   and call ``analyze_string`` on the whole write, not its ``SecretsCollection``
   / baseline / settings machinery (file-oriented, global state, network
   verification). An allow-list, not "all plugins", so that an upgrade cannot
   add a noisy detector without the corpus tests seeing it.
2. **Whole-text, not per line.** The allowed plugins' patterns cannot span a
   line break except through ``\\s``, so one pass over the text finds what a
   per-line pass would, without a Python loop per line (64 KiB writes).
3. **Left out of detect-secrets, on purpose:**
   ``Base64HighEntropyString`` / ``HexHighEntropyString`` flag UUIDs, commit
   hashes, image digests and ids, which ordinary memory is full of;
   ``KeywordDetector`` flags prose such as "password policy: 12 characters";
   ``IPPublicDetector`` flags IP addresses, which are not secrets;
   ``PrivateKeyDetector``, ``BasicAuthDetector`` and
   ``AzureStorageKeyDetector`` are replaced by stricter or broader detectors
   of ours (``memory_core.secrets.detectors``) reported under the same or
   clearer names.
4. **Post-filters on two detect-secrets plugins.** ``ArtifactoryDetector``'s
   password pattern (``AP`` + a hex digit + 8 alphanumerics) also matches
   order and reference numbers such as ``AP2024001234``, and
   ``DiscordBotTokenDetector``'s pattern matches long dotted identifiers; a
   match of either counts only when the value is long, mixes letters and
   digits and has high entropy.
5. **What we add** (each documented in ``detectors``): private key blocks with
   key material; connection strings (database/broker URLs with a password,
   Azure ``AccountKey=`` / ``SharedAccessKey=`` / ``AccessKey=``, key=value
   ``Password=``); Azure SAS signatures; URL basic auth and
   ``Authorization: Basic`` headers; Bearer tokens; Luhn-valid payment card
   numbers with a real issuer prefix and card grouping; keyword assignments
   (``api_key=…``, ``password: …``, "my password is …") whose value is
   secret-shaped (high-entropy for keys/tokens, 3+ character classes for
   passwords); and token formats newer than detect-secrets 1.5.0 (GitHub
   fine-grained PATs, Stripe test keys, OpenAI project keys, Anthropic,
   Google, Hugging Face, Slack app tokens, npm ``npm_``, Azure AD client
   secrets).
6. **Not detected, by design:** a bare random string with no keyword or
   vendor prefix (it cannot be told from a hash or id without false
   positives) and passwords in prose without a keyword ("log in with
   Tr0ub4dor&3").
7. **Speed.** Each detector has lower-case substring hints; its regexes run
   only when one occurs in the text. Patterns avoid unbounded nested
   quantifiers so crafted input cannot cause catastrophic backtracking.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
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

from memory_core.secrets.detectors import (
    CUSTOM_DETECTORS,
    Detector,
    anchored_gate,
    looks_random,
    lower_same_length,
)


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """One kind of secret found in a write.

    ``detector`` is a human-readable kind such as "AWS Access Key",
    "Private Key", "JSON Web Token", "Connection String" or
    "Payment Card Number". It never contains any part of the secret.
    """

    detector: str


_DELIMITERS = " \t\r\n=:\"'"


def _strict_value(value: str) -> bool:
    return looks_random(value.strip(_DELIMITERS), min_length=20, min_entropy=3.5)


def _gate(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern)
    return lambda lowered: compiled.search(lowered) is not None


# detect-secrets plugins we use, each with cheap necessary conditions on the
# lower-cased text (substring hints, then a gate pattern) derived from the
# plugin's own patterns, and an optional acceptance test on the matched value.
_LibraryEntry = tuple[
    type[RegexBasedDetector], tuple[str, ...], "Callable[[str], bool] | None", "Callable[[str], bool] | None"
]
_LIBRARY_PLUGINS: tuple[_LibraryEntry, ...] = (
    (AWSKeyDetector, ("a3t", "abia", "acca", "akia", "asia", "aws"), None, None),
    (ArtifactoryDetector, ("akc", "ap"), _gate(r"(?:akc|ap[0-9a-f])[a-z0-9]{8}"), _strict_value),
    (CloudantDetector, ("cl",), _gate(r"cl(?:oudant|ou)?[_-]?(?:api)?[_-]?(?:key|pwd|pw|pass|token)|cloudant\.com"), None),
    (DiscordBotTokenDetector, (".",), _gate(r"\.[a-z0-9_-]{6}\.[a-z0-9_-]{27}"), _strict_value),
    (GitHubTokenDetector, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), None, None),
    (
        GitLabTokenDetector,
        ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "gr1348941", "glcbt-", "glimt-", "glptt-", "glagent-",
         "gloas-"),
        None,
        None,
    ),
    (
        IbmCloudIamDetector,
        ("key", "pwd", "pass", "token"),
        anchored_gate(
            ("key", "pwd", "pass", "token"),
            r"(?:key|pwd|password|pass|token)[\"']?\]?[ \t]*(?:=|:| +)[ \t]*[\"']?[a-z0-9_-]{44}",
        ),
        None,
    ),
    (IbmCosHmacDetector, ("secret",), _gate(r"secret[-_]?(?:access)?[-_]?key"), None),
    (JwtTokenDetector, ("eyj",), None, None),
    (MailchimpDetector, ("-us",), None, None),
    (NpmDetector, ("_authtoken",), None, None),
    (OpenAIDetector, ("t3blbkfj",), None, None),
    (PypiTokenDetector, ("pypi-",), None, None),
    (SendGridDetector, ("sg.",), None, None),
    (SlackDetector, ("xox", "hooks.slack.com"), None, None),
    (SoftlayerDetector, ("sl",), _gate(r"softlayer|sl[_-]?(?:api)?[_-]?(?:key|pwd|pass|token)"), None),
    (SquareOAuthDetector, ("sq0csp-",), None, None),
    (StripeDetector, ("k_live_",), None, None),
    (TelegramBotTokenDetector, (":",), anchored_gate((":",), r"(?<=\d{8}):[0-9a-z_-]{35}"), None),
    (TwilioKeyDetector, ("ac", "sk"), anchored_gate(("ac", "sk"), r"(?:ac|sk)[a-z0-9]{32}"), None),
)

# Upstream secret_type -> the name we report, where upstream's is unclear.
_RENAMED = {"NPM tokens": "NPM Token"}


def _library_detector(
    plugin_class: type[RegexBasedDetector],
    hints: tuple[str, ...],
    gate: Callable[[str], bool] | None,
    accept: Callable[[str], bool] | None,
) -> Detector:
    plugin = plugin_class()
    name = str(plugin_class.secret_type)

    if accept is None:

        def matches(text: str, lowered: str) -> bool:
            return any(True for _ in plugin.analyze_string(text))

    else:

        def matches(text: str, lowered: str) -> bool:
            return any(accept(value) for value in plugin.analyze_string(text))

    return Detector(_RENAMED.get(name, name), hints, matches, gate)


def _default_detectors() -> tuple[Detector, ...]:
    library = tuple(_library_detector(*entry) for entry in _LIBRARY_PLUGINS)
    return library + CUSTOM_DETECTORS


class SecretScanner:
    """Finds the kinds of secret in a piece of text. Thread-safe; build once per process."""

    __slots__ = ("_detectors",)

    def __init__(self, detectors: Iterable[Detector] | None = None) -> None:
        self._detectors: tuple[Detector, ...] = (
            tuple(detectors) if detectors is not None else _default_detectors()
        )

    @property
    def detector_names(self) -> list[str]:
        """Every kind this scanner can report, sorted."""
        return sorted({d.name for d in self._detectors})

    def scan(self, text: str) -> list[SecretFinding]:
        """The distinct kinds of secret in ``text``, sorted by detector name; empty if none."""
        if not text:
            return []
        lowered = lower_same_length(text)
        found: set[str] = set()
        for detector in self._detectors:
            if detector.name not in found and detector.found_in(text, lowered):
                found.add(detector.name)
        return [SecretFinding(name) for name in sorted(found)]


def rejection_message(findings: Sequence[SecretFinding]) -> str:
    """The caller-facing message for a rejected write; names detector kinds only.

    >>> rejection_message([SecretFinding("AWS Access Key"), SecretFinding("JSON Web Token")])
    'content looks like it contains a secret (detectors: AWS Access Key, JSON Web Token); nothing was stored'
    """
    kinds = ", ".join(dict.fromkeys(f.detector for f in findings)) or "unknown"
    return f"content looks like it contains a secret (detectors: {kinds}); nothing was stored"

