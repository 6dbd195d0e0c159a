"""The one rule that ties a hold to its deletion request: the name a stored request's holds go by.

A request files its holds under its id (``models.Hold``, named ``request_id`` in its user's partition and in the
team-shared one). A stored request whose data names its id as text is that id's. One whose data names none, or names
it as no text (a later release's layout, a damaged record), is taken to be the request named by the part of its key
after the last ``~`` (this release keys a request ``<time>~<id>``: ``DeletionRequest.record_id``). Dismissals count a
request's standing holds by this name (``dismissals``), and a hold is an orphan only while no stored request goes by
its name (``orphan_holds``): so a request the listing shows as unreadable is never also the one whose holds are
released as orphaned.
"""

from __future__ import annotations

from memory_core.domain.records import Record, RecordKind, deletions_partition
from memory_core.domain.store import MemoryStore

#: Between a request's time and its id in its key (``DeletionRequest.record_id``).
KEY_SEPARATOR = "~"


def hold_name(record: Record) -> str:
    """The name the holds of the stored deletion request ``record`` go by: its data's ``id`` when that is non-empty
    text, else the part of its key after the last ``~`` (the whole key when it has none)."""
    stored = record.data.get("id")
    return stored if isinstance(stored, str) and stored else record.id.rpartition(KEY_SEPARATOR)[2]


def request_stored(store: MemoryStore, instance_id: str, name: str) -> bool:
    """Whether a deletion request whose holds go by ``name`` (``hold_name``) is stored in the instance. Two
    bounded queries and a point read: the request whose data names ``name`` (indexed on both stores), then, when there
    is none, the one keyed ``name`` and those keyed ``…~name`` (``MemoryStore.page_records``' ``key_suffix``), of
    which only one naming no text id counts (one naming another id is that id's). Raises what the store raises."""
    partition = deletions_partition(instance_id)
    if any(hold_name(r) == name for r in store.query_records(partition, RecordKind.DELETION_REQUEST, {"id": name},
                                                            limit=1)):
        return True
    if KEY_SEPARATOR in name or not name:
        return False  # the part of a key after its last "~" holds none, and a hold's name is never empty
    keyed_whole = store.get_record(partition, RecordKind.DELETION_REQUEST, name)  # a key with no "~" at all
    if keyed_whole is not None and hold_name(keyed_whole) == name:
        return True
    after: str | None = None
    while True:
        keyed = store.page_records(partition, RecordKind.DELETION_REQUEST, limit=_KEYED_PER_READ, after=after,
                                   key_suffix=KEY_SEPARATOR + name)
        if any(hold_name(r) == name for r in keyed):
            return True
        if len(keyed) < _KEYED_PER_READ:
            return False
        after = keyed[-1].id


#: Requests keyed ``…~name`` read at once: ids are unique per request, so more than one is a later release's doing.
_KEYED_PER_READ = 20
