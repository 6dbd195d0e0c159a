"""The screen's ruleset: one short name for everything that decides what a scan finds.

Text that passed the screen can be marked with the ruleset it passed (an agent's stored
instructions are). While the ruleset is the same, scanning that text again would find nothing
new, so a reader may skip it; after an upgrade that changes what a scan can find, the name
changes and the text is scanned again.

What it covers: the source of this package (every detector, pattern, allow-list and the
folding rules are here) and the installed detect-secrets, whose plugins the library detectors
call. Any edit to the package changes it, a comment too: a needless rescan costs one scan, a
missed one would let a secret that a new detector catches through.

Computing it reads about 80 KB of source and never imports the detectors (about 0.1 s,
docs/performance.md), so a process that only reads marked text never loads them.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.util import find_spec
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@cache
def ruleset() -> str:
    """``screen-`` and 16 hex digits; the same in every process of one deployment, and different
    once this package's source or detect-secrets' version is."""
    digest = hashlib.sha256()
    for source in sorted(_PACKAGE.glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    digest.update(_detect_secrets_version())
    return "screen-" + digest.hexdigest()[:16]


def _detect_secrets_version() -> bytes:
    """detect-secrets' ``__version__.py`` as installed, read without importing the library
    (its import is most of the detectors' load)."""
    spec = find_spec("detect_secrets")
    locations = spec.submodule_search_locations if spec is not None else None
    if not locations:
        return b"detect-secrets: not installed"
    version = Path(next(iter(locations))) / "__version__.py"
    return version.read_bytes() if version.is_file() else b"detect-secrets: no version file"
