"""The Cosmos store's stamp item (adapters/cosmos_stamp_item.py): its id, its fields, how one stamp follows another.

No server: the item is a plain document. What the batches that move it guarantee is
tests/adapters/test_cosmos_stamps.py's.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.adapters.cosmos_stamp_item import (
    ERASED_CHARS,
    ERASED_KEPT,
    SEALS_KEPT,
    UNKNOWN,
    StoredStamp,
    checkpoint_item_id,
    stamp_item_id,
)

T0 = datetime(2026, 1, 2, tzinfo=UTC)
T1 = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
USER = "memory:user:alex%40contoso.com"
AGENT = "memory:agent:alex%40contoso.com:" + "a" * 32


def test_the_item_reads_back_as_the_stamp_it_was_written_from() -> None:
    stamp = StoredStamp(7, 3, 5, checkpointed=True, clears=((AGENT, T1.isoformat()), (USER, T0.isoformat())))
    item = json.loads(json.dumps(stamp.item("inst", "alex@contoso.com")))  # as stored: plain JSON
    assert item["id"] == stamp_item_id("alex@contoso.com")
    assert (item["type"], item["instance_id"], item["upn"]) == ("stamp", "inst", "alex@contoso.com")
    assert StoredStamp.from_item({**item, "_etag": "e1"}) == StoredStamp(7, 3, 5, "e1", True, stamp.clears)


def test_seals_read_back_and_only_a_stamp_that_sealed_carries_them() -> None:
    sealed = StoredStamp(7, 3, 5).sealed((USER, T0))
    for n in range(SEALS_KEPT):
        sealed = sealed.sealed((f"{AGENT}{n}", T1 + timedelta(seconds=n)))
    item = json.loads(json.dumps(sealed.item("inst", "~shared")))
    assert StoredStamp.from_item(item) == sealed
    assert (item["seal_floor"], len(item["seals"])) == (T0.isoformat(), SEALS_KEPT)
    assert "seals" not in StoredStamp(7, 3, 5).item("inst", "alex@contoso.com")


def test_an_item_from_before_the_checkpoint_flag_and_the_watermarks_has_neither() -> None:
    read = StoredStamp.from_item({"changes": 2, "inserts": 1, "sequence": 1})
    assert (read.checkpointed, read.clears, read.cleared_on(USER)) == (False, (), None)


def test_a_write_counts_a_change_and_hands_out_the_next_sequences() -> None:
    moved = StoredStamp(10, 4, 4).moved(3, erases_checkpoint=False)
    assert (moved.changes, moved.inserts, moved.sequence, moved.etag) == (11, 7, 7, None)
    # the entries of that write took 5, 6 and 7: the sequences after the one the stamp held
    assert moved.sequence - 3 + 1 == 5


def test_the_checkpoint_flag_goes_only_with_a_write_that_erases_the_checkpoint() -> None:
    flagged = StoredStamp(1, 0, 0, checkpointed=True)
    assert flagged.moved(1, erases_checkpoint=False).checkpointed
    assert not flagged.moved(0, erases_checkpoint=True).checkpointed
    assert not StoredStamp(1, 0, 0).moved(1, erases_checkpoint=False).checkpointed


def test_a_clear_replaces_its_profiles_watermark_and_keeps_the_others() -> None:
    stamp = StoredStamp(1, 0, 0).moved(0, erases_checkpoint=True, clear=(USER, T0))
    stamp = stamp.moved(0, erases_checkpoint=True, clear=(AGENT, T0))
    stamp = stamp.moved(0, erases_checkpoint=True, clear=(USER, T1))
    assert (stamp.cleared_on(USER), stamp.cleared_on(AGENT), stamp.cleared_on("memory:user:other")) == (T1, T0, None)
    assert stamp.moved(2, erases_checkpoint=False).clears == stamp.clears


def test_a_checkpoints_write_marks_the_stamp_and_changes_nothing_else() -> None:
    stamp = StoredStamp(9, 2, 2, "e1").moved(0, erases_checkpoint=True, clear=(USER, T0)).sealed((AGENT, T1))
    marked = stamp.marked()
    assert (marked.stamp, marked.sequence, marked.clears, marked.checkpointed, marked.etag) == (
        stamp.stamp, stamp.sequence, stamp.clears, True, None)
    assert (marked.seals, marked.seal_floor) == (stamp.seals, stamp.seal_floor)


def test_a_purges_seal_of_the_partition_never_moves_back_and_every_later_stamp_keeps_it() -> None:
    """``partition_sealed`` (``seal_partition``): the later watermark holds, each stamp that follows carries it, and
    it reads back from the item as stored; a stamp never sealed writes no such field (its size stays as before)."""
    assert "partition_seal" not in StoredStamp(1, 0, 0).item("inst", "alex@contoso.com")
    sealed = StoredStamp(1, 0, 0, "e1").partition_sealed(T1).partition_sealed(T0)
    assert (sealed.partition_sealed_on, sealed.etag) == (T1, None)
    for later in (sealed.moved(1, erases_checkpoint=False, clear=(USER, T0)), sealed.marked(), sealed.sealed((AGENT, T0))):
        assert later.partition_sealed_on == T1
    item = json.loads(json.dumps(sealed.item("inst", "alex@contoso.com")))
    assert StoredStamp.from_item(item).partition_sealed_on == T1


# -- seals of team copies: bounded, never lowered ---------------------------------------------------


def test_a_seal_keeps_its_later_watermark_and_moves_no_count() -> None:
    stamp = StoredStamp(4, 2, 2, "e1", checkpointed=True).sealed((USER, T1)).sealed((USER, T0))
    assert (stamp.sealed_on(USER), stamp.sealed_on(AGENT)) == (T1, None)
    assert (stamp.stamp, stamp.sequence, stamp.checkpointed, stamp.etag, stamp.clears) == (
        StoredStamp(4, 2, 2).stamp, 2, True, None, ())
    assert stamp.moved(1, erases_checkpoint=False).seals == stamp.seals  # an ordinary write keeps them


def test_many_sources_keep_the_newest_by_name_and_fold_the_rest_into_a_floor_that_covers_every_source() -> None:
    """However many authors clear, the stamp names at most ``SEALS_KEPT``; no source's copy is refused less."""
    stamp = StoredStamp(1, 0, 0)
    sealed = {f"memory:user:author{n}": T0 + timedelta(seconds=n) for n in range(50)}
    for source, watermark in sealed.items():
        stamp = stamp.sealed((source, watermark))
        assert len(stamp.seals) <= SEALS_KEPT
    assert all(stamp.sealed_on(source) >= at for source, at in sealed.items())  # type: ignore[operator]
    assert stamp.seal_floor == (T0 + timedelta(seconds=50 - SEALS_KEPT - 1)).isoformat()
    newest = [f"memory:user:author{n}" for n in range(50 - SEALS_KEPT, 50)]
    assert [s for s, _ in stamp.seals] == sorted(newest)
    assert stamp.sealed_on("memory:user:never-cleared") == T0 + timedelta(seconds=50 - SEALS_KEPT - 1)


