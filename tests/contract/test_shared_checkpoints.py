"""Sharing reads on a fresh process, from both partitions' checkpoints (``domain.shared_checkpoints``),
on every store that keeps checkpoints: the same answers as reads rendered from scratch, after any
sequence of writes, and never stale or foreign text.

Writers are services over one store object; every read under test is a new service over a new
store object on the same data (a Functions instance just started, a restarted ``serve``), with
low thresholds so that parts are kept, restored and refreshed at the sizes a test can write. The
truth is a service over a store without stamps, which loads and renders every read.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from memory_core.domain import shared_checkpoints
from memory_core.domain.checkpoints import CHECKPOINT_MIN_SECTIONS, ReadCheckpoints, StoredCheckpoint, read_key
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import ProfileKey, Scope, Share
from memory_core.domain.partition_sections import FORMAT
from memory_core.domain.service import MemoryService, WriteOptions
from memory_core.domain.shared_checkpoints import SECTIONS_READ, SharedCheckpoints
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import DeletionMode, MemoryView
from tests.contract import test_read_checkpoints
from tests.support.random_walk import RandomWalk
from tests.support.unstamped import Unstamped

stores = test_read_checkpoints.stores
"""The fixture: a store of each kind that keeps checkpoints, and more store objects on its data (other processes)."""

AGENT = AgentContext("/agents/benefits", "Benefits")
SCOPES = [(Scope.USER, None), (Scope.AGENT, AGENT), (Scope.COMBINED, AGENT)]
POLICIES = (SharingPolicy.TEAM, SharingPolicy.LEGACY)
BUDGETS = (0, 150, 600, 16_000)
Stores = tuple[MemoryStore, Callable[[], MemoryStore]]


def _people() -> tuple[Caller, Caller, Caller]:
    """The reader, a teammate, and a user of another instance (the stores are shared across tests)."""
    run = uuid.uuid4().hex[:8]
    return (Caller(f"alex-{run}@contoso.com", "Alex"), Caller(f"bea-{run}@contoso.com", "Bea"),
            Caller(f"cy-{run}@contoso.com", "Cy"))


def _fresh(store: MemoryStore, mode: DeletionMode, min_sections: int = 1, refresh_sections: int = 3) -> tuple[
        MemoryService, SharedCheckpoints]:
    """A new process's service on ``store``, keeping parts from ``min_sections`` entries."""
    service = MemoryService(store, deletion_mode=mode, allow_sharing_override=True)
    assert isinstance(store, ReadCheckpoints)
    parts = SharedCheckpoints(store, store, min_sections=min_sections, refresh_sections=refresh_sections)  # type: ignore[arg-type]
    service._shared_parts = parts
    return service, parts


def _reads(caller: Caller, scope: Scope, agent: AgentContext | None,
           policy: SharingPolicy) -> list[Callable[[MemoryService], Any]]:
    """A full read, budgeted reads, the first entries page, and every page after the first page read twice
    (the second from the listing built from the parts)."""

    def within(budget: int) -> Callable[[MemoryService], Any]:
        return lambda service: service.get_within(caller, "i", scope, agent, budget, policy)

    def first_page(service: MemoryService) -> Any:
        page = service.entries_page(caller, "i", scope, agent, policy, limit=3)
        return [e.id for e in page.items], page.continuation

    def every_page(service: MemoryService) -> Any:
        pages = [first_page(service), first_page(service)]
        while pages[-1][1] is not None:
            page = service.entries_page(caller, "i", scope, agent, policy, limit=3, continuation=pages[-1][1])
            pages.append(([e.id for e in page.items], page.continuation))
        return pages

    return [lambda service: service.get(caller, "i", scope, agent, policy), *map(within, BUDGETS), first_page,
            every_page]


def _assert_fresh_reads_are_the_truth(store: MemoryStore, another: Callable[[], MemoryStore], truth: MemoryService,
                                      reader: Caller, mode: DeletionMode) -> int:
    """Every sharing read, each by a new process, equals the truth; answers how many parts were restored."""
    restored = 0
    for policy in POLICIES:
        for scope, agent in SCOPES:
            for index, read in enumerate(_reads(reader, scope, agent, policy)):
                fresh, parts = _fresh(another(), mode)
                assert read(fresh) == read(truth), (scope, policy, index)
                restored += parts.restores
    return restored


