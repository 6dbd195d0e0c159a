"""Read snapshots never show stale or foreign memory: every write path, from this or another process.

Each case reads through a service whose snapshots are warm, changes memory some
other way, and compares the next read with one rendered from scratch (the same
store without stamps, so nothing is cached). Both real stores, no fakes: SQLite
(three stores on one file) and Cosmos DB (three stores, each with its own
client and caches, on one container of the test server, made for the test).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.errors import EntryBeforeClear
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.kept import KeptAnswers
from memory_core.domain.listings import Listings
from memory_core.domain.models import (
    EntryKind,
    MemoryEntry,
    MemoryProfile,
    ProfileKey,
    Scope,
    Share,
)
from memory_core.domain.service import (
    DeletionMode,
    ImportMode,
    MemoryService,
    PendingDeletion,
    WriteOptions,
)
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.snapshots import ChangeStamps, SnapshotCache
from tests.adapters.cosmos_support import DATABASE, cosmos_store, provision
from tests.support.random_walk import RandomWalk
from tests.support.unstamped import Unstamped

ALEX = Caller(upn="alex@contoso.com", name="Alex")
BEA = Caller(upn="bea@contoso.com", name="Bea")
AGENT = AgentContext("/agents/benefits", "Benefits")
SCOPES = [(Scope.USER, None), (Scope.AGENT, AGENT), (Scope.COMBINED, AGENT)]
BUDGETS = (0, 120, 400, 16_000)


@dataclass
class World:
    path: Path
    cached: MemoryService  # this process: snapshots warm
    other: MemoryService  # another process on the same file
    truth: MemoryService  # renders from scratch
    stores: list[Any]

    def assert_fresh(self, caller: Caller = ALEX, policies: tuple[SharingPolicy | None, ...] = (None,)) -> None:
        """Full reads, budgeted reads large enough to fit (answered from snapshots) or not, and entries pages match.

        ``policies``: the sharing policies read with (None: the default, private).
        """
        for policy in policies:
            for scope, agent in SCOPES:
                cached = self.cached.get(caller, "i", scope, agent, policy)
                assert cached == self.truth.get(caller, "i", scope, agent, policy), (scope, policy)
                for budget in BUDGETS:
                    cached = self.cached.get_within(caller, "i", scope, agent, budget, policy)
                    assert cached == self.truth.get_within(caller, "i", scope, agent, budget, policy), (scope, budget)
                walked = _walk(self.cached, caller, scope, agent, policy)
                assert walked == _walk(self.truth, caller, scope, agent, policy), (scope, policy)


SHARING = (SharingPolicy.TEAM, SharingPolicy.LEGACY)


def _walk(
    service: MemoryService, caller: Caller, scope: Scope, agent: AgentContext | None,
    policy: SharingPolicy | None = None,
) -> list[list[str]]:
    """Every entries page (ids), five at a time, first to last."""
    pages: list[list[str]] = []
    token = None
    while True:
        page = service.entries_page(caller, "i", scope, agent, policy, limit=5, continuation=token)
        pages.append([e.id for e in page.items])
        token = page.continuation
        if token is None:
            return pages


@pytest.fixture(params=["sqlite", "cosmos"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[Any]]:
    """Three stores on the same data, as three processes would open it."""
    if request.param == "sqlite":
        opened: list[Any] = [SqliteMemoryStore(tmp_path / "m.sqlite3") for _ in range(3)]
        yield opened
    else:
        account = request.getfixturevalue("cosmos_account")
        container = f"snapshots-{uuid.uuid4().hex[:8]}"  # "i" and the callers are fixed: a container per test
        provision(account, container=container)
        opened = [cosmos_store(account, container=container) for _ in range(3)]
        yield opened
        client = account.client()
        try:
            client.get_database_client(DATABASE).delete_container(container)
        finally:
            client.close()
    for store in opened:
        store.close()


@pytest.fixture(params=[DeletionMode.OPERATOR_APPROVAL, DeletionMode.IMMEDIATE])
def world(request: pytest.FixtureRequest, tmp_path: Path, stores: list[Any]) -> World:
    mode = request.param
    w = World(
        tmp_path,
        MemoryService(stores[0], deletion_mode=mode, allow_sharing_override=True),
        MemoryService(stores[1], deletion_mode=mode, allow_sharing_override=True),
        MemoryService(Unstamped(stores[2]), deletion_mode=mode, allow_sharing_override=True),
        stores,
    )
    assert isinstance(stores[0], ChangeStamps) and not isinstance(Unstamped(stores[2]), ChangeStamps)
    return w


def test_an_append_extends_the_snapshot_instead_of_rebuilding_it(world: World) -> None:
    world.cached.append(ALEX, "i", Scope.USER, None, "- first")
    world.cached.get(ALEX, "i", Scope.USER, None)
    snapshots = world.cached._snapshots
    assert snapshots is not None
    rebuilds = snapshots.rebuilds
    world.cached.append(ALEX, "i", Scope.USER, None, "- second")
    world.other.append(ALEX, "i", Scope.USER, None, "- third, from another process")
    view = world.cached.get(ALEX, "i", Scope.USER, None)
    assert "- second" in view.content_markdown and "- third, from another process" in view.content_markdown
    assert (snapshots.rebuilds, snapshots.extensions) == (rebuilds, 1)
    world.assert_fresh()


def test_clear_hold_rejection_and_sweep_show_at_once(world: World) -> None:
    for i in range(3):
        world.cached.append(ALEX, "i", Scope.USER, None, f"- fact {i}")
        world.cached.append(ALEX, "i", Scope.AGENT, AGENT, f"- agent fact {i}")
    world.assert_fresh()
    outcome = world.other.clear(ALEX, "i", Scope.USER, None, confirm=True)
    world.assert_fresh()
    assert "fact 0" not in world.cached.get(ALEX, "i", Scope.USER, None).content_markdown
    if isinstance(outcome, PendingDeletion):
        world.other.custody.reject("op", "i", outcome.request_id, "no")
        world.assert_fresh()
        assert "fact 0" in world.cached.get(ALEX, "i", Scope.USER, None).content_markdown
        again = world.other.clear(ALEX, "i", Scope.USER, None, confirm=True)
        assert isinstance(again, PendingDeletion)
        world.other.custody.approve("op", "i", again.request_id)
        world.other.custody.sweep()
        world.assert_fresh()
    assert "fact" not in world.cached.get(ALEX, "i", Scope.USER, None).content_markdown


def test_forget_and_import_replace_show_at_once(world: World) -> None:
    kept = world.cached.append(ALEX, "i", Scope.USER, None, "- keep")
    gone = world.cached.append(ALEX, "i", Scope.USER, None, "- forget me")
    world.assert_fresh()
    world.other.forget(ALEX, "i", gone.entry_id or "")
    world.assert_fresh()
    assert "forget me" not in world.cached.get(ALEX, "i", Scope.USER, None).content_markdown
    world.other.import_markdown(ALEX, "i", Scope.USER, None, "# User memory\n\n- replaced", ImportMode.REPLACE)
    world.assert_fresh()
    assert "keep" not in world.cached.get(ALEX, "i", Scope.USER, None).content_markdown
    world.cached.append(ALEX, "i", Scope.USER, None, "- after the replace")
    world.assert_fresh()
    assert kept.entry_id


def test_a_write_whose_clock_ran_behind_lands_in_order(world: World) -> None:
    """An entry stored with an earlier time than the last one shown is placed where it sorts."""
    world.cached.append(ALEX, "i", Scope.USER, None, "- now")
    world.assert_fresh()
    key = ProfileKey("i", ALEX.upn, Scope.USER)
    past = datetime.now(UTC) - timedelta(hours=1)
    entry = MemoryEntry("early", key, "- an hour ago", EntryKind.APPEND, past, ALEX.upn)
    world.stores[1].append(MemoryProfile(key, None, None, None, past, past), entry)
    world.assert_fresh()
    document = world.cached.get(ALEX, "i", Scope.USER, None).content_markdown
    assert document.index("an hour ago") < document.index("- now")


def test_one_users_snapshot_is_never_anothers_read(world: World) -> None:
    world.cached.append(ALEX, "i", Scope.USER, None, "- alex only")
    world.cached.get(ALEX, "i", Scope.USER, None)
    assert "alex only" not in world.cached.get(BEA, "i", Scope.USER, None).content_markdown
    assert "alex only" not in world.cached.get(ALEX, "other-instance", Scope.USER, None).content_markdown
    world.assert_fresh(BEA)


def test_sharing_reads_see_team_entries_and_private_reads_never_do(world: World) -> None:
    world.cached.get(BEA, "i", Scope.USER, None)
    world.other.append(ALEX, "i", Scope.USER, None, "- team tip", WriteOptions(share=Share.TEAM))
    assert "team tip" in world.cached.get(BEA, "i", Scope.USER, None, SharingPolicy.TEAM).content_markdown
    assert "team tip" not in world.cached.get(BEA, "i", Scope.USER, None).content_markdown
    world.other.clear(ALEX, "i", Scope.USER, None, confirm=True)
    assert "team tip" not in world.cached.get(BEA, "i", Scope.USER, None, SharingPolicy.TEAM).content_markdown
    world.assert_fresh(BEA, (None, *SHARING))


def test_a_sharing_read_is_kept_until_either_partition_changes(world: World) -> None:
    """Read again with nothing written, a sharing read costs a stamp read per partition; any write to the
    reader's memory or to the shared entries (from any process) is shown at once."""
    world.other.append(ALEX, "i", Scope.USER, None, "- alex's team tip", WriteOptions(share=Share.TEAM))
    world.cached.append(BEA, "i", Scope.USER, None, "- bea's own")
    world.assert_fresh(BEA, SHARING)
    world.other.import_legacy("op", "i", Scope.USER, None, "- from the old deployment")
    assert "old deployment" in world.cached.get(BEA, "i", Scope.USER, None, SharingPolicy.LEGACY).content_markdown
    assert "old deployment" not in world.cached.get(BEA, "i", Scope.USER, None, SharingPolicy.TEAM).content_markdown
    world.assert_fresh(BEA, SHARING)
    for read in (lambda: world.cached.get(BEA, "i", Scope.USER, None, SharingPolicy.TEAM),
                 lambda: world.cached.get_within(BEA, "i", Scope.USER, None, 400, SharingPolicy.TEAM),
                 lambda: world.cached.entries_page(BEA, "i", Scope.USER, None, SharingPolicy.TEAM, limit=5)):
        with world.stores[0].measure() as cost:
            read()
        assert (cost.round_trips, cost.rows) == (2, 2), cost
    world.other.append(ALEX, "i", Scope.USER, None, "- another team tip", WriteOptions(share=Share.TEAM))
    assert "another team tip" in world.cached.get(BEA, "i", Scope.USER, None, SharingPolicy.TEAM).content_markdown
    world.other.append(BEA, "i", Scope.USER, None, "- bea elsewhere")
    world.assert_fresh(BEA, SHARING)
    world.other.clear(ALEX, "i", Scope.USER, None, confirm=True)
    world.assert_fresh(BEA, SHARING)
    assert "team tip" not in world.cached.get(BEA, "i", Scope.USER, None, SharingPolicy.TEAM).content_markdown