def test_a_seal_the_floor_covers_is_not_named_and_a_later_one_is() -> None:
    stamp = StoredStamp(1, 0, 0)
    for n in range(SEALS_KEPT + 1):
        stamp = stamp.sealed((f"memory:user:author{n}", T1 + timedelta(seconds=n)))
    assert stamp.sealed((USER, T0)) == stamp  # a replayed old seal: the floor already covers it
    again = stamp.sealed(("memory:user:author0", T1 + timedelta(hours=1)))  # folded once, sealed again later
    assert again.sealed_on("memory:user:author0") == T1 + timedelta(hours=1)
    assert len(again.seals) == SEALS_KEPT and again.seal_floor == (T1 + timedelta(seconds=1)).isoformat()


def test_a_seal_stored_among_the_watermarks_before_seals_had_their_own_field_still_holds() -> None:
    legacy = StoredStamp(1, 0, 0, clears=((USER, T1.isoformat()),))
    assert legacy.sealed_on(USER) == T1
    assert legacy.sealed((USER, T0)).sealed_on(USER) == T1


def test_the_floor_is_no_named_seal_of_a_source_that_never_sealed() -> None:
    stamp = StoredStamp(1, 0, 0)
    for n in range(SEALS_KEPT + 1):
        stamp = stamp.sealed((f"memory:user:author{n}", T1 + timedelta(seconds=n)))
    assert (stamp.named_seal(USER), stamp.sealed_on(USER), stamp.floor) == (None, T1, T1)
    assert stamp.named_seal("memory:user:author4") == T1 + timedelta(seconds=4)


