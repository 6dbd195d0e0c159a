"""Secret scanning for writes: find credentials before anything is stored.

``SecretScanner.scan(text)`` returns the kinds of secret found in a write, as
``SecretFinding``s naming the detector only. A caller that gets a non-empty
list rejects the write (HTTP 422, code ``secret_detected``) with
``rejection_message(findings)``. Nothing here returns, logs or formats the
secret value.

What callers can rely on:

* ``scan`` is pure and thread-safe; build one ``SecretScanner`` per process
  and share it. It makes no network calls and touches no global state.
* Findings are distinct by detector name and sorted by name, so the same text
  always yields the same list.
* A 1 KiB write scans in well under 1 ms (median ~0.06 ms, 64 KiB ~4 ms, on
  the 2-core CI machine; ``python bench/bench_secret_scan.py``). Cost grows
  linearly with length, also for crafted repetitive input (tested up to 64 KiB).
* Zero false positives on ``tests/secrets/corpus/ordinary_memory.txt``; the
  detection rate on ``tests/secrets/corpus/fake_secrets.py`` is asserted by
  the tests (both are measured there, not promised beyond them).

Design decisions
----------------

1. **detect-secrets (Yelp), pinned to 1.5.0, for vendor token formats.** It
   is the most used Python secret scanner whose detectors work offline
   (ggshield needs GitGuardian's service; the bc-detect-secrets fork lacks
   several of its plugins). We call only its plugins' ``analyze_string`` from
   an explicit allow-list (``memory_core.secrets.library``), never
   ``scan_line`` / ``SecretsCollection``: those mutate process-wide settings,
   can verify secrets over the network, and with the full plugin set take
   15-30 ms per KiB and flag 310 of our 313 ordinary lines (the entropy
   plugins, run ad hoc, treat any line as a candidate string). An allow-list,
   not "all plugins", so an upgrade cannot add a noisy detector unnoticed.
2. **Per line, only where a candidate is.** Like detect-secrets itself, its
   plugins run line by line, but only on lines where a cheap locator (a
   vendor prefix, or keyword + assignment + value of the right shape, found
   with ``str.find``) shows that a match is possible. Skipping other lines
   changes no result and keeps large writes cheap.
3. **Left out of detect-secrets, on purpose:**
   ``Base64HighEntropyString`` / ``HexHighEntropyString`` flag UUIDs, commit
   hashes, image digests and ids, which ordinary memory is full of;
   ``KeywordDetector`` flags prose such as "password policy: 12 characters";
   ``IPPublicDetector`` flags IP addresses, which are not secrets;
   ``PrivateKeyDetector`` (fires on the bare phrase "BEGIN RSA PRIVATE KEY"),
   ``BasicAuthDetector`` (reads ``/wiki/Help:Contents@x`` as credentials,
   flags placeholders), ``AzureStorageKeyDetector`` (88-character keys
   only) and ``JwtTokenDetector`` (its pattern is quadratic: 64 KiB of
   "eyJeyJ..." takes ~2 s) are replaced by detectors of ours, reported under
   the same names; the JWT one reuses the library's JSON validation.
4. **Post-filters on two detect-secrets plugins.** ``ArtifactoryDetector``'s
   password pattern (``AP`` + a hex digit + 8 alphanumerics) also matches
   reference numbers such as ``AP2024001234``, and
   ``DiscordBotTokenDetector``'s matches long dotted identifiers; a match of
   either counts only when it is 20+ characters, mixes letters and digits and
   has high entropy.
5. **What we add** (listed in ``memory_core.secrets.detectors``, each documented in its family module):
   private key blocks with key material (PEM, OpenSSH, PGP, PuTTY, also
   JSON-escaped); connection strings (database/broker URLs with a password,
   Azure ``AccountKey=`` / ``SharedAccessKey=`` / ``AccessKey=``, key=value
   ``Password=``, JDBC ``password=``); Azure SAS signatures; URL basic auth
   and ``Authorization: Basic``; Bearer tokens; JWTs; payment card numbers
   (Luhn-valid, real issuer prefix and length, card grouping); keyword
   assignments (``api_key=…``, ``password: …``, "my password is …") whose
   value is secret-shaped; and token formats newer than detect-secrets 1.5.0
   (GitHub fine-grained PATs, Stripe test keys, OpenAI project keys,
   Anthropic, Google API keys, Hugging Face, Slack app tokens, npm
   ``npm_``, Entra ID client secrets).
6. **Keyword assignments need a secret-shaped value.** For password keywords:
   8+ characters in 3+ character classes (``hunter2``, ``required``,
   ``12 characters``, paths and expressions fail); for key/token/secret
   keywords: 16+ characters mixing letters and digits with Shannon entropy
   >= 3 bits/char. Keys naming metadata (``secret_name``, ``token_limit``,
   ``password_policy``…) and placeholders (``<password>``, ``${X}``,
   ``{{ x }}``, ``****``, ``changeme``) never count.
7. **Sensitive personal identifiers** (``memory_core.secrets.identifiers``):
   US social security numbers (valid ranges, on a line that names them);
   IBANs are not refused (they exist to be shared). Card numbers and SSNs are
   measured, with IBANs and ordinary numbers as look-alikes, on a corpus of
   their own with a held-out third
   (``tests/secrets/corpus/sensitive_values.py``, docs/performance.md).
8. **Not detected, by design:** a bare random string with no keyword or
   vendor prefix (it cannot be told from a hash or id without false
   positives), passwords in prose without a keyword ("log in with
   Tr0ub4dor&3"), passphrases of plain words ("my passphrase is correct
   horse battery staple"), vendors with no rule (e.g. Shopify), and card
   numbers grouped with dots, doubled spaces or split over lines. A Luhn-valid
   16-digit number with a card prefix *is* reported even if the writer meant
   an order number: the two cannot be told apart.
9. **Read as a person reads it** (``memory_core.secrets.folding``). A text with
   other scripts' digits, full-width forms, non-ASCII spaces or invisible
   formatting (a CJK input method's full-width mode, a Persian keyboard, a
   copied page's no-break spaces, a chat app's zero-width spaces) is scanned
   as written and again as it reads in ASCII, so a card number in full-width
   digits is refused as the ASCII one is. An ASCII text is scanned once; so is
   one with nothing to fold.
10. **Robust to crafted input.** Patterns use possessive/bounded quantifiers,
    and keyword searches skip anchors inside a value already judged, so
    repetitive input cannot make a scan backtrack quadratically.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from hashlib import sha256

from memory_core.secrets.detectors import CUSTOM_DETECTORS
from memory_core.secrets.folding import ascii_folded
from memory_core.secrets.identifiers import IDENTIFIER_DETECTORS
from memory_core.secrets.library import library_detectors
from memory_core.secrets.matching import Detector, lower_same_length
from memory_core.secrets.ruleset import ruleset


@dataclass(frozen=True, slots=True)
class SecretFinding:
    """One kind of secret found in a write.

    ``detector`` is a human-readable kind such as "AWS Access Key",
    "Private Key", "JSON Web Token", "Connection String" or
    "Payment Card Number". It never contains any part of the secret.
    """

    detector: str


def _default_detectors() -> tuple[Detector, ...]:
    return library_detectors() + CUSTOM_DETECTORS + IDENTIFIER_DETECTORS


class SecretScanner:
    """Finds the kinds of secret in a piece of text. Thread-safe; build once per process."""

    __slots__ = ("_detectors", "_own_detectors")

    def __init__(self, detectors: Iterable[Detector] | None = None) -> None:
        self._own_detectors = detectors is not None
        self._detectors: tuple[Detector, ...] = tuple(detectors) if detectors is not None else _default_detectors()

    @property
    def ruleset(self) -> str:
        """What decides this scanner's findings (``memory_core.secrets.ruleset``); a scanner built with
        detectors of its own adds their names."""
        if not self._own_detectors:
            return ruleset()
        return f"{ruleset()}+" + sha256("\0".join(self.detector_names).encode()).hexdigest()[:8]

    @property
    def detector_names(self) -> list[str]:
        """Every kind this scanner can report, sorted."""
        return sorted({d.name for d in self._detectors})

    def scan(self, text: str) -> list[SecretFinding]:
        """The distinct kinds of secret in ``text``, sorted by detector name; empty if none.

        A text that reads differently in ASCII (``folding.ascii_folded``: other scripts'
        digits, full-width forms, wide spaces, invisible formatting) is scanned as written
        and as it reads.
        """
        if not text:
            return []
        found: set[str] = set()
        self._add_kinds_in(text, found)
        folded = ascii_folded(text)
        if folded is not None:
            self._add_kinds_in(folded, found)
        return [SecretFinding(name) for name in sorted(found)]

    def _add_kinds_in(self, text: str, found: set[str]) -> None:
        lowered = lower_same_length(text)
        for detector in self._detectors:
            if detector.name not in found and detector.found_in(text, lowered):
                found.add(detector.name)


def rejection_message(findings: Sequence[SecretFinding]) -> str:
    """The caller-facing message for a rejected write; names detector kinds only.

    >>> rejection_message([SecretFinding("AWS Access Key"), SecretFinding("JSON Web Token")])
    'content looks like it contains a secret (detectors: AWS Access Key, JSON Web Token); nothing was stored'
    """
    kinds = ", ".join(dict.fromkeys(f.detector for f in findings)) or "unknown"
    return f"content looks like it contains a secret (detectors: {kinds}); nothing was stored"
