"""Memory records: profiles and the entries that make up a scope's document.

A scope's markdown document is never stored as one blob. Each append or import
is its own ``MemoryEntry`` in the owner's partition ``(instance_id, upn)``; the
document is rendered from the visible entries on read. A ``MemoryProfile`` per
(user, scope[, agent]) keeps the names and timestamps, under the seed's
deterministic ids.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from memory_core.domain.identity import internal_owner


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
    # An import replace under operator approval: shown like a replace, but it does
    # not hide what came before - the deletion request's hold does, so a rejection
    # shows the old content again.
    HELD_REPLACE = "held_replace"


class Share(StrEnum):
    """Who besides the author may read an entry.

    ``team``: users of the same instance (for agent scope, of the same agent),
    under the team and legacy read policies. ``legacy``: an entry with no owner,
    loaded by an operator from a deployment that predates per-user memory.
    """

    PRIVATE = "private"
    TEAM = "team"
    LEGACY = "legacy"


# The partition owner under which team-shared copies and legacy entries of an
# instance live, so a team or legacy read is one query on one partition. An
# internal owner: no caller's UPN can name it (memory_core.domain.identity).
SHARED_OWNER = internal_owner("shared")


# Characters Cosmos DB refuses in an item id. The seed's ids embed the UPN, and
# guest UPNs carry "#EXT#", so those characters are percent-encoded.
_ID_UNSAFE = {"/": "%2F", "\\": "%5C", "?": "%3F", "#": "%23"}


def shared_copy_id(entry_id: str) -> str:
    """The id of an entry's team-shared copy in the shared partition."""
    return f"{entry_id}-shared"


def _id_safe(value: str) -> str:
    return "".join(_ID_UNSAFE.get(ch, ch) for ch in value)


def agent_hash(agent_object_id: str) -> str:
    """A stable, id-safe digest of an agent object id (which contains slashes)."""
    return hashlib.sha256(agent_object_id.encode("utf-8")).hexdigest()[:32]


def agent_profile_prefix(upn: str) -> str:
    """What the ``profile_id`` of every agent scope of ``upn`` begins with (its agent's hash follows), and no
    other profile's: how a store lists one person's agent scopes alone (``MemoryStore.partition_keys``)."""
    return f"memory:agent:{_id_safe(upn)}:"


@dataclass(frozen=True, slots=True)
class ProfileKey:
    """Identifies one scope's memory: whose, which instance, which agent."""

    instance_id: str
    upn: str
    scope: Scope
    agent_object_id: str | None = None

    def shared(self) -> ProfileKey:
        """The key of this scope's shared (team and legacy) entries in the instance."""
        return ProfileKey(self.instance_id, SHARED_OWNER, self.scope, self.agent_object_id)

    @property
    def profile_id(self) -> str:
        """The seed's deterministic id: memory:user:{upn} or memory:agent:{upn}:{hash}."""
        return _profile_id(self.scope, self.upn, self.agent_object_id)


# Module-level, unlike the rest of the process's state (``composition``, its one holder): a memo of a pure function,
# not state. Its answer depends only on its arguments, so no caller can tell it from the computation, none needs to
# reset or share it, and the domain cannot import the composition root. Bounded: 4,096 keys, about 0.8 MB full.
@functools.lru_cache(maxsize=4096)
def _profile_id(scope: Scope, upn: str, agent_object_id: str | None) -> str:
    """``ProfileKey.profile_id``, remembered: a sweep or a clear asks it of every entry (60,000 entries of one profile
    cost about 1 s of character-by-character escaping and hashing when computed each time)."""
    if scope is Scope.USER:
        return f"memory:user:{_id_safe(upn)}"
    return agent_profile_prefix(upn) + agent_hash(agent_object_id or "")


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

    @property
    def copied_from(self) -> ProfileKey | None:
        """The scope whose entry this is the team copy of (``shared_copy_id``, ``domain.team_copies``): its
        author's memory, same scope and agent; None for any other entry, a legacy entry of the shared partition too."""
        if self.key.upn != SHARED_OWNER or self.share is not Share.TEAM or not self.author_upn:
            return None
        return ProfileKey(self.key.instance_id, self.author_upn, self.key.scope, self.key.agent_object_id)


