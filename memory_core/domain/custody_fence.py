"""The fence a deletion puts around the memory tool while it takes effect.

A clear, an import-replace, a forget or a purge chooses what it covers (a watermark: "entries made up
to now"; a hold naming an entry) and then writes it. A memory-tool edit reads a file, stores a new
version that keeps the old text (an insert, most replacements), then commits the user's file index
under the etag it read. Unfenced, an edit that read before the deletion was written and stored its
version after the deletion chose its watermark carries the covered text past the deletion: the old
version is erased and the copy stays (and retiring the old version erased a held entry at once).

So the deletion first writes a fence into the user's file index record (a conditional write: an
edit that read the index before fails its commit and reads again), takes effect, and lifts the
fence. An edit reads nothing while a live fence stands (``MemoryFiles`` waits for it; a view, which changes
nothing, does not). An edit
that commits therefore committed before the fence - its versions are older than the watermark
chosen after it, or it named the entry a forget then holds - or read after the fence was lifted,
and saw the watermark or the hold.

A fence lasts at most ``LEASE``: one left by a crashed deletion stops holding edits back after
that. A user who never used the memory tool gets an index record at their first deletion (the
fence needs one to stand in); it names no file.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from memory_core.domain.errors import Conflict, MemoryCoreError
from memory_core.domain.file_index import INDEX_ID, INDEX_KIND
from memory_core.domain.records import Partition, Record
from memory_core.domain.store import MemoryStore

#: How long a fence stands at most: a deletion's few writes take far less (the memory tool's own forgets stand one
#: per 20), and edits wait no longer than this for a crashed one.
LEASE = timedelta(seconds=30)
_FENCES = "fences"
_EXCLUSIVE = "exclusive:"  # the key of an exclusive fence, before its name (another's is a bare uuid)
_ATTEMPTS = 8


def fenced_until(data: Mapping[str, Any], now: datetime) -> datetime | None:
    """When the last live fence in an index record's ``data`` ends, or None when none stands at ``now``."""
    ends = [datetime.fromisoformat(until) for until in (data.get(_FENCES) or {}).values()]
    live = [end for end in ends if end > now]
    return max(live) if live else None


def without_fences(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` as an edit commits it: with no fence (an edit commits only when none stood, so any left is one a
    crashed deletion left behind)."""
    return {key: value for key, value in data.items() if key != _FENCES}


def forget_fence(entry_id: str) -> str:
    """The name of the exclusive fence (``fence``) a forget of entry ``entry_id`` stands (``exclusive``, or among the
    ``claims`` of the memory tool's batch of forgets): forgets of one entry, from any path, run one at a time, so
    each sees what the one before did (its hold, its erasure) and only one is taken, on either store."""
    return f"forget {entry_id}"


class FenceTaken(Conflict):
    """A fence named ``exclusive`` already stands (another deletion of the same thing is under way); none was
    stood."""

    code = "fence_taken"


@contextlib.contextmanager
def fence(
    store: MemoryStore, instance_id: str, upn: str, *, clock: Callable[[], datetime], exclusive: str | None = None,
    claims: Collection[str] = (),
) -> Iterator[frozenset[str]]:
    """Stand a fence in ``upn``'s file index for the ``with`` block: choose and write the deletion inside it.

    Fences of one user do not exclude each other, except those named alike by ``exclusive`` (say, a forget of one
    entry): while one stands (for its lease at most), another raises ``FenceTaken``, so what the first chose and
    wrote (a hold, an erasure) is what the second reads once it stands.

    ``claims``: names this fence stands as ``exclusive`` ones too, each where no fence so named stands (a batch of
    forgets, one name each; not with ``exclusive``). The block gets the names it could not claim: another deletion of those is under way,
    and the block leaves them to it (it gets the empty set otherwise, and without ``claims``).

    Raises ``Conflict`` when the index kept changing (8 races) and the store's errors, before the block runs.
    Lifting the fence afterwards never raises: a fence that could not be lifted ends with its lease.
    """
    partition = Partition(instance_id, upn)
    # Not the service's ids (tests that fix those count them); an exclusive fence is known by its name.
    named = [exclusive] if exclusive is not None else list(dict.fromkeys(claims))
    own = uuid.uuid4().hex  # the key of a fence that claims no name
    stood: list[str] = []  # the keys this fence stands, as its last (written) attempt chose them
    taken: set[str] = set()

    def stand(data: dict[str, Any]) -> dict[str, Any] | None:
        now = clock()
        fences = {key: until for key, until in (data.get(_FENCES) or {}).items()
                  if datetime.fromisoformat(until) > now}  # a crashed deletion's: over, dropped here
        taken.clear()
        taken.update(name for name in named if f"{_EXCLUSIVE}{name}" in fences)
        if exclusive is not None and taken:
            raise FenceTaken(f"another deletion of {exclusive} is under way")
        stood[:] = [f"{_EXCLUSIVE}{name}" for name in named if name not in taken] or [own]
        until = (now + LEASE).isoformat()
        return {**data, _FENCES: {**fences, **dict.fromkeys(stood, until)}}

    def lift(data: dict[str, Any]) -> dict[str, Any] | None:
        fences = dict(data.get(_FENCES) or {})
        lifted = [key for key in stood if fences.pop(key, None) is not None]
        if not lifted:
            return None
        return {**data, _FENCES: fences}

    _rewrite(store, partition, stand, create=True)
    try:
        yield frozenset(taken)
    finally:
        with contextlib.suppress(MemoryCoreError):
            _rewrite(store, partition, lift, create=False)


def _rewrite(
    store: MemoryStore, partition: Partition, change: Callable[[dict[str, Any]], dict[str, Any] | None], *, create: bool
) -> None:
    """Apply ``change`` to the index record under its etag, retried on a race (None from ``change``: nothing to
    write). ``create``: make the record when there is none."""
    for _ in range(_ATTEMPTS):
        record = store.get_record(partition, INDEX_KIND, INDEX_ID)
        if record is None and not create:
            return
        data = change(dict(record.data) if record else {"version": 1})
        if data is None:
            return
        try:
            if record is None:
                store.create_record(Record(partition, INDEX_KIND, INDEX_ID, data))
            else:
                store.put_record(Record(partition, INDEX_KIND, INDEX_ID, data, record.etag))
            return
        except Conflict:
            continue
    raise Conflict("the memory file index kept changing while a deletion was recorded; retry")