def test_any_sequence_of_writes_reads_the_same_as_rendering_from_scratch(world: World) -> None:
    """A seeded random walk over every write path (``tests.support.random_walk``), from both processes,
    compared after each step: appends, team-shared appends by either user, agent appends, forgets,
    clears, imports that append or replace, and an operator's decisions with the sweep."""
    walk = RandomWalk(15, "i")
    # Fewer steps on the Cosmos test server (about 60 requests a step, each a TLS handshake and a scan there).
    for step in range(120 if isinstance(world.stores[0], SqliteMemoryStore) else 30):
        service = walk.choice([world.cached, world.other])
        action = walk.choice(["append", "append", "append", "agent", "forget", "clear", "decide", "replace", "import",
                              "team"])
        if action == "team":
            author, scope, agent = walk.choice([(ALEX, *SCOPES[0]), (ALEX, *SCOPES[1]), (BEA, *SCOPES[0])])
            walk.append(service, author, scope, agent, f"- shared {step}", WriteOptions(share=Share.TEAM))
        elif action == "agent":
            walk.append(service, ALEX, Scope.AGENT, AGENT, f"- agent fact {step}", WriteOptions(reason="r"))
        elif action == "clear":
            scope, agent = walk.choice(SCOPES[:2])
            walk.clear(service, ALEX, scope, agent)
        else:
            walk.take(action, service, ALEX, Scope.USER, None, step)
        world.assert_fresh()
        if step % 3 == 0:
            world.assert_fresh(BEA, SHARING)
        if step % 6 == 0:
            world.assert_fresh(ALEX, SHARING)  # Alex's own entries beside Bea's shared ones