@dataclass(frozen=True, slots=True)
class Hold:
    """Hides entries while a deletion request is pending or awaiting the sweep.

    An entry is covered when its profile is in ``profile_ids`` (None: every
    profile of the owner) and it was created at or before ``watermark`` or is
    named in ``entry_ids``. Rejecting the request removes the hold, restoring
    the entries; the sweep erases them before it removes the hold.
    """

    request_id: str
    profile_ids: tuple[str, ...] | None
    watermark: datetime | None = None
    entry_ids: tuple[str, ...] = ()
    # Set on the hold placed in the shared partition: only that author's copies are covered.
    author_upn: str | None = None

    def to_data(self) -> dict[str, object]:
        return {
            "request_id": self.request_id,
            "profile_ids": list(self.profile_ids) if self.profile_ids is not None else None,
            "watermark": self.watermark.isoformat() if self.watermark else None,
            "entry_ids": list(self.entry_ids),
            "author_upn": self.author_upn,
        }

    @staticmethod
    def from_data(data: Mapping[str, Any]) -> Hold:
        profile_ids = data.get("profile_ids")
        watermark = data.get("watermark")
        return Hold(
            request_id=str(data["request_id"]),
            profile_ids=tuple(profile_ids) if profile_ids is not None else None,
            watermark=datetime.fromisoformat(watermark) if watermark else None,
            entry_ids=tuple(data.get("entry_ids") or ()),
            author_upn=data.get("author_upn"),
        )

    def covers(self, entry: MemoryEntry) -> bool:
        return self.covers_facts(entry.key.profile_id, entry.author_upn, entry.created_on, entry.id)

    def covers_facts(self, profile_id: str, author_upn: str, created_on: datetime, entry_id: str) -> bool:
        """``covers`` for the entry of profile ``profile_id`` with these facts (the only ones it reads),
        for readers that keep an entry's facts without the entry (``known_entries``)."""
        if self.profile_ids is not None and profile_id not in self.profile_ids:
            return False
        if self.author_upn is not None and author_upn != self.author_upn:
            return False
        if self.watermark is not None and created_on <= self.watermark:
            return True
        return entry_id in self.entry_ids


@dataclass(frozen=True, slots=True)
class HeldFacts:
    """What a profile's holds cover, indexed once: ``covers_facts`` answers as ``any(hold.covers_facts(...))`` over
    the holds would, in constant time however many holds there are (a directory's delete files one per file)."""

    watermark: datetime | None = None
    entry_ids: frozenset[str] = frozenset()
    # Holds of the shared partition cover one author's copies: the same, per author.
    by_author: Mapping[str, tuple[datetime | None, frozenset[str]]] = field(default_factory=dict)

    @staticmethod
    def of(profile_id: str, holds: tuple[Hold, ...] | list[Hold]) -> HeldFacts:
        """The facts ``holds`` cover in profile ``profile_id``."""
        marks: dict[str | None, tuple[datetime | None, set[str]]] = {}
        for hold in holds:
            if hold.profile_ids is not None and profile_id not in hold.profile_ids:
                continue
            watermark, ids = marks.get(hold.author_upn, (None, set()))
            if hold.watermark is not None and (watermark is None or hold.watermark > watermark):
                watermark = hold.watermark
            ids.update(hold.entry_ids)
            marks[hold.author_upn] = (watermark, ids)
        watermark, ids = marks.pop(None, (None, set()))
        by_author = {author: (mark, frozenset(named)) for author, (mark, named) in marks.items() if author is not None}
        return HeldFacts(watermark, frozenset(ids), by_author)

    def covers_facts(self, author_upn: str, created_on: datetime, entry_id: str) -> bool:
        if (self.watermark is not None and created_on <= self.watermark) or entry_id in self.entry_ids:
            return True
        if not self.by_author:
            return False
        watermark, ids = self.by_author.get(author_upn, (None, frozenset()))
        return (watermark is not None and created_on <= watermark) or entry_id in ids


@dataclass(frozen=True, slots=True)
class ScopeState:
    """What the store holds for one profile: the record (if any), its entries, and holds on them."""

    key: ProfileKey
    profile: MemoryProfile | None
    entries: list[MemoryEntry] = field(default_factory=list)
    holds: tuple[Hold, ...] = ()

    def visible_entries(self) -> list[MemoryEntry]:
        """Entries that belong to the document now, oldest first (held entries excluded)."""
        watermark = self.profile.cleared_on if self.profile else None
        held = HeldFacts.of(self.key.profile_id, self.holds)
        visible = [
            e
            for e in self.entries
            if (watermark is None or e.created_on > watermark)
            and not held.covers_facts(e.author_upn, e.created_on, e.id)
        ]
        visible.sort(key=lambda e: e.sort_key)
        # A replace starts the document anew: nothing before the newest one shows.
        for index in range(len(visible) - 1, -1, -1):
            if visible[index].kind is EntryKind.REPLACE:
                return visible[index:]
        return visible


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def random_hex(nbytes: int = 16) -> str:
    """``nbytes`` of the operating system's randomness (``os.urandom``) as lowercase hex: a new id or etag.

    The bytes ``uuid.uuid4().hex`` draws, without the ``UUID`` built around them (3.1 against 9.5 µs, three times
    in each append: docs/performance.md, thirty-sixth session): ``nbytes * 8`` random bits, 128 by default (uuid4
    has 122), 48 for an audit record's suffix (``random_hex(6)``, as ``uuid4().hex[:12]`` gave)."""
    return os.urandom(nbytes).hex()
