"""Memory records: profiles and the entries that make up a scope's document.

A scope's markdown document is never stored as one blob. Each append or import
is its own ``MemoryEntry`` in the owner's partition ``(instance_id, upn)``; the
document is rendered from the visible entries on read. A ``MemoryProfile`` per
(user, scope[, agent]) keeps the names and timestamps, under the seed's
deterministic ids.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class Scope(StrEnum):
    """Where memory lives: across all agents, for one agent, or both on read."""

    USER = "user"
    AGENT = "agent"
    COMBINED = "combined"


class EntryKind(StrEnum):
    """How an entry came to be, which decides its rendered heading."""

    APPEND = "append"
    IMPORT = "import"
    REPLACE = "replace"


class Share(StrEnum):
    """Who besides the author may read an entry (the sharing issue uses it)."""

    PRIVATE = "private"
    TEAM = "team"


# Characters Cosmos DB refuses in an item id. The seed's ids embed the UPN, and
# guest UPNs carry "#EXT#", so those characters are percent-encoded.
_ID_UNSAFE = {"/": "%2F", "\\": "%5C", "?": "%3F", "#": "%23"}


def normalize_upn(upn: str) -> str:
    """Ownership key: the UPN trimmed and lower-cased."""
    return upn.strip().lower()


def _id_safe(value: str) -> str:
    return "".join(_ID_UNSAFE.get(ch, ch) for ch in value)


def agent_hash(agent_object_id: str) -> str:
    """A stable, id-safe digest of an agent object id (which contains slashes)."""
    return hashlib.sha256(agent_object_id.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class ProfileKey:
    """Identifies one scope's memory: whose, which instance, which agent."""

    instance_id: str
    upn: str
    scope: Scope
    agent_object_id: str | None = None

    @property
    def profile_id(self) -> str:
        """The seed's deterministic id: memory:user:{upn} or memory:agent:{upn}:{hash}."""
        if self.scope is Scope.USER:
            return f"memory:user:{_id_safe(self.upn)}"
        return f"memory:agent:{_id_safe(self.upn)}:{agent_hash(self.agent_object_id or '')}"


@dataclass(frozen=True, slots=True)
class MemoryProfile:
    """The per-scope record: names and timestamps that survive a clear.

    ``cleared_on`` is a watermark: entries created at or before it are no
    longer part of the document, even before they are physically removed. It
    makes clear and replace atomic for readers with a single profile write.
    """

    key: ProfileKey
    name: str | None
    user_name: str | None
    agent_name: str | None
    created_on: datetime
    updated_on: datetime
    cleared_on: datetime | None = None
    etag: str | None = None

    @property
    def id(self) -> str:
        return self.key.profile_id


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One append or import: the unit of storage, provenance and (later) deletion."""

    id: str
    key: ProfileKey
    content_markdown: str
    kind: EntryKind
    created_on: datetime
    author_upn: str
    author_user_id: str | None = None
    agent_name: str | None = None
    reason: str | None = None
    session_id: str | None = None
    operation_id: str | None = None
    tags: tuple[str, ...] = ()
    share: Share = Share.PRIVATE
    content_sha256: str = ""

    @property
    def sort_key(self) -> tuple[datetime, str]:
        return (self.created_on, self.id)


@dataclass(frozen=True, slots=True)
class ScopeState:
    """What the store holds for one profile: the record (if any) and its entries."""

    key: ProfileKey
    profile: MemoryProfile | None
    entries: list[MemoryEntry] = field(default_factory=list)

    def visible_entries(self) -> list[MemoryEntry]:
        """Entries that belong to the document now, oldest first."""
        watermark = self.profile.cleared_on if self.profile else None
        visible = [e for e in self.entries if watermark is None or e.created_on > watermark]
        visible.sort(key=lambda e: e.sort_key)
        # A replace starts the document anew: nothing before the newest one shows.
        for index in range(len(visible) - 1, -1, -1):
            if visible[index].kind is EntryKind.REPLACE:
                return visible[index:]
        return visible


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
