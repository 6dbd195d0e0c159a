"""The read-side sharing policy: which entries besides the caller's own a read may show.

Writes are never affected by the policy: every entry is stamped with the
server-resolved author, and ``share`` only marks it as offered to the team.
"""

from __future__ import annotations

from enum import StrEnum

from memory_core.domain.errors import Forbidden
from memory_core.domain.models import MemoryEntry, Share


class SharingPolicy(StrEnum):
    PRIVATE = "private"  # the caller's own entries only
    TEAM = "team"  # plus entries users of the instance marked team-shared (same agent for agent scope)
    LEGACY = "legacy"  # plus legacy entries stored without an owner

    def shares_read(self) -> frozenset[Share]:
        """Which shared entries (besides the caller's own) this policy shows."""
        return _SHARES_READ[self]

    def shows_shared(self, entry: MemoryEntry, viewer_upn: str) -> bool:
        """Whether a read by ``viewer_upn`` under this policy shows ``entry`` of the shared partition:
        offered with a share the policy reads, by someone else (the author reads their own entry in
        their own memory, so it never shows twice)."""
        return entry.share in self.shares_read() and entry.author_upn != viewer_upn

    @classmethod
    def named(cls, name: str | None) -> SharingPolicy | None:
        """The policy a request names (already validated at the edge), or None when it names none."""
        return cls(name) if name else None


# Built once: ``shows_shared`` asks for every entry of the shared partition a sharing read merges.
_SHARES_READ: dict[SharingPolicy, frozenset[Share]] = {
    SharingPolicy.PRIVATE: frozenset(),
    SharingPolicy.TEAM: frozenset({Share.TEAM}),
    SharingPolicy.LEGACY: frozenset({Share.TEAM, Share.LEGACY}),
}


def resolve_policy(
    default: SharingPolicy, requested: SharingPolicy | None, *, allow_override: bool
) -> SharingPolicy:
    """The policy of one read: the default, or a per-call override when overrides are allowed.

    Raises ``Forbidden`` for any override while MEMORY_SHARING_ALLOW_OVERRIDE is false.
    """
    if requested is None:
        return default
    if not allow_override:
        raise Forbidden(
            "per-call memory sharing overrides are disabled on this deployment "
            "(MEMORY_SHARING_ALLOW_OVERRIDE=false); send no sharing override (REST memorySharing, MCP memory_sharing) "
            "to use the default policy",
            code="sharing_override_forbidden",
        )
    return requested
