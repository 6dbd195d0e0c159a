"""What a later release of the service may have stored, for tests of how this release reads it.

A deletion request of a kind this release does not know is the one such record today: the sweep cannot read it,
leaves it approved and reports it left (reason ``unreadable``), however it is reached (the store, the operator's
answer, the command line, the timer's log line).
"""

from __future__ import annotations

from datetime import UTC, datetime

from memory_core.domain.models import Hold
from memory_core.domain.records import Partition, Record, RecordKind, deletions_partition
from memory_core.domain.store import MemoryStore
from tests.support.local_server import RunningServer


def put_unreadable_request(store: MemoryStore, instance_id: str, *, status: str = "approved",
                           request_id: str = "from-a-later-release") -> None:
    """Store, in ``instance_id``'s deletion partition, a request of kind ``archive`` (a later release's), with
    ``status`` and ``request_id``, for ``later@contoso.com``: a record this release cannot read as a request."""
    data = {"id": request_id, "instance_id": instance_id, "upn": "later@contoso.com", "kind": "archive",
            "status": status, "requested_by": "op", "requested_on": "2026-01-01T00:00:00+00:00"}
    store.put_record(Record(deletions_partition(instance_id), RecordKind.DELETION_REQUEST,
                            f"2026-01-01T00:00:00.000000Z~{request_id}", data))


def put_unreadable_request_beside(server: RunningServer, instance_id: str, *, status: str = "approved",
                                  request_id: str = "from-a-later-release") -> None:
    """``put_unreadable_request`` into ``server``'s own store, opened beside it and closed again."""
    store = server.open_store()
    try:
        put_unreadable_request(store, instance_id, status=status, request_id=request_id)
    finally:
        store.close()


#: A field ``put_request_beside`` stores as null (None leaves the field out).
STORED_NULL = object()


def put_request_beside(server: RunningServer, instance_id: str, request_id: str, **data: object) -> None:
    """``LATER``'s deletion request record with ``data`` over a readable pending forget's fields, as another release
    would store it (January 2026: it sorts before anything a test writes), into ``server``'s own store opened beside
    it; ``kind="archive"`` (a kind this release does not know) makes it unreadable. A None leaves a field out,
    ``STORED_NULL`` stores null."""
    fields: dict[str, object] = {"id": request_id, "instance_id": instance_id, "upn": LATER, "kind": "forget",
                                 "status": "pending", "requested_by": LATER,
                                 "requested_on": "2026-01-01T00:00:00+00:00"}
    fields.update(data)
    store = server.open_store()
    try:
        store.put_record(Record(deletions_partition(instance_id), RecordKind.DELETION_REQUEST,
                                f"2026-01-01T00:00:00.000000Z~{request_id}",
                                {k: None if v is STORED_NULL else v for k, v in fields.items() if v is not None}))
    finally:
        store.close()


def put_holds_beside(server: RunningServer, instance_id: str, owner: str, *holds: Hold) -> None:
    """``holds`` stored in ``owner``'s partition of ``server``'s own store, opened beside it, under no stored request,
    as a forced dismissal leaves them."""
    store = server.open_store()
    try:
        for hold in holds:
            store.put_record(Record(Partition(instance_id, owner), RecordKind.HOLD, hold.request_id, hold.to_data()))
    finally:
        store.close()


def put_hold_beside(server: RunningServer, instance_id: str, upn: str, request_id: str) -> None:
    """The hold ``request_id`` filed on ``upn``'s memory (standing until 2099), into ``server``'s own store opened
    beside it: what it hides stays hidden while it stands."""
    store = server.open_store()
    try:
        store.put_record(Record(Partition(instance_id, upn), RecordKind.HOLD, request_id,
                                Hold(request_id, None, datetime(2099, 1, 1, tzinfo=UTC)).to_data()))
    finally:
        store.close()


#: A later release's pending request stored as ``<time>~keyed``, its data naming no id as text: missing, a number, an
#: object. Its holds go by ``keyed`` (``hold_requests.hold_name``), as the dismissal counts them.
LATER = "later@contoso.com"
KEYED = "keyed"
KEYED_RECORD = f"2026-01-01T00:00:00.000000Z~{KEYED}"
NO_TEXT_IDS = {"no-id": None, "number-id": 12345, "object-id": {"v": KEYED}}


def put_request_keyed_without_text_id(store: MemoryStore, instance: str, stored_id: object) -> None:
    """``LATER``'s pending request of a later release keyed ``…~keyed`` whose data names ``stored_id`` (None: no
    id), and its hold on ``LATER``'s memory, named ``keyed``."""
    data: dict[str, object] = {"instance_id": instance, "upn": LATER, "kind": "archive", "status": "pending",
                               "requested_by": "op", "requested_on": "2026-01-01T00:00:00+00:00"}
    if stored_id is not None:
        data["id"] = stored_id
    store.put_record(Record(deletions_partition(instance), RecordKind.DELETION_REQUEST, KEYED_RECORD, data))
    store.put_record(Record(Partition(instance, LATER), RecordKind.HOLD, KEYED,
                            Hold(KEYED, None, datetime(2030, 1, 1, tzinfo=UTC)).to_data()))
