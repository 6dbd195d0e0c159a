"""A seeded random walk of the writes that change what a memory shows, for contract tests that check
an invariant after every step (reads, pages, snapshots and checkpoints against a truth read from scratch).

The walk takes each step through whichever ``MemoryService`` the test hands it (one process, or
several over the same data), keeps the ids it appended and the deletions left pending, and decides
those as an operator would. It asserts nothing: what holds after each step is the test's. Seeded, so
a failing step replays; a test that draws from ``rng`` between steps is part of the same replay.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from memory_core.domain.errors import MemoryCoreError, NotFound
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import Scope
from memory_core.domain.service import MemoryService
from memory_core.domain.views import ImportMode, MemoryView, PendingDeletion, WriteOptions

T = TypeVar("T")

OPERATOR = "operator@contoso.com"

WRITES = ("append", "import", "replace", "forget", "clear", "decide")
"""The steps ``take`` knows: an append, an import that appends, an import that replaces, a forget, a clear
(confirmed), and an operator's decision on a pending deletion (approved, then the sweep; or rejected)."""

_WORDS = ("aisle", "window", "May", "June", "tea", "coffee")
_PATHS = ("/memories/a.md", "/memories/b.md", "/memories/d/c.md", "/memories/agent/t.md", "/memories/agent/u.md")
_COMMANDS = ("create", "str_replace", "insert", "delete", "rename", "view")


class RandomWalk:
    """The writes of one seeded walk over the memory of ``instance`` (the ids it wrote, what awaits an operator)."""

    def __init__(self, seed: int, instance: str) -> None:
        self.rng = random.Random(seed)
        self.instance = instance
        self.pending: list[str] = []
        """Deletion requests the walk opened and no decision has closed yet."""
        self._written: dict[str, list[str]] = {}

    def choice(self, options: Sequence[T]) -> T:
        return self.rng.choice(options)

    def written_by(self, caller: Caller) -> list[str]:
        """The ids of the entries ``caller`` wrote in the walk, visible or not (a test may add its own)."""
        return self._written.setdefault(caller.upn, [])

    # -- one step ------------------------------------------------------------------------------------

    def take(
        self, action: str, service: MemoryService, caller: Caller, scope: Scope, agent: AgentContext | None, step: int
    ) -> None:
        """One of the ``WRITES`` by ``caller`` in ``scope``, through ``service``; step ``step``'s text."""
        if action == "append":
            self.append(service, caller, scope, agent, f"- fact {step}")
        elif action in ("import", "replace"):
            mode = ImportMode.REPLACE if action == "replace" else ImportMode.APPEND
            self.import_markdown(service, caller, scope, agent, f"- imported {step}", mode)
        elif action == "forget":
            self.forget(service, caller)
        elif action == "clear":
            self.clear(service, caller, scope, agent)
        elif action == "decide":
            self.decide(service)
        else:
            raise ValueError(f"not a step the walk knows: {action!r}")

    def append(
        self,
        service: MemoryService,
        caller: Caller,
        scope: Scope,
        agent: AgentContext | None,
        text: str,
        options: WriteOptions | None = None,
    ) -> str:
        """Appends ``text``; answers the entry's id (kept in ``written_by(caller)``)."""
        entry_id = service.append(caller, self.instance, scope, agent, text, options or WriteOptions()).entry_id or ""
        self.written_by(caller).append(entry_id)
        return entry_id

    def import_markdown(
        self, service: MemoryService, caller: Caller, scope: Scope, agent: AgentContext | None, text: str,
        mode: ImportMode,
    ) -> MemoryView:
        """Imports ``text``; a replace held for an operator is kept pending."""
        view = service.import_markdown(caller, self.instance, scope, agent, text, mode)
        if view.pending is not None:
            self.pending.append(view.pending.request_id)
        return view

    def forget(self, service: MemoryService, caller: Caller, candidates: Sequence[str] | None = None) -> None:
        """Forgets one of ``candidates`` (by default an entry ``caller`` wrote in the walk): one already
        erased, hidden or forgotten is refused (``NotFound``), and that is part of the walk."""
        ids = self.written_by(caller) if candidates is None else candidates
        if not ids:
            return
        try:
            outcome = service.forget(caller, self.instance, self.rng.choice(ids))
        except NotFound:
            return
        if isinstance(outcome, PendingDeletion):
            self.pending.append(outcome.request_id)

    def clear(self, service: MemoryService, caller: Caller, scope: Scope, agent: AgentContext | None) -> None:
        outcome = service.clear(caller, self.instance, scope, agent, confirm=True)
        if isinstance(outcome, PendingDeletion):
            self.pending.append(outcome.request_id)

    def decide(self, service: MemoryService) -> None:
        """An operator decides one pending deletion, at even odds: approved (then the sweep) or rejected."""
        if not self.pending:
            return
        request_id = self.pending.pop(self.rng.randrange(len(self.pending)))
        if self.rng.random() < 0.5:
            service.custody.approve(OPERATOR, self.instance, request_id)
            service.custody.sweep()
        else:
            service.custody.reject(OPERATOR, self.instance, request_id, "not verified")

    def memory_tool(self, service: MemoryService, caller: Caller, agent: AgentContext) -> None:
        """A memory tool command on a few paths of user and agent memory; deletions it opens are kept pending."""
        path, name = self.rng.choice(_PATHS), self.rng.choice(_COMMANDS)
        commands: dict[str, dict[str, object]] = {
            "create": {"path": path, "file_text": " ".join(self.rng.sample(_WORDS, 3)) + "\n"},
            "str_replace": {"path": path, "old_str": self.rng.choice(_WORDS), "new_str": self.rng.choice(_WORDS)},
            "insert": {"path": path, "insert_line": 0, "insert_text": self.rng.choice(_WORDS)},
            "delete": {"path": path},
            "rename": {"old_path": path, "new_path": self.rng.choice(_PATHS)},
            "view": {"path": self.rng.choice(["/memories", path])},
        }
        answer = MemoryFiles(service).execute(caller, self.instance, agent, {"command": name, **commands[name]})
        self.pending.extend(answer.pending_request_ids)

    def any_step(self, service: MemoryService, caller: Caller, agent: AgentContext, step: int) -> None:
        """One step another user of the memory might take, in user or agent scope: a memory tool command,
        an append, an import (append or replace), a forget of an entry shown, a clear, or an operator's
        decision. Refusals (a missing file, a taken name, an entry gone) are part of the walk."""
        roll = self.rng.random()
        scope = self.rng.choice([Scope.USER, Scope.AGENT])
        scope_agent = agent if scope is Scope.AGENT else None
        try:
            if roll < 0.35:
                self.memory_tool(service, caller, agent)
            elif roll < 0.6:
                self.append(service, caller, scope, scope_agent, f"- fact {step} {self.rng.choice(_WORDS)}")
            elif roll < 0.68:
                self.take(self.rng.choice(["import", "replace"]), service, caller, scope, scope_agent, step)
            elif roll < 0.8:
                shown = service.entries_page(caller, self.instance, scope, agent, limit=200).items
                self.forget(service, caller, [e.id for e in shown])
            elif roll < 0.85:
                self.clear(service, caller, scope, agent)
            else:
                self.decide(service)
        except MemoryCoreError:
            pass
