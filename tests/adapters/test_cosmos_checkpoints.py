"""The Cosmos store's read checkpoints (adapters/cosmos_checkpoints.py): a fresh process's first read of a
large memory starts from one, and none outlives a write that is not an entry added.

A checkpoint holds rendered memory text, so the custody cases look for the erased text in every
item of the partition as stored (checkpoint payloads decompressed), not only through the store.
The real SDK against the Cosmos test server; "another process" is a second store with its own
client and caches. The test server applies a batch operation by operation without rollback
(docs/cosmos.md), so the all-or-nothing of a checkpoint's batch is Cosmos DB's guarantee, not
exercised here; the one consequence there (a stamp flagged while its checkpoint item is missing)
has its own case below.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

from memory_core.adapters.cosmos_calls import Calls
from memory_core.adapters.cosmos_checkpoints import CHECKPOINT, KEPT_PER_PARTITION, MAX_ITEM_BYTES
from memory_core.adapters.cosmos_stamp_item import checkpoint_item_id, stamp_item_id
from memory_core.adapters.cosmos_store import CosmosMemoryStore
from memory_core.domain.checkpoints import ReadCheckpoints, StoredCheckpoint, encode, read_key
from memory_core.domain.identity import AgentContext, Caller
from memory_core.domain.models import MemoryEntry, MemoryProfile, ProfileKey, Scope
from memory_core.domain.service import MemoryService
from memory_core.domain.snapshots import PartitionStamp, ScopeSnapshot, SnapshotCache, Snapshots
from memory_core.domain.views import DeletionMode, ImportMode, PendingDeletion
from tests.adapters.cosmos_support import cosmos_store, raw_container
from tests.support.cosmos_server import CosmosServer
from tests.support.seeding import make_entries, seed

ALEX = Caller(upn="alex@contoso.com", name="Alex")
SECRET = "- the forgotten fact: Alex's locker code is 4417"
LARGE = 300  # entries: past CHECKPOINT_MIN_SECTIONS (256), so a read leaves a checkpoint


@pytest.fixture
def instance(stores: list[CosmosMemoryStore]) -> Iterator[str]:
    """A fresh instance; its entries and profiles are erased afterwards (the test server scans every
    item for every query, so seeded memories left behind would slow the rest of the suite)."""
    name = f"ckpt-{uuid.uuid4().hex[:8]}"
    yield name
    for state in stores[2].load_partition(name, ALEX.upn):
        stores[2].delete_entries(state.key, [e.id for e in state.entries])
        stores[2].delete_profile(state.key)


def _user(instance: str) -> ProfileKey:
    return ProfileKey(instance, ALEX.upn, Scope.USER)


def _large_memory(store: CosmosMemoryStore, account: CosmosServer, instance: str, count: int = LARGE) -> MemoryEntry:
    """``count`` entries in Alex's user scope, one of them ``SECRET``; answers that one."""
    entries = make_entries(_user(instance), count)
    secret = replace(entries[count // 2], content_markdown=SECRET)
    entries[count // 2] = secret
    seed(store, entries, account)
    return secret


def _user_read_key(instance: str) -> str:
    return read_key([_user(instance)], ALEX.upn)


def _items(account: CosmosServer, instance: str) -> list[dict[str, Any]]:
    """Every item of the instance, as stored: Alex's partition, the shared one, the deletion requests'."""
    with raw_container(account) as container:
        return list(container.query_items(
            "SELECT * FROM c WHERE c.instance_id = @i", parameters=[{"name": "@i", "value": instance}],
            enable_cross_partition_query=True))


def _text_of(item: dict[str, Any]) -> str:
    """The item as JSON, with a checkpoint's payloads decompressed (their text is what custody cares about)."""
    text = json.dumps(item, ensure_ascii=False)
    if item.get("type") == CHECKPOINT:
        text += "".join(zlib.decompress(base64.b64decode(r["payload"])).decode() for r in item["reads"].values())
    return text


def _holding(account: CosmosServer, instance: str, text: str) -> list[str]:
    """The types (a record: its kind) of the instance's items that hold ``text``."""
    return sorted(str(i.get("record_kind") or i["type"]) for i in _items(account, instance) if text in _text_of(i))


def _checkpoint_item(account: CosmosServer, instance: str) -> dict[str, Any] | None:
    with raw_container(account) as container:
        found = list(container.query_items(
            "SELECT * FROM c WHERE c.instance_id = @i AND c.upn = @u AND c.id = @id",
            parameters=[{"name": "@i", "value": instance}, {"name": "@u", "value": ALEX.upn},
                        {"name": "@id", "value": checkpoint_item_id(ALEX.upn)}],
            partition_key=[instance, ALEX.upn]))
    return found[0] if found else None


def _stamp_item(account: CosmosServer, instance: str) -> dict[str, Any]:
    with raw_container(account) as container:
        item: dict[str, Any] = container.read_item(stamp_item_id(ALEX.upn), partition_key=[instance, ALEX.upn])
    return item


def _snapshots(service: MemoryService) -> SnapshotCache:
    assert service._snapshots is not None
    return service._snapshots


def _from_scratch(store: CosmosMemoryStore, instance: str, mode: DeletionMode = DeletionMode.IMMEDIATE) -> str:
    """The user document as a service that never uses checkpoints builds it."""
    service = MemoryService(store, deletion_mode=mode)
    service._snapshots = SnapshotCache(store, service.kept)
    return service.get(ALEX, instance, Scope.USER, None).content_markdown


@contextmanager
def _batch_sizes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The number of operations of every transactional batch sent inside the block (any store)."""
    sizes: list[int] = []
    original = Calls.execute_batch

    def counted(self: Calls, operations: Any, pk: list[str]) -> list[dict[str, Any]]:
        sizes.append(len(operations))
        return original(self, operations, pk)

    with monkeypatch.context() as patch:
        patch.setattr(Calls, "execute_batch", counted)
        yield sizes


# -- the store: keep and read ------------------------------------------------------------------


def test_the_store_keeps_checkpoints(stores: list[CosmosMemoryStore]) -> None:
    assert isinstance(stores[0], ReadCheckpoints)


def test_a_checkpoint_kept_at_the_current_stamp_reads_back_from_another_process(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str
) -> None:
    store, other = stores[0], stores[1]
    store.append(*_first(instance))
    now = store.partition_stamp(instance, ALEX.upn)
    payload = '{"any": "text ünïcödé"}' * 1000
    assert store.keep_checkpoint(instance, ALEX.upn, "k", StoredCheckpoint(now, payload))
    assert store.read_checkpoint(instance, ALEX.upn, "k") == StoredCheckpoint(now, payload)  # right after its check
    assert other.read_checkpoint(instance, ALEX.upn, "k") == StoredCheckpoint(now, payload)
    assert other.read_checkpoint(instance, ALEX.upn, "another read") is None
    assert other.read_checkpoint(instance, "bea@contoso.com", "k") is None
    stored = _checkpoint_item(cosmos_account, instance)
    assert stored is not None and len(json.dumps(stored)) < len(payload) / 10  # compressed
    assert _stamp_item(cosmos_account, instance)["checkpointed"] is True
    assert other.partition_stamp(instance, ALEX.upn) == now  # the stamp's counters are unchanged


def _first(instance: str) -> tuple[MemoryProfile, MemoryEntry]:
    """A profile of Alex's user scope and an entry of it, for the store's ``append``."""
    entry = make_entries(_user(instance), 1)[0]
    return MemoryProfile(entry.key, "Alex", "alex", None, entry.created_on, entry.created_on), entry


def test_a_checkpoint_is_refused_when_an_append_moved_the_stamp_since_it_was_built(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str
) -> None:
    store = stores[0]
    store.append(*_first(instance))
    built_at = store.partition_stamp(instance, ALEX.upn)
    stores[1].append(*_first(instance))  # another process, after the build
    assert not store.keep_checkpoint(instance, ALEX.upn, "k", StoredCheckpoint(built_at, "{}"))
    assert _checkpoint_item(cosmos_account, instance) is None
    assert not store.keep_checkpoint(instance, ALEX.upn, "k", StoredCheckpoint(PartitionStamp(-1, -1), "{}"))
    assert not store.keep_checkpoint(f"{instance}-none", ALEX.upn, "k", StoredCheckpoint(built_at, "{}"))


def test_a_checkpoint_built_before_a_concurrent_forget_is_never_stored(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str
) -> None:
    """The race custody cares about: a real payload built at stamp S, another process forgets an entry
    it shows, then the keep: refused, and the forgotten text is stored nowhere."""
    store = stores[0]
    secret = _large_memory(store, cosmos_account, instance, count=5)
    loaded = store.load_since([_user(instance)], None)
    built = Snapshots(loaded.stamp, loaded.sequence, tuple(ScopeSnapshot.build(s, ALEX.upn) for s in loaded.states))
    payload = encode([_user(instance)], built)
    assert SECRET in payload
    MemoryService(stores[1], deletion_mode=DeletionMode.IMMEDIATE).forget(ALEX, instance, secret.id)
    assert not store.keep_checkpoint(instance, ALEX.upn, _user_read_key(instance), StoredCheckpoint(built.stamp, payload))
    assert _checkpoint_item(cosmos_account, instance) is None
    assert _holding(cosmos_account, instance, SECRET) == []


def test_another_process_checkpoint_written_meanwhile_does_not_refuse_this_one(
    stores: list[CosmosMemoryStore], instance: str
) -> None:
    """A checkpoint write changes the stamp's etag but not its counters: a process whose remembered
    etag it outdated reads the stamp again and writes, and both reads' checkpoints are kept."""
    one, two = stores[0], stores[1]
    one.append(*_first(instance))
    now = one.partition_stamp(instance, ALEX.upn)
    two.partition_stamp(instance, ALEX.upn)
    assert one.keep_checkpoint(instance, ALEX.upn, "one", StoredCheckpoint(now, "first"))
    assert two.keep_checkpoint(instance, ALEX.upn, "two", StoredCheckpoint(now, "second"))
    assert stores[2].read_checkpoint(instance, ALEX.upn, "one") == StoredCheckpoint(now, "first")
    assert stores[2].read_checkpoint(instance, ALEX.upn, "two") == StoredCheckpoint(now, "second")


def test_a_partition_keeps_its_most_recently_kept_reads(stores: list[CosmosMemoryStore], instance: str) -> None:
    store = stores[0]
    store.append(*_first(instance))
    now = store.partition_stamp(instance, ALEX.upn)
    for n in range(KEPT_PER_PARTITION + 1):
        assert store.keep_checkpoint(instance, ALEX.upn, f"read {n}", StoredCheckpoint(now, f"payload {n}"))
    assert store.keep_checkpoint(instance, ALEX.upn, "read 1", StoredCheckpoint(now, "payload 1 again"))
    kept = {n: stores[1].read_checkpoint(instance, ALEX.upn, f"read {n}") for n in range(KEPT_PER_PARTITION + 1)}
    assert kept[0] is None  # the least recently kept
    assert kept[1] == StoredCheckpoint(now, "payload 1 again")
    assert all(kept[n] == StoredCheckpoint(now, f"payload {n}") for n in range(2, KEPT_PER_PARTITION + 1))


def test_a_checkpoint_too_large_for_an_item_is_refused_and_stores_nothing(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str
) -> None:
    """Random bytes do not compress: 1.2 MB of them, as base64 text, are 1.6 MB once stored, past the bound."""
    store = stores[0]
    store.append(*_first(instance))
    now = store.partition_stamp(instance, ALEX.upn)
    assert store.keep_checkpoint(instance, ALEX.upn, "small", StoredCheckpoint(now, "small"))
    huge = base64.b64encode(os.urandom(1_200_000)).decode()
    assert not store.keep_checkpoint(instance, ALEX.upn, "huge", StoredCheckpoint(now, huge))
    assert stores[1].read_checkpoint(instance, ALEX.upn, "huge") is None
    assert stores[1].read_checkpoint(instance, ALEX.upn, "small") == StoredCheckpoint(now, "small")


def test_a_large_checkpoint_displaces_the_others_rather_than_overflow_the_item(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str
) -> None:
    store = stores[0]
    store.append(*_first(instance))
    now = store.partition_stamp(instance, ALEX.upn)
    halves = [base64.b64encode(os.urandom(600_000)).decode() for _ in range(2)]  # 800 KB each, stored
    assert store.keep_checkpoint(instance, ALEX.upn, "first", StoredCheckpoint(now, halves[0]))
    assert store.keep_checkpoint(instance, ALEX.upn, "second", StoredCheckpoint(now, halves[1]))
    assert stores[1].read_checkpoint(instance, ALEX.upn, "first") is None
    assert stores[1].read_checkpoint(instance, ALEX.upn, "second") == StoredCheckpoint(now, halves[1])
    stored = _checkpoint_item(cosmos_account, instance)
    assert stored is not None and len(json.dumps(stored)) <= MAX_ITEM_BYTES


def test_a_corrupt_or_foreign_checkpoint_is_ignored_and_the_read_built_in_full(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str
) -> None:
    """What the adapter cannot decode reads as no checkpoint; what the domain does not recognise
    (another layout) is built from the store instead. Either way the answer is the full read's."""
    _large_memory(stores[0], cosmos_account, instance)
    MemoryService(stores[0]).get(ALEX, instance, Scope.USER, None)  # leaves a checkpoint
    item = _checkpoint_item(cosmos_account, instance)
    assert item is not None
    key = _user_read_key(instance)
    truth = _from_scratch(stores[2], instance)
    for payload in ("not base64 at all!", base64.b64encode(zlib.compress(b'{"format": 99}')).decode()):
        item["reads"][key]["payload"] = payload
        with raw_container(cosmos_account) as container:
            container.upsert_item({k: v for k, v in item.items() if not k.startswith("_")})
        assert (stores[1].read_checkpoint(instance, ALEX.upn, key) is None) is (payload == "not base64 at all!")
        process = cosmos_store(cosmos_account)
        try:
            fresh = MemoryService(process)
            assert fresh.get(ALEX, instance, Scope.USER, None).content_markdown == truth
            assert (_snapshots(fresh).restores, _snapshots(fresh).rebuilds) == (0, 1)
        finally:
            process.close()


# -- a fresh process starts from the checkpoint ------------------------------------------------


def test_a_fresh_process_restores_a_large_read_from_its_checkpoint_in_three_round_trips(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str
) -> None:
    """Another process's first read: the checkpoint (a point read), the stamp (a point read) and the
    entries added since (a query) instead of every item; its document equals a full build's."""
    writer = MemoryService(stores[0])
    _large_memory(stores[0], cosmos_account, instance)
    with stores[0].measure() as cold_full:
        writer.get(ALEX, instance, Scope.USER, None)  # built in full, and leaves a checkpoint
    for n in range(3):
        writer.append(ALEX, instance, Scope.USER, None, f"- added after the checkpoint {n}")

    fresh = MemoryService(stores[1])
    stores[1].partition_stamp("elsewhere", ALEX.upn)  # the client's first use: the container check
    with stores[1].measure() as restored:
        view = fresh.get(ALEX, instance, Scope.USER, None)
    assert (_snapshots(fresh).restores, _snapshots(fresh).rebuilds) == (1, 0)
    assert view.content_markdown == _from_scratch(stores[2], instance)
    assert "added after the checkpoint 2" in view.content_markdown and SECRET in view.content_markdown
    assert restored.round_trips == 3
    # the checkpoint, the stamp, then the query: the profile, the three added and the stamp again
    assert restored.rows == 1 + 1 + 1 + 3 + 1
    # The first read looked for a checkpoint (none), built the read in full (the stamp, the query of
    # every item) and kept a checkpoint (one batch, the stamp as the load read it).
    assert cold_full.round_trips == 4 and cold_full.rows >= LARGE + 1


def test_a_fresh_process_reading_a_memory_without_a_checkpoint_pays_one_point_read_for_looking(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str
) -> None:
    stores[0].append(*_first(instance))
    fresh = MemoryService(stores[1])
    stores[1].partition_stamp("elsewhere", ALEX.upn)  # the client's first use: the container check
    with stores[1].measure() as cold:
        fresh.get(ALEX, instance, Scope.USER, None)
    assert cold.round_trips == 3  # the checkpoint looked for, the stamp, the query
    assert _checkpoint_item(cosmos_account, instance) is None  # a small memory leaves none


def test_a_read_rebuilt_after_a_forget_does_not_look_for_a_checkpoint_the_stamp_says_is_gone(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str
) -> None:
    """The stamp read that finds the snapshot out of date also says the partition has no checkpoint:
    the rebuild is the stamp and one query, as before checkpoints."""
    secret = _large_memory(stores[0], cosmos_account, instance)
    reader = MemoryService(stores[0])
    reader.get(ALEX, instance, Scope.USER, None)
    MemoryService(stores[1], deletion_mode=DeletionMode.IMMEDIATE).forget(ALEX, instance, secret.id)
    with stores[0].measure() as rebuilt:
        view = reader.get(ALEX, instance, Scope.USER, None)
    assert SECRET not in view.content_markdown
    assert rebuilt.round_trips == 3  # the stamp, the query of every item, the new checkpoint's batch


def test_a_stamp_an_earlier_read_checked_never_says_a_later_read_has_no_checkpoint(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str
) -> None:
    """A read of the agent scope checks the partition's stamp (no checkpoint yet) and loads nothing.
    Another process then keeps a checkpoint of the user read. This process's first user read must
    look for it: the earlier read's check says nothing about what this read finds (it once did,
    within a second on the same thread, and the read was built in full instead)."""
    _large_memory(stores[0], cosmos_account, instance)
    agent = AgentContext("agent-1", "Helper")
    reader = MemoryService(stores[0])
    reader.get(ALEX, instance, Scope.AGENT, agent)
    reader.get(ALEX, instance, Scope.AGENT, agent)  # its snapshot is current: a stamp check, no load
    MemoryService(stores[1]).get(ALEX, instance, Scope.USER, None)  # built in full; keeps a checkpoint
    assert _checkpoint_item(cosmos_account, instance) is not None
    with stores[0].measure() as first:
        view = reader.get(ALEX, instance, Scope.USER, None)
    assert view.content_markdown == _from_scratch(stores[2], instance)
    assert (_snapshots(reader).restores, first.round_trips) == (1, 3)  # the checkpoint, the stamp, the query


# -- custody: erased with what it shows ----------------------------------------------------------


def _forget_now(service: MemoryService, instance: str, entry: MemoryEntry) -> None:
    service.forget(ALEX, instance, entry.id)


def _request_forget(service: MemoryService, instance: str, entry: MemoryEntry) -> PendingDeletion:
    request = service.forget(ALEX, instance, entry.id)
    assert isinstance(request, PendingDeletion)
    return request


def _forget_approved_and_swept(service: MemoryService, instance: str, entry: MemoryEntry) -> None:
    request = _request_forget(service, instance, entry)
    service.custody.approve("op@contoso.com", instance, request.request_id)
    service.custody.sweep(instance_id=instance)


def _clear_now(service: MemoryService, instance: str, entry: MemoryEntry) -> None:
    service.clear(ALEX, instance, Scope.USER, None, confirm=True)


def _clear_approved_and_swept(service: MemoryService, instance: str, entry: MemoryEntry) -> None:
    request = service.clear(ALEX, instance, Scope.USER, None, confirm=True)
    assert isinstance(request, PendingDeletion)
    service.custody.approve("op@contoso.com", instance, request.request_id)
    service.custody.sweep(instance_id=instance)


def _import_replace(service: MemoryService, instance: str, entry: MemoryEntry) -> None:
    service.import_markdown(ALEX, instance, Scope.USER, None, "- a new beginning", ImportMode.REPLACE)


def _purge_approved_and_swept(service: MemoryService, instance: str, entry: MemoryEntry) -> None:
    request = service.custody.request_purge("op@contoso.com", instance, ALEX.upn)
    service.custody.approve("op@contoso.com", instance, request.id)
    service.custody.sweep(instance_id=instance)


def _agent_scope_begun(service: MemoryService, instance: str, entry: MemoryEntry) -> None:
    service.append(ALEX, instance, Scope.AGENT, AgentContext("agent-1", "Helper"), "- for the agent")


ERASED: dict[str, tuple[Callable[[MemoryService, str, MemoryEntry], object], DeletionMode]] = {
    "forget (immediate)": (_forget_now, DeletionMode.IMMEDIATE),
    "forget approved by an operator, then swept": (_forget_approved_and_swept, DeletionMode.OPERATOR_APPROVAL),
    "clear (immediate)": (_clear_now, DeletionMode.IMMEDIATE),
    "clear approved by an operator, then swept": (_clear_approved_and_swept, DeletionMode.OPERATOR_APPROVAL),
    "import replace (immediate)": (_import_replace, DeletionMode.IMMEDIATE),
    "purge (every profile erased), approved and swept": (_purge_approved_and_swept, DeletionMode.OPERATOR_APPROVAL),
}
"""Writes after which the forgotten text must be stored nowhere (audit events keep hashes only)."""

HIDDEN: dict[str, tuple[Callable[[MemoryService, str, MemoryEntry], object], DeletionMode]] = {
    "forget requested (a hold placed)": (_request_forget, DeletionMode.OPERATOR_APPROVAL),
    "another scope begun (a profile created with its first entry)": (_agent_scope_begun, DeletionMode.IMMEDIATE),
}
"""Writes that are not only an entry added but keep the text in its entry: the checkpoint goes."""


def _checkpointed_large_memory(
    stores: list[CosmosMemoryStore], account: CosmosServer, instance: str, mode: DeletionMode,
) -> MemoryEntry:
    secret = _large_memory(stores[0], account, instance)
    MemoryService(stores[0], deletion_mode=mode).get(ALEX, instance, Scope.USER, None)
    assert _holding(account, instance, SECRET) == ["checkpoint", "entry"]
    assert _stamp_item(account, instance)["checkpointed"] is True
    return secret


@pytest.mark.parametrize("write", list(ERASED))
def test_after_an_erasing_write_the_text_is_in_no_item_and_the_checkpoint_is_gone(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str, write: str
) -> None:
    erase, mode = ERASED[write]
    secret = _checkpointed_large_memory(stores, cosmos_account, instance, mode)
    erase(MemoryService(stores[1], deletion_mode=mode), instance, secret)  # another process
    assert _holding(cosmos_account, instance, SECRET) == []
    assert _checkpoint_item(cosmos_account, instance) is None
    assert _stamp_item(cosmos_account, instance)["checkpointed"] is False
    fresh = MemoryService(stores[2], deletion_mode=mode)
    assert SECRET not in fresh.get(ALEX, instance, Scope.USER, None).content_markdown
    assert _snapshots(fresh).restores == 0


@pytest.mark.parametrize("write", list(HIDDEN))
def test_after_a_write_that_is_not_only_an_entry_added_the_checkpoint_is_gone(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str, write: str
) -> None:
    change, mode = HIDDEN[write]
    secret = _checkpointed_large_memory(stores, cosmos_account, instance, mode)
    change(MemoryService(stores[1], deletion_mode=mode), instance, secret)
    assert _holding(cosmos_account, instance, SECRET) == ["entry"]
    assert _checkpoint_item(cosmos_account, instance) is None
    fresh = MemoryService(stores[2], deletion_mode=mode)
    assert fresh.get(ALEX, instance, Scope.USER, None).content_markdown == _from_scratch(stores[2], instance, mode)
    assert _snapshots(fresh).restores == 0


def test_a_hold_lifted_on_rejection_erases_the_checkpoint_built_while_it_hid_the_entry(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str
) -> None:
    """The read under the hold leaves a checkpoint without the entry; the rejection shows the entry
    again, so that checkpoint (which would hide it) goes in the hold's own batch."""
    mode = DeletionMode.OPERATOR_APPROVAL
    secret = _checkpointed_large_memory(stores, cosmos_account, instance, mode)
    writer = MemoryService(stores[1], deletion_mode=mode)
    request = _request_forget(writer, instance, secret)
    MemoryService(stores[0], deletion_mode=mode).get(ALEX, instance, Scope.USER, None)  # a checkpoint under the hold
    assert _checkpoint_item(cosmos_account, instance) is not None
    assert _holding(cosmos_account, instance, SECRET) == ["entry"]
    writer.custody.reject("op@contoso.com", instance, request.request_id, "kept")
    assert _checkpoint_item(cosmos_account, instance) is None
    assert SECRET in MemoryService(stores[2], deletion_mode=mode).get(ALEX, instance, Scope.USER, None).content_markdown


def test_an_append_keeps_the_checkpoint_and_costs_no_extra_operation(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _checkpointed_large_memory(stores, cosmos_account, instance, DeletionMode.IMMEDIATE)
    before = _checkpoint_item(cosmos_account, instance)
    writer = MemoryService(stores[1])
    writer.append(ALEX, instance, Scope.USER, None, "- warming the profile and stamp hints")
    with _batch_sizes(monkeypatch) as sizes:
        writer.append(ALEX, instance, Scope.USER, None, "- one more")
    assert sizes == [4]  # the stamp, the profile read (a profile erased since fails the batch), the entry, its event
    after = _checkpoint_item(cosmos_account, instance)
    assert before is not None and after is not None and after["_etag"] == before["_etag"]
    assert _stamp_item(cosmos_account, instance)["checkpointed"] is True


def test_an_erasing_batch_spends_one_more_operation_when_the_partition_has_a_checkpoint(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same forget with and without a checkpoint: the erasure rides in the forget's own batch."""
    secret = _checkpointed_large_memory(stores, cosmos_account, instance, DeletionMode.IMMEDIATE)
    profile, other = _first(instance)
    stores[1].append(profile, other)
    service = MemoryService(stores[1], deletion_mode=DeletionMode.IMMEDIATE)
    with _batch_sizes(monkeypatch) as with_checkpoint, stores[1].measure() as first:
        service.forget(ALEX, instance, secret.id)
    with _batch_sizes(monkeypatch) as without, stores[1].measure() as second:
        service.forget(ALEX, instance, other.id)
    assert with_checkpoint == [3] and without == [2]  # stamp, checkpoint, entry / stamp, entry
    assert first.round_trips == second.round_trips


def test_a_stamp_flagged_without_its_checkpoint_item_still_lets_every_write_through(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str
) -> None:
    """Should a checkpoint's batch stop after its stamp (the test server does not roll back), the
    flag outlives the item: the next erasing write finds nothing to delete and goes again without it."""
    secret = _checkpointed_large_memory(stores, cosmos_account, instance, DeletionMode.IMMEDIATE)
    with raw_container(cosmos_account) as container:
        container.delete_item(checkpoint_item_id(ALEX.upn), partition_key=[instance, ALEX.upn])
    MemoryService(stores[1], deletion_mode=DeletionMode.IMMEDIATE).forget(ALEX, instance, secret.id)
    assert _holding(cosmos_account, instance, SECRET) == []
    assert _stamp_item(cosmos_account, instance)["checkpointed"] is False


# -- under concurrency ---------------------------------------------------------------------------


def test_checkpoints_kept_while_another_process_forgets_never_hold_a_forgotten_entry(
    stores: list[CosmosMemoryStore], cosmos_account: CosmosServer, instance: str
) -> None:
    """One process forgets entries one by one while two others read as fresh processes do (each read
    a new service: restored from the checkpoint, or built in full and kept). Whatever interleaving,
    no stored checkpoint a reader finds holds an entry forgotten before it looked, every write and
    read gets through, and the last read is the full read's. (The exact race, a checkpoint built
    before a forget and kept after it, is forced above: this one runs them for real.)"""
    entries = make_entries(_user(instance), LARGE, text=lambda n: f"- numbered fact {n:04d} to be forgotten")
    seed(stores[0], entries, cosmos_account)
    doomed = entries[:12]
    forgotten: list[str] = []
    errors: list[BaseException] = []
    leaked: list[str] = []
    looked: list[int] = []  # the number of forgotten entries when a stored checkpoint was looked through
    done = threading.Event()

    def forget() -> None:
        service = MemoryService(stores[0], deletion_mode=DeletionMode.IMMEDIATE)
        try:
            for entry in doomed:
                service.forget(ALEX, instance, entry.id)
                forgotten.append(entry.content_markdown)
        except BaseException as e:  # reported below
            errors.append(e)
        finally:
            done.set()

    def read(store: CosmosMemoryStore) -> None:
        try:
            while not done.is_set():
                MemoryService(store).get(ALEX, instance, Scope.USER, None)
                gone = list(forgotten)  # forgotten before this look at the stored checkpoint
                item = _checkpoint_item(cosmos_account, instance)
                if item is not None:
                    looked.append(len(gone))
                    leaked.extend(text for text in gone if text in _text_of(item))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=forget), *(threading.Thread(target=read, args=(s,)) for s in stores[1:])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and leaked == []
    assert len(forgotten) == len(doomed)
    assert any(0 < n < len(doomed) for n in looked)  # checkpoints were kept between the forgets, not only before
    process = cosmos_store(cosmos_account)
    try:
        document = MemoryService(process).get(ALEX, instance, Scope.USER, None).content_markdown
    finally:
        process.close()
    assert document == _from_scratch(stores[2], instance)
    assert not any(text in document for text in forgotten)
