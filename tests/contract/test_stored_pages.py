"""Entries pages read from the store without a listing answer what a listing would, at a page's cost, on every store.

A process that keeps no current listing (just started, or after a write that was not an
append) reads a private entries page with bounded queries (``domain.stored_pages``). The
truth here is a service over the same store without stamps (``tests.support.unstamped``),
which builds the listing from scratch for every page. After each step of a seeded random walk
over every write that changes what a page shows, the two must answer the same pages and the
same tokens, for several page sizes, also when a walk moves from one way of reading to the other.
"""

from __future__ import annotations

import base64
import json
import random
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.errors import EntryBeforeClear, InvalidInput
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.listings import entry_position, listing_position
from memory_core.domain.models import EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.paging import Page, decode_token, encode_token
from memory_core.domain.service import DeletionMode, ImportMode, MemoryService, PendingDeletion
from memory_core.domain.store import MemoryStore
from memory_core.domain.stored_pages import stored_page
from tests.support.random_walk import RandomWalk
from tests.support.seeding import make_entries, seed
from tests.support.unstamped import Unstamped

ALEX = Caller(upn="alex@contoso.com", name="Alex")
AGENT = AgentContext("/agents/benefits", "Benefits")
SECOND = AgentContext("/agents/travel", "Travel")
SCOPES = [(Scope.USER, None), (Scope.AGENT, AGENT), (Scope.COMBINED, AGENT), (Scope.COMBINED, SECOND)]
LIMITS = (2, 7, 100)

Walked = list[tuple[list[str], str | None]]
PageOf = Callable[[str | None], Page[MemoryEntry]]


def _walk(pages: list[PageOf]) -> Walked:
    """Every page (ids and token), first to last, page ``n`` read by ``pages[n % len(pages)]``."""
    walked: Walked = []
    token = None
    while True:
        page = pages[len(walked) % len(pages)](token)
        walked.append(([e.id for e in page.items], page.continuation))
        token = page.continuation
        if token is None or len(walked) > 500:
            return walked


def _reader(service: MemoryService, instance: str, scope: Scope, agent: AgentContext | None, limit: int) -> PageOf:
    return lambda token: service.entries_page(ALEX, instance, scope, agent, limit=limit, continuation=token)


def _store_reader(store: MemoryStore, instance: str, scope: Scope, agent: AgentContext | None, limit: int) -> PageOf:
    """Pages read by ``stored_page`` itself, sending at most one held id with each query (the rest filtered)."""
    keys = [ProfileKey(instance, ALEX.upn, Scope.USER), ProfileKey(instance, ALEX.upn, Scope.AGENT, agent.object_id)] \
        if scope is Scope.COMBINED else [ProfileKey(instance, ALEX.upn, scope, agent.object_id if agent else None)]
    name = f"entries:{scope.value}"

    def page(token: str | None) -> Page[MemoryEntry]:
        found = stored_page(store, keys, listing_position(decode_token(name, token)), limit, query_excludes=1)
        assert found is not None
        more = found.more
        return Page(found.entries, encode_token(name, list(entry_position(found.entries[-1]))) if more else None)

    return page


def _assert_pages_agree(store: MemoryStore, instance: str, warm: MemoryService, step: int) -> None:
    truth = MemoryService(Unstamped(store))
    for scope, agent in SCOPES:
        for limit in LIMITS:
            expected = _walk([_reader(truth, instance, scope, agent, limit)])
            fresh = MemoryService(store)  # a process that keeps no listing
            assert _walk([_reader(fresh, instance, scope, agent, limit)]) == expected, (step, scope, limit)
            assert _walk([_reader(warm, instance, scope, agent, limit)]) == expected, (step, scope, limit, "warm")
            # A walk that moves between a listing and the store, page by page, starting either way.
            mixed = [_reader(MemoryService(store), instance, scope, agent, limit), _reader(truth, instance, scope, agent, limit)]
            assert _walk(mixed[step % 2:] + mixed[:step % 2]) == expected, (step, scope, limit, "mixed")
            assert _walk([_store_reader(store, instance, scope, agent, limit)]) == expected, (step, scope, limit)


def _behind(store: MemoryStore, instance: str, rng: random.Random, known: list[MemoryEntry]) -> MemoryEntry:
    """An entry written by a process whose clock ran behind, sometimes at the very time of another entry."""
    scope, agent = rng.choice([(Scope.USER, None), (Scope.AGENT, AGENT), (Scope.AGENT, SECOND)])
    key = ProfileKey(instance, ALEX.upn, scope, agent.object_id if agent else None)
    same_scope = [e for e in known if e.key == key]
    if same_scope and rng.random() < 0.5:
        at = rng.choice(same_scope).created_on  # a tie: ids decide the order
    else:
        at = datetime.now(UTC) - timedelta(seconds=rng.randrange(1, 600))
    entry = MemoryEntry(uuid.uuid4().hex, key, f"- written behind {len(known)}", EntryKind.APPEND, at, ALEX.upn)
    try:
        store.append(MemoryProfile(key, None, None, None, at, at), entry)
    except EntryBeforeClear as covered:  # behind a clear the store holds: written just after it, as the service does
        entry = replace(entry, created_on=covered.cleared_on + timedelta(microseconds=1))
        store.append(MemoryProfile(key, None, None, None, entry.created_on, entry.created_on), entry)
    return entry


