"""Another process's writes of every kind a read must show, one at a time, for the tests of what a process keeps
between its reads (tests/contract/test_labelled_budgeted_reads.py, tests/contract/test_search_reuse.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope, Share
from memory_core.domain.service import ImportMode, MemoryService, WriteOptions
from memory_core.domain.views import PendingDeletion

WriteStep = tuple[str, Callable[[], object]]
PLAIN = WriteOptions()


def writes_between_reads(writer: MemoryService, instance: str, caller: Caller, teammate: Caller, forgotten: str, *,
                         operator: str, options: WriteOptions = PLAIN,
                         own_share: bool = False) -> list[WriteStep]:
    """Named writes by ``writer`` (another process) to ``caller``'s user memory in ``instance``, run in this order:
    an append; a forget of the entry ``forgotten`` (under approval: a hold); with ``own_share``, an append of
    ``caller``'s shared with the team; ``teammate``'s team-shared append; a clear (under approval: pending and
    hidden); the rejection of that pending clear by ``operator`` (nothing under immediate deletion); an import
    replace; an append again. Appends carry ``options``, the team-shared ones with ``share`` set to ``TEAM``."""
    pending: list[PendingDeletion] = []
    shared = replace(options, share=Share.TEAM)

    def clear() -> None:
        outcome = writer.clear(caller, instance, Scope.USER, None, confirm=True)
        if isinstance(outcome, PendingDeletion):
            pending.append(outcome)

    def reject() -> None:
        if pending:
            writer.custody.reject(operator, instance, pending.pop().request_id, "kept")

    return [
        ("append", lambda: writer.append(caller, instance, Scope.USER, None, "- a train at noon", options)),
        ("forget", lambda: writer.forget(caller, instance, forgotten)),
        *([("own share", lambda: writer.append(caller, instance, Scope.USER, None, "- my trains, shared", shared))]
          if own_share else []),
        ("share", lambda: writer.append(teammate, instance, Scope.USER, None, "- shared trains at nine", shared)),
        ("clear", clear),
        ("reject", reject),
        ("replace", lambda: writer.import_markdown(caller, instance, Scope.USER, None, "- only trains now",
                                                   mode=ImportMode.REPLACE)),
        ("append again", lambda: writer.append(caller, instance, Scope.USER, None, "- a train at ten", options)),
    ]
