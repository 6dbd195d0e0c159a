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

from collections.abc import Sequence

from memory_core.domain.records import Partition, Record, RecordKind, deletions_partition
from memory_core.domain.store import MemoryStore

#: Between a request's time and its id in its key (``DeletionRequest.record_id``).
KEY_SEPARATOR = "~"


def hold_name(record: Record) -> str:
    """The name the holds of the stored deletion request ``record`` go by: its data's ``id`` when that is non-empty
    text, else the part of its key after the last ``~`` (the whole key when it has none)."""
    stored = record.data.get("id")
    return stored if isinstance(stored, str) and stored else record.id.rpartition(KEY_SEPARATOR)[2]


def request_stored(store: MemoryStore, instance_id: str, name: str) -> bool:
    """Whether a deletion request whose holds go by ``name`` (``hold_name``) is stored in the instance
    (``names_stored``). Raises what the store raises."""
    return name in names_stored(store, instance_id, [name])


def names_stored(store: MemoryStore, instance_id: str, names: Sequence[str]) -> set[str]:
    """Those of ``names`` a stored deletion request of the instance goes by (``hold_name``). One query a hundred names
    for the requests whose data names one (``MemoryStore.page_records``' ``where_in``, indexed on both stores:
    SQLite's ``deletion_requests_by_id``, Cosmos DB's ``/data/*``); for the names none answers, a point read each for
    a request keyed by the whole name, and one query a hundred names for those keyed ``…~name`` (``key_suffixes``:
    it compares the instance's request keys, not their data), of which only one naming no text id counts (one naming
    another id is that id's). Raises what the store raises."""
    partition = deletions_partition(instance_id)
    wanted = sorted(set(names))
    found: set[str] = set()
    for at in range(0, len(wanted), _NAMES_PER_QUERY):
        batch = wanted[at:at + _NAMES_PER_QUERY]
        found.update(_names_of_requests(store, partition, batch, where_in=("id", batch)))
    # The part of a key after its last "~" holds none, and a hold's name is never empty.
    left = [name for name in wanted if name not in found and name and KEY_SEPARATOR not in name]
    for name in left:  # a key with no "~" at all
        whole = store.get_record(partition, RecordKind.DELETION_REQUEST, name)
        if whole is not None and hold_name(whole) == name:
            found.add(name)
    left = [name for name in left if name not in found]
    for at in range(0, len(left), _NAMES_PER_QUERY):
        batch = left[at:at + _NAMES_PER_QUERY]
        found.update(_names_of_requests(store, partition, batch,
                                        key_suffixes=[KEY_SEPARATOR + name for name in batch]))
    return found


def _names_of_requests(store: MemoryStore, partition: Partition, names: Sequence[str], *,
                       where_in: tuple[str, Sequence[str]] | None = None,
                       key_suffixes: Sequence[str] | None = None) -> set[str]:
    """Those of ``names`` that the partition's deletion requests ``page_records`` answers for the filter go by,
    read ``_REQUESTS_PER_READ`` at a time (the filter may answer requests that go by another name: a key ending in
    ``~name`` whose data names another id, or a data id a store compares loosely)."""
    wanted = set(names)
    found: set[str] = set()
    after: str | None = None
    while True:
        requests = store.page_records(partition, RecordKind.DELETION_REQUEST, limit=_REQUESTS_PER_READ, after=after,
                                      where_in=where_in, key_suffixes=key_suffixes)
        found.update(name for name in map(hold_name, requests) if name in wanted)
        if len(requests) < _REQUESTS_PER_READ:
            return found
        after = requests[-1].id


#: Names one query compares (the stores take up to 100 values or key suffixes).
_NAMES_PER_QUERY = 100
#: Requests a filter's query reads at once: one per name in this release's layout.
_REQUESTS_PER_READ = 200
