"""Private key blocks: PEM, OpenSSH, PGP and PuTTY private keys with their key material.

Callers may rely on: the armour line alone (prose about key formats) is not a secret;
key material after it is. All patterns are compiled once at import, are safe to share
between threads and avoid unbounded nested quantifiers, so a hostile 64 KiB write cannot
make a scan backtrack for long.
"""

from __future__ import annotations

import re

from memory_core.secrets.matching import positions

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