def test_what_reads_keep_is_bounded_and_reads_stay_exact_past_the_bound(world: World) -> None:
    """Past its bound the process lets the least recently read go, whatever kind of answer, and reads stay exact."""
    kept = KeptAnswers(6_000)
    world.cached._snapshots = SnapshotCache(world.stores[0], kept)
    world.cached._listings = Listings(world.stores[0], kept)
    users = [Caller(upn=f"user{i}@contoso.com") for i in range(6)]
    for user in users:
        world.other.append(user, "i", Scope.USER, None, "- " + "x" * 500)
        assert world.cached.get(user, "i", Scope.USER, None) == world.truth.get(user, "i", Scope.USER, None)
        assert _walk(world.cached, user, Scope.USER, None) == _walk(world.truth, user, Scope.USER, None)
        assert kept.held <= 6_000
    assert 2 <= len(kept) <= 6
    for user in users:
        assert world.cached.get(user, "i", Scope.USER, None) == world.truth.get(user, "i", Scope.USER, None)


def test_a_budgeted_read_of_a_memory_that_fits_is_one_stamp_read(world: World) -> None:
    """Once a small memory was read, a budgeted read of it costs one statement, and sees writes at once."""
    for i in range(10):
        world.cached.append(ALEX, "i", Scope.USER, None, f"- fact {i}")
    first = world.cached.get_within(ALEX, "i", Scope.USER, None, 16_000)  # fills, then keeps a snapshot
    assert first.budget is not None and first.budget.shown_entries == 10 and first.budget.omitted_entries == 0
    with world.stores[0].measure() as cost:
        again = world.cached.get_within(ALEX, "i", Scope.USER, None, 16_000)
    assert again == first and cost.round_trips == 1
    world.other.append(ALEX, "i", Scope.USER, None, "- from another process")
    grown = world.cached.get_within(ALEX, "i", Scope.USER, None, 16_000)
    assert "from another process" in grown.content_markdown and grown.budget and grown.budget.shown_entries == 11
    world.assert_fresh()


