"""An operator dismisses a stored deletion request this release cannot read (``domain.dismissals``), on both stores.

Before: such a request could be neither approved nor rejected (409 ``unreadable_request``), every sweep left it, and
nothing could remove it. Now its record, and only it, is erased while it is still unreadable, and audited with the
record's id and digest; a readable request, or one a later release rewrote readable meanwhile, is refused and left as
stored, and the holds a dismissed request filed keep hiding what they hid.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_core.adapters.sqlite_store import SqliteMemoryStore
from memory_core.domain.audit import AuditAction
from memory_core.domain.deletion import DeletionRequest, DeletionStatus, read_request
from memory_core.domain.dismissals import KIND as DISMISSAL_KIND
from memory_core.domain.dismissals import LABEL_CHARS, record_sha256
from memory_core.domain.errors import Conflict, NotFound
from memory_core.domain.identity import Caller
from memory_core.domain.models import Hold, Scope
from memory_core.domain.records import DELETIONS_OWNER, Partition, Record, RecordKind, deletions_partition
from memory_core.domain.service import MemoryService
from memory_core.domain.store import MemoryStore
from tests.support.clock import TickingClock
from tests.support.later_release import put_unreadable_request

LATER = "later@contoso.com"
LATER_ID = "from-a-later-release"
LATER_KEY = f"2026-01-01T00:00:00.000000Z~{LATER_ID}"


def _service(store: MemoryStore) -> tuple[MemoryService, str]:
    clock = TickingClock(datetime(2026, 12, 7, 12, 0, tzinfo=UTC), timedelta(microseconds=1))
    return MemoryService(store, clock=clock), f"dismiss-{uuid.uuid4().hex[:8]}"


def _stored(store: MemoryStore, instance: str, record_id: str = LATER_KEY) -> Record | None:
    return store.get_record(deletions_partition(instance), RecordKind.DELETION_REQUEST, record_id)


def test_an_unreadable_request_is_dismissed_and_audited(store: MemoryStore) -> None:
    """Its record is gone from the store and the listing, the sweep leaves nothing, and the user's trail holds a
    ``deletion_dismissed`` event naming the record and the SHA-256 of its data."""
    service, instance = _service(store)
    put_unreadable_request(store, instance, status="approved")
    record = _stored(store, instance)
    assert record is not None
    assert service.custody.sweep("op", instance).left != []  # before: left by every sweep, for good

    dismissed = service.custody.dismiss_unreadable("op", instance, LATER_ID)

    assert (dismissed.request_id, dismissed.upn, dismissed.record_id, dismissed.holds_left) == (
        LATER_ID, LATER, LATER_KEY, 0)
    assert dismissed.record_sha256 == record_sha256(record) and "archive" in dismissed.message
    assert _stored(store, instance) is None
    assert service.custody.page(instance, None, limit=10).unreadable == []
    assert service.custody.sweep("op", instance).left == []
    assert store.query_records(deletions_partition(instance), DISMISSAL_KIND) == []  # its journal closed
    (event,) = [e for e in service.audit_trail(instance, LATER) if e.action is AuditAction.DELETION_DISMISSED]
    assert (event.actor, event.request_id, event.content_sha256) == ("op", LATER_ID, record_sha256(record))
    assert event.detail is not None and LATER_KEY in event.detail and record_sha256(record) in event.detail


def test_a_request_naming_no_valid_user_is_dismissed_by_its_key_and_audited_in_the_deletions_trail(
    store: MemoryStore,
) -> None:
    """A damaged record naming no id and no user: the listing shows its key, the dismissal takes that key, and the
    event goes to the instance's deletions partition (there is no user's trail to keep it in)."""
    service, instance = _service(store)
    store.put_record(Record(deletions_partition(instance), RecordKind.DELETION_REQUEST, "2026-01-01T00:00:00Z~bad",
                            {"upn": 7, "kind": "forget"}))
    (listed,) = service.custody.page(instance, None, limit=10).unreadable
    assert listed.id == "2026-01-01T00:00:00Z~bad"

    dismissed = service.custody.dismiss_unreadable("op", instance, listed.id)

    assert (dismissed.upn, dismissed.holds_left) == (None, 0)
    assert _stored(store, instance, listed.id) is None
    (event,) = service.audit.read(instance, DELETIONS_OWNER)
    assert (event.action, event.request_id) == (AuditAction.DELETION_DISMISSED, listed.id)


def test_a_readable_request_is_refused_and_left_as_stored(store: MemoryStore) -> None:
    """A pending forget this release reads: 409 ``readable_request``, the record unchanged (same etag), still
    pending, its entry still hidden, and no event."""
    service, instance = _service(store)
    caller = Caller("alex@contoso.com")
    service.append(caller, instance, Scope.USER, None, "- a fact")
    (entry,) = service.entries(caller, instance, Scope.USER, None)
    request = service.custody.request_forget("alex@contoso.com", entry)
    before = _stored(store, instance, request.record_id)

    with pytest.raises(Conflict) as refused:
        service.custody.dismiss_unreadable("op", instance, request.id)

    assert refused.value.code == "readable_request"
    after = _stored(store, instance, request.record_id)
    assert after is not None and before is not None and (after.data, after.etag) == (before.data, before.etag)
    assert service.custody.get(instance, request.id).status is DeletionStatus.PENDING
    assert service.entries(caller, instance, Scope.USER, None) == []
    assert not [e for e in service.audit_trail(instance, caller.upn) if e.action is AuditAction.DELETION_DISMISSED]


def test_an_absent_request_is_not_found(store: MemoryStore) -> None:
    service, instance = _service(store)
    with pytest.raises(NotFound):
        service.custody.dismiss_unreadable("op", instance, "no-such-request")


class _RewrittenBeforeTheErasure:
    """The test's store, with a later release's write landing between the dismissal's read and its erasure: the
    record is rewritten as a request this release reads."""

    def __init__(self, store: MemoryStore, readable: dict[str, Any]) -> None:
        self._store, self._readable = store, readable

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def delete_record_and_put(self, erased: Record, written: Record) -> Record | None:
        # the request's erasure, with its journal's mark
        self._store.put_record(Record(erased.partition, erased.kind, erased.id, self._readable))
        return self._store.delete_record_and_put(erased, written)


def test_a_request_rewritten_readable_while_it_is_dismissed_is_refused_and_kept(store: MemoryStore) -> None:
    """The erasure is If-Match the etag read: the rewrite wins, the dismissal answers 409 ``readable_request``
    (read again, the request is one this release decides), and the rewritten request is stored, decidable."""
    _, instance = _service(store)
    put_unreadable_request(store, instance, status="pending")
    readable = DeletionRequest.from_record(Record(deletions_partition(instance), RecordKind.DELETION_REQUEST,
                                                  LATER_KEY, {**_stored_data(store, instance), "kind": "purge"}))
    racing = _RewrittenBeforeTheErasure(store, readable.to_record().data)
    service = MemoryService(racing, clock=TickingClock(datetime(2026, 12, 7, tzinfo=UTC)))  # type: ignore[arg-type]

    with pytest.raises(Conflict) as refused:
        service.custody.dismiss_unreadable("op", instance, LATER_ID)

    assert refused.value.code == "readable_request"
    stored = _stored(store, instance)
    assert stored is not None and read_request(stored) == readable
    assert not service.audit.read(instance, LATER)
    assert store.query_records(deletions_partition(instance), DISMISSAL_KIND) == []  # its journal closed


@pytest.mark.parametrize("status", ["pending", "approved"])
def test_a_request_whose_holds_still_stand_is_refused_unless_forced(store: MemoryStore, status: str) -> None:
    """A later release's pending or approved request that hid the user's memory: refused (409 ``holds_standing``,
    naming how many and that the memory stays hidden), the record, its hold and the trail untouched; forced, it is
    dismissed, its hold counted and left (the entry neither shown again nor erased), and the answer and the event
    say what it was stored as, and that it was forced. Before: dismissed at once, saying neither."""
    service, instance = _service(store)
    later = Caller(LATER)
    service.append(later, instance, Scope.USER, None, "- a fact a later release hid")
    (entry,) = service.entries(later, instance, Scope.USER, None)
    put_unreadable_request(store, instance, status=status)
    store.put_record(Record(Partition(instance, LATER), RecordKind.HOLD, LATER_ID,
                            Hold(LATER_ID, None, datetime(2030, 1, 1, tzinfo=UTC)).to_data()))
    before = _stored(store, instance)

    with pytest.raises(Conflict) as refused:
        service.custody.dismiss_unreadable("op", instance, LATER_ID)

    assert refused.value.code == "holds_standing"
    assert "1 hold(s)" in refused.value.message and "stays hidden" in refused.value.message
    assert f"status {status}" in refused.value.message
    after = _stored(store, instance)
    assert before is not None and after is not None and after.etag == before.etag
    assert not [e for e in service.audit_trail(instance, LATER) if e.action is AuditAction.DELETION_DISMISSED]
    assert store.query_records(deletions_partition(instance), DISMISSAL_KIND) == []

    dismissed = service.custody.dismiss_unreadable("op", instance, LATER_ID, force=True)

    assert (dismissed.holds_left, dismissed.kind, dismissed.status, dismissed.forced) == (1, "archive", status, True)
    assert _stored(store, instance) is None
    assert store.get_record(Partition(instance, LATER), RecordKind.HOLD, LATER_ID) is not None
    assert service.entries(later, instance, Scope.USER, None) == []
    assert store.get_entry(instance, LATER, entry.id) is not None
    (event,) = [e for e in service.audit_trail(instance, LATER) if e.action is AuditAction.DELETION_DISMISSED]
    assert event.detail is not None
    assert f"kind archive, status {status}" in event.detail and "forced" in event.detail


def test_a_request_without_standing_holds_is_dismissed_unforced_and_names_its_stored_labels(
    store: MemoryStore,
) -> None:
    """No hold stands: dismissed without force (not marked forced). The stored kind is named cut to
    ``LABEL_CHARS``; a status that is not text is named as none."""
    service, instance = _service(store)
    store.put_record(Record(deletions_partition(instance), RecordKind.DELETION_REQUEST, LATER_KEY,
                            {"id": LATER_ID, "upn": LATER, "kind": "k" * 500, "status": 7}))

    dismissed = service.custody.dismiss_unreadable("op", instance, LATER_ID)

    assert (dismissed.kind, dismissed.status, dismissed.forced) == ("k" * LABEL_CHARS, None, False)
    (event,) = service.audit.read(instance, LATER)
    assert event.detail is not None and f"kind {'k' * LABEL_CHARS}, status unknown" in event.detail
    assert "k" * (LABEL_CHARS + 1) not in event.detail and "forced" not in event.detail


def test_a_request_whose_id_is_longer_than_the_listings_cut_is_listed_by_its_key_and_dismissed_by_it(
    store: MemoryStore,
) -> None:
    """A stored id over 320 characters (the listing's cut): listed by the record's key, which dismisses it, and
    with ``record_id``. Before: listed by the cut id, which answered 404, so it could not be dismissed as listed."""
    service, instance = _service(store)
    long_id = "r" * 400
    store.put_record(Record(deletions_partition(instance), RecordKind.DELETION_REQUEST, LATER_KEY,
                            {"id": long_id, "upn": LATER, "kind": "archive", "status": "approved"}))

    (listed,) = service.custody.page(instance, None, limit=10).unreadable
    assert (listed.id, listed.record_id) == (LATER_KEY, LATER_KEY)
    (left,) = service.custody.sweep("op", instance).left  # the sweep names it so too
    assert left.request_id == LATER_KEY

    assert service.custody.dismiss_unreadable("op", instance, listed.id).record_id == LATER_KEY
    assert _stored(store, instance) is None


def test_the_holds_of_a_request_with_a_long_id_are_counted_by_its_whole_id(tmp_path: Path) -> None:
    """Holds are named by the whole stored id, not the listing's cut one: one still standing is counted (and the
    dismissal refused unless forced). Before: counted by the cut id, 0 while the hold stood. SQLite only: Cosmos DB
    stores no key that long, so such a hold cannot exist there (the test below)."""
    store = SqliteMemoryStore(tmp_path / "long-ids.sqlite3")
    try:
        service, instance = _service(store)
        key, hold = _long_request(instance)
        store.put_record(Record(deletions_partition(instance), RecordKind.DELETION_REQUEST, key,
                                {"id": hold.id, "upn": LATER, "kind": "archive", "status": "approved"}))
        store.put_record(hold)

        with pytest.raises(Conflict) as refused:
            service.custody.dismiss_unreadable("op", instance, key)
        assert refused.value.code == "holds_standing"
        assert service.custody.dismiss_unreadable("op", instance, key, force=True).holds_left == 1
        assert store.get_record(hold.partition, RecordKind.HOLD, hold.id) is not None
    finally:
        store.close()


def test_cosmos_stores_no_request_or_hold_of_an_id_that_long(cosmos_store: MemoryStore) -> None:
    """Why the test above is SQLite's only: the Cosmos DB adapter refuses an item id past 255 characters."""
    _, instance = _service(cosmos_store)
    key, hold = _long_request(instance)
    with pytest.raises(ValueError):
        cosmos_store.put_record(Record(deletions_partition(instance), RecordKind.DELETION_REQUEST, key,
                                       {"id": hold.id, "upn": LATER, "kind": "archive", "status": "approved"}))
    with pytest.raises(ValueError):
        cosmos_store.put_record(hold)


def _long_request(instance: str) -> tuple[str, Record]:
    """A request key and the hold of a request whose id is 400 characters (past the listing's cut at 320)."""
    long_id = "r" * 400
    hold = Record(Partition(instance, LATER), RecordKind.HOLD, long_id,
                  Hold(long_id, None, datetime(2030, 1, 1, tzinfo=UTC)).to_data())
    return f"2026-01-01T00:00:00.000000Z~{long_id}", hold


def _stored_data(store: MemoryStore, instance: str) -> dict[str, Any]:
    record = _stored(store, instance)
    assert record is not None
    return dict(record.data)
