"""Markdown rendering of a scope's entries, in the seed's document shape."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from memory_core.domain.models import EntryKind, MemoryEntry, Scope, Share

TITLES = {Scope.USER: "# User memory", Scope.AGENT: "# Agent memory"}


def format_time(moment: datetime) -> str:
    # isoformat is several times faster than strftime, which matters at 10k entries.
    return moment.astimezone(UTC).isoformat(sep=" ", timespec="seconds")[:19] + " UTC"


def entry_heading(entry: MemoryEntry, viewer: str | None = None) -> str | None:
    """The provenance heading written above an entry (None for the viewer's own replace).

    An entry written by someone other than ``viewer`` says so: "shared by {upn}",
    or "legacy" for an entry that has no owner.
    """
    foreign = viewer is not None and entry.author_upn != viewer
    if entry.kind in (EntryKind.REPLACE, EntryKind.HELD_REPLACE) and not foreign:
        return None
    label = "Appended" if entry.kind is EntryKind.APPEND else "Imported"
    details = [format_time(entry.created_on)]
    if entry.agent_name or entry.key.agent_object_id:
        details.append(f"agent: {entry.agent_name or entry.key.agent_object_id}")
    if entry.reason:
        details.append(f"reason: {entry.reason}")
    if entry.session_id:
        details.append(f"session: {entry.session_id}")
    heading = f"## {label} {' · '.join(details)}"
    if foreign:
        heading += " (legacy)" if entry.share is Share.LEGACY or not entry.author_upn else f" (shared by {entry.author_upn})"
    return heading


def render_entry(entry: MemoryEntry, viewer: str | None = None) -> str:
    heading = entry_heading(entry, viewer)
    body = entry.content_markdown.strip("\n")
    return body if heading is None else f"{heading}\n\n{body}"


def render_scope(scope: Scope, entries: Sequence[MemoryEntry], viewer: str | None = None) -> str:
    """The scope's document: its title, then each entry in order; "" when empty."""
    # An empty replacement (import replace of "") leaves nothing to show.
    shown = [e for e in entries if e.content_markdown.strip()]
    if not shown:
        return ""
    sections = [TITLES[scope], *(render_entry(e, viewer) for e in shown)]
    return "\n\n".join(sections) + "\n"


def render_combined(user_document: str, agent_document: str) -> str:
    """Combined memory: user memory, then agent memory; never stored."""
    parts = [doc.rstrip("\n") for doc in (user_document, agent_document) if doc]
    return "\n\n".join(parts) + "\n" if parts else ""


def strip_title(scope: Scope, markdown: str) -> str:
    """Drop the scope's own title from imported text, so export→import round-trips."""
    text = markdown.lstrip("\n")
    title = TITLES[scope]
    if text.startswith(title) and text[len(title) : len(title) + 1] in ("", "\n"):
        text = text[len(title) :]
    return text.strip("\n")
