"""The one error family of memory-core.

The domain and the adapters raise only these; each entry point maps them once
(see ``memory_core.edge.errors``) to an HTTP status, an MCP tool error or a CLI
exit code. Messages are written for the caller: they never carry secrets,
stack traces or another user's data.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal


class MemoryCoreError(Exception):
    """Base of every error the service reports to a caller."""

    code: str = "error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidInput(MemoryCoreError):
    """The request is malformed or breaks a rule of the API."""

    code = "invalid_input"


class UnsupportedMediaType(InvalidInput):
    """A body sent as something other than the JSON the endpoint takes."""

    code = "unsupported_media_type"


class MethodNotAllowed(MemoryCoreError):
    """A request whose method the route does not serve (the local host's 405; the answer names the methods it does)."""

    code = "method_not_allowed"


class MisdirectedRequest(MemoryCoreError):
    """A request addressed to a host name that is not this app's (DNS rebinding)."""

    code = "host_not_allowed"


class Unauthenticated(MemoryCoreError):
    """No credential, or a credential that is not valid."""

    code = "unauthenticated"


class Forbidden(MemoryCoreError):
    """A valid caller that is not allowed to do this."""

    code = "forbidden"


class NotFound(MemoryCoreError):
    """The thing named does not exist, or is not visible to the caller."""

    code = "not_found"


class Conflict(MemoryCoreError):
    """The request conflicts with the current state."""

    code = "conflict"


class EntryExists(Conflict):
    """An append of an entry whose id its owner's partition already holds; nothing was written.

    Stores raise it instead of overwriting: an entry id derived from an ``Idempotency-Key``
    relies on it (``domain.idempotency``)."""

    code = "entry_exists"


class EntryBeforeClear(Conflict):
    """An append of an entry created at or before its profile's stored ``cleared_on``; nothing was written.

    The clear it raced chose its watermark after the entry's time but erased before the entry was stored: stored,
    the entry would be hidden by the watermark and never erased. Stores refuse it in the append's atomic write;
    the writer stamps the entry after ``cleared_on`` and appends again (``domain.audited_appends``)."""

    code = "entry_before_clear"

    def __init__(self, cleared_on: datetime) -> None:
        super().__init__("the memory was cleared after this entry was made and before it was stored; retry")
        self.cleared_on = cleared_on


class Unprocessable(MemoryCoreError):
    """Well-formed input refused for what it holds (422): the kinds below, or such a refusal a remote CoreAPI
    answered (``memory_core.client_errors``), whose own code it keeps."""

    code = "unprocessable"


class IdempotencyKeyReused(Unprocessable):
    """An ``Idempotency-Key`` already used by this caller for a different request; nothing was written (422)."""

    code = "idempotency_key_reused"


class IdempotencyKeyErased(IdempotencyKeyReused):
    """An ``Idempotency-Key`` whose entry was stored and has since been erased; nothing was written (422): a retry
    must not bring an erased fact back, and a new write takes a new key."""

    code = "idempotency_key_erased"


class PayloadTooLarge(MemoryCoreError):
    """A write larger than the configured limit."""

    code = "payload_too_large"


class SecretDetected(Unprocessable):
    """A write that looks like it carries a secret; nothing was stored."""

    code = "secret_detected"

    def __init__(self, detectors: list[str], *, where: str = "content") -> None:
        """``where``: what held it, as the caller named it ("content", "reason", "tags"...)."""
        super().__init__(
            f"{where} looks like it contains a secret (detectors: {', '.join(detectors)}); nothing was stored"
        )
        self.detectors = detectors
        self.where = where


HiddenKind = Literal["tag", "selector", "mongolian_selector", "bidi_override", "zero_width_run"]
# What each kind of hidden text is ({} is its code point), and what the text may hold instead.
_HIDDEN_KINDS: dict[HiddenKind, tuple[str, str]] = {
    "tag": ("invisible Unicode tag characters ({}) that no reader sees", "Only an emoji flag may use them."),
    "selector": ("an invisible Unicode variation selector ({}) that varies no character",
                 "One may follow an emoji, a symbol, a digit or a CJK ideograph to choose its form; a run of them, "
                 "or one after a letter, carries text no reader sees."),
    "mongolian_selector": ("an invisible Mongolian free variation selector ({}) outside Mongolian",
                           "One may follow a Mongolian letter to choose its form."),
    "bidi_override": ("a bidirectional override ({}), which shows the text after it in another order than agents "
                      "read it", "Write the text in the order it is read; right-to-left letters order themselves, "
                      "and direction marks and isolates are kept."),
    "zero_width_run": ("invisible zero-width characters in a row ({} after another) that no reader sees",
                       "One at a time may join or separate letters or emoji; two or more together carry text no "
                       "reader sees."),
}


class HiddenText(Unprocessable):
    """Text carrying characters no reader sees; nothing was stored (422)."""

    code = "hidden_text"

    def __init__(self, where: str, character: str, kind: HiddenKind) -> None:
        """``where``: what held it, as the caller named it ("content", "reason", "policy_instructions"...);
        ``character``: the first such character and ``kind`` what it is (``domain.hidden_text.refusal`` gives
        both)."""
        why, allowed = _HIDDEN_KINDS[kind]
        why = why.format(f"U+{ord(character):04X}")
        super().__init__(f"{where} holds {why}; nothing was stored. {allowed}")
        self.where = where
        self.character = character


class Unavailable(MemoryCoreError):
    """The backing store cannot serve the request now; the caller may retry."""

    code = "unavailable"

    def __init__(self, message: str, *, retry_after_seconds: int = 5, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.retry_after_seconds = retry_after_seconds


class TooManyCalls(Unavailable):
    """A caller's calls past what may run and wait for them at once (429, Retry-After): the caller may retry, as after
    ``Unavailable``, but nothing is wrong with the store; only this caller is refused (``memory_core.mcp.stalled``)."""

    code = "too_many_calls"


class TimedOut(Unavailable):
    """The store gave no answer within its deadline: Cosmos DB's ``COSMOS_OPERATION_TIMEOUT`` (the SDK's retries
    included), or SQLite's busy timeout (another writer held the file). Answered as ``Unavailable`` is (503, its
    code, Retry-After); the sweep's report tells it apart (reason ``deadline``)."""


class ConfigurationError(Exception):
    """A setting is missing or invalid; raised at start, never to a caller."""
