"""Markdown rendering in the seed's shape."""

from __future__ import annotations

from datetime import UTC, datetime

from memory_core.domain.models import EntryKind, MemoryEntry, ProfileKey, Scope
from memory_core.domain.rendering import render_combined, render_scope, strip_title

KEY = ProfileKey("i", "u", Scope.USER)


def _entry(text: str, kind: EntryKind = EntryKind.APPEND) -> MemoryEntry:
    return MemoryEntry("e", KEY, text, kind, datetime(2026, 5, 6, 7, 8, 9, tzinfo=UTC), "u")


def test_empty_scope_renders_as_empty_string() -> None:
    """No entries: no title, just ""."""
    assert render_scope(Scope.USER, []) == ""


def test_scope_renders_title_then_headed_entries() -> None:
    """A user document starts with "# User memory" and each append has a dated heading."""
    document = render_scope(Scope.USER, [_entry("- a")])
    assert document == "# User memory\n\n## Appended 2026-05-06 07:08:09 UTC\n\n- a\n"


def test_import_heading_says_imported() -> None:
    """An imported entry is rendered under an "Imported" heading."""
    assert "## Imported 2026-05-06" in render_scope(Scope.USER, [_entry("- a", EntryKind.IMPORT)])


def test_replace_entry_renders_without_heading() -> None:
    """A replacement is the document body as given."""
    assert render_scope(Scope.AGENT, [_entry("- a", EntryKind.REPLACE)]) == "# Agent memory\n\n- a\n"


def test_combined_joins_user_then_agent() -> None:
    """combined = user document, blank line, agent document."""
    assert render_combined("# User memory\n\n- u\n", "# Agent memory\n\n- a\n") == (
        "# User memory\n\n- u\n\n# Agent memory\n\n- a\n"
    )


def test_strip_title_removes_only_the_scope_title() -> None:
    """The scope's own title is dropped; another heading is kept."""
    assert strip_title(Scope.USER, "# User memory\n\n- a\n") == "- a"
    assert strip_title(Scope.USER, "# User memory notes\n- a") == "# User memory notes\n- a"
