"""An operator's agent settings govern the agent's use of memory, never the person's custody of it, on every store.

With an agent switched off (``enabled: false``), or limited to groups the caller is not in, the person still
lists, exports, forgets and clears what that agent's memory holds; and nothing that feeds a model's context
or writes (get, the budgeted get, search, append, import, the memory tool) answers for the agent.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memory_core.domain.agent_settings import AgentSettings
from memory_core.domain.deletion import DeletionStatus
from memory_core.domain.errors import Forbidden
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.memory_file_service import MemoryFiles
from memory_core.domain.models import Scope
from memory_core.domain.service import DeletionMode, ImportMode, MemoryService, PendingDeletion, WriteOptions
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import Forgotten

INSTANCE = "switched-off"


def _setup(store: MemoryStore, *, mode: DeletionMode = DeletionMode.OPERATOR_APPROVAL, **settings: Any
           ) -> tuple[MemoryService, Caller, AgentContext, str]:
    """A service whose agent holds one entry about the caller, written before the operator's ``settings``."""
    service = MemoryService(store, deletion_mode=mode)
    caller = Caller(upn=f"off-{uuid.uuid4().hex[:8]}@contoso.com", group_ids=("g-other",))
    agent = AgentContext(f"/agents/helper-{uuid.uuid4().hex[:8]}", "Helper")
    written = service.append(caller, INSTANCE, Scope.AGENT, agent, "- my dentist is Dr Who")
    service.append(caller, INSTANCE, Scope.USER, None, "- likes tea")
    service.agent_settings.put(INSTANCE, AgentSettings(agent.object_id, **settings),
                               actor="operator")
    assert written.entry_id is not None
    return service, caller, agent, written.entry_id


SWITCHED_OFF = [pytest.param({"enabled": False}, "agent_memory_disabled", id="disabled"),
                pytest.param({"allowed_group_ids": ("g-travel",)}, "agent_group_forbidden", id="outside-groups")]


@pytest.mark.parametrize(("settings", "code"), SWITCHED_OFF)
def test_the_person_still_lists_and_exports_what_a_switched_off_agents_memory_holds(
    store: MemoryStore, settings: dict[str, Any], code: str
) -> None:
    service, caller, agent, _ = _setup(store, **settings)
    page = service.entries_page(caller, INSTANCE, Scope.AGENT, agent, limit=10)
    listed = service.entries(caller, INSTANCE, Scope.COMBINED, agent)
    exported = service.export(caller, INSTANCE, Scope.AGENT, agent)
    assert [e.content_markdown for e in page.items] == ["- my dentist is Dr Who"]
    assert [e.content_markdown for e in listed] == ["- likes tea", "- my dentist is Dr Who"]
    assert "Dr Who" in exported.content_markdown and exported.filename.endswith(".md")


@pytest.mark.parametrize(("settings", "code"), SWITCHED_OFF)
@pytest.mark.parametrize("mode", [DeletionMode.OPERATOR_APPROVAL, DeletionMode.IMMEDIATE])
def test_the_person_still_forgets_and_clears_a_switched_off_agents_memory(
    store: MemoryStore, settings: dict[str, Any], code: str, mode: DeletionMode
) -> None:
    service, caller, agent, entry_id = _setup(store, mode=mode, **settings)
    forgotten = service.forget(caller, INSTANCE, entry_id)
    service.agent_settings.put(INSTANCE, AgentSettings(agent.object_id), actor="operator")
    service.append(caller, INSTANCE, Scope.AGENT, agent, "- another fact")
    service.agent_settings.put(INSTANCE, AgentSettings(agent.object_id, **settings),
                               actor="operator")
    cleared = service.clear(caller, INSTANCE, Scope.AGENT, agent, confirm=True)
    assert not service.entries_page(caller, INSTANCE, Scope.AGENT, agent, limit=10).items
    if mode is DeletionMode.OPERATOR_APPROVAL:
        assert isinstance(forgotten, PendingDeletion) and isinstance(cleared, PendingDeletion)
        waiting = service.custody.page(INSTANCE, DeletionStatus.PENDING, limit=10, upn=caller.upn).items
        assert {r.id for r in waiting} == {forgotten.request_id, cleared.request_id}
    else:
        assert isinstance(forgotten, Forgotten) and not isinstance(cleared, PendingDeletion)
    actions = [e.action.value for e in service.audit_page(INSTANCE, caller.upn, limit=20).items]
    assert "append" in actions