def test_pages_without_a_listing_match_a_listing_built_from_scratch_after_every_write(store: MemoryStore) -> None:
    """A seeded random walk of writes (both deletion modes); after each, every page of every scope agrees."""
    instance = f"pages-{uuid.uuid4().hex[:8]}"
    immediate = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE)
    approval = MemoryService(store, deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    warm = MemoryService(store)  # one long-lived process: keeps the listings of pages that hold a whole scope
    walk = RandomWalk(2026, instance)
    known: list[MemoryEntry] = []
    steps = 60 if isinstance(store, SqliteMemoryStore) else 14  # the Cosmos test server scans on every query
    for step in range(steps):
        writer = walk.choice([immediate, approval])
        action = walk.choice(["append", "append", "agent", "second", "behind", "import", "replace", "forget",
                              "forget", "clear", "decide", "decide"])
        if action in ("append", "agent", "second"):
            scope, agent = {"append": (Scope.USER, None), "agent": (Scope.AGENT, AGENT),
                            "second": (Scope.AGENT, SECOND)}[action]
            for _ in range(walk.rng.randrange(1, 4)):
                walk.append(writer, ALEX, scope, agent, f"- fact {step}")
        elif action == "behind":
            known.append(_behind(store, instance, walk.rng, known))
        elif action in ("import", "replace"):
            scope, agent = walk.choice([(Scope.USER, None), (Scope.AGENT, AGENT)])
            mode = ImportMode.REPLACE if action == "replace" else ImportMode.APPEND
            text = walk.choice(["", f"- imported {step}"]) if mode is ImportMode.REPLACE else f"- imported {step}"
            walk.import_markdown(writer, ALEX, scope, agent, text, mode)
        elif action == "forget":
            shown = [e.id for scope, agent in SCOPES[:2] for e in immediate.entries(ALEX, instance, scope, agent)]
            walk.forget(writer, ALEX, shown)
        elif action == "clear":
            scope, agent = walk.choice([(Scope.USER, None), (Scope.AGENT, AGENT), (Scope.AGENT, SECOND)])
            walk.clear(writer, ALEX, scope, agent)
        else:
            walk.decide(approval)
        _assert_pages_agree(store, instance, warm, step)


def test_a_first_page_reads_a_page_of_entries_whatever_the_memory_holds(
    store: MemoryStore, request: pytest.FixtureRequest
) -> None:
    """The first page (50) of a fresh process at 10 and 10,000 user entries (and 10 agent entries):
    rows and round trips stay flat, while the listing the page used to be cut from reads every row."""
    cosmos = request.getfixturevalue("cosmos_account") if isinstance(store, CosmosMemoryStore) else None
    costs = {}
    for size in (10, 10_000):
        instance = f"pages-{size}-{uuid.uuid4().hex[:8]}"
        user = make_entries(ProfileKey(instance, ALEX.upn, Scope.USER), size)
        agent = make_entries(ProfileKey(instance, ALEX.upn, Scope.AGENT, AGENT.object_id), 10, agent_name=AGENT.name)
        seed(store, user, cosmos)
        seed(store, agent, cosmos)
        MemoryService(store).entries_page(ALEX, instance, Scope.USER, None, limit=1)  # the store's first call
        truth = MemoryService(Unstamped(store))
        for scope, agent_context in ((Scope.USER, None), (Scope.COMBINED, AGENT)):
            with store.measure() as cost:
                page = MemoryService(store).entries_page(ALEX, instance, scope, agent_context, limit=50)
            assert page == truth.entries_page(ALEX, instance, scope, agent_context, limit=50)
            costs[size, scope] = cost
        # A page deep in the walk costs the same as the first.
        deep = encode_token("entries:user", list(entry_position(user[size * 9 // 10])))
        with store.measure() as cost:
            page = MemoryService(store).entries_page(ALEX, instance, Scope.USER, None, limit=50, continuation=deep)
        assert page == truth.entries_page(ALEX, instance, Scope.USER, None, limit=50, continuation=deep)
        costs[size, "deep"] = cost
        if size == 10_000:
            with store.measure() as cost:
                MemoryService(store)._listings.listing(("entries",), [user[0].key])  # type: ignore[union-attr]
            costs[size, "listing"] = cost
    print(f"\n{type(store).__name__}: " + "; ".join(f"{k}: {v}" for k, v in costs.items()))
    for kind in (Scope.USER, Scope.COMBINED, "deep"):
        small, large = costs[10, kind], costs[10_000, kind]
        # The profiles and holds (and a stamp), a replace look-up per scope, 51 entries: a few rows to spare.
        assert large.rows <= 51 + 6, (kind, large)
        assert large.round_trips <= small.round_trips + 1, (kind, small, large)
    listing = costs[10_000, "listing"]
    if isinstance(store, SqliteMemoryStore):  # a load's rows are not counted there, its VM steps are
        assert all(costs[10_000, kind].vm_steps * 100 < listing.vm_steps for kind in (Scope.USER, "deep"))
    else:
        assert listing.rows >= 10_000


HOSTILE_POSITIONS = [
    [], ["0"], ["0", "2026-01-02T03:04:05.000000+00:00"], ["0", "2026-01-02T03:04:05.000000+00:00", "a", "b"],
    ["2", "2026-01-02T03:04:05.000000+00:00", "a"], ["", "2026-01-02T03:04:05.000000+00:00", "a"],
    ["0", "2026-01-02T03:04:05+00:00", "a"],  # not the form positions are written in
    ["0", "2026-01-02T04:04:05.000000+01:00", "a"], ["0", "2026-01-02T03:04:05.000000", "a"],
    ["0", "9999-12-31T23:59:59.999999-01:00", "a"], ["0", "0001-01-01T00:00:00.000000+01:00", "a"],
    ["0", "not a time", "a"], ["0", "", ""],
]


@pytest.mark.parametrize("position", HOSTILE_POSITIONS, ids=lambda p: json.dumps(p)[:40])
def test_a_token_with_a_position_no_entry_can_have_is_invalid_input(store: MemoryStore, position: list[str]) -> None:
    """Refused with ``invalid_continuation`` (HTTP 400) before any store is asked, whichever way a page is read."""
    instance = f"hostile-{uuid.uuid4().hex[:8]}"
    service = MemoryService(store)
    service.append(ALEX, instance, Scope.USER, None, "- a fact")
    token = encode_token("entries:user", position)
    for reader in (service, MemoryService(Unstamped(store))):
        with pytest.raises(InvalidInput) as refused:
            reader.entries_page(ALEX, instance, Scope.USER, None, limit=10, continuation=token)
        assert refused.value.code == "invalid_continuation"


@pytest.mark.parametrize("entry_id", ["", "\x00", "'; DROP TABLE entries; --", "\"]) OR 1=1 --", "é" * 150,
                                      "zzzz", "entry:x"])
@pytest.mark.parametrize("rank", ["0", "1"])
def test_a_well_formed_token_at_any_id_answers_what_a_listing_would(
    store: MemoryStore, entry_id: str, rank: str
) -> None:
    """Any id (quotes, NUL, long text) is a parameter, never query text: the page is the listing's."""
    instance = f"odd-{uuid.uuid4().hex[:8]}"
    service = MemoryService(store)
    for n in range(3):
        service.append(ALEX, instance, Scope.USER, None, f"- fact {n}")
    service.append(ALEX, instance, Scope.AGENT, AGENT, "- agent fact")
    first = service.entries(ALEX, instance, Scope.USER, None)[1]
    raw = json.dumps({"l": "entries:combined", "p": [rank, entry_position(first)[1], entry_id]})
    token = base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")
    truth = MemoryService(Unstamped(store))
    expected = truth.entries_page(ALEX, instance, Scope.COMBINED, AGENT, limit=2, continuation=token)
    assert MemoryService(store).entries_page(ALEX, instance, Scope.COMBINED, AGENT, limit=2,
                                             continuation=token) == expected


def test_held_ids_past_what_a_query_carries_are_filtered_and_a_held_replace_starts_nothing(store: MemoryStore) -> None:
    """Forgets pending approval hold entries one by one, a replace among them. Queries that carry none
    or one of the held ids answer the same pages as the listing: the rest are filtered, and the
    newest replace not held starts the document."""
    instance = f"held-{uuid.uuid4().hex[:8]}"
    key = ProfileKey(instance, ALEX.upn, Scope.USER)
    at = datetime.now(UTC) - timedelta(hours=1)
    kinds = [EntryKind.APPEND, EntryKind.REPLACE, *[EntryKind.APPEND] * 4, EntryKind.REPLACE, EntryKind.APPEND]
    written = []
    for n, kind in enumerate(kinds):  # written straight to the store: an older replace is still stored
        entry = MemoryEntry(f"e{n}", key, f"- entry {n}", kind, at + timedelta(seconds=n), ALEX.upn)
        store.append(MemoryProfile(key, None, None, None, at, at), entry)
        written.append(entry)
    approval = MemoryService(store, deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    for held in ("e6", "e2", "e4"):  # the newer replace, and two entries after the older one
        assert isinstance(approval.forget(ALEX, instance, held), PendingDeletion)
    truth = MemoryService(Unstamped(store))
    assert [e.id for e in truth.entries(ALEX, instance, Scope.USER, None)] == ["e1", "e3", "e5", "e7"]
    for limit in (1, 2, 3, 10):
        expected = _walk([_reader(truth, instance, Scope.USER, None, limit)])
        for excludes in (0, 1, 3):
            def page(token: str | None, excludes: int = excludes, limit: int = limit) -> Page[MemoryEntry]:
                found = stored_page(store, [key], listing_position(decode_token("entries:user", token)), limit,
                                    query_excludes=excludes)
                assert found is not None
                last = list(entry_position(found.entries[-1])) if found.more else None
                return Page(found.entries, encode_token("entries:user", last) if last else None)
            assert _walk([page]) == expected, (limit, excludes)
