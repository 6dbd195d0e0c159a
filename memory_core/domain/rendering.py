"""Markdown rendering of a scope's entries, in the seed's document shape."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime

from memory_core.domain.models import EntryKind, MemoryEntry, Scope, Share

TITLES = {Scope.USER: "# User memory", Scope.AGENT: "# Agent memory"}


def format_time(moment: datetime) -> str:
    # isoformat is several times faster than strftime, which matters at 10k entries.
    return moment.astimezone(UTC).isoformat(sep=" ", timespec="seconds")[:19] + " UTC"


# A line that would read as a heading: up to three spaces, then "#" (CommonMark's ATX heading), after any line break
# a reader might take as one.
_HEADING_LINE = re.compile("(\\A|[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029])( {0,3})#")


def entry_heading(entry: MemoryEntry, viewer: str | None = None) -> str | None:
    """The provenance heading written above an entry (None for the viewer's own replace), on one line: a line
    break in the agent's name, the reason or the session id shows as a space.

    An entry written by someone other than ``viewer`` says so: "shared by {upn}",
    or "legacy" for an entry that has no owner.
    """
    foreign = _foreign(entry, viewer)
    if entry.kind in (EntryKind.REPLACE, EntryKind.HELD_REPLACE) and not foreign:
        return None
    label = "Appended" if entry.kind is EntryKind.APPEND else "Imported"
    details = [format_time(entry.created_on)]
    if entry.agent_name or entry.key.agent_object_id:
        details.append(f"agent: {_one_line(entry.agent_name or entry.key.agent_object_id or '')}")
    if entry.reason:
        details.append(f"reason: {_one_line(entry.reason)}")
    if entry.session_id:
        details.append(f"session: {_one_line(entry.session_id)}")
    heading = f"## {label} {' · '.join(details)}"
    if foreign:
        heading += " (legacy)" if entry.share is Share.LEGACY or not entry.author_upn else f" (shared by {entry.author_upn})"
    return heading


def render_entry(entry: MemoryEntry, viewer: str | None = None) -> str:
    """The entry's section: its heading, then its text. Another author's text has its heading lines escaped
    ("\\#"): the headings are the only authorship a reader of the document sees, and a teammate's entry holding
    "## Appended <time>" would otherwise read as the viewer's own memory, or as a third person's."""
    heading = entry_heading(entry, viewer)
    body = entry.content_markdown.strip("\n")
    if _foreign(entry, viewer) and "#" in body:
        body = _HEADING_LINE.sub(r"\1\2\\#", body)
    return body if heading is None else f"{heading}\n\n{body}"


def _foreign(entry: MemoryEntry, viewer: str | None) -> bool:
    return viewer is not None and entry.author_upn != viewer


def _one_line(text: str) -> str:
    # isprintable is False for every line break splitlines knows (and other controls): the common case costs one scan.
    return text if text.isprintable() else " ".join(text.splitlines())


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
