"""Rejections that carry the WWW-Authenticate challenge the HTTP edge answers with.

They are the domain's ``Unauthenticated`` (401) and ``Forbidden`` (403), so every
entry point maps them as before; ``memory_core.edge.errors`` reads ``challenge``.
"""

from __future__ import annotations

from memory_core.domain.errors import Forbidden, Unauthenticated

INVALID_TOKEN = "invalid token"
EXPIRED_TOKEN = "expired token"


class CredentialRejected(Unauthenticated):
    """A missing or bad credential (401) and the challenge naming what to send."""

    def __init__(self, message: str, *, challenge: str, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.challenge = challenge


class NotPermitted(Forbidden):
    """A valid credential that is not allowed here (403), with an optional challenge."""

    def __init__(self, message: str, *, challenge: str | None = None, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.challenge = challenge
