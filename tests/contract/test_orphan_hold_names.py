"""Orphan holds no release could name (``domain.orphan_holds``), on both stores: every listed hold is released under
the ``release_upn`` it is listed with, whatever its stored id or author.

Before: a shared hold whose stored author was text but no valid UPN (an override in it, another case, spaces) was
released by no name: ``?upn=<author>`` was 400 ``invalid_upn`` and ``~shared`` counted only a hold naming no author,
so what it hid stayed hidden for good. And a release that must find its hold (the body-named route) now says 404
``hold_not_found`` when none stands, where the path-named route answers 0 released.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.domain.audit import AuditAction
from memory_core.domain.errors import NotFound
from memory_core.domain.identity import Caller
from memory_core.domain.models import SHARED_OWNER, Hold, Scope, Share
from memory_core.domain.records import DELETIONS_OWNER, Partition, Record, RecordKind
from memory_core.domain.service import MemoryService
from memory_core.domain.sharing import SharingPolicy
from memory_core.domain.store import MemoryStore
from memory_core.domain.views import WriteOptions
from tests.support.clock import TickingClock

LATER = "later@contoso.com"
UNTIL = datetime(2099, 1, 1, tzinfo=UTC)
#: A valid UPN of exactly 320 characters (the listing's cut): a longer author starting with it is no valid UPN, yet
#: listed cut to this one.
UPN_320 = "a" * 200 + "@" + "b" * 60 + "." + "c" * 58
AUTHORS_NO_RELEASE_NAMES = {
    "override": "mallory\u202e@contoso.com",
    "upper-case": "Later@Contoso.com",
    "spaced": " later@contoso.com",
    "no-at": "not-a-upn",
    "empty": "",
    "non-ascii": "l\u00e4ter@contoso.com",
    "valid-when-cut": UPN_320 + "zz",
    "readable-cut": UPN_320 + "zz",
}
#: Ids a URL's path cannot carry as themselves, or that stores and logs must take as data.
HOSTILE_IDS = {"dot": ".", "dots": "..", "slash": "/", "in-slash": "a/b", "up": "../x", "encoded-slash": "%2F",
               "nul": "a\x00b", "non-ascii": "l\u00f6schen-\u540d\u524d", "space": " padded "}


def _service(store: MemoryStore) -> tuple[MemoryService, str]:
    clock = TickingClock(datetime(2026, 12, 7, 12, 0, tzinfo=UTC), timedelta(microseconds=1))
    return MemoryService(store, clock=clock), f"names-{uuid.uuid4().hex[:8]}"


def _released_events(service: MemoryService, instance: str, owner: str) -> list[str | None]:
    return [e.request_id for e in service.audit_trail(instance, owner) if e.action is AuditAction.HOLD_RELEASED]


def test_a_shared_hold_whose_author_no_users_release_names_is_listed_and_released_as_shared(
    store: MemoryStore,
) -> None:
    """Each author no user's name reaches (an override, another case, spaces, no "@", empty, non-ASCII, and one whose
    first 320 characters, as listed, are a valid UPN, listed cut with ``upn_cut``, of a readable layout and not):
    listed with ``release_upn`` ``~shared``; released under the
    user it resembles, nothing (0); under ``~shared``, 1, audited in the ``~deletions`` trail; the listing then
    empty. The hold of an unreadable layout (a watermark that is no time) is judged on its stored author too."""
    service, instance = _service(store)
    service.append(Caller(LATER), instance, Scope.USER, None, "- a shared fact", WriteOptions(share=Share.TEAM))
    for name, author in AUTHORS_NO_RELEASE_NAMES.items():
        data = Hold(f"gone-{name}", None, UNTIL, author_upn=author).to_data()
        if name == "valid-when-cut":
            data["watermark"] = "not a time"  # another release's layout: listed through the cut path
        store.put_record(Record(Partition(instance, SHARED_OWNER), RecordKind.HOLD, f"gone-{name}", data))

    listed = {h.request_id: h for h in service.custody.orphan_holds(instance, limit=20).holds}

    assert {rid: h.release_upn for rid, h in listed.items()} == {
        f"gone-{name}": SHARED_OWNER for name in AUTHORS_NO_RELEASE_NAMES}
    # Shown cut and said to be (before: a valid-looking UPN, marked no cut), released whole.
    assert {rid: (h.upn, h.upn_cut) for rid, h in listed.items() if h.upn_cut} == {
        "gone-valid-when-cut": (UPN_320, True), "gone-readable-cut": (UPN_320, True)}
    for name in AUTHORS_NO_RELEASE_NAMES:
        assert service.custody.release_orphan_hold("op", instance, LATER, f"gone-{name}").holds_released == 0
        assert service.custody.release_orphan_hold("op", instance, UPN_320, f"gone-{name}").holds_released == 0
        released = service.custody.release_orphan_hold("op", instance, SHARED_OWNER, f"gone-{name}", must_stand=True)
        assert released.holds_released == 1, name
    assert sorted(_released_events(service, instance, DELETIONS_OWNER)) == sorted(
        f"gone-{name}" for name in AUTHORS_NO_RELEASE_NAMES)
    assert _released_events(service, instance, LATER) == [] == _released_events(service, instance, UPN_320)
    assert service.custody.orphan_holds(instance, limit=20).holds == []


def test_a_shared_hold_naming_an_author_no_entry_has_is_listed_as_hiding_nothing_of_any_users(
    store: MemoryStore,
) -> None:
    """Before: a ``~shared`` hold whose stored author was "" (or not text: 7, true) was listed with ``upn`` None, as
    one naming no author, which hides every author's team copies; it hides none (``Hold.covers`` reads only None as
    every author, and no entry's author is "" or other than text). Now it is listed with ``upn`` "" (or the JSON,
    "7", "true") and ``author_of_no_entry``: a teammate's team read is the same before and after planting them,
    while the hold naming no author, listed ``upn`` None and not ``author_of_no_entry``, hides the copy."""
    service, instance = _service(store)
    service.append(Caller(LATER), instance, Scope.USER, None, "- a shared fact", WriteOptions(share=Share.TEAM))
    teammate, team_reads = Caller("carol@contoso.com"), MemoryService(store, default_sharing=SharingPolicy.TEAM)

    def team_read() -> str:
        return team_reads.get(teammate, instance, Scope.USER, None).content_markdown

    before = team_read()
    assert "a shared fact" in before
    for name, author in {"empty": "", "number": 7, "true": True}.items():
        data = {**Hold(f"gone-{name}", None, UNTIL).to_data(), "author_upn": author}
        store.put_record(Record(Partition(instance, SHARED_OWNER), RecordKind.HOLD, f"gone-{name}", data))

    listed = {h.request_id: (h.upn, h.author_of_no_entry, h.upn_cut, h.release_upn)
              for h in service.custody.orphan_holds(instance, limit=20).holds}

    assert listed == {"gone-empty": ("", True, False, SHARED_OWNER), "gone-number": ("7", True, False, SHARED_OWNER),
                      "gone-true": ("true", True, False, SHARED_OWNER)}
    assert team_read() == before
    store.put_record(Record(Partition(instance, SHARED_OWNER), RecordKind.HOLD, "gone-none",
                            Hold("gone-none", None, UNTIL).to_data()))
    (authorless,) = [h for h in service.custody.orphan_holds(instance, limit=20).holds if h.request_id == "gone-none"]
    assert (authorless.upn, authorless.author_of_no_entry, authorless.upn_cut) == (None, False, False)
    assert "a shared fact" not in team_read()


def test_a_shared_hold_naming_its_author_exactly_is_listed_and_released_under_that_author(store: MemoryStore) -> None:
    """The other side of the rule: an author stored as a release names them is listed with ``release_upn`` the
    author, and ``~shared`` lifts nothing of it."""
    service, instance = _service(store)
    service.append(Caller(LATER), instance, Scope.USER, None, "- a shared fact", WriteOptions(share=Share.TEAM))
    store.put_record(Record(Partition(instance, SHARED_OWNER), RecordKind.HOLD, "gone",
                            Hold("gone", None, UNTIL, author_upn=LATER).to_data()))

    (listed,) = service.custody.orphan_holds(instance, limit=20).holds

    assert (listed.owner, listed.upn, listed.release_upn) == (SHARED_OWNER, LATER, LATER)
    with pytest.raises(NotFound):
        service.custody.release_orphan_hold("op", instance, SHARED_OWNER, "gone", must_stand=True)
    assert service.custody.release_orphan_hold("op", instance, LATER, "gone", must_stand=True).holds_released == 1


@pytest.mark.parametrize("request_id", HOSTILE_IDS.values(), ids=HOSTILE_IDS.keys())
def test_a_hold_of_any_stored_id_is_released_by_that_id_and_the_memory_shows_again(
    store: MemoryStore, request_id: str,
) -> None:
    """A hold named ".", "..", "/", "a/b", "../x", "%2F", one holding a NUL, non-ASCII or spaces: listed by that
    id exactly, released by it (1, the user's entry shown, one event naming it), then 404 ``hold_not_found``."""
    service, instance = _service(store)
    later = Caller(LATER)
    service.append(later, instance, Scope.USER, None, "- hidden by a hostile id")
    store.put_record(Record(Partition(instance, LATER), RecordKind.HOLD, request_id,
                            Hold(request_id, None, UNTIL).to_data()))
    assert service.entries(later, instance, Scope.USER, None) == []

    (listed,) = service.custody.orphan_holds(instance, limit=20).holds
    assert (listed.request_id, listed.release_upn) == (request_id, LATER)
    released = service.custody.release_orphan_hold("op", instance, LATER, listed.request_id, must_stand=True)

    assert (released.request_id, released.holds_released) == (request_id, 1)
    assert len(service.entries(later, instance, Scope.USER, None)) == 1
    assert _released_events(service, instance, LATER) == [request_id]
    with pytest.raises(NotFound) as again:
        service.custody.release_orphan_hold("op", instance, LATER, request_id, must_stand=True)
    assert again.value.code == "hold_not_found"
    assert _released_events(service, instance, LATER) == [request_id]


@pytest.mark.parametrize("request_id", [*HOSTILE_IDS.values(), "x" * 10_240, "\u540d" * 4_000],
                         ids=[*HOSTILE_IDS.keys(), "10-KB", "12-KB-non-ascii"])
def test_a_release_that_must_find_its_hold_is_not_found_for_an_id_no_hold_has(
    store: MemoryStore, request_id: str,
) -> None:
    """No hold of that id: ``NotFound`` ``hold_not_found`` (no store error), nothing written, no event; the message
    names the id cut to 320 characters. Without ``must_stand``, 0 released as before."""
    service, instance = _service(store)
    service.append(Caller(LATER), instance, Scope.USER, None, "- shown")

    with pytest.raises(NotFound) as missing:
        service.custody.release_orphan_hold("op", instance, LATER, request_id, must_stand=True)

    assert missing.value.code == "hold_not_found"
    assert len(missing.value.message) < 1_000
    assert service.custody.release_orphan_hold("op", instance, LATER, request_id).holds_released == 0
    assert _released_events(service, instance, LATER) == []
