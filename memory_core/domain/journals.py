"""Journals of work a crash can interrupt, and their replay by the sweep.

Work that takes several writes and must not stop half way for good writes a journal record first, in the instance's
deletions partition (where the sweep finds every instance's with one query), and erases it last: an immediate
erasure (``domain.erasures``), the versions a memory-tool command retires (``domain.file_retirements``), a
rejection's lifted holds (``domain.custody``), an operator's dismissal of a request (``domain.dismissals``). The sweep
replays every record that has settled (``SETTLE`` after it was written or last claimed: work under way finishes
itself), claiming it first with a conditional write, so that two sweeps at once (the timer's and an operator's)
replay it once, and a claim a crashed sweep left settles again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from memory_core.domain.errors import Conflict, MemoryCoreError
from memory_core.domain.records import DELETIONS_OWNER, Record, deletions_partition
from memory_core.domain.store import MemoryStore

#: How old a journal record must be before the sweep replays it: work under way takes well under this.
SETTLE = timedelta(minutes=2)

log = logging.getLogger("memory_core.journals")


def replay(
    store: MemoryStore, kind: str, instance_id: str | None, *, clock: Callable[[], datetime],
    wait: Callable[[Record], timedelta], finish: Callable[[Record], object],
) -> int:
    """Replay every settled journal record of ``kind`` (of one instance, or None: every instance): ``finish`` it once
    claimed, handed the record as the claim stored it (its etag the claim's: a write since is someone else's).
    ``wait(record)``: how much longer than ``SETTLE`` it settles (work it names that takes longer). Answers
    how many were finished. One that cannot be read (``wait`` or ``finish`` raising ``KeyError``, ``TypeError``,
    ``ValueError``) or keeps failing (a ``MemoryCoreError``) is logged and left for the next sweep, and holds up
    no other."""
    if instance_id is not None:
        records = store.query_records(deletions_partition(instance_id), kind)
    else:  # the scheduled sweep: every instance, one cross-partition query
        records = store.query_records_of_owner(DELETIONS_OWNER, kind)
    done = 0
    for record in sorted(records, key=lambda r: (str(r.data.get("started_on")), r.id)):
        try:
            now = clock()  # at the claim: an earlier record may have taken minutes
            if now < _settles_on(record) + wait(record):
                continue  # work under way finishes itself
            try:  # marked as replayed from now, on the etag it was read with
                claimed = store.put_record(replace(record, data={**record.data, "claimed_on": now.isoformat()}))
            except Conflict:
                continue  # another sweep claimed it first
            finish(claimed)
        except (MemoryCoreError, KeyError, TypeError, ValueError) as error:
            log.warning("the %s journal %s was left for the next sweep: %r", kind, record.id, error)
            continue
        done += 1
    return done


def _settles_on(record: Record) -> datetime:
    """``SETTLE`` after ``record`` was written or last claimed by a sweep."""
    started = max(datetime.fromisoformat(record.data[name]) for name in ("started_on", "claimed_on")
                  if record.data.get(name))
    return started + SETTLE