@pytest.mark.parametrize("mode", [DeletionMode.OPERATOR_APPROVAL, DeletionMode.IMMEDIATE])
def test_a_fresh_processs_sharing_reads_equal_reads_from_scratch_after_every_step_of_a_random_walk(
    stores: Stores, mode: DeletionMode,
) -> None:
    """Appends, team-shared appends by a teammate and by the reader, legacy imports, forgets, clears,
    decisions on pending deletions and sweeps, imports, writes in another instance, and sharing policy
    changes (each read under both policies, by both users)."""
    store, another = stores
    alex, bea, cy = _people()
    writers = [MemoryService(store, deletion_mode=mode), MemoryService(another(), deletion_mode=mode)]
    truth = MemoryService(Unstamped(another()), deletion_mode=mode, allow_sharing_override=True)
    other_instance = MemoryService(another(), deletion_mode=mode)
    walk = RandomWalk(15, "i")
    restored = 0
    for step in range(40 if _is_sqlite(store) else 8):  # the test server: about 40 s for 8 steps
        service = walk.choice(writers)
        action = walk.choice(["append", "append", "team", "team", "agent", "forget", "clear", "decide", "import",
                              "legacy", "foreign"])
        if action == "team":
            author, scope, agent = walk.choice([(alex, Scope.USER, None), (bea, Scope.USER, None),
                                                (bea, Scope.AGENT, AGENT), (alex, Scope.AGENT, AGENT)])
            walk.append(service, author, scope, agent, f"- shared {step} by {author.name}",
                        WriteOptions(share=Share.TEAM, reason="tip"))
        elif action == "agent":
            service.append(alex, "i", Scope.AGENT, AGENT, f"- agent fact {step}", WriteOptions(reason="r"))
        elif action == "legacy":  # an operator's import from an older deployment: shown under legacy only
            scope, agent = walk.choice(SCOPES[:2])
            service.import_legacy("op", "i", scope, agent, f"- legacy {step}")
        elif action == "foreign":  # another instance's users and their team: never in instance "i"'s reads
            other_instance.append(cy, "j", Scope.USER, None, f"- foreign {step}", WriteOptions(share=Share.TEAM))
            other_instance.append(alex, "j", Scope.USER, None, f"- foreign {step}", WriteOptions(share=Share.TEAM))
        elif action == "import":
            walk.take(walk.choice(["import", "replace"]), service, alex, Scope.USER, None, step)
        else:  # appends by the reader; forgets and clears by either user
            walk.take(action, service, alex if action == "append" else walk.choice([alex, bea]), Scope.USER, None, step)
        restored += _assert_fresh_reads_are_the_truth(store, another, truth, alex, mode)
        if step % 4 == 0:
            restored += _assert_fresh_reads_are_the_truth(store, another, truth, bea, mode)
    assert restored > 0, "no fresh read started from a checkpoint: the walk tested nothing of them"


def _is_sqlite(store: MemoryStore) -> bool:
    from memory_core.adapters.sqlite_store import SqliteMemoryStore

    return isinstance(store, SqliteMemoryStore)


def _team_memory(writer: MemoryService, alex: Caller, bea: Caller, size: int) -> None:
    for n in range(size):
        writer.append(alex, "i", Scope.USER, None, f"- alex fact {n}")
        writer.append(bea, "i", Scope.USER, None, f"- bea tip {n}", WriteOptions(share=Share.TEAM))


def test_a_fresh_process_restores_a_large_team_read_from_both_checkpoints_and_grows_it(stores: Stores) -> None:
    """At the real thresholds: the first team read keeps both parts, and a new process's reads start from
    them (no partition read in full), extended with what was appended since to either partition."""
    store, another = stores
    alex, bea, _ = _people()
    writer = MemoryService(store, allow_sharing_override=True)
    _team_memory(writer, alex, bea, CHECKPOINT_MIN_SECTIONS)
    writer.get(alex, "i", Scope.USER, None, SharingPolicy.TEAM)
    parts = writer._shared_parts
    assert parts is not None and (parts.builds, parts.kept) == (2, 2)  # both parts, none before
    writer.append(alex, "i", Scope.USER, None, "- alex, after the checkpoint")
    writer.append(bea, "i", Scope.USER, None, "- bea, after the checkpoint", WriteOptions(share=Share.TEAM))

    truth = MemoryService(Unstamped(another()), allow_sharing_override=True)
    for read in (lambda s: s.get(alex, "i", Scope.USER, None, SharingPolicy.TEAM),
                 lambda s: s.get_within(alex, "i", Scope.USER, None, 500, SharingPolicy.TEAM)):
        fresh = MemoryService(another(), allow_sharing_override=True)
        view: MemoryView = read(fresh)
        assert fresh._shared_parts is not None
        assert (fresh._shared_parts.restores, fresh._shared_parts.builds) == (2, 0)
        assert view == read(truth)
        assert "bea, after the checkpoint" in view.content_markdown


