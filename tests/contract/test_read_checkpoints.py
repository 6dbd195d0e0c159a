"""ReadCheckpoints on every store that keeps them: a fresh process starts from a large read's
checkpoint, and no checkpoint outlives a write that is not an entry added (custody).

Each test writes through one ``MemoryService`` and reads through another over a second store
object on the same data: another process's view, which has no snapshot of its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.checkpoints import CHECKPOINT_MIN_SECTIONS, ReadCheckpoints, StoredCheckpoint, read_key
from memory_core.domain.identity import Caller
from memory_core.domain.models import ProfileKey, Scope
from memory_core.domain.service import MemoryService
from memory_core.domain.snapshots import ChangeStamps, PartitionStamp, SnapshotCache
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import DeletionMode, ImportMode, PendingDeletion
from tests.support.threads import run_switching_often

CHECKPOINT_STORES = ["sqlite", "cosmos"]
"""The stores that implement ReadCheckpoints."""

LARGE = CHECKPOINT_MIN_SECTIONS + 4
SECRETISH = "the forgotten fact: Alex's locker code is 4417"
RACE_ROUNDS = 40


@pytest.fixture(params=CHECKPOINT_STORES)
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[MemoryStore, Callable[[], MemoryStore]]]:
    """A store, and a factory of more store objects over the same data (other processes)."""
    if request.param == "sqlite":
        opened: list[SqliteMemoryStore] = []

        def another() -> MemoryStore:
            opened.append(SqliteMemoryStore(tmp_path / "checkpoints.sqlite3"))
            return opened[-1]

        first = another()
        yield first, another
        for store in opened:
            store.close()
    else:
        from tests.adapters.cosmos_support import cosmos_store, own_container

        account = request.getfixturevalue("cosmos_account")
        made = []
        # A container of the test's own: a large memory is hundreds of items, which the test server would scan
        # for every later query of the suite.
        with own_container(account, "checkpoints") as container:

            def another_cosmos() -> MemoryStore:
                made.append(cosmos_store(account, container=container))
                return made[-1]

            yield another_cosmos(), another_cosmos
            for cosmos in made:
                cosmos.close()


def _caller() -> Caller:
    return Caller(upn=f"ckpt-{uuid.uuid4().hex[:8]}@contoso.com", name="Alex")


def _snapshots(service: MemoryService) -> SnapshotCache:
    cache = service._snapshots
    assert cache is not None
    return cache


def _large_memory(service: MemoryService, caller: Caller, entries: int = LARGE) -> str:
    """Appends ``entries`` facts plus one memorable one; answers the memorable entry's id."""
    for n in range(entries):
        service.append(caller, "i", Scope.USER, None, f"- fact {n} about plans and tables")
    entry_id = service.append(caller, "i", Scope.USER, None, f"- {SECRETISH}").entry_id
    assert entry_id is not None
    return entry_id


def _checkpoint(store: MemoryStore, caller: Caller) -> StoredCheckpoint | None:
    assert isinstance(store, ReadCheckpoints)
    return store.read_checkpoint("i", caller.upn, read_key([ProfileKey("i", caller.upn, Scope.USER)], caller.upn))


def test_a_fresh_process_starts_its_first_read_from_the_checkpoint_and_answers_what_a_full_read_does(
    stores: tuple[MemoryStore, Callable[[], MemoryStore]],
) -> None:
    store, another = stores
    caller = _caller()
    writer = MemoryService(store)
    _large_memory(writer, caller)
    writer.get(caller, "i", Scope.USER, None)  # a large read leaves its checkpoint
    assert _checkpoint(store, caller) is not None
    for n in range(3):  # written after the checkpoint: the fresh read must extend it with these
        writer.append(caller, "i", Scope.USER, None, f"- added after the checkpoint {n}")

    fresh = MemoryService(another())
    view = fresh.get(caller, "i", Scope.USER, None)
    assert (_snapshots(fresh).restores, _snapshots(fresh).rebuilds) == (1, 0)
    assert fresh.get(caller, "i", Scope.USER, None) == view  # kept: the next read neither restores nor loads
    assert (_snapshots(fresh).restores, _snapshots(fresh).rebuilds) == (1, 0)

    built = MemoryService(another())
    built._snapshots = SnapshotCache(built.store, built.kept)  # type: ignore[arg-type]  # no checkpoints: from scratch
    expected = built.get(caller, "i", Scope.USER, None)
    assert _snapshots(built).rebuilds == 1
    assert view.content_markdown == expected.content_markdown
    assert "added after the checkpoint 2" in view.content_markdown
    assert (view.updated_on, view.agent_name) == (expected.updated_on, expected.agent_name)


