"""Domain rules of MemoryService, on the real SQLite store and a fixed clock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.errors import InvalidInput, PayloadTooLarge
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import MemoryProfile, ProfileKey, Scope
from memory_core.domain.service import DeletionMode, ImportMode, MemoryService, WriteOptions
from memory_core.domain.views import export_filename
from tests.support.clock import TickingClock

ALEX = Caller(upn="alex@contoso.com", name="Alex", user_name="alex")
AGENT = AgentContext("/agents/benefits", "Benefits Assistant")


NOON = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[MemoryService]:
    store = SqliteMemoryStore(tmp_path / "m.sqlite3")
    yield MemoryService(store, max_write_bytes=100, clock=TickingClock(NOON), deletion_mode=DeletionMode.IMMEDIATE)
    store.close()


def test_write_limit_counts_utf8_bytes(service: MemoryService) -> None:
    """The write limit is in UTF-8 bytes: 34 three-byte characters exceed 100 bytes."""
    with pytest.raises(PayloadTooLarge):
        service.append(ALEX, "i", Scope.USER, None, "€" * 34)
    service.append(ALEX, "i", Scope.USER, None, "€" * 33)


def test_user_memory_has_no_total_limit(service: MemoryService) -> None:
    """Many writes each under the limit add up past it without refusal."""
    for i in range(20):
        service.append(ALEX, "i", Scope.USER, None, f"- fact number {i:03d} " + "x" * 60)
    assert len(service.get(ALEX, "i", Scope.USER, None).content_markdown.encode()) > 20 * 60


def test_append_answers_only_the_section_added(service: MemoryService) -> None:
    """append's content_markdown is the new section, so its cost does not grow with the memory."""
    service.append(ALEX, "i", Scope.USER, None, "- first")
    view = service.append(ALEX, "i", Scope.USER, None, "- second")
    assert "- second" in view.content_markdown and "- first" not in view.content_markdown
    assert view.entry_id


def test_combined_never_mixes_in_other_agents(service: MemoryService) -> None:
    """combined for agent A holds user memory and A's memory, not B's."""
    service.append(ALEX, "i", Scope.USER, None, "- user")
    service.append(ALEX, "i", Scope.AGENT, AGENT, "- agent a")
    service.append(ALEX, "i", Scope.AGENT, AgentContext("/agents/b"), "- agent b")
    combined = service.get(ALEX, "i", Scope.COMBINED, AGENT).content_markdown
    assert "- user" in combined and "- agent a" in combined and "- agent b" not in combined


def test_combined_with_only_agent_memory_has_no_empty_user_section(service: MemoryService) -> None:
    """An empty scope contributes nothing to combined, not an empty title."""
    service.append(ALEX, "i", Scope.AGENT, AGENT, "- agent")
    combined = service.get(ALEX, "i", Scope.COMBINED, AGENT).content_markdown
    assert "# User memory" not in combined and combined.startswith("# Agent memory")


def test_import_replace_of_empty_text_empties_the_scope(service: MemoryService) -> None:
    """Replacing with empty markdown leaves the scope empty."""
    service.append(ALEX, "i", Scope.USER, None, "- old")
    view = service.import_markdown(ALEX, "i", Scope.USER, None, "", ImportMode.REPLACE)
    assert view.content_markdown == ""


def test_import_replace_strips_the_scope_title(service: MemoryService) -> None:
    """Importing an exported document does not double its "# User memory" title."""
    view = service.import_markdown(ALEX, "i", Scope.USER, None, "# User memory\n\n- a\n", ImportMode.REPLACE)
    assert view.content_markdown == "# User memory\n\n- a\n"


def test_append_after_replace_follows_the_replacement(service: MemoryService) -> None:
    """An append after a replace shows after the replaced content."""
    service.append(ALEX, "i", Scope.USER, None, "- gone")
    service.import_markdown(ALEX, "i", Scope.USER, None, "- base", ImportMode.REPLACE)
    service.append(ALEX, "i", Scope.USER, None, "- added")
    document = service.get(ALEX, "i", Scope.USER, None).content_markdown
    assert "- gone" not in document and document.index("- base") < document.index("- added")


def test_clear_of_never_written_scope_creates_an_empty_profile(service: MemoryService) -> None:
    """Clearing an empty scope succeeds and records a profile with created_on."""
    view = service.clear(ALEX, "i", Scope.USER, None, confirm=True)
    assert view.content_markdown == "" and view.created_on is not None


def test_clear_requires_confirm(service: MemoryService) -> None:
    """clear refuses without confirm=True and leaves memory alone."""
    service.append(ALEX, "i", Scope.USER, None, "- keep")
    with pytest.raises(InvalidInput):
        service.clear(ALEX, "i", Scope.USER, None, confirm=False)
    assert "- keep" in service.get(ALEX, "i", Scope.USER, None).content_markdown


def test_write_options_reach_the_heading(service: MemoryService) -> None:
    """reason and session from WriteOptions appear in the rendered heading."""
    service.append(ALEX, "i", Scope.USER, None, "- x", WriteOptions(reason="why", session_id="sess"))
    document = service.get(ALEX, "i", Scope.USER, None).content_markdown
    assert "reason: why" in document and "session: sess" in document


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Benefits Assistant", "foundationallm-agent-memory-Benefits-Assistant.md"),
        ("../../etc/passwd", "foundationallm-agent-memory-etc-passwd.md"),
        ("", "foundationallm-agent-memory-agent.md"),
        (None, "foundationallm-agent-memory-agent.md"),
    ],
)
def test_agent_export_filename_is_safe(name: str | None, expected: str) -> None:
    """Agent names become file-name-safe: no path separators, quotes or spaces."""
    assert export_filename(Scope.AGENT, name) == expected


@pytest.mark.parametrize("write", ["clear", "import-replace"])
def test_an_immediate_erasure_takes_an_entry_stamped_before_it_but_stored_after_its_first_read(
        tmp_path: Path, write: str) -> None:
    """Another writer stamps its entry before the clear (or replace) and stores it while the erasure moves the
    watermark: the watermark hides it, and the erasure must take it too, not leave it stored and hidden for good."""
    store = SqliteMemoryStore(tmp_path / "race.sqlite3")
    writer = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE, clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    eraser = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE, clock=TickingClock(NOON))
    eraser.append(ALEX, "i", Scope.USER, None, "- an earlier fact")
    save_profile = store.save_profile

    def the_late_write_then_save(profile: MemoryProfile) -> MemoryProfile:
        store.save_profile = save_profile  # type: ignore[method-assign]
        writer.append(ALEX, "i", Scope.USER, None, "- stamped before the erasure, stored during it")
        return save_profile(profile)

    store.save_profile = the_late_write_then_save  # type: ignore[method-assign]
    if write == "clear":
        eraser.clear(ALEX, "i", Scope.USER, None, confirm=True)
    else:
        eraser.import_markdown(ALEX, "i", Scope.USER, None, "- a fresh start", ImportMode.REPLACE)
    assert store.save_profile == save_profile  # the late write happened
    (state,) = store.load([ProfileKey("i", ALEX.upn, Scope.USER)])
    assert [e.content_markdown for e in state.entries if "stored during it" in e.content_markdown] == []
    store.close()
