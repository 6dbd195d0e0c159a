"""Secret keyword assignments: ``password=...``, ``api_key: ...``, ``my token is ...``
with a value shaped like a secret.

Callers may rely on: prose about secrets ("password policy: 12 characters minimum"),
metadata keys (``..._id``, ``..._url``, ``..._policy``) and placeholders are not
secrets; crafted input ("password=password=...") is scanned in linear time. All patterns
are compiled once at import, are safe to share between threads and avoid unbounded
nested quantifiers, so a hostile 64 KiB write cannot make a scan backtrack for long.
"""

from __future__ import annotations

import re

from memory_core.secrets.matching import positions
from memory_core.secrets.values import looks_like_password, looks_random

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