def test_a_small_memory_leaves_no_checkpoint(stores: tuple[MemoryStore, Callable[[], MemoryStore]]) -> None:
    store, _ = stores
    caller = _caller()
    service = MemoryService(store)
    _large_memory(service, caller, entries=CHECKPOINT_MIN_SECTIONS - 2)  # one below the bound, with the memorable one
    service.get(caller, "i", Scope.USER, None)
    assert _checkpoint(store, caller) is None


@pytest.mark.parametrize("first", ["search", "entries page"])
def test_a_get_after_a_search_in_the_same_process_leaves_the_checkpoint_the_search_did_not(
    stores: tuple[MemoryStore, Callable[[], MemoryStore]], first: str,
) -> None:
    """A search or entries page that loads a large memory in full keeps the get's snapshot from that load but
    writes no checkpoint; the get that follows, answered from it, leaves the checkpoint a get that came first
    would have (without it every other process's first read loads the whole memory)."""
    store, another = stores
    caller = _caller()
    _large_memory(MemoryService(store), caller)
    reader = MemoryService(another())
    if first == "search":  # ranked in process from the listing where the store has no full-text index (Cosmos DB)
        assert reader.search(caller, "i", Scope.USER, None, "locker")
    else:  # the page holds the whole scope, so its listing is loaded and kept (both stores)
        reader.entries_page(caller, "i", Scope.USER, None, limit=1000)
    assert _checkpoint(store, caller) is None  # the search pays no checkpoint's write

    view = reader.get(caller, "i", Scope.USER, None)
    shared_load = first == "entries page" or not isinstance(store, SqliteMemoryStore)
    assert _snapshots(reader).rebuilds == (0 if shared_load else 1)  # answered from the first read's load
    assert _checkpoint(store, caller) is not None

    fresh = MemoryService(another())
    assert fresh.get(caller, "i", Scope.USER, None).content_markdown == view.content_markdown
    assert (_snapshots(fresh).restores, _snapshots(fresh).rebuilds) == (1, 0)


def test_gets_after_edits_and_full_pages_leave_no_checkpoint_until_one_is_due(
    stores: tuple[MemoryStore, Callable[[], MemoryStore]],
) -> None:
    """"Forget, entries page, get" over and over: each page loads the memory in full (a listing is not refreshed
    after an erasure) and keeps the get's snapshot from it, knowing of the checkpoint the snapshot it replaced knew,
    so the gets write none until enough was added (``refresh_sections``). A review found each such get writing
    one, a batch and a large item on Cosmos DB, when the kept snapshot forgot it."""
    store, another = stores
    caller = _caller()
    writer = MemoryService(store)
    _large_memory(writer, caller)
    reader_store = another()
    reader = MemoryService(reader_store)
    reader.get(caller, "i", Scope.USER, None)  # builds in full and leaves the checkpoint
    assert _checkpoint(store, caller) is not None
    assert isinstance(reader_store, ReadCheckpoints)
    kept: list[object] = []
    real_keep = reader_store.keep_checkpoint

    def counted_keep(*args: Any, **kwargs: Any) -> bool:
        kept.append(args)
        return real_keep(*args, **kwargs)

    reader_store.keep_checkpoint = counted_keep  # type: ignore[method-assign]
    entries = [e.id for e in reader.entries_page(caller, "i", Scope.USER, None, limit=1000).items]
    for entry_id in entries[:3]:
        writer.forget(caller, "i", entry_id)
        reader.entries_page(caller, "i", Scope.USER, None, limit=1000)
        reader.get(caller, "i", Scope.USER, None)
    assert kept == []


