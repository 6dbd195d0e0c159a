"""A team-shared entry's copy stored late, after a memory-tool edit dropped the entry's version with its copy.

A team-shared write stores the entry in its author's memory, then its copy in the scope's shared partition
(``domain.team_copies``), in two writes with no fence. An edit of the entry's file through the memory tool that keeps
its whole text (an insert) stores a private new version and drops the old one with its team copy
(``EntryRemovals.drop_version``), in any deletion mode. The drop erased the copy by id without the copy's mark, so a
copy its writer stored after the drop outlived the version: a teammate kept reading a fact its author had since made
private. Now the drop stores the mark first (``team_copies.forbid``, as a forget does), and the late copy is refused.
The copy's commit is put after the drop by wrapping the writer's store, so the interleaving is the same every run.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.domain.memory_file_service import FileAnswer, MemoryFiles
from memory_core.domain.models import SHARED_OWNER, MemoryEntry, Scope, shared_copy_id
from memory_core.domain.service import DeletionMode
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock
from tests.support.team_copy_races import TEAM, StoreCopy, authors_copies, caller, hold_copy, team_service

T0 = datetime(2026, 12, 7, 7, 0, tzinfo=UTC)


@pytest.mark.parametrize("mode", [DeletionMode.OPERATOR_APPROVAL, DeletionMode.IMMEDIATE], ids=["approval", "immediate"])
@pytest.mark.parametrize("same_process", [True, False], ids=["same-process", "other-process"])
def test_a_team_copy_stored_after_an_edit_dropped_its_version_is_not_kept(
    stores: Callable[[], MemoryStore], monkeypatch: pytest.MonkeyPatch, same_process: bool, mode: DeletionMode
) -> None:
    """The copy of the dropped version is refused: the teammate no longer reads it, the shared partition holds none
    of it, and the author reads the fact in the file's new version; the author's other team entry still shows."""
    clock = TickingClock(T0, timedelta(microseconds=1))
    appending = stores()
    editing = appending if same_process else stores()
    writer, editor = team_service(appending, clock, mode), team_service(editing, clock, mode)
    author, teammate, instance = caller("author"), caller("mate"), f"race-{uuid.uuid4().hex[:8]}"
    writer.append(author, instance, Scope.USER, None, "- kept", TEAM)  # the writer knows the stamps
    answers: list[FileAnswer] = []

    def race(copy: MemoryEntry, store_copy: StoreCopy) -> None:
        answers.append(MemoryFiles(editor).execute(author, instance, None, {
            "command": "insert", "path": f"/memories/appended/{copy.id.removesuffix('-shared')}.md",
            "insert_line": 0, "insert_text": "- it ships in March"}))
        store_copy()

    hold_copy(monkeypatch, appending, race)
    view = writer.append(author, instance, Scope.USER, None, "- the launch is code-named BLUEFIN", TEAM)

    (answer,) = answers
    assert answer.pending_request_ids == ()  # kept whole: dropped, not forgotten, in either mode
    assert editing.get_entry(instance, author.upn, view.entry_id or "") is None  # the edit dropped the version
    assert editing.get_entry(instance, SHARED_OWNER, shared_copy_id(view.entry_id or "")) is None
    assert authors_copies(editing, instance, author) == ["- kept"]
    seen = editor.get(teammate, instance, Scope.USER, None).content_markdown
    assert "BLUEFIN" not in seen and "- kept" in seen
    assert "BLUEFIN" in editor.get(author, instance, Scope.USER, None).content_markdown