def test_seals_stored_among_the_watermarks_before_seals_had_their_own_field_are_folded_by_the_next_seal() -> None:
    """A stamp the previous release grew keeps one legacy seal per author in ``clears``: the next seal moves them
    into ``seals`` and folds them as any other, so it shrinks under 1 KB; the shared partition's own profiles'
    watermarks stay, and no source's seal moves back."""
    own = ("memory:user:~shared", T0.isoformat()), ("memory:agent:~shared:" + "b" * 32, T0.isoformat())
    legacy = {f"memory:agent:author{n}%40x.com:" + "c" * 32: T0 + timedelta(seconds=n) for n in range(200)}
    grown = StoredStamp(1, 0, 0, clears=tuple(sorted((*own, *((s, w.isoformat()) for s, w in legacy.items())))))
    assert len(json.dumps(grown.item("inst", "~shared"))) > 19_000

    stamp = grown.sealed((USER, T0 + timedelta(seconds=1)))  # a seal the legacy ones already cover: moves them too
    assert stamp.clears == tuple(sorted(own))
    assert len(stamp.seals) == SEALS_KEPT and stamp.floor == T0 + timedelta(seconds=199 - SEALS_KEPT)
    assert all(stamp.sealed_on(source) >= at for source, at in legacy.items())  # type: ignore[operator]
    assert stamp.named_seal("memory:agent:author199%40x.com:" + "c" * 32) == T0 + timedelta(seconds=199)
    assert stamp.cleared_on("memory:user:~shared") == T0  # the shared scope's own watermark, not a seal
    assert len(json.dumps(stamp.item("inst", "~shared"))) < 1024
    assert stamp.sealed((USER, T0)) == stamp  # nothing left to move: an old seal again changes nothing


def test_a_new_stamp_counts_from_the_clock_so_a_stamp_made_again_matches_no_earlier_one() -> None:
    earlier = StoredStamp.new()
    time.sleep(0.001)
    again = StoredStamp.new()  # the item erased and created anew: its counts start over from the clock
    assert (again.inserts, again.sequence) == (0, 0)
    assert again.changes > earlier.changes and again.stamp != earlier.stamp
    assert UNKNOWN not in (earlier.stamp, again.stamp)


def test_ids_are_per_owner_and_the_checkpoint_shares_the_stamps_digest() -> None:
    assert stamp_item_id("a@contoso.com") != stamp_item_id("b@contoso.com")
    assert stamp_item_id("a@contoso.com").removeprefix("stamp:") == checkpoint_item_id("a@contoso.com").removeprefix(
        "checkpoint:")


# -- the log of erased entries (``erasures``, ``erased``) ----------------------------------------------------------


def _ids(n: int, tag: str = "e") -> list[str]:
    return [f"{tag}{i:031d}" for i in range(n)]  # 32 characters, as the service's ids


def test_a_write_logs_the_ids_it_erases_and_a_mark_reads_those_erased_since() -> None:
    first = StoredStamp.new().moved(0, erases_checkpoint=True, erased=["a", "b"])
    mark = first.erasures
    assert mark is not None and first.erased_since(mark) == frozenset()
    later = first.moved(2, erases_checkpoint=False).moved(0, erases_checkpoint=True, erased=["c"])
    assert later.erased_since(mark) == {"c"} and later.erased_since(mark - 2) == {"a", "b", "c"}
    item = json.loads(json.dumps(later.item("inst", "alex@contoso.com")))
    assert StoredStamp.from_item(item) == later


