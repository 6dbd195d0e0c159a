"""A kept private snapshot holds its entries as columns, not objects (``domain.known_entries``): what
decides whether each shows, and where its section is in the document. These tests try to make such a
snapshot show stale or foreign memory, on every store: after writes, clears, holds and rejections,
replaces, and sharing, by this process and by others, every read of the keeping process is what a
process that keeps nothing loads and renders (``_truth``), and nothing of another user ever shows.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_core.domain.identity import Caller
from memory_core.domain.known_entries import TAIL
from memory_core.domain.models import ProfileKey, Scope, Share
from memory_core.domain.service import DeletionMode, MemoryService, WriteOptions
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import ImportMode, PendingDeletion
from tests.contract.test_memory_file_entries import INSTANCE, _caller
from tests.contract.test_reads_after_erasures import OPERATOR, _reads, _snapshots, _truth


def _get(service: MemoryService, caller: Caller) -> str:
    return service.get(caller, INSTANCE, Scope.USER, None).content_markdown


def _known(service: MemoryService, caller: Caller) -> object:
    """The kept snapshot's ``known`` of the caller's user scope (None when it keeps none)."""
    snapshots = _snapshots(service).peek([ProfileKey(INSTANCE, caller.upn, Scope.USER)], caller.upn)
    return snapshots.scopes[0].known if snapshots is not None else None


def test_erasing_the_newest_entries_one_by_one_past_those_kept_whole_reads_what_a_full_load_shows(
    stores: Callable[[], MemoryStore]
) -> None:
    """The snapshot keeps only its newest ``TAIL`` entries whole (a read's newest entry, its date and
    agent name); erasing more than that, newest first, by another process, must never leave a read
    with an erased entry as its newest, or with an older one's date: it is built again then."""
    reader, writer = MemoryService(stores()), MemoryService(stores(), deletion_mode=DeletionMode.IMMEDIATE)
    caller = _caller()
    ids = [str(writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n}").entry_id) for n in range(TAIL + 6)]
    reader.get(caller, INSTANCE, Scope.USER, None)
    for n, entry_id in enumerate(reversed(ids[2:])):
        writer.forget(caller, INSTANCE, entry_id)
        assert _reads(reader, caller) == _truth(stores, caller), f"after {n + 1} erased"
    assert "fact 1" in _get(reader, caller) and "fact 2" not in _get(reader, caller)
    assert _snapshots(reader).refreshes >= TAIL and _snapshots(reader).rebuilds >= 2


def test_a_replace_hides_the_kept_entries_and_erasing_it_shows_none_of_them_again(
    stores: Callable[[], MemoryStore]
) -> None:
    """An import replace makes its text the whole memory (what came before is cleared): the snapshot
    keeps nothing it could show of what came before, and forgetting the replace leaves the memory
    empty, exactly as a full load renders it. (Entries a replace merely hides, shown again when it
    is erased, are walked in tests/domain/test_known_entries.py.)"""
    reader, writer = MemoryService(stores()), MemoryService(stores(), deletion_mode=DeletionMode.IMMEDIATE)
    caller = _caller()
    for n in range(TAIL + 4):
        writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n} from before the replace")
    assert "fact 3 from before" in _get(reader, caller)
    writer.import_markdown(caller, INSTANCE, Scope.USER, None, "- the new truth", ImportMode.REPLACE)
    (replace,) = writer.entries(caller, INSTANCE, Scope.USER, None)
    assert _reads(reader, caller) == _truth(stores, caller)
    assert "from before the replace" not in _get(reader, caller) and "the new truth" in _get(reader, caller)
    writer.forget(caller, INSTANCE, replace.id)
    assert _reads(reader, caller) == _truth(stores, caller)
    assert _get(reader, caller) == ""
    writer.append(caller, INSTANCE, Scope.USER, None, "- after it all")
    assert _reads(reader, caller) == _truth(stores, caller)
    assert "from before" not in _get(reader, caller) and "after it all" in _get(reader, caller)