def test_a_checkpoint_is_refused_once_its_partition_has_moved_on(
    stores: tuple[MemoryStore, Callable[[], MemoryStore]],
) -> None:
    store, _ = stores
    assert isinstance(store, ReadCheckpoints) and isinstance(store, ChangeStamps)
    caller = _caller()
    service = MemoryService(store)
    service.append(caller, "i", Scope.USER, None, "- one")
    built_at = store.partition_stamp("i", caller.upn)
    service.append(caller, "i", Scope.USER, None, "- another, written while the checkpoint was being built")
    assert not store.keep_checkpoint("i", caller.upn, "k", StoredCheckpoint(built_at, "{}"))
    assert store.read_checkpoint("i", caller.upn, "k") is None
    assert not store.keep_checkpoint("i", caller.upn, "k", StoredCheckpoint(PartitionStamp(-1, -1), "{}"))

    now = store.partition_stamp("i", caller.upn)
    assert store.keep_checkpoint("i", caller.upn, "k", StoredCheckpoint(now, '{"payload": "as given"}'))
    assert store.read_checkpoint("i", caller.upn, "k") == StoredCheckpoint(now, '{"payload": "as given"}')
    assert store.read_checkpoint("i", caller.upn, "other") is None
    assert store.read_checkpoint("i", f"x{caller.upn}", "k") is None


def test_a_checkpoint_built_before_a_concurrent_forget_is_never_stored(
    stores: tuple[MemoryStore, Callable[[], MemoryStore]],
) -> None:
    """The race custody cares about: the forget lands between building the checkpoint and keeping it."""
    store, another = stores
    assert isinstance(store, ReadCheckpoints) and isinstance(store, ChangeStamps)
    caller = _caller()
    service = MemoryService(store, deletion_mode=DeletionMode.IMMEDIATE)
    entry_id = _large_memory(service, caller, entries=3)
    built_at = store.partition_stamp("i", caller.upn)
    MemoryService(another(), deletion_mode=DeletionMode.IMMEDIATE).forget(caller, "i", entry_id)
    assert not store.keep_checkpoint("i", caller.upn, "k", StoredCheckpoint(built_at, SECRETISH))
    assert store.read_checkpoint("i", caller.upn, "k") is None


def test_an_append_leaves_the_checkpoint_in_place(stores: tuple[MemoryStore, Callable[[], MemoryStore]]) -> None:
    store, _ = stores
    caller = _caller()
    service = MemoryService(store)
    _large_memory(service, caller)
    service.get(caller, "i", Scope.USER, None)
    before = _checkpoint(store, caller)
    service.append(caller, "i", Scope.USER, None, "- one more")
    assert before is not None and _checkpoint(store, caller) == before


def _forget_now(service: MemoryService, caller: Caller, entry_id: str) -> None:
    service.forget(caller, "i", entry_id)


def _request_forget(service: MemoryService, caller: Caller, entry_id: str) -> None:
    service.forget(caller, "i", entry_id)  # operator approval: a hold hides it


def _forget_rejected(service: MemoryService, caller: Caller, entry_id: str) -> None:
    request = service.forget(caller, "i", entry_id)
    assert isinstance(request, PendingDeletion)
    service.custody.reject("op", "i", request.request_id, "kept")


def _forget_approved_and_swept(service: MemoryService, caller: Caller, entry_id: str) -> None:
    request = service.forget(caller, "i", entry_id)
    assert isinstance(request, PendingDeletion)
    service.custody.approve("op", "i", request.request_id)
    service.custody.sweep()


def _clear_now(service: MemoryService, caller: Caller, entry_id: str) -> None:
    service.clear(caller, "i", Scope.USER, None, confirm=True)


