"""The Cosmos store's stamp item (adapters/cosmos_stamp_item.py): its id, its fields, how one stamp follows another.

No server: the item is a plain document. What the batches that move it guarantee is
tests/adapters/test_cosmos_stamps.py's.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from memory_core.adapters.cosmos_stamp_item import UNKNOWN, StoredStamp, checkpoint_item_id, stamp_item_id

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
    stamp = StoredStamp(9, 2, 2, "e1").moved(0, erases_checkpoint=True, clear=(USER, T0))
    marked = stamp.marked()
    assert (marked.stamp, marked.sequence, marked.clears, marked.checkpointed, marked.etag) == (
        stamp.stamp, stamp.sequence, stamp.clears, True, None)


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