@pytest.mark.parametrize(("settings", "code"), SWITCHED_OFF)
def test_nothing_that_feeds_a_model_or_writes_answers_for_a_switched_off_agent(
    store: MemoryStore, settings: dict[str, Any], code: str
) -> None:
    """Hostile: the agent's own ways to memory, each tried, each refused with the operator's code, nothing
    read into a context and nothing written."""
    service, caller, agent, _ = _setup(store, **settings)
    files = MemoryFiles(service)
    attempts = {
        "get agent": lambda: service.get(caller, INSTANCE, Scope.AGENT, agent),
        "get combined": lambda: service.get(caller, INSTANCE, Scope.COMBINED, agent),
        "budgeted get": lambda: service.get_within(caller, INSTANCE, Scope.COMBINED, agent, 4000),
        "search agent": lambda: service.search(caller, INSTANCE, Scope.AGENT, agent, "dentist"),
        "search combined": lambda: service.search(caller, INSTANCE, Scope.COMBINED, agent, "dentist"),
        "search no words": lambda: service.search(caller, INSTANCE, Scope.AGENT, agent, ""),
        "append": lambda: service.append(caller, INSTANCE, Scope.AGENT, agent, "- planted"),
        "import": lambda: service.import_markdown(caller, INSTANCE, Scope.AGENT, agent, "- planted",
                                                  ImportMode.APPEND),
        "replace": lambda: service.import_markdown(caller, INSTANCE, Scope.AGENT, agent, "- planted",
                                                   ImportMode.REPLACE),
        "memory tool view": lambda: files.execute(caller, INSTANCE, agent, {"command": "view",
                                                                            "path": "/memories/agent"}),
        "memory tool create": lambda: files.execute(caller, INSTANCE, agent, {
            "command": "create", "path": "/memories/agent/x.md", "file_text": "planted"}),
    }
    if settings.get("enabled") is False:  # a disabled agent may not even carry its caller's user memory
        attempts["get user"] = lambda: service.get(caller, INSTANCE, Scope.USER, agent)
        attempts["search user"] = lambda: service.search(caller, INSTANCE, Scope.USER, agent, "tea")
        attempts["append user"] = lambda: service.append(caller, INSTANCE, Scope.USER, agent, "- planted")
        attempts["memory tool user view"] = lambda: files.execute(caller, INSTANCE, agent, {
            "command": "view", "path": "/memories"})
    codes = {}
    for name, attempt in attempts.items():
        with pytest.raises(Forbidden) as refused:
            attempt()
        codes[name] = refused.value.code
    assert set(codes.values()) == {code}, codes
    stored = service.entries(caller, INSTANCE, Scope.COMBINED, agent)
    assert [e.content_markdown for e in stored] == ["- likes tea", "- my dentist is Dr Who"]


def test_outside_the_groups_the_caller_keeps_their_user_memory_for_the_agent(store: MemoryStore) -> None:
    """The group limit is on the agent's scope: the agent still reads and writes the caller's user memory."""
    service, caller, agent, _ = _setup(store, allowed_group_ids=("g-travel",))
    service.append(caller, INSTANCE, Scope.USER, agent, "- prefers aisle seats", WriteOptions(tags=("travel",)))
    assert "aisle" in service.get(caller, INSTANCE, Scope.USER, agent).content_markdown
    assert [h.entry.content_markdown for h in service.search(caller, INSTANCE, Scope.USER, agent, "aisle")] == [
        "- prefers aisle seats"]
