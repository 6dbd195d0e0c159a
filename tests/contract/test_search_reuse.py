"""Searches ranked in process reuse the process's current read of the memory, on every store, and never show
memory a write has changed since.

A store without a full-text index (Cosmos DB; on SQLite, a search by tags alone) ranks the visible entries in
process. They come from the listing entries pages are cut from (``domain.listings``), kept while the
partitions' stamps are those it was read at, grown by appends, and built again after any other write. The
reading process searches through one ``MemoryService``; others write through their own services over other
store objects on the same data (other processes). Every search is checked against a process that keeps
nothing (``_Unkept``: no stamps, so it reads every entry on every search).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from memory_core.domain.identity import Caller
from memory_core.domain.models import Scope, Share
from memory_core.domain.service import DeletionMode, MemoryService, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import PendingDeletion
from tests.contract.test_budget_cost import CountingStore
from tests.contract.test_memory_file_entries import AGENT, INSTANCE, _caller
from tests.contract.test_reads_after_erasures import OPERATOR, _Unkept
from tests.support.random_walk import RandomWalk
from tests.support.writes_between_reads import writes_between_reads

QUERIES = [("trains", ()), ("fact", ()), ("", ("travel",)), ("trains", ("travel",))]
TAGGED = WriteOptions(tags=("travel",))
POLICIES = [SharingPolicy.PRIVATE, SharingPolicy.TEAM]


def _searches(service: MemoryService, caller: Caller) -> dict[str, object]:
    """Every search the tests check: user, agent and combined scope, a few queries and tags, private and team."""
    found: dict[str, object] = {}
    for scope, agent in ((Scope.USER, None), (Scope.AGENT, AGENT), (Scope.COMBINED, AGENT)):
        for query, tags in QUERIES:
            for policy in POLICIES:
                hits = service.search(caller, INSTANCE, scope, agent, query, tags, limit=50, sharing=policy)
                found[f"{scope} {query!r} {tags} {policy}"] = [(h.entry.id, round(h.score, 9)) for h in hits]
    return found


def _service(store: MemoryStore, **options: Any) -> MemoryService:
    return MemoryService(store, allow_sharing_override=True, **options)


def _truth(stores: Callable[[], MemoryStore], caller: Caller) -> dict[str, object]:
    return _searches(_service(_Unkept(stores())), caller)  # type: ignore[arg-type]


def test_a_search_of_an_unchanged_memory_reads_no_entry_again_and_one_after_appends_reads_only_those_appended(
    stores: Callable[[], MemoryStore]
) -> None:
    """Entries the store hands back, counted (a search by tags alone: ranked in process on every store)."""
    counting, writer, caller = CountingStore(stores()), _service(stores()), _caller()
    reader = _service(counting)  # type: ignore[arg-type]
    for n in range(5):
        writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n} about trains", TAGGED)
    first = reader.search(caller, INSTANCE, Scope.USER, None, "", ("travel",))
    assert counting.cost.rows == 5 and len(first) == 5

    assert reader.search(caller, INSTANCE, Scope.USER, None, "", ("travel",)) == first
    assert counting.cost.rows == 5  # answered from the kept read: no entry read again

    later = writer.append(caller, INSTANCE, Scope.USER, None, "- fact 5, appended by another process", TAGGED)
    hits = reader.search(caller, INSTANCE, Scope.USER, None, "", ("travel",))
    assert hits[0].entry.id == later.entry_id and len(hits) == 6
    assert counting.cost.rows == 6  # grown by the one entry appended
    assert _searches(reader, caller) == _truth(stores, caller)


@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
def test_a_search_never_shows_an_entry_another_process_forgot_cleared_or_held(
    stores: Callable[[], MemoryStore], mode: DeletionMode
) -> None:
    """A forget (under approval: a hold until an operator decides), a clear, and a rejected clear that shows
    the memory again: after each, the process that kept its read searches what a full read shows."""
    reader, writer, caller = _service(stores()), _service(stores(), deletion_mode=mode), _caller()
    ids = [str(writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n} about trains", TAGGED).entry_id)
           for n in range(4)]
    kept = str(writer.append(caller, INSTANCE, Scope.AGENT, AGENT, "- the agent's fact about trains", TAGGED).entry_id)
    assert _searches(reader, caller) == _truth(stores, caller)

    writer.forget(caller, INSTANCE, ids[1])
    found = _searches(reader, caller)
    assert ids[1] not in str(found) and ids[2] in str(found)
    assert found == _truth(stores, caller)

    outcome = writer.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    found = _searches(reader, caller)
    assert not any(entry_id in str(found) for entry_id in ids) and kept in str(found)
    assert found == _truth(stores, caller)
    if isinstance(outcome, PendingDeletion):
        writer.custody.reject(OPERATOR, INSTANCE, outcome.request_id, "kept")
        found = _searches(reader, caller)
        assert ids[0] in str(found) and ids[1] not in str(found)  # the forget's hold still hides it
        assert found == _truth(stores, caller)


def test_a_search_under_a_sharing_policy_shows_what_teammates_share_and_stop_sharing(
    stores: Callable[[], MemoryStore]
) -> None:
    """The shared partition is checked too: a teammate's shared entry appears in a team search (and never in a
    private one), and goes when its author forgets it or clears their memory."""
    reader, caller = _service(stores()), _caller()
    teammate = Caller(upn=f"mate-{caller.upn}")
    writer = _service(stores(), deletion_mode=DeletionMode.IMMEDIATE)
    writer.append(caller, INSTANCE, Scope.USER, None, "- my own fact about trains", TAGGED)
    assert _searches(reader, caller) == _truth(stores, caller)

    shared = writer.append(teammate, INSTANCE, Scope.USER, None, "- trains leave at nine",
                           WriteOptions(tags=("travel",), share=Share.TEAM))
    team = reader.search(caller, INSTANCE, Scope.USER, None, "trains", sharing=SharingPolicy.TEAM)
    private = reader.search(caller, INSTANCE, Scope.USER, None, "trains", sharing=SharingPolicy.PRIVATE)
    assert "- trains leave at nine" in [h.entry.content_markdown for h in team]
    assert "- trains leave at nine" not in [h.entry.content_markdown for h in private]
    assert _searches(reader, caller) == _truth(stores, caller)

    writer.append(teammate, INSTANCE, Scope.USER, None, "- more trains at ten", WriteOptions(share=Share.TEAM))
    assert _searches(reader, caller) == _truth(stores, caller)
    writer.forget(teammate, INSTANCE, str(shared.entry_id))
    found = _searches(reader, caller)
    assert "leave at nine" not in str(found) and found == _truth(stores, caller)
    writer.clear(teammate, INSTANCE, Scope.USER, None, confirm=True)
    assert _searches(reader, caller) == _truth(stores, caller)


def test_a_search_never_shows_one_persons_memory_to_another(stores: Callable[[], MemoryStore]) -> None:
    reader, writer = _service(stores()), _service(stores())
    alex, bea = _caller(), _caller()
    writer.append(alex, INSTANCE, Scope.USER, None, "- alex's fact about trains", TAGGED)
    writer.append(bea, INSTANCE, Scope.USER, None, "- bea's fact about trains", TAGGED)
    for caller, own in ((alex, "alex"), (bea, "bea"), (alex, "alex")):
        for query, tags in QUERIES:
            hits = reader.search(caller, INSTANCE, Scope.USER, None, query, tags)
            assert [h.entry.content_markdown for h in hits] == [f"- {own}'s fact about trains"]


@pytest.mark.parametrize(("mode", "seed"), [(DeletionMode.IMMEDIATE, 31), (DeletionMode.OPERATOR_APPROVAL, 32)])
def test_after_any_walk_of_custody_steps_every_search_of_a_keeping_process_is_what_a_full_read_finds(
    stores: Callable[[], MemoryStore], mode: DeletionMode, seed: int, request: pytest.FixtureRequest
) -> None:
    """Random steps (appends, imports and replaces, forgets, clears, operators' decisions, memory tool edits;
    seeded, so a failure replays) by the keeping process and another: after each, its searches are exactly
    those of a process that keeps nothing."""
    walk = RandomWalk(seed, INSTANCE)
    keeper, other = _service(stores(), deletion_mode=mode), _service(stores(), deletion_mode=mode)
    caller = _caller()
    steps = 40 if "sqlite" in request.node.callspec.id else 20
    for step in range(steps):
        walk.any_step(walk.choice([keeper, other, other]), caller, AGENT, step)
        assert _searches(keeper, caller) == _truth(stores, caller), f"seed {seed}, step {step}"


def _gets(service: MemoryService, caller: Caller) -> dict[str, object]:
    """Every get the tests check: user, agent and combined scope, private and team; content and dates."""
    found: dict[str, object] = {}
    for scope, agent in ((Scope.USER, None), (Scope.AGENT, AGENT), (Scope.COMBINED, AGENT)):
        for policy in POLICIES:
            view = service.get(caller, INSTANCE, scope, agent, sharing=policy)
            found[f"{scope} {policy}"] = (view.content_markdown, view.created_on, view.updated_on)
    return found


def test_a_get_and_a_search_of_an_unchanged_memory_share_one_load_of_its_entries(
    stores: Callable[[], MemoryStore]
) -> None:
    """Whichever of a private get and a search (ranked in process: by tags alone) reads a memory first, the other
    reads no entry of it while it is unchanged, and after an append reads only the entry appended."""
    writer = _service(stores())
    for first in ("get", "search"):
        caller = _caller()
        for n in range(5):
            writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n} about trains", TAGGED)
        counting = CountingStore(stores())
        reader = _service(counting)  # type: ignore[arg-type]
        calls = {"get": lambda: reader.get(caller, INSTANCE, Scope.USER, None),
                 "search": lambda: reader.search(caller, INSTANCE, Scope.USER, None, "", ("travel",))}
        second = "search" if first == "get" else "get"
        calls[first]()
        assert counting.cost.rows == 5, first
        calls[second]()
        assert counting.cost.rows == 5, f"{second} after a {first} read entries again"
        writer.append(caller, INSTANCE, Scope.USER, None, f"- appended after the {first}", TAGGED)
        calls[second]()
        calls[first]()
        assert counting.cost.rows == 7, first  # each grown by the one entry appended, read once by each
        assert _searches(reader, caller) == _truth(stores, caller)
        assert _gets(reader, caller) == _gets(_service(_Unkept(stores())), caller)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", [DeletionMode.IMMEDIATE, DeletionMode.OPERATOR_APPROVAL])
@pytest.mark.parametrize("first", ["get", "search"])
def test_a_get_after_a_search_and_a_search_after_a_get_show_what_another_process_wrote_in_between(
    stores: Callable[[], MemoryStore], mode: DeletionMode, first: str
) -> None:
    """The one load a get and a search share is kept under the stamp it was read at: after an append, a
    forget (under approval: a hold), a clear, a rejected clear, an import replace and a teammate's sharing by
    another process between them, the other read shows exactly what a process that keeps nothing shows."""
    caller, teammate = _caller(), Caller(upn=f"mate-{uuid.uuid4().hex[:8]}@contoso.com")
    writer = _service(stores(), deletion_mode=mode)
    ids = [str(writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n} about trains", TAGGED).entry_id)
           for n in range(4)]
    writer.append(caller, INSTANCE, Scope.AGENT, AGENT, "- the agent's fact about trains", TAGGED)
    steps = writes_between_reads(writer, INSTANCE, caller, teammate, ids[1], operator=OPERATOR, options=TAGGED)
    unkept = lambda: _service(_Unkept(stores()))  # type: ignore[arg-type]  # noqa: E731
    for name, step in steps:
        reader = _service(stores())  # a process whose first read of the memory is ``first``
        if first == "get":
            _gets(reader, caller)
        else:
            _searches(reader, caller)
        step()
        checks = [("get", _gets), ("search", _searches)]
        for read, answers in checks if first == "search" else reversed(checks):  # the other read first
            assert answers(reader, caller) == answers(unkept(), caller), f"{first}, then {name}: {read}"
        assert "shared trains" not in str(reader.get(caller, INSTANCE, Scope.USER, None).content_markdown)