def test_a_budgeted_read_never_loads_a_memory_too_large_for_its_budget_in_full(world: World) -> None:
    """A memory over the budget is filled from the store page by page: no snapshot is built for it."""
    for i in range(300):
        world.cached.append(ALEX, "i", Scope.USER, None, f"- a longer fact, number {i}, about plans and tables")
    snapshots = world.cached._snapshots
    assert snapshots is not None
    rebuilds = snapshots.rebuilds
    with world.stores[0].measure() as cost:
        view = world.cached.get_within(ALEX, "i", Scope.USER, None, 2_000)
    assert view.budget is not None and view.budget.omitted_entries > 0
    assert snapshots.rebuilds == rebuilds and cost.rows < 300
    world.assert_fresh()


def test_a_budgeted_read_of_an_unchanged_large_memory_is_kept_until_a_write(world: World) -> None:
    """Over its budget, the same read again costs one stamp read; any write, from any process, rebuilds it."""
    for i in range(300):
        world.cached.append(ALEX, "i", Scope.USER, None, f"- a longer fact, number {i}, about plans and tables")
    first = world.cached.get_within(ALEX, "i", Scope.USER, None, 2_000)
    with world.stores[0].measure() as cost:
        again = world.cached.get_within(ALEX, "i", Scope.USER, None, 2_000)
    assert again == first and (cost.round_trips, cost.rows) == (1, 1)
    world.other.append(ALEX, "i", Scope.USER, None, "- the newest fact, from another process")
    assert "the newest fact" in world.cached.get_within(ALEX, "i", Scope.USER, None, 2_000).content_markdown
    other_budget = world.cached.get_within(ALEX, "i", Scope.USER, None, 1_000)
    assert len(other_budget.content_markdown) <= 1_000
    bea = world.cached.get_within(BEA, "i", Scope.USER, None, 2_000)
    assert "longer fact" not in bea.content_markdown
    world.assert_fresh()


