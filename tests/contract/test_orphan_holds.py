"""Holds whose deletion request is gone (``domain.orphan_holds``): the operator's listing and release, on both stores.

Before: a request this release cannot read, dismissed past its standing holds (``?force=true``), left them standing:
what they hid stayed hidden from every read, was never erased, and no operator view showed them. So does a stopped
rejection whose journal an earlier release wrote (no user named) and whose request expired before a sweep.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.domain import orphan_holds
from memory_core.domain.audit import AuditAction
from memory_core.domain.deletion import DeletionKind, DeletionRequest, DeletionStatus
from memory_core.domain.errors import Conflict, InvalidInput
from memory_core.domain.identity import Caller
from memory_core.domain.models import SHARED_OWNER, Hold, Scope, Share
from memory_core.domain.records import DELETIONS_OWNER, Partition, Record, RecordKind, deletions_partition
from memory_core.domain.service import MemoryService
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import WriteOptions
from tests.support.clock import TickingClock
from tests.support.later_release import (
    KEYED,
    NO_TEXT_IDS,
    put_request_keyed_without_text_id,
    put_unreadable_request,
)

LATER = "later@contoso.com"
LATER_ID = "from-a-later-release"
SECRET_WORDS = "the orphaned fact nobody may read in a listing"


def _service(store: MemoryStore) -> tuple[MemoryService, str]:
    clock = TickingClock(datetime(2026, 12, 7, 12, 0, tzinfo=UTC), timedelta(microseconds=1))
    return MemoryService(store, clock=clock), f"orphans-{uuid.uuid4().hex[:8]}"


def _orphan_by_forced_dismissal(store: MemoryStore, service: MemoryService, instance: str) -> str:
    """``LATER``'s entry hidden by a later release's approved request (its hold, and one on their team-shared
    copies), then the request dismissed past them: the orphan the operator now has to find. Answers the entry id."""
    later = Caller(LATER)
    service.append(later, instance, Scope.USER, None, f"- {SECRET_WORDS}")
    (entry,) = service.entries(later, instance, Scope.USER, None)
    put_unreadable_request(store, instance, status="approved", request_id=LATER_ID)
    store.put_record(Record(Partition(instance, LATER), RecordKind.HOLD, LATER_ID,
                            Hold(LATER_ID, None, datetime(2030, 1, 1, tzinfo=UTC)).to_data()))
    store.put_record(Record(Partition(instance, SHARED_OWNER), RecordKind.HOLD, LATER_ID,
                            Hold(LATER_ID, None, datetime(2030, 1, 1, tzinfo=UTC), author_upn=LATER).to_data()))
    assert service.custody.dismiss_unreadable("op", instance, LATER_ID, force=True).holds_left == 2
    return entry.id


def test_a_hold_left_by_a_forced_dismissal_is_listed_by_ids_and_released_and_the_memory_shows_again(
    store: MemoryStore,
) -> None:
    """Listed (the user, the request id, what it covers; never the text), beside a pending request's hold that is
    not listed; released: both holds lifted, the entry shown, a ``hold_released`` event in the user's trail; released
    again: 0, nothing written."""
    service, instance = _service(store)
    entry_id = _orphan_by_forced_dismissal(store, service, instance)
    alex = Caller("alex@contoso.com")
    service.append(alex, instance, Scope.USER, None, "- a fact alex asked to forget")
    (pending_entry,) = service.entries(alex, instance, Scope.USER, None)
    service.custody.request_forget(alex.upn, pending_entry)

    page = service.custody.orphan_holds(instance, limit=20)

    (listed,) = page.holds
    assert (listed.owner, listed.upn, listed.request_id, listed.profile_ids, listed.readable) == (
        LATER, LATER, LATER_ID, None, True)
    assert listed.watermark == datetime(2030, 1, 1, tzinfo=UTC)
    assert SECRET_WORDS not in repr(page)
    assert page.continuation is None and page.holds_scanned == 2  # alex's pending hold read, not listed

    released = service.custody.release_orphan_hold("op", instance, LATER, LATER_ID)

    assert (released.request_id, released.upn, released.holds_released) == (LATER_ID, LATER, 2)
    assert [e.id for e in service.entries(Caller(LATER), instance, Scope.USER, None)] == [entry_id]
    for owner in (LATER, SHARED_OWNER):
        assert store.get_record(Partition(instance, owner), RecordKind.HOLD, LATER_ID) is None
    (event,) = [e for e in service.audit_trail(instance, LATER) if e.action is AuditAction.HOLD_RELEASED]
    assert (event.actor, event.request_id) == ("op", LATER_ID)
    assert event.detail is not None and "2 hold(s)" in event.detail and SECRET_WORDS not in event.detail
    assert service.custody.orphan_holds(instance, limit=20).holds == []
    assert service.entries(alex, instance, Scope.USER, None) == []  # the pending request's hold untouched

    again = service.custody.release_orphan_hold("op", instance, LATER, LATER_ID)

    assert again.holds_released == 0
    assert len([e for e in service.audit_trail(instance, LATER) if e.action is AuditAction.HOLD_RELEASED]) == 1


def test_a_hold_whose_request_is_stored_is_not_released(store: MemoryStore) -> None:
    """A pending request's hold: 409 ``hold_not_orphaned``, the hold standing, the entry hidden, no event; the same
    for a request this release cannot read (dismiss it first)."""
    service, instance = _service(store)
    alex = Caller("alex@contoso.com")
    service.append(alex, instance, Scope.USER, None, "- a fact alex asked to forget")
    (entry,) = service.entries(alex, instance, Scope.USER, None)
    request = service.custody.request_forget(alex.upn, entry)
    put_unreadable_request(store, instance, status="pending", request_id=LATER_ID)

    for upn, request_id in ((alex.upn, request.id), (LATER, LATER_ID)):
        with pytest.raises(Conflict) as refused:
            service.custody.release_orphan_hold("op", instance, upn, request_id)
        assert refused.value.code == "hold_not_orphaned"

    assert store.get_record(Partition(instance, alex.upn), RecordKind.HOLD, request.id) is not None
    assert service.entries(alex, instance, Scope.USER, None) == []
    assert not [e for e in service.audit_trail(instance, alex.upn) if e.action is AuditAction.HOLD_RELEASED]


def test_a_stored_requests_hold_whose_name_holds_a_tilde_and_a_nul_is_not_listed_nor_released(
    store: MemoryStore,
) -> None:
    """Before, on SQLite: a pending request whose id holds ``~`` and a NUL was never found (its data's id compared
    up to the NUL, and a name holding ``~`` has no key fallback), so its hold was listed as an orphan and released:
    the memory showed with no decision. Now neither lists nor releases it (409 ``hold_not_orphaned``), the entry
    stays hidden, no event; and a hold named for only the part before the NUL, whose request is gone, is an orphan."""
    service, instance = _service(store)
    later = Caller(LATER)
    service.append(later, instance, Scope.USER, None, f"- {SECRET_WORDS}")
    (entry,) = service.entries(later, instance, Scope.USER, None)
    request_id, prefix = "later~r\0x", "later~r"
    store.put_record(DeletionRequest(id=request_id, instance_id=instance, upn=LATER, kind=DeletionKind.FORGET,
                                     status=DeletionStatus.PENDING, requested_by=LATER,
                                     requested_on=datetime(2026, 12, 7, tzinfo=UTC), entry_id=entry.id).to_record())
    for name in (request_id, prefix):
        store.put_record(Record(Partition(instance, LATER), RecordKind.HOLD, name,
                                Hold(name, None, None, (entry.id,)).to_data()))
    assert service.entries(later, instance, Scope.USER, None) == []

    assert [h.request_id for h in service.custody.orphan_holds(instance, limit=20).holds] == [prefix]
    with pytest.raises(Conflict) as refused:
        service.custody.release_orphan_hold("op", instance, LATER, request_id)
    assert refused.value.code == "hold_not_orphaned"
    assert service.custody.release_orphan_hold("op", instance, LATER, prefix).holds_released == 1

    assert store.get_record(Partition(instance, LATER), RecordKind.HOLD, request_id) is not None
    assert service.entries(later, instance, Scope.USER, None) == []
    released = [e for e in service.audit_trail(instance, LATER) if e.action is AuditAction.HOLD_RELEASED]
    assert [e.request_id for e in released] == [prefix]


@pytest.mark.parametrize("stored_id", NO_TEXT_IDS.values(), ids=NO_TEXT_IDS.keys())
def test_a_hold_whose_request_is_stored_naming_no_text_id_is_not_listed_nor_released(
    store: MemoryStore, stored_id: object,
) -> None:
    """Before: the listing looked the request up by its data's id only, so a stored pending request naming none as
    text (listed unreadable, its dismissal refused ``holds_standing`` for the very hold) had its hold listed as an
    orphan and released: the memory showed while the request was pending. Now neither lists nor releases it (409
    ``hold_not_orphaned``): the hold stands, the entry stays hidden, no event; once the request is dismissed (forced),
    the hold is an orphan, listed and released."""
    service, instance = _service(store)
    service.append(Caller(LATER), instance, Scope.USER, None, f"- {SECRET_WORDS}")
    put_request_keyed_without_text_id(store, instance, stored_id)
    (unreadable,) = service.custody.page(instance, None, limit=20).unreadable
    with pytest.raises(Conflict) as dismissal:
        service.custody.dismiss_unreadable("op", instance, unreadable.id)
    assert dismissal.value.code == "holds_standing"

    listed = service.custody.orphan_holds(instance, limit=20).holds
    with pytest.raises(Conflict) as refused:
        service.custody.release_orphan_hold("op", instance, LATER, KEYED)

    assert listed == [] and refused.value.code == "hold_not_orphaned"
    assert store.get_record(Partition(instance, LATER), RecordKind.HOLD, KEYED) is not None
    assert service.entries(Caller(LATER), instance, Scope.USER, None) == []
    assert not [e for e in service.audit_trail(instance, LATER) if e.action is AuditAction.HOLD_RELEASED]

    assert service.custody.dismiss_unreadable("op", instance, unreadable.id, force=True).holds_left == 1
    assert [h.request_id for h in service.custody.orphan_holds(instance, limit=20).holds] == [KEYED]
    assert service.custody.release_orphan_hold("op", instance, LATER, KEYED).holds_released == 1


def test_a_request_keyed_by_a_name_but_naming_another_id_does_not_keep_that_names_holds(store: MemoryStore) -> None:
    """The key counts only when the data names no text id: a request keyed ``…~keyed`` whose data names ``other``
    files its holds as ``other``, so a hold named ``keyed`` is an orphan (listed, released); one keyed by a name that
    only ends like it (``…~not-keyed``, or another case) keeps nothing."""
    service, instance = _service(store)
    service.append(Caller(LATER), instance, Scope.USER, None, "- a fact")
    put_request_keyed_without_text_id(store, instance, "other")
    for key in ("2026-01-02T00:00:00.000000Z~not-keyed", "2026-01-03T00:00:00.000000Z~KEYED"):
        store.put_record(Record(deletions_partition(instance), RecordKind.DELETION_REQUEST, key, {"kind": "x"}))

    assert [h.request_id for h in service.custody.orphan_holds(instance, limit=20).holds] == [KEYED]
    assert service.custody.release_orphan_hold("op", instance, LATER, KEYED).holds_released == 1


def test_a_shared_hold_naming_no_author_is_released_only_as_shared_and_audited_in_the_deletions_trail(
    store: MemoryStore,
) -> None:
    """Before: a ``~shared`` hold naming no author (hiding every author's team copies) was listed with upn None and
    released under whatever user an operator named, audited in that bystander's trail. Now a user's release lifts
    nothing of it (0, no event in their trail); released as ``~shared`` it is lifted alone, audited in the instance's
    ``~deletions`` trail; a user's own hold of the same id is left to that user's release. So is one whose author is
    not text (7), listed as "7": it hides no entry's copies (``test_orphan_hold_names``), yet no user's name reaches
    it either."""
    service, instance = _service(store)
    service.append(Caller(LATER), instance, Scope.USER, None, "- a fact", WriteOptions(share=Share.TEAM))
    for author in (None, 7):  # none named (every author's copies), or not as text (no entry's)
        request_id = f"gone-{author}"
        data = {"request_id": request_id, "profile_ids": None, "watermark": "2030-01-01T00:00:00+00:00",
                "entry_ids": [], **({"author_upn": author} if author is not None else {})}
        store.put_record(Record(Partition(instance, SHARED_OWNER), RecordKind.HOLD, request_id, data))
        store.put_record(Record(Partition(instance, LATER), RecordKind.HOLD, request_id,
                                Hold(request_id, None, datetime(2030, 1, 1, tzinfo=UTC)).to_data()))
        listed = {h.owner: h.upn for h in service.custody.orphan_holds(instance, limit=20).holds
                  if h.request_id == request_id}
        assert listed == {SHARED_OWNER: None if author is None else "7", LATER: LATER}

        bystander = service.custody.release_orphan_hold("op", instance, "carol@contoso.com", request_id)
        users = service.custody.release_orphan_hold("op", instance, LATER, request_id)
        shared = service.custody.release_orphan_hold("op", instance, SHARED_OWNER, request_id)
        again = service.custody.release_orphan_hold("op", instance, SHARED_OWNER, request_id)

        assert (bystander.holds_released, users.holds_released, shared.holds_released, again.holds_released) == (
            0, 1, 1, 0)
        assert store.get_record(Partition(instance, SHARED_OWNER), RecordKind.HOLD, request_id) is None
        (event,) = [e for e in service.audit_trail(instance, DELETIONS_OWNER)
                    if e.action is AuditAction.HOLD_RELEASED and e.request_id == request_id]
        assert event.actor == "op" and event.detail is not None and "naming no author" in event.detail
    assert not service.audit_trail(instance, "carol@contoso.com")
    assert service.custody.orphan_holds(instance, limit=20).holds == []


def test_a_shared_release_leaves_a_shared_hold_naming_its_author(store: MemoryStore) -> None:
    """``~shared`` names only the authorless hold: one on an author's copies stays for that author's release."""
    service, instance = _service(store)
    authored = Hold("gone", None, datetime(2030, 1, 1, tzinfo=UTC), author_upn=LATER)
    store.put_record(Record(Partition(instance, SHARED_OWNER), RecordKind.HOLD, "gone", authored.to_data()))

    assert service.custody.release_orphan_hold("op", instance, SHARED_OWNER, "gone").holds_released == 0
    assert service.custody.release_orphan_hold("op", instance, LATER, "gone").holds_released == 1


def test_a_release_lifts_no_other_users_shared_hold(store: MemoryStore) -> None:
    """The shared partition's hold named by the id but on another author's copies is neither counted nor lifted as
    this user's (a forged ``upn`` releases nothing): the release of the user's own hold counts 1, bob's stays."""
    service, instance = _service(store)
    store.put_record(Record(Partition(instance, "alex@contoso.com"), RecordKind.HOLD, "gone",
                            Hold("gone", None, datetime(2030, 1, 1, tzinfo=UTC)).to_data()))
    bobs = Hold("gone", None, datetime(2030, 1, 1, tzinfo=UTC), author_upn="bob@contoso.com")
    store.put_record(Record(Partition(instance, SHARED_OWNER), RecordKind.HOLD, "gone", bobs.to_data()))

    assert service.custody.release_orphan_hold("op", instance, "carol@contoso.com", "gone").holds_released == 0
    assert service.custody.release_orphan_hold("op", instance, "alex@contoso.com", "gone").holds_released == 1
    assert store.get_record(Partition(instance, SHARED_OWNER), RecordKind.HOLD, "gone") is not None


def test_the_listing_walks_every_owner_a_page_at_a_time_and_ends_inside_a_partition_past_its_hold_budget(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three users, one with three orphan holds, read two holds a page: every hold is listed once over the pages,
    each page reads at most two; a limit outside 1-100 and another listing's continuation are refused."""
    monkeypatch.setattr(orphan_holds, "HOLDS_PER_PAGE", 2)
    service, instance = _service(store)
    expected = set()
    for user, ids in (("a@contoso.com", ["h1"]), ("b@contoso.com", ["h2", "h3", "h4"]), ("c@contoso.com", ["h5"])):
        service.append(Caller(user), instance, Scope.USER, None, "- a fact")
        for hold_id in ids:
            store.put_record(Record(Partition(instance, user), RecordKind.HOLD, hold_id,
                                    Hold(hold_id, None, None, ("e1",)).to_data()))
            expected.add((user, hold_id))

    seen: list[tuple[str, str]] = []
    continuation = None
    for _ in range(20):
        page = service.custody.orphan_holds(instance, limit=2, continuation=continuation)
        assert page.holds_scanned <= 2
        seen += [(h.owner, h.request_id) for h in page.holds]
        continuation = page.continuation
        if continuation is None:
            break
    assert sorted(seen) == sorted(expected)
    for bad in ({"limit": 0}, {"limit": 101}, {"limit": 2, "continuation": "bm90LWEtdG9rZW4"}):
        with pytest.raises(InvalidInput):
            service.custody.orphan_holds(instance, **bad)  # type: ignore[arg-type]


def test_a_hold_of_a_layout_this_release_cannot_read_is_listed_as_such_and_released(store: MemoryStore) -> None:
    """A later release's hold (a field of another type): listed, ``readable`` False, the ids it names shown; released
    like any other."""
    service, instance = _service(store)
    service.append(Caller(LATER), instance, Scope.USER, None, "- a fact")
    store.put_record(Record(Partition(instance, LATER), RecordKind.HOLD, "later-hold",
                            {"profile_ids": ["p1", 7], "watermark": {"at": "soon"}, "entry_ids": ["e1"]}))

    (listed,) = service.custody.orphan_holds(instance, limit=20).holds

    assert (listed.readable, listed.profile_ids, listed.entry_ids, listed.watermark) == (False, ("p1",), ("e1",), None)
    assert service.custody.release_orphan_hold("op", instance, LATER, "later-hold").holds_released == 1
    assert service.custody.orphan_holds(instance, limit=20).holds == []


@pytest.mark.parametrize("journal_user", ["none-named", "not-text"])
def test_a_stopped_rejection_whose_journal_names_no_user_and_whose_request_expired_leaves_a_listed_orphan(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, journal_user: str,
) -> None:
    """A rejection stops after its decision, before lifting the holds, and no sweep runs until the rejected request
    expires (retention is a day at least; Cosmos DB's ttl needs no sweep). Its journal is in the layout releases
    before this one wrote (no user), or names the user as no text (another layout): the sweep finds no request
    and no user to lift the holds for, and closes the journal, the holds standing, as before (this release's
    journal names the user, and the sweep lifts them: ``test_rejection_crashes``). The listing names the user's hold,
    and the release shows the memory again."""
    clock = TickingClock(datetime(2026, 12, 7, 12, 0, tzinfo=UTC), timedelta(microseconds=1))
    service, instance = MemoryService(store, clock=clock), f"orphans-{uuid.uuid4().hex[:8]}"
    alex = Caller("alex@contoso.com")
    service.append(alex, instance, Scope.USER, None, "- kept by policy")
    (entry,) = service.entries(alex, instance, Scope.USER, None)
    request = service.custody.request_forget(alex.upn, entry)

    def crash(*args: object) -> None:
        raise RuntimeError("the process stopped")

    monkeypatch.setattr("memory_core.domain.custody.lift_holds", crash)
    with pytest.raises(RuntimeError):
        service.custody.reject("op", instance, request.id, "kept by policy")
    monkeypatch.undo()
    (journal,) = store.query_records(deletions_partition(instance), "rejection")
    earlier = {"request_id": request.id, "started_on": journal.data["started_on"]}
    store.put_record(replace(journal, data=earlier if journal_user == "none-named" else {**earlier, "upn": ["alex"]}))
    store.delete_record(request.to_record().partition, RecordKind.DELETION_REQUEST, request.record_id)  # expired
    clock.now += timedelta(days=1)
    service.custody.sweep(instance_id=instance)

    assert service.entries(alex, instance, Scope.USER, None) == []  # hidden for good, but for an operator
    assert store.query_records(deletions_partition(instance), "rejection") == []
    (listed,) = service.custody.orphan_holds(instance, limit=20).holds
    assert (listed.owner, listed.request_id, listed.entry_ids) == (alex.upn, request.id, (entry.id,))
    assert service.custody.release_orphan_hold("op", instance, alex.upn, request.id).holds_released == 2
    assert [e.id for e in service.entries(alex, instance, Scope.USER, None)] == [entry.id]


def test_a_page_looks_the_requests_of_a_hundred_holds_up_in_one_query(store: MemoryStore) -> None:
    """Before: one query a hold read (500 a full page, each a round trip on Cosmos DB). Now the requests named by up
    to a hundred holds are one query (``page_records``' ``where_in``): a page of 150 holds whose requests are stored
    costs one round trip more than a page of one, and lists the same two orphans beside them."""
    service, instance = _service(store)
    service.append(Caller(LATER), instance, Scope.USER, None, "- a fact")
    requests = deletions_partition(instance)

    def hold(request_id: str) -> None:
        store.put_record(Record(Partition(instance, LATER), RecordKind.HOLD, request_id,
                                Hold(request_id, None, None, ("e1",)).to_data()))

    def stored(first: int, count: int) -> None:
        ids = [f"r{n:04d}" for n in range(first, first + count)]
        for at in range(0, count, 50):
            store.put_records([Record(requests, RecordKind.DELETION_REQUEST, f"2026-12-07T00:00:00Z~{request_id}",
                                      {"id": request_id}) for request_id in ids[at:at + 50]])
        for request_id in ids:
            hold(request_id)

    def listed_and_round_trips() -> tuple[list[str], int]:
        with store.measure() as metrics:  # type: ignore[attr-defined]
            page = orphan_holds.orphan_page(store, instance, 20, None)
        assert page.continuation is None
        return [h.request_id for h in page.holds], metrics.round_trips

    stored(0, 1)
    hold("gone-1")
    hold("gone-2")
    listed, one = listed_and_round_trips()
    stored(1, 149)
    listed_again, many = listed_and_round_trips()

    assert listed == listed_again == ["gone-1", "gone-2"]
    assert many == one + 1