def test_a_mark_older_than_the_ids_kept_is_not_answered() -> None:
    stamp = StoredStamp.new()
    mark = stamp.erasures
    assert mark is not None
    stamp = stamp.moved(0, erases_checkpoint=True, erased=_ids(ERASED_KEPT))
    assert stamp.erased_since(mark) == set(_ids(ERASED_KEPT))
    stamp = stamp.moved(0, erases_checkpoint=True, erased=["one more"])
    assert len(stamp.erased) == ERASED_KEPT and stamp.erased[-1] == "one more"
    assert stamp.erased_since(mark) is None  # its first erasure is no longer kept: the reader lists instead
    assert stamp.erased_since(mark + 1) == {*_ids(ERASED_KEPT)[1:], "one more"}
    assert stamp.erased_since(stamp.erasures + 1) is None  # type: ignore[operator]  # a mark of no erasure yet


def test_long_ids_are_kept_within_the_character_bound() -> None:
    long = [f"{n:03d}" + "x" * 252 for n in range(40)]  # the longest ids Cosmos DB takes
    stamp = StoredStamp.new().moved(0, erases_checkpoint=True, erased=long)
    assert sum(map(len, stamp.erased)) <= ERASED_CHARS and stamp.erased == tuple(long[-len(stamp.erased):])
    assert len(stamp.erased) == ERASED_CHARS // 255


def test_a_stamp_from_before_the_log_answers_no_mark_until_its_next_write_starts_one_from_the_clock() -> None:
    old = StoredStamp.from_item({"changes": 9, "inserts": 2, "sequence": 2})
    assert old.erasures is None and old.erased_since(9) is None and "erasures" not in old.item("i", "o")
    started = time.time_ns() // 1000
    moved = old.moved(1, erases_checkpoint=False)
    assert moved.erasures is not None and moved.erasures >= started  # as a new stamp's, never from ``changes``
    assert moved.erased_since(moved.erasures) == frozenset() and moved.erased_since(9) is None


@pytest.mark.parametrize("first_batch", [2, 5, 98])  # 98: the most entries one batch erases besides the stamp
def test_a_count_an_older_release_dropped_starts_again_above_every_mark_a_reader_holds(first_batch: int) -> None:
    """A rolling upgrade: a release without the log (the CoreAPI app, say, while the MCP host runs this one) erases an
    entry and rewrites the stamp without ``erasures`` and ``erased``. A batch erases up to ~98 entries, so the count it
    dropped ran ahead of ``changes``; had this release's next write started the count again from ``changes``, a
    reader's mark would fall inside the new log and be answered with a set missing that release's erasure, and the
    memory tool would go on showing the entry. Every mark taken before answers None: the reader lists what is
    stored (``CosmosKeptReads.load_erased`` falls back to ``load_present``)."""
    stamp = StoredStamp.new().moved(0, erases_checkpoint=True, erased=_ids(first_batch))
    marks = range(stamp.erasures - first_batch, stamp.erasures + 1)  # type: ignore[operator]  # any a reader holds
    item = stamp.item("inst", "alex@contoso.com")
    item["changes"] += 1  # the older release erases entry "b" and writes the stamp as it knows it
    del item["erasures"], item["erased"]
    older = StoredStamp.from_item({**item, "_etag": "x"})
    assert older.erasures is None and all(older.erased_since(mark) is None for mark in marks)
    time.sleep(0.001)  # each write is a round trip to the account, far longer than 98 microseconds

    restarted = older.moved(0, erases_checkpoint=True, erased=["c1", "c2", "c3"])  # this release erases three

    assert all(restarted.erased_since(mark) is None for mark in marks)
    assert restarted.erased_since(restarted.erasures - 3) == {"c1", "c2", "c3"}  # type: ignore[operator]
    later = restarted.moved(0, erases_checkpoint=True, erased=["d"])  # and the count goes on from there
    assert later.erased_since(restarted.erasures) == {"d"}  # type: ignore[arg-type]
    assert all(later.erased_since(mark) is None for mark in marks)