@pytest.mark.parametrize("decision", ["reject", "approve"])
def test_a_pending_clear_hides_what_the_snapshot_kept_until_an_operator_decides(
    stores: Callable[[], MemoryStore], decision: str
) -> None:
    """Everything shown becomes hidden (kept as sections); an append during the clear shows alone; a
    rejection shows everything again in order, an approval and the sweep nothing but the new entry."""
    reader = MemoryService(stores())
    writer = MemoryService(stores(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    caller = _caller()
    for n in range(TAIL + 4):
        writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n} under the clear")
    reader.get(caller, INSTANCE, Scope.USER, None)
    pending = writer.clear(caller, INSTANCE, Scope.USER, None, confirm=True)
    assert isinstance(pending, PendingDeletion)
    assert _reads(reader, caller) == _truth(stores, caller) and "under the clear" not in _get(reader, caller)
    writer.append(caller, INSTANCE, Scope.USER, None, "- written while the clear waits")
    assert _reads(reader, caller) == _truth(stores, caller)
    if decision == "reject":
        writer.custody.reject(OPERATOR, INSTANCE, pending.request_id, "kept")
    else:
        writer.custody.approve(OPERATOR, INSTANCE, pending.request_id)
        writer.custody.sweep(instance_id=INSTANCE)
    assert _reads(reader, caller) == _truth(stores, caller)
    shown = _get(reader, caller)
    assert ("fact 5 under the clear" in shown) is (decision == "reject")
    assert shown.index("written while the clear waits") > (shown.find("fact 11 under") if decision == "reject" else -1)


def test_forgets_under_approval_hide_then_erase_kept_entries_and_a_rejection_shows_them_again(
    stores: Callable[[], MemoryStore]
) -> None:
    """A forget under approval is a hold on the entry (visibility decided again); the sweep erases it, a
    rejection shows it again from the section the snapshot kept."""
    reader = MemoryService(stores())
    writer = MemoryService(stores(), deletion_mode=DeletionMode.OPERATOR_APPROVAL)
    caller = _caller()
    ids = [str(writer.append(caller, INSTANCE, Scope.USER, None, f"- fact {n} held").entry_id) for n in range(12)]
    reader.get(caller, INSTANCE, Scope.USER, None)
    requests = []
    for entry_id in (ids[0], ids[5], ids[-1]):
        pending = writer.forget(caller, INSTANCE, entry_id)
        assert isinstance(pending, PendingDeletion)
        requests.append(pending.request_id)
        assert _reads(reader, caller) == _truth(stores, caller)
    assert all(f"fact {n} held" not in _get(reader, caller) for n in (0, 5, 11))
    writer.custody.reject(OPERATOR, INSTANCE, requests[1], "kept")
    writer.custody.approve(OPERATOR, INSTANCE, requests[2])
    writer.custody.sweep(instance_id=INSTANCE)
    assert _reads(reader, caller) == _truth(stores, caller)
    shown = _get(reader, caller)
    assert "fact 5 held" in shown and "fact 0 held" not in shown and "fact 11 held" not in shown


def test_a_compacted_snapshot_never_shows_another_users_memory_and_sharing_shows_only_in_team_reads(
    stores: Callable[[], MemoryStore]
) -> None:
    """Two users' snapshots kept in one process while both write, share, forget and clear: each private
    read is exactly what a full load shows that user, with nothing of the other's, and a team entry
    shows in team reads only for as long as it is stored."""
    reader = MemoryService(stores(), allow_sharing_override=True)
    writer = MemoryService(stores(), deletion_mode=DeletionMode.IMMEDIATE, allow_sharing_override=True)
    alice, bob = _caller(), _caller()
    shared = None
    for n in range(20):
        for user in (alice, bob):
            share = WriteOptions(share=Share.TEAM) if n % 7 == 3 else None
            written = writer.append(user, INSTANCE, Scope.USER, None, f"- {user.upn} private note {n}",
                                    *([share] if share else []))
            if user is bob and share is not None:
                shared = str(written.entry_id)
            if n % 5 == 4:
                writer.forget(user, INSTANCE, str(written.entry_id))
            for viewer, other in ((alice, bob), (bob, alice)):
                private = _get(reader, viewer)
                assert other.upn not in private
                assert private == _truth(stores, viewer)[f"get {Scope.USER}"].content_markdown  # type: ignore[attr-defined]
    team = reader.get(alice, INSTANCE, Scope.USER, None, SharingPolicy.TEAM).content_markdown
    assert f"{bob.upn} private note 17" in team and f"{bob.upn} private note 16" not in team
    assert shared is not None
    writer.forget(bob, INSTANCE, shared)
    writer.clear(bob, INSTANCE, Scope.USER, None, confirm=True)
    assert bob.upn not in reader.get(alice, INSTANCE, Scope.USER, None, SharingPolicy.TEAM).content_markdown
    assert _reads(reader, alice) == _truth(stores, alice) and _reads(reader, bob) == _truth(stores, bob)
    assert _get(reader, bob) == "" and alice.upn in _get(reader, alice)
    assert _known(reader, alice) is not None
