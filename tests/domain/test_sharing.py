"""Sharing rules in the domain: author stamping, policy-independent writes, no fan-out."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.errors import Forbidden
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import ProfileKey, Scope, Share
from memory_core.domain.service import DeletionMode, MemoryService, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.views import ImportMode


class CountingStore:
    """Wraps a real store and counts the partitions each load touches."""

    def __init__(self, inner: SqliteMemoryStore) -> None:
        self.inner = inner
        self.loads: list[set[tuple[str, str]]] = []

    def load(self, keys: Sequence[ProfileKey]) -> Any:
        self.loads.append({(k.instance_id, k.upn) for k in keys})
        return self.inner.load(keys)

    def load_since(self, keys: Sequence[ProfileKey], after: int | None) -> Any:
        """The snapshot path's load (domain.snapshots): the same one query per partition."""
        self.loads.append({(k.instance_id, k.upn) for k in keys})
        return self.inner.load_since(keys, after)

    def load_unhidden(self, keys: Sequence[ProfileKey]) -> Any:
        """The private snapshot's full load on SQLite (domain.visible_loads): one read of the partition."""
        self.loads.append({(k.instance_id, k.upn) for k in keys})
        return self.inner.load_unhidden(keys)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _service(store: Any, policy: SharingPolicy = SharingPolicy.PRIVATE, allow: bool = False) -> MemoryService:
    return MemoryService(store, default_sharing=policy, allow_sharing_override=allow)


@pytest.mark.parametrize("policy", list(SharingPolicy))
def test_no_policy_changes_what_a_write_stores(tmp_path: Path, policy: SharingPolicy) -> None:
    """The same write under private, team and legacy stores the same fields, stamped with the server's author."""
    store = SqliteMemoryStore(tmp_path / f"{policy}.sqlite3")
    caller = Caller(upn="alex@contoso.com", user_id="u-1")
    service = _service(store, policy)
    view = service.append(caller, "i", Scope.USER, None, "- fact", WriteOptions(share=Share.TEAM, session_id="s"))
    entry = store.get_entry("i", "alex@contoso.com", view.entry_id or "")
    assert entry is not None
    assert (entry.author_upn, entry.author_user_id, entry.share, entry.content_markdown, entry.session_id) == (
        "alex@contoso.com", "u-1", Share.TEAM, "- fact", "s")
    store.close()


def test_the_author_is_always_the_caller(store: SqliteMemoryStore) -> None:
    """Whatever WriteOptions carry, the stored author is the authenticated caller."""
    view = _service(store).append(Caller(upn="alex@contoso.com"), "i", Scope.USER, None, "- x",
                                  WriteOptions(reason="from blake@contoso.com", agent_name="blake@contoso.com"))
    entry = store.get_entry("i", "alex@contoso.com", view.entry_id or "")
    assert entry is not None and entry.author_upn == "alex@contoso.com"


@pytest.mark.parametrize("users", [1, 25])
def test_team_read_touches_two_partitions_whatever_the_number_of_users(store: SqliteMemoryStore, users: int) -> None:
    """A team read loads the caller's partition and the shared one: two loads, never one per user."""
    writer = _service(store)
    for n in range(users):
        writer.append(Caller(upn=f"user{n}@contoso.com"), "i", Scope.USER, None, f"- fact {n}",
                      WriteOptions(share=Share.TEAM))
    counting = CountingStore(store)
    reader = _service(counting, SharingPolicy.TEAM)
    view = reader.get(Caller(upn="reader@contoso.com"), "i", Scope.COMBINED, AgentContext("/agents/a"))
    assert len(counting.loads) == 2
    assert {p for load in counting.loads for p in load} == {("i", "reader@contoso.com"), ("i", "~shared")}
    assert view.content_markdown.count("(shared by ") == users


def test_private_read_touches_only_the_callers_partition(store: SqliteMemoryStore) -> None:
    """Under private, a read is one load on the caller's partition."""
    counting = CountingStore(store)
    _service(counting).get(Caller(upn="reader@contoso.com"), "i", Scope.USER, None)
    assert counting.loads == [{("i", "reader@contoso.com")}]