def _import_replace(service: MemoryService, caller: Caller, entry_id: str) -> None:
    service.import_markdown(caller, "i", Scope.USER, None, "- a new beginning", ImportMode.REPLACE)


def _emptied_scope(service: MemoryService, caller: Caller) -> None:
    """An agent scope whose entries are erased, its profile left: a store erases only such a profile."""
    from memory_core.domain.identity import AgentContext

    written = service.append(caller, "i", Scope.AGENT, AgentContext("agent-emptied", "Helper"), "- for the agent")
    service.store.delete_entries(ProfileKey("i", caller.upn, Scope.AGENT, "agent-emptied"), [written.entry_id or ""])


def _profile_erased(service: MemoryService, caller: Caller, entry_id: str) -> None:
    service.store.delete_profile(ProfileKey("i", caller.upn, Scope.AGENT, "agent-emptied"))


def _entries_erased(service: MemoryService, caller: Caller, entry_id: str) -> None:
    service.store.delete_entries(ProfileKey("i", caller.upn, Scope.USER), [entry_id])


def _another_scope_begun(service: MemoryService, caller: Caller, entry_id: str) -> None:
    """A profile created in the partition (an agent scope's first write) is a write that is not only an entry."""
    from memory_core.domain.identity import AgentContext

    service.append(caller, "i", Scope.AGENT, AgentContext("agent-1", "Helper"), "- for the agent")


ERASING_WRITES = {
    "forget (immediate)": (_forget_now, DeletionMode.IMMEDIATE),
    "forget requested (a hold)": (_request_forget, DeletionMode.OPERATOR_APPROVAL),
    "forget rejected (the hold lifted)": (_forget_rejected, DeletionMode.OPERATOR_APPROVAL),
    "forget approved and swept": (_forget_approved_and_swept, DeletionMode.OPERATOR_APPROVAL),
    "clear (immediate)": (_clear_now, DeletionMode.IMMEDIATE),
    "import replace (immediate)": (_import_replace, DeletionMode.IMMEDIATE),
    "profile erased": (_profile_erased, DeletionMode.IMMEDIATE),
    "entries erased by the store": (_entries_erased, DeletionMode.IMMEDIATE),
    "another scope begun": (_another_scope_begun, DeletionMode.IMMEDIATE),
}


ERASING_THE_ENTRY = {"forget (immediate)", "forget requested (a hold)", "forget approved and swept",
                     "clear (immediate)", "import replace (immediate)", "entries erased by the store"}
"""The writes above after which the memorable entry no longer shows (the others erase the checkpoint only)."""


@pytest.mark.parametrize("write", list(ERASING_WRITES))
def test_every_write_that_is_not_an_entry_added_erases_the_partitions_checkpoints(
    stores: tuple[MemoryStore, Callable[[], MemoryStore]], write: str
) -> None:
    store, another = stores
    erase, mode = ERASING_WRITES[write]
    caller = _caller()
    service = MemoryService(store, deletion_mode=mode)
    entry_id = _large_memory(service, caller)
    if erase is _profile_erased:
        _emptied_scope(service, caller)
    service.get(caller, "i", Scope.USER, None)
    checkpoint = _checkpoint(store, caller)
    assert checkpoint is not None and SECRETISH in checkpoint.payload

    erase(MemoryService(another(), deletion_mode=mode), caller, entry_id)  # from another process
    assert _checkpoint(store, caller) is None

    fresh = MemoryService(another(), deletion_mode=mode)
    expected = MemoryService(another(), deletion_mode=mode)
    expected._snapshots = SnapshotCache(expected.store, expected.kept)  # type: ignore[arg-type]
    view = fresh.get(caller, "i", Scope.USER, None)
    assert _snapshots(fresh).restores == 0
    assert view.content_markdown == expected.get(caller, "i", Scope.USER, None).content_markdown
    if write in ERASING_THE_ENTRY:
        assert SECRETISH not in view.content_markdown