def test_walking_the_entries_pages_of_a_memory_larger_than_a_page_reads_each_page_not_the_memory(
    world: World,
) -> None:
    """With no listing kept, each page reads about a page of entries from the store (stored_pages),
    and keeps nothing that a write could make stale; a write shows at once."""
    for i in range(60):
        world.cached.append(ALEX, "i", Scope.USER, None, f"- fact {i}")
    first = world.cached.entries_page(ALEX, "i", Scope.USER, None, limit=10)
    with world.stores[0].measure() as cost:
        second = world.cached.entries_page(ALEX, "i", Scope.USER, None, limit=10, continuation=first.continuation)
    # The stamp, the profile and holds, the newest replace, then the page and the one entry after it.
    assert cost.rows <= 1 + 1 + 11 + 2, cost
    assert world.cached._listings is not None and world.cached._listings.builds == 0
    assert [e.content_markdown for e in second.items] == [f"- fact {i}" for i in range(10, 20)]
    world.other.append(ALEX, "i", Scope.USER, None, "- written by another process during the walk")
    token, seen = second.continuation, [e.id for e in first.items + second.items]
    while token is not None:
        page = world.cached.entries_page(ALEX, "i", Scope.USER, None, limit=10, continuation=token)
        seen += [e.id for e in page.items]
        token = page.continuation
    texts = {e.id: e.content_markdown for e in world.truth.entries(ALEX, "i", Scope.USER, None)}
    assert sorted(seen) == sorted(texts) and len(seen) == len(set(seen)) == 61
    world.assert_fresh()


def test_the_first_entries_page_after_an_append_reads_only_what_was_appended(world: World) -> None:
    """A listing grows by the entries appended since (from any process) instead of reading the memory again."""
    for i in range(60):
        world.cached.append(ALEX, "i", Scope.AGENT if i % 2 else Scope.USER, AGENT if i % 2 else None, f"- f{i}")
    whole = world.cached.entries_page(ALEX, "i", Scope.COMBINED, AGENT, limit=100)  # one page: kept as the listing
    listings = world.cached._listings
    assert listings is not None and whole.continuation is None
    builds = listings.builds
    assert builds == 1
    world.other.append(ALEX, "i", Scope.USER, None, "- appended elsewhere")
    world.cached.append(ALEX, "i", Scope.AGENT, AGENT, "- appended here")
    with world.stores[0].measure() as cost:
        page = world.cached.entries_page(ALEX, "i", Scope.COMBINED, AGENT, limit=100)
    assert listings.builds == builds and cost.rows < 10, cost
    texts = [e.content_markdown for e in page.items]
    assert texts.index("- appended elsewhere") < texts.index("- f1") < texts.index("- appended here") == len(texts) - 1
    world.assert_fresh()


def test_a_listing_is_built_again_when_an_append_could_fall_before_a_replace(world: World) -> None:
    """An append older than the newest entry listed (a clock behind) or a replace is not grown into a listing."""
    world.cached.append(ALEX, "i", Scope.USER, None, "- now")
    world.cached.entries_page(ALEX, "i", Scope.USER, None, limit=10)
    listings = world.cached._listings
    assert listings is not None
    builds = listings.builds
    key = ProfileKey("i", ALEX.upn, Scope.USER)
    past = datetime.now(UTC) - timedelta(hours=1)
    world.stores[1].append(MemoryProfile(key, None, None, None, past, past),
                           MemoryEntry("early", key, "- an hour ago", EntryKind.APPEND, past, ALEX.upn))
    ids = [e.id for e in world.cached.entries_page(ALEX, "i", Scope.USER, None, limit=10).items]
    assert ids[0] == "early" and listings.builds == builds + 1
    world.other.import_markdown(ALEX, "i", Scope.USER, None, "- imported anew", ImportMode.REPLACE)
    world.assert_fresh()


def test_entries_added_behind_a_clear_or_after_a_stored_replace_list_as_a_full_read_would(world: World) -> None:
    """Entries written straight to the store (as another process or an older version might) are listed exactly."""
    key = ProfileKey("i", ALEX.upn, Scope.USER)
    world.cached.append(ALEX, "i", Scope.USER, None, "- before the clear")
    world.cached.clear(ALEX, "i", Scope.USER, None, confirm=True)
    assert world.cached.entries_page(ALEX, "i", Scope.USER, None, limit=10).items == []
    past = datetime.now(UTC) - timedelta(hours=1)
    behind = MemoryEntry("behind", key, "- older than the clear", EntryKind.APPEND, past, ALEX.upn)
    (state,) = world.stores[1].load([key])
    if state.profile is not None and state.profile.cleared_on is not None:
        # Immediate: the store refuses an entry its stored watermark covers (it would be hidden yet stored).
        with pytest.raises(EntryBeforeClear):
            world.stores[1].append(MemoryProfile(key, None, None, None, past, past), behind)
    else:  # operator approval: the clear's hold hides it
        world.stores[1].append(MemoryProfile(key, None, None, None, past, past), behind)
    assert world.cached.entries_page(ALEX, "i", Scope.USER, None, limit=10).items == []
    world.cached.append(ALEX, "i", Scope.USER, None, "- after the clear")
    world.cached.entries_page(ALEX, "i", Scope.USER, None, limit=10)
    now = datetime.now(UTC) + timedelta(seconds=1)
    world.stores[1].append(MemoryProfile(key, None, None, None, now, now),
                           MemoryEntry("anew", key, "- a replace", EntryKind.REPLACE, now, ALEX.upn))
    assert [e.id for e in world.cached.entries_page(ALEX, "i", Scope.USER, None, limit=10).items] == ["anew"]
    world.assert_fresh()


