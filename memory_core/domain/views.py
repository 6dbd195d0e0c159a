"""What the memory use cases take and answer: options, views, outcomes, and their small rules."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

from memory_core.domain.budget import BudgetReport
from memory_core.domain.deletion import PENDING_MESSAGE
from memory_core.domain.errors import SecretDetected
from memory_core.domain.hidden_text import refuse_hidden_text
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import MemoryEntry, MemoryProfile, ProfileKey, Scope, ScopeState, Share
from memory_core.domain.rendering import render_scope


class ImportMode(StrEnum):
    APPEND = "append"
    REPLACE = "replace"


class DeletionMode(StrEnum):
    OPERATOR_APPROVAL = "operator_approval"
    IMMEDIATE = "immediate"


class ContentScanner(Protocol):
    """Finds secrets in text; each finding names its detector, never the value."""

    @property
    def ruleset(self) -> str:
        """Names what decides the findings: text that passed under one ruleset needs no new scan
        while it is the same, and must be scanned again once it differs (an upgrade's detectors)."""
        ...

    def scan(self, text: str) -> Sequence[Any]: ...


def detector_names(findings: Sequence[Any]) -> list[str]:
    """The detectors behind a scan's findings, each once, sorted: what a refusal names."""
    return sorted({str(f.detector) for f in findings})


def refuse_secret(scanner: ContentScanner | None, text: str | None, where: str) -> None:
    """Raise ``SecretDetected`` naming ``where`` and the detectors, never the text, when ``text`` looks
    like it holds a secret; nothing without a scanner or a text (the scanner is then never started).

    Part of ``refuse_operator_text``, and alone the scan of stored instructions when read; a write's
    own text goes through ``NewEntries.screen``.
    """
    findings = scanner.scan(text) if scanner is not None and text else ()
    if findings:
        raise SecretDetected(detector_names(findings), where=where)


def refuse_operator_text(scanner: ContentScanner | None, text: str | None, where: str) -> None:
    """The screen of text an operator writes that models or the person will read (an agent's instructions,
    a rejection reason): ``HiddenText`` for characters no reader sees, then ``SecretDetected``
    (``refuse_secret``), each naming ``where``; no audit event, since nothing changed."""
    refuse_hidden_text(text, where)
    refuse_secret(scanner, text, where)


REPLACE_PENDING_MESSAGE = (
    "replaced content is hidden, pending operator approval of its deletion; the new content is visible now"
)


@dataclass(frozen=True, slots=True)
class PendingDeletion:
    """A clear or forget under operator approval: hidden now, erased after approval."""

    request_id: str
    message: str = PENDING_MESSAGE


@dataclass(frozen=True, slots=True)
class Forgotten:
    """An entry erased at once (MEMORY_DELETION_MODE=immediate)."""

    entry_id: str


@dataclass(frozen=True, slots=True)
class MemoryView:
    """What a read or write answers: the document (or section) and its metadata."""

    scope: Scope
    upn: str
    name: str | None
    user_name: str | None
    agent_object_id: str | None
    agent_name: str | None
    content_markdown: str
    created_on: datetime | None
    updated_on: datetime | None
    entry_id: str | None = None
    # Set when the write also filed a deletion request (import replace under operator approval).
    pending: PendingDeletion | None = None
    budget: BudgetReport | None = None  # set on a budgeted read: what was shown and left out


@dataclass(frozen=True, slots=True)
class ExportDocument:
    filename: str
    content_markdown: str


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """Provenance and labels a write may carry besides its content."""

    reason: str | None = None
    session_id: str | None = None
    operation_id: str | None = None
    agent_name: str | None = None
    tags: tuple[str, ...] = ()
    share: Share = Share.PRIVATE


@dataclass(frozen=True, slots=True)
class ScopeRead:
    """One scope as a read shows it: its profile, its newest visible entry, the rendered document."""

    key: ProfileKey
    profile: MemoryProfile | None
    last_entry: MemoryEntry | None
    document: str
    entry_agent_name: str | None = None
    """The newest visible entry's agent name (None: none has one)."""

    @staticmethod
    def of(state: ScopeState, visible: Sequence[MemoryEntry], document: str) -> ScopeRead:
        """The read of ``state`` that shows ``visible`` (oldest first) as ``document``."""
        return ScopeRead(state.key, state.profile, visible[-1] if visible else None, document,
                         newest_agent_name(visible))

    @property
    def updated_on(self) -> datetime | None:
        moments = [self.profile.updated_on] if self.profile else []
        if self.last_entry is not None:
            moments.append(self.last_entry.created_on)
        return max(moments) if moments else None

    def agent_name(self, agent: AgentContext | None) -> str | None:
        """The newest visible entry's agent name, else the profile's, else the caller's agent's."""
        if self.entry_agent_name:
            return self.entry_agent_name
        if self.profile and self.profile.agent_name:
            return self.profile.agent_name
        return agent.name if agent else None


def newest_agent_name(entries: Sequence[MemoryEntry], default: str | None = None) -> str | None:
    """The agent name of the newest of ``entries`` (oldest first) that has one, else ``default``."""
    for entry in reversed(entries):
        if entry.agent_name:
            return entry.agent_name
    return default


def read_view(caller: Caller, read: ScopeRead, agent: AgentContext | None) -> MemoryView:
    """What a read of one scope answers (as ``scope_view``, from a ``ScopeRead``)."""
    profile = read.profile
    return MemoryView(
        scope=read.key.scope,
        upn=caller.upn,
        name=(profile.name if profile else None) or caller.name,
        user_name=(profile.user_name if profile else None) or caller.user_name,
        agent_object_id=read.key.agent_object_id,
        agent_name=read.agent_name(agent) if read.key.scope is Scope.AGENT else None,
        content_markdown=read.document,
        created_on=profile.created_on if profile else None,
        updated_on=read.updated_on,
    )


def combined_view(
    caller: Caller, user: ScopeRead, agent_read: ScopeRead, agent: AgentContext | None, content: str
) -> MemoryView:
    """What a combined read answers from its two scopes' reads, ``content`` being their documents as one."""
    created = [r.profile.created_on for r in (user, agent_read) if r.profile]
    updated = [u for u in (user.updated_on, agent_read.updated_on) if u]
    return MemoryView(
        scope=Scope.COMBINED,
        upn=caller.upn,
        name=caller.name,
        user_name=caller.user_name,
        agent_object_id=agent_read.key.agent_object_id,
        agent_name=agent_read.agent_name(agent),
        content_markdown=content,
        created_on=min(created) if created else None,
        updated_on=max(updated) if updated else None,
    )


def utc_now() -> datetime:
    return datetime.now(UTC)


def export_filename(scope: Scope, agent_name: str | None) -> str:
    """foundationallm-user-memory.md, or foundationallm-agent-memory-{safe name}.md."""
    if scope is Scope.USER:
        return "foundationallm-user-memory.md"
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", agent_name or "").strip(".-_")[:100]
    return f"foundationallm-agent-memory-{safe or 'agent'}.md"


def written_view(caller: Caller, key: ProfileKey, profile: MemoryProfile, entry: MemoryEntry) -> MemoryView:
    """What an append answers: the profile's metadata and the section just added."""
    return MemoryView(
        scope=key.scope,
        upn=caller.upn,
        name=profile.name or caller.name,
        user_name=profile.user_name or caller.user_name,
        agent_object_id=key.agent_object_id,
        agent_name=entry.agent_name or profile.agent_name,
        content_markdown=render_scope(key.scope, [entry]),
        created_on=profile.created_on,
        updated_on=max(entry.created_on, profile.updated_on),
        entry_id=entry.id,
    )


def scope_view(caller: Caller, state: ScopeState, agent: AgentContext | None, content: str) -> MemoryView:
    """What a read of one scope answers."""
    profile = state.profile
    return MemoryView(
        scope=state.key.scope,
        upn=caller.upn,
        name=(profile.name if profile else None) or caller.name,
        user_name=(profile.user_name if profile else None) or caller.user_name,
        agent_object_id=state.key.agent_object_id,
        agent_name=agent_name_of(state, agent) if state.key.scope is Scope.AGENT else None,
        content_markdown=content,
        created_on=profile.created_on if profile else None,
        updated_on=updated_on_of(state),
    )


def updated_on_of(state: ScopeState) -> datetime | None:
    moments: list[datetime] = [state.profile.updated_on] if state.profile else []
    visible = state.visible_entries()
    if visible:
        moments.append(visible[-1].created_on)
    return max(moments) if moments else None


def agent_name_of(state: ScopeState, agent: AgentContext | None) -> str | None:
    for entry in reversed(state.visible_entries()):
        if entry.agent_name:
            return entry.agent_name
    if state.profile and state.profile.agent_name:
        return state.profile.agent_name
    return agent.name if agent else None