def test_a_combined_read_restores_both_scopes_from_its_own_checkpoint(
    stores: tuple[MemoryStore, Callable[[], MemoryStore]],
) -> None:
    from memory_core.domain.identity import AgentContext

    store, another = stores
    caller, agent = _caller(), AgentContext("agent-7", "Helper")
    writer = MemoryService(store)
    _large_memory(writer, caller, entries=CHECKPOINT_MIN_SECTIONS // 2)
    for n in range(CHECKPOINT_MIN_SECTIONS // 2):
        writer.append(caller, "i", Scope.AGENT, agent, f"- agent fact {n}")
    writer.get(caller, "i", Scope.COMBINED, agent)
    writer.append(caller, "i", Scope.AGENT, agent, "- the agent's newest")

    fresh = MemoryService(another())
    view = fresh.get(caller, "i", Scope.COMBINED, agent)
    assert (_snapshots(fresh).restores, _snapshots(fresh).rebuilds) == (1, 0)
    built = MemoryService(another())
    built._snapshots = SnapshotCache(built.store, built.kept)  # type: ignore[arg-type]
    assert view.content_markdown == built.get(caller, "i", Scope.COMBINED, agent).content_markdown
    assert "the agent's newest" in view.content_markdown and SECRETISH in view.content_markdown


def test_fresh_readers_racing_a_writer_that_forgets_leave_no_checkpoint_of_forgotten_text(
    stores: tuple[MemoryStore, Callable[[], MemoryStore]],
) -> None:
    """Readers in new processes build and keep checkpoints while another process appends and forgets.

    After each forget, and once everything has stopped, no checkpoint holds a forgotten line; and
    a fresh read is the read built from scratch. Interleavings vary: with the store's stamp check on keeping removed,
    this failed 5 runs of 6; ``test_a_checkpoint_built_before_a_concurrent_forget_is_never_stored``
    is the same race, made to happen every time."""
    import threading

    store, another = stores
    caller = _caller()
    writer = MemoryService(another(), deletion_mode=DeletionMode.IMMEDIATE)
    _large_memory(writer, caller)
    forgotten: list[str] = []
    leaked: list[str] = []
    done = threading.Event()
    failures: list[BaseException] = []

    def write() -> None:
        try:
            for n in range(RACE_ROUNDS):
                line = f"- forgotten line {n}"
                entry_id = writer.append(caller, "i", Scope.USER, None, line).entry_id
                assert entry_id is not None
                writer.append(caller, "i", Scope.USER, None, f"- kept line {n}")
                writer.forget(caller, "i", entry_id)
                forgotten.append(line)
                # At any moment after a forget returns, no checkpoint may show what it erased.
                kept = _checkpoint(store, caller)
                leaked.extend(f for f in forgotten if kept is not None and f in kept.payload)
        except BaseException as error:  # reported by the test thread below
            failures.append(error)
        finally:
            done.set()

    def read() -> None:
        try:
            while not done.is_set():
                reader = MemoryService(another(), deletion_mode=DeletionMode.IMMEDIATE)
                reader.get(caller, "i", Scope.USER, None)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=write), *(threading.Thread(target=read) for _ in range(3))]
    run_switching_often(threads, timeout=120)
    assert not failures and not any(t.is_alive() for t in threads)
    assert len(forgotten) == RACE_ROUNDS and not leaked
    checkpoint = _checkpoint(store, caller)
    assert checkpoint is None or not [line for line in forgotten if line in checkpoint.payload]

    fresh = MemoryService(another())
    view = fresh.get(caller, "i", Scope.USER, None)
    built = MemoryService(another())
    built._snapshots = SnapshotCache(built.store, built.kept)  # type: ignore[arg-type]
    assert view.content_markdown == built.get(caller, "i", Scope.USER, None).content_markdown
    assert f"kept line {RACE_ROUNDS - 1}" in view.content_markdown and "forgotten line" not in view.content_markdown