def test_a_budgeted_read_of_a_large_memory_after_an_append_reads_only_what_was_appended(world: World) -> None:
    """A kept budgeted read grows by the entries appended since (from any process) instead of reading a
    budget's worth of the store again; a combined read too, whichever scope was appended to."""
    for i in range(40):
        world.cached.append(ALEX, "i", Scope.USER, None, f"- fact {i} " + "x" * 40)
        world.cached.append(ALEX, "i", Scope.AGENT, AGENT, f"- agent fact {i} " + "y" * 40)
    for scope, agent in ((Scope.USER, None), (Scope.COMBINED, AGENT)):
        world.cached.get_within(ALEX, "i", scope, agent, 400)
    budgeted = world.cached._budgeted
    assert budgeted is not None
    builds, grown = budgeted.builds, budgeted.grown
    world.other.append(ALEX, "i", Scope.USER, None, "- appended elsewhere")
    world.cached.append(ALEX, "i", Scope.AGENT, AGENT, "- appended here")
    for scope, agent in ((Scope.USER, None), (Scope.COMBINED, AGENT)):
        with world.stores[0].measure() as cost:
            view = world.cached.get_within(ALEX, "i", scope, agent, 400)
        assert "appended elsewhere" in view.content_markdown and cost.rows < 12, (scope, cost)
    assert (budgeted.builds, budgeted.grown) == (builds, grown + 2)
    world.assert_fresh()


def test_a_budgeted_sharing_read_grows_by_what_either_partition_was_appended(world: World) -> None:
    """A team read over the budget: appends to the reader's memory or to the shared entries (any process)
    are put in front of what it holds; the teammates' own copies and other policies' entries stay out."""
    for i in range(30):
        world.cached.append(BEA, "i", Scope.USER, None, f"- bea {i} " + "x" * 40)
        world.cached.append(ALEX, "i", Scope.USER, None, f"- alex tip {i} " + "y" * 40, WriteOptions(share=Share.TEAM))
    world.cached.get_within(BEA, "i", Scope.USER, None, 400, SharingPolicy.TEAM)
    budgeted = world.cached._budgeted
    assert budgeted is not None
    builds, grown = budgeted.builds, budgeted.grown
    world.other.append(ALEX, "i", Scope.USER, None, "- a new team tip", WriteOptions(share=Share.TEAM))
    world.other.append(BEA, "i", Scope.USER, None, "- bea's own, shared too", WriteOptions(share=Share.TEAM))
    world.other.import_legacy("op", "i", Scope.USER, None, "- legacy, not under team")
    with world.stores[0].measure() as cost:
        view = world.cached.get_within(BEA, "i", Scope.USER, None, 400, SharingPolicy.TEAM)
    assert (budgeted.builds, budgeted.grown) == (builds, grown + 1) and cost.rows < 16, cost
    assert "a new team tip" in view.content_markdown and "legacy" not in view.content_markdown
    assert view.content_markdown.count("bea's own, shared too") == 1
    world.assert_fresh(BEA, SHARING)


def _team_world(world: World) -> None:
    """Bea's memory (user and agent scope) and Alex's team tips beside it, read once under each sharing policy."""
    for i in range(30):
        world.cached.append(BEA, "i", Scope.USER, None, f"- bea {i}")
        world.cached.append(BEA, "i", Scope.AGENT, AGENT, f"- bea agent {i}")
        world.cached.append(ALEX, "i", Scope.USER, None, f"- alex tip {i}", WriteOptions(share=Share.TEAM))
    world.other.import_legacy("op", "i", Scope.USER, None, "- legacy fact")
    for policy in SHARING:
        for scope, agent in SCOPES:
            world.cached.get(BEA, "i", scope, agent, policy)
            first = world.cached.entries_page(BEA, "i", scope, agent, policy, limit=5)
            # The walk past a first page keeps the listing (a first page alone is read from checkpoints).
            world.cached.entries_page(BEA, "i", scope, agent, policy, limit=5, continuation=first.continuation)