def _stored_part(store: MemoryStore, keys: list[ProfileKey], viewer: str) -> str | None:
    assert isinstance(store, ReadCheckpoints)
    stored = store.read_checkpoint(keys[0].instance_id, keys[0].upn, read_key(keys, f"{SECTIONS_READ}\n{viewer}"))
    return stored.payload if stored is not None else None


def test_a_teammates_forget_erases_the_shared_part_and_no_fresh_read_shows_the_text(stores: Stores) -> None:
    """The shared part holds a teammate's text: the forget of it (an erasure in the shared partition, not
    the reader's) erases that part, and the reader's part never held it."""
    store, another = stores
    alex, bea, _ = _people()
    writer = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE, allow_sharing_override=True)
    _team_memory(writer, alex, bea, 3)
    secret = writer.append(bea, "i", Scope.USER, None, "- bea's locker code is tangerine",
                           WriteOptions(share=Share.TEAM)).entry_id
    fresh, _ = _fresh(another(), DeletionMode.IMMEDIATE)
    assert "tangerine" in fresh.get(alex, "i", Scope.USER, None, SharingPolicy.TEAM).content_markdown
    keys = [ProfileKey("i", alex.upn, Scope.USER)]
    shared_part = _stored_part(store, [k.shared() for k in keys], "\x00")
    own_part = _stored_part(store, keys, alex.upn)
    assert shared_part is not None and "tangerine" in shared_part
    assert own_part is not None and "tangerine" not in own_part and "bea tip" not in own_part

    assert secret is not None
    writer.forget(bea, "i", secret)
    assert _stored_part(store, [k.shared() for k in keys], "\x00") is None
    again, parts = _fresh(another(), DeletionMode.IMMEDIATE)
    assert "tangerine" not in again.get(alex, "i", Scope.USER, None, SharingPolicy.TEAM).content_markdown
    assert parts.restores == 1  # the reader's own part still served


def test_a_part_kept_in_an_older_layout_is_ignored_and_kept_again_in_this_one(stores: Stores) -> None:
    """A part an earlier release kept (format 1, at the partition's current stamp) is read in full instead,
    never misread: the fresh read answers the truth, not the text the old part holds, and keeps the part again."""
    store, another = stores
    assert isinstance(store, ReadCheckpoints)
    alex, bea, _ = _people()
    writer = MemoryService(store, allow_sharing_override=True)
    _team_memory(writer, alex, bea, 3)
    fresh, _ = _fresh(another(), DeletionMode.IMMEDIATE)
    fresh.get(alex, "i", Scope.USER, None, SharingPolicy.TEAM)
    keys = [ProfileKey("i", alex.upn, Scope.USER)]
    for part_keys, viewer in ((keys, alex.upn), ([k.shared() for k in keys], "\x00")):
        name = read_key(part_keys, f"{SECTIONS_READ}\n{viewer}")
        kept = store.read_checkpoint("i", part_keys[0].upn, name)
        assert kept is not None and f'"format":{FORMAT}' in kept.payload
        old = json.dumps({"format": 1, "profiles": [k.profile_id for k in part_keys], "sequence": 10**9,
                          "scopes": [{"rows": [["2020-01-01T00:00:00.000000+00:00", "x", 0, None, "- stale text"]],
                                      "offers": [[viewer, "private"]], "latest": []}]})
        assert store.keep_checkpoint("i", part_keys[0].upn, name, StoredCheckpoint(kept.stamp, old))

    truth = MemoryService(Unstamped(another()), allow_sharing_override=True)
    again, parts = _fresh(another(), DeletionMode.IMMEDIATE)
    view = again.get(alex, "i", Scope.USER, None, SharingPolicy.TEAM)
    assert view == truth.get(alex, "i", Scope.USER, None, SharingPolicy.TEAM)
    assert "stale text" not in view.content_markdown and "bea tip 2" in view.content_markdown
    assert (parts.restores, parts.builds, parts.kept) == (0, 2, 2)
    for part_keys, viewer in ((keys, alex.upn), ([k.shared() for k in keys], "\x00")):
        payload = _stored_part(store, part_keys, viewer)
        assert payload is not None and f'"format":{FORMAT}' in payload and "stale text" not in payload


