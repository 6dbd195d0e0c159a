"""What authentication answers: the caller, the path that proved it, and what may be sent onward."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from memory_core.domain.identity import Caller
from memory_core.identity.modes import AuthMode


@dataclass(frozen=True, slots=True)
class Authentication:
    """An authenticated caller.

    ``credential`` is what an onward call may use (never logged or shown):
    the verified Entra token (to exchange on behalf of the user), the verified
    platform identity context (forwarded as it is), or the raw X-USER-IDENTITY
    of the key path. None for App Service authentication and local mode.
    """

    caller: Caller
    mode: AuthMode
    roles: frozenset[str] = frozenset()
    credential: str | None = field(default=None, repr=False)


class CredentialPath(Protocol):
    """One way of proving who calls (one MEMORY_AUTH_MODE)."""

    mode: AuthMode

    def presented(self, headers: Mapping[str, str]) -> bool:
        """True when the request carries this path's credential (valid or not)."""
        ...

    def authenticate(self, headers: Mapping[str, str]) -> Authentication:
        """The caller. Raises ``CredentialRejected`` (challenge left empty) for a bad credential."""
        ...