def test_a_stamp_made_again_does_not_answer_a_mark_of_the_one_erased() -> None:
    earlier = StoredStamp.new().moved(0, erases_checkpoint=True, erased=_ids(3))
    time.sleep(0.001)
    again = StoredStamp.new().moved(0, erases_checkpoint=True, erased=_ids(3, "f"))
    assert again.erased_since(earlier.erasures) is None  # type: ignore[arg-type]


def test_seals_watermarks_and_the_checkpoint_flag_are_kept_by_an_erasure_and_the_log_by_every_other_write() -> None:
    stamp = (StoredStamp(9, 2, 2, checkpointed=True).moved(0, erases_checkpoint=False, clear=(USER, T0))
             .sealed((AGENT, T1)).partition_sealed(T1))
    erased = stamp.moved(0, erases_checkpoint=True, erased=["a"])
    assert (erased.clears, erased.seals, erased.seal_floor, erased.partition_seal) == (
        stamp.clears, stamp.seals, stamp.seal_floor, stamp.partition_seal)
    for after in (erased.marked(), erased.sealed((f"{AGENT}2", T1)), erased.partition_sealed(T1),
                  erased.moved(1, erases_checkpoint=False, clear=(AGENT, T1))):
        assert (after.erasures, after.erased) == (erased.erasures, erased.erased)


def test_a_full_log_keeps_a_stamp_with_one_watermark_a_1_ru_point_read() -> None:
    """Every read of the partition point-reads the stamp and every write replaces it, and Azure charges both by the
    item's size, 1 RU for a point read up to 1 KB with the system properties a read answers (docs/cosmos.md, "What
    the log costs"): a stamp with one profile's watermark and a full log of the usual ids stays under it. A
    ``~shared`` stamp with every seal it keeps stays under it too, as it keeps no ids (``Stamps.write``)."""
    plain = StoredStamp.new().moved(0, erases_checkpoint=True, clear=(USER, T0))
    full = plain.moved(0, erases_checkpoint=True, erased=_ids(ERASED_KEPT * 2))
    assert len(full.erased) == ERASED_KEPT
    assert len(json.dumps(full.item("inst", "alex@contoso.com"))) + _SYSTEM_PROPERTIES < 1024
    shared = StoredStamp.new()
    for n in range(SEALS_KEPT + 1):
        shared = shared.sealed((f"{AGENT}{n}", T1 + timedelta(seconds=n)))
    shared = shared.moved(0, erases_checkpoint=True, erased=_ids(ERASED_KEPT), keeps=0)
    assert len(json.dumps(shared.item("inst", "~shared"))) + _SYSTEM_PROPERTIES < 1024


_SYSTEM_PROPERTIES = 180
"""What a point read answers beyond the item's own fields (``_rid``, ``_self``, ``_etag``, ``_attachments``, ``_ts``):
180 bytes of the stamp as bench/bench_memory_tool_cosmos.py reads it from the test server."""


def test_a_stamp_that_keeps_no_ids_still_says_whether_anything_was_erased_since_a_mark() -> None:
    """The ``~shared`` partition's stamp (``Stamps.write``): counted, never listed, so it stays under 1 KB."""
    stamp = StoredStamp.new().moved(0, erases_checkpoint=True, erased=["a"], keeps=0)
    mark = stamp.erasures
    assert mark is not None and stamp.erased == () and stamp.erased_since(mark) == frozenset()
    assert stamp.moved(1, erases_checkpoint=False).erased_since(mark) == frozenset()
    assert stamp.moved(0, erases_checkpoint=True, erased=["b"], keeps=0).erased_since(mark) is None
