"""Reading stored deletion requests for a listing (``domain.deletion``): a record this release cannot read becomes an
``UnreadableRequest`` saying what can be told of it, in place, instead of failing the page."""

from __future__ import annotations

from datetime import UTC, datetime

from memory_core.domain.deletion import (
    DeletionKind,
    DeletionPage,
    DeletionRequest,
    DeletionStatus,
    UnreadableRequest,
    read_request,
)
from memory_core.domain.records import Record, RecordKind, deletions_partition

READABLE = DeletionRequest("r1", "i", "alex@contoso.com", DeletionKind.FORGET, DeletionStatus.PENDING,
                           "alex@contoso.com", datetime(2026, 1, 2, tzinfo=UTC), scope="user", entry_id="e1")


def _stored(request_id: str, **data: object) -> Record:
    fields = {**READABLE.to_record().data, "id": request_id, **data}
    return Record(deletions_partition("i"), RecordKind.DELETION_REQUEST, f"k~{request_id}",
                  {k: v for k, v in fields.items() if v is not None})


def test_a_readable_record_is_its_request() -> None:
    assert read_request(READABLE.to_record()) == READABLE


def test_an_unknown_kind_is_told_as_stored_with_why() -> None:
    told = read_request(_stored("later", kind="archive", status="approved"))
    assert isinstance(told, UnreadableRequest)
    assert (told.id, told.instance_id, told.upn, told.kind, told.status) == (
        "later", "i", "alex@contoso.com", "archive", "approved")
    assert "'archive' is not a valid DeletionKind" in told.message


def test_what_the_record_does_not_name_is_none_and_its_key_stands_for_a_missing_id() -> None:
    told = read_request(_stored("x", id=None, upn=None, kind=7, requested_on=None))
    assert isinstance(told, UnreadableRequest)
    assert (told.id, told.upn, told.kind, told.status) == ("k~x", None, None, "pending")


def test_a_page_keeps_both_in_the_listings_order_and_its_continuation() -> None:
    page = DeletionPage.of([_stored("a", kind="archive"), READABLE.to_record(), _stored("b", requested_on=None)], "t")
    assert page.items == [READABLE] and page.continuation == "t"
    assert [u.id for u in page.unreadable] == ["a", "b"]


def test_a_field_of_another_type_makes_the_request_unreadable() -> None:
    """What the listings' wire model would refuse is refused here first (it answered 500 for the page): a user who is
    not text, a count that is not a number, a plan item that is not an object."""
    for change, named in [({"requested_by": None}, "requested_by is null"), ({"upn": 7}, "upn is int"),
                          ({"erased_entries": {"entries": 3}}, "erased_entries is dict"),
                          ({"erased_profiles": True}, "erased_profiles is bool"),
                          ({"profile_ids": "p1"}, "profile_ids is str"), ({"reason": ["why"]}, "reason is list"),
                          ({"plan": [{"profile_id": "p", "scope": "user", "entry_id": 5}]}, "entry_id is int"),
                          ({"plan": {"entries": 3}}, "plan is dict")]:
        told = read_request(Record(deletions_partition("i"), RecordKind.DELETION_REQUEST, "k~x",
                                   {**READABLE.to_record().data, **change}))
        assert isinstance(told, UnreadableRequest), change
        assert named in told.message and told.kind == "forget"


def test_what_is_told_of_an_unreadable_request_is_bounded() -> None:
    """A stored value of any length (a later release's kind, quoted by the error) is told in at most 320 characters;
    an id longer than that is listed by the record's key instead (the store's bound: an id cut to fit would name no
    record, or another's, and could not be dismissed)."""
    record = _stored("x" * 5000, kind="k" * 5000, upn="u" * 5000)
    told = read_request(record)
    assert isinstance(told, UnreadableRequest)
    assert len(told.message) <= 320 and told.message.endswith("…)")
    assert (len(told.upn or ""), len(told.kind or "")) == (320, 320)
    assert told.id == told.record_id == record.id
    assert read_request(_stored("x" * 320, kind="archive")).id == "x" * 320  # an id within the bound, as stored