def test_override_needs_permission(store: SqliteMemoryStore) -> None:
    """A per-call policy is Forbidden unless overrides are allowed."""
    with pytest.raises(Forbidden):
        _service(store).get(Caller(upn="a@x"), "i", Scope.USER, None, SharingPolicy.TEAM)
    _service(store, allow=True).get(Caller(upn="a@x"), "i", Scope.USER, None, SharingPolicy.TEAM)


def test_agent_scope_team_sharing_stays_with_the_agent(store: SqliteMemoryStore) -> None:
    """A team-shared agent entry shows to peers using that agent only."""
    _service(store).append(Caller(upn="alex@x"), "i", Scope.AGENT, AgentContext("/agents/a"), "- for a",
                           WriteOptions(share=Share.TEAM))
    reader = _service(store, SharingPolicy.TEAM)
    peer = Caller(upn="peer@x")
    assert "- for a" in reader.get(peer, "i", Scope.AGENT, AgentContext("/agents/a")).content_markdown
    assert "- for a" not in reader.get(peer, "i", Scope.AGENT, AgentContext("/agents/b")).content_markdown


@pytest.mark.parametrize("stamped", [True, False], ids=["kept", "from-scratch"])
def test_a_sharing_read_is_as_new_as_the_newest_entry_it_shows(store: SqliteMemoryStore, stamped: bool) -> None:
    """updatedOn and the agent name of a team read count the shared entries it shows, full or budgeted,
    whether it is answered from what was kept or read from scratch."""
    from tests.support.unstamped import Unstamped

    service = _service(store if stamped else Unstamped(store), SharingPolicy.TEAM)
    alex, bea = Caller(upn="alex@contoso.com"), Caller(upn="bea@contoso.com")
    agent = AgentContext("/agents/benefits", "Benefits")
    mine = service.append(bea, "i", Scope.AGENT, agent, "- bea's", WriteOptions(agent_name="Bea's helper"))
    service.get(bea, "i", Scope.AGENT, agent)
    tip = service.append(alex, "i", Scope.AGENT, agent, "- tip", WriteOptions(share=Share.TEAM, agent_name="Tipster"))
    assert tip.updated_on is not None and mine.updated_on is not None and tip.updated_on > mine.updated_on
    for scope in (Scope.AGENT, Scope.COMBINED):
        for view in (service.get(bea, "i", scope, agent), service.get_within(bea, "i", scope, agent, 16_000)):
            assert "- tip" in view.content_markdown
            assert (view.updated_on, view.agent_name) == (tip.updated_on, "Tipster"), (scope, view)


@pytest.mark.parametrize("mode", list(DeletionMode))
def test_a_team_shared_replace_hides_only_its_authors_earlier_copies(store: SqliteMemoryStore,
                                                                      mode: DeletionMode) -> None:
    """Carol replaces her own memory, sharing the new content with the team: teammates still read what Dana
    shared before, in every read, and no longer read what Carol shared before her replace."""
    writer = MemoryService(store, deletion_mode=mode)
    dana, carol, bob = Caller(upn="dana@contoso.com"), Caller(upn="carol@contoso.com"), Caller(upn="bob@contoso.com")
    writer.append(dana, "i", Scope.USER, None, "- standup at nine", WriteOptions(share=Share.TEAM))
    writer.append(carol, "i", Scope.USER, None, "- old plan", WriteOptions(share=Share.TEAM))
    writer.import_markdown(carol, "i", Scope.USER, None, "- new plan", ImportMode.REPLACE,
                           WriteOptions(share=Share.TEAM))
    reader = MemoryService(store, deletion_mode=mode, default_sharing=SharingPolicy.TEAM)
    document = reader.get(bob, "i", Scope.USER, None).content_markdown
    within = reader.get_within(bob, "i", Scope.USER, None, 10_000).content_markdown
    listed = [e.content_markdown for e in reader.entries_page(bob, "i", Scope.USER, None, limit=100).items]
    found = [hit.entry.content_markdown for hit in reader.search(bob, "i", Scope.USER, None, "standup")]
    assert "standup at nine" in document and "standup at nine" in within and "- standup at nine" in listed
    assert found == ["- standup at nine"]
    assert "new plan" in document and "new plan" in within and "old plan" not in document + within
    assert "- old plan" not in listed