def test_a_full_sharing_read_and_its_listing_grow_by_what_either_partition_was_appended(world: World) -> None:
    """Right after appends to the reader's memory or to the shared entries (any process), a team or legacy
    get and entries page read only what was appended; teammates' private entries and entries of a policy
    not read stay out."""
    _team_world(world)
    shared, listings = world.cached._shared, world.cached._listings
    assert shared is not None and listings is not None
    builds = (shared.builds, listings.builds)
    world.other.append(ALEX, "i", Scope.USER, None, "- a new team tip", WriteOptions(share=Share.TEAM))
    world.other.append(ALEX, "i", Scope.USER, None, "- alex keeps this one")
    world.cached.append(BEA, "i", Scope.USER, None, "- bea's own, shared too", WriteOptions(share=Share.TEAM))
    world.other.import_legacy("op", "i", Scope.USER, None, "- another legacy fact")
    for policy in SHARING:
        with world.stores[0].measure() as cost:
            view = world.cached.get(BEA, "i", Scope.COMBINED, AGENT, policy)
            page = world.cached.entries_page(BEA, "i", Scope.USER, None, policy, limit=100)
        assert cost.rows < 40, (policy, cost)  # built again, the two reads would load over 100 rows
        texts = [e.content_markdown for e in page.items]
        for document in (view.content_markdown, "\n".join(texts)):
            assert "a new team tip" in document and "alex keeps this one" not in document
            assert document.count("bea's own, shared too") == 1
            assert ("another legacy fact" in document) is (policy is SharingPolicy.LEGACY)
        assert texts[-1] == ("- another legacy fact" if policy is SharingPolicy.LEGACY else "- bea's own, shared too")
    assert (shared.builds, listings.builds) == builds
    world.assert_fresh(BEA, SHARING)


def test_a_sharing_read_is_built_again_when_what_was_added_could_not_simply_follow_it(world: World) -> None:
    """A shared entry whose writer's clock ran behind, a replace stored among the shared entries, or a
    teammate's clear of their shared entries: the kept team and legacy reads are built again, and read as from scratch."""
    _team_world(world)
    shared, listings = world.cached._shared, world.cached._listings
    assert shared is not None and listings is not None
    key = ProfileKey("i", ALEX.upn, Scope.USER).shared()
    past = datetime.now(UTC) - timedelta(hours=1)
    world.stores[1].append(MemoryProfile(key, None, None, None, past, past),
                           MemoryEntry("early-shared", key, "- an hour ago", EntryKind.APPEND, past, ALEX.upn,
                                       share=Share.TEAM))
    builds = (shared.builds, listings.builds)
    document = world.cached.get(BEA, "i", Scope.USER, None, SharingPolicy.TEAM).content_markdown
    assert document.index("an hour ago") < document.index("alex tip 0")
    ids = [e.id for e in world.cached.entries_page(BEA, "i", Scope.USER, None, SharingPolicy.TEAM, limit=100).items]
    assert ids.index("early-shared") < len(ids) - 1
    assert (shared.builds, listings.builds) == (builds[0] + 1, builds[1] + 1)
    world.assert_fresh(BEA, SHARING)
    # Nothing the service offers replaces shared entries: a store written by other code might.
    now = datetime.now(UTC) + timedelta(seconds=1)
    world.stores[1].append(MemoryProfile(key, None, None, None, now, now),
                           MemoryEntry("anew", key, "- the legacy memory anew", EntryKind.REPLACE, now, "",
                                       share=Share.LEGACY))
    legacy = world.cached.get(BEA, "i", Scope.USER, None, SharingPolicy.LEGACY).content_markdown
    assert "legacy memory anew" in legacy and "legacy fact" not in legacy and "bea 29" in legacy
    world.assert_fresh(BEA, SHARING)
    world.other.clear(ALEX, "i", Scope.USER, None, confirm=True)
    assert "alex tip" not in world.cached.get(BEA, "i", Scope.USER, None, SharingPolicy.TEAM).content_markdown
    world.assert_fresh(BEA, SHARING)