def test_a_fresh_processs_team_first_page_decodes_a_page_and_reading_it_again_keeps_the_listing(stores: Stores) -> None:
    """The first look at a large team listing comes from the parts and keeps nothing (a process that reads
    one page pays for one page); the next read of it builds the listing from the parts, without reading
    either partition in full, and keeps it: read again, or after appends to either partition, it is cut
    from that listing (grown), never built again."""
    store, another = stores
    alex, bea, _ = _people()
    writer = MemoryService(store, allow_sharing_override=True)
    _team_memory(writer, alex, bea, 6)  # 12 entries: four pages of 3
    truth = MemoryService(Unstamped(another()), allow_sharing_override=True)
    fresh, parts = _fresh(another(), DeletionMode.IMMEDIATE)
    listings = fresh._listings
    assert listings is not None

    def first_page(service: MemoryService) -> list[str]:
        return [e.id for e in service.entries_page(alex, "i", Scope.USER, None, SharingPolicy.TEAM, limit=3).items]

    assert first_page(fresh) == first_page(truth)
    assert listings.builds == 0  # nothing kept from the first look
    fresh_builds = parts.builds
    assert first_page(fresh) == first_page(truth)
    assert listings.builds == 1 and parts.builds == fresh_builds  # built from the kept parts, no partition read in full
    restores = parts.restores
    assert first_page(fresh) == first_page(truth)
    writer.append(alex, "i", Scope.USER, None, "- alex, later")
    writer.append(bea, "i", Scope.USER, None, "- bea, later", WriteOptions(share=Share.TEAM))
    walked = []
    continuation: str | None = None
    while True:
        page = fresh.entries_page(alex, "i", Scope.USER, None, SharingPolicy.TEAM, limit=3, continuation=continuation)
        walked += [e.content_markdown for e in page.items]
        continuation = page.continuation
        if continuation is None:
            break
    assert walked == [e.content_markdown for e in truth.entries(alex, "i", Scope.USER, None, SharingPolicy.TEAM)]
    assert walked[-2:] == ["- alex, later", "- bea, later"]
    assert (listings.builds, parts.restores) == (1, restores)  # grown by the appends: the parts not read again


def _beside_a_small_team_memory(stores: Stores) -> tuple[MemoryService, MemoryService, MemoryService, Caller, Caller]:
    """A writer of a team memory of 8 entries (4 of Alex's, 4 Bea shared), a fresh process on it, the truth
    from scratch, and the two users."""
    store, another = stores
    alex, bea, _ = _people()
    writer = MemoryService(store, allow_sharing_override=True)
    _team_memory(writer, alex, bea, 4)
    truth = MemoryService(Unstamped(another()), allow_sharing_override=True)
    fresh, _ = _fresh(another(), DeletionMode.IMMEDIATE)
    return writer, fresh, truth, alex, bea


def _budgeted_team_read(caller: Caller) -> Callable[[MemoryService], MemoryView]:
    """``caller``'s team read of user memory within 16,000 characters (the MCP default)."""
    return lambda service: service.get_within(caller, "i", Scope.USER, None, 16_000, SharingPolicy.TEAM)


def test_a_fresh_processs_team_budgeted_read_that_fits_whole_is_grown_after_an_append(stores: Stores) -> None:
    """A budgeted team read from the parts that shows every entry keeps all it showed: after an append it is
    grown from the entry added, not built again from the parts (it once kept only the entries the fill had
    decoded, none when everything fit, and every read after an append was built again)."""
    writer, fresh, truth, alex, bea = _beside_a_small_team_memory(stores)
    read = _budgeted_team_read(alex)
    first = read(fresh)
    assert first == read(truth) and first.budget is not None and first.budget.omitted_entries == 0
    budgeted = fresh._budgeted
    assert budgeted is not None and (budgeted.builds, budgeted.grown) == (1, 0)
    for n in range(3):
        writer.append(alex, "i", Scope.USER, None, f"- alex, later {n}")
        writer.append(bea, "i", Scope.USER, None, f"- bea, later {n}", WriteOptions(share=Share.TEAM))
        assert read(fresh) == read(truth)
    assert (budgeted.builds, budgeted.grown) == (1, 3)


def test_a_budgeted_team_read_showing_more_than_it_decodes_for_growth_is_built_again_and_stays_exact(
    stores: Stores, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past ``DECODED_FOR_GROWTH`` entries shown (lowered here to 3) a budgeted team read from the parts keeps
    only what its fill decoded: each read after an append is built again, never grown from a window that
    lacks entries, and equals the read from scratch."""
    monkeypatch.setattr(shared_checkpoints, "DECODED_FOR_GROWTH", 3)
    writer, fresh, truth, alex, _ = _beside_a_small_team_memory(stores)
    read = _budgeted_team_read(alex)
    assert read(fresh) == read(truth)
    for n in range(3):
        writer.append(alex, "i", Scope.USER, None, f"- alex, later {n}")
        assert read(fresh) == read(truth)
    budgeted = fresh._budgeted
    assert budgeted is not None and (budgeted.builds, budgeted.grown) == (4, 0)
