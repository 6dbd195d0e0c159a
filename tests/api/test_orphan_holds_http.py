"""Holds whose deletion request is gone, over real sockets against ``serve``, on each store
(``GET .../operator/orphan-holds``, ``POST .../operator/orphan-holds/{requestId}/release?upn=``, and
``POST .../operator/orphan-holds/release`` naming the hold in its body).

A later release's approved erasure, dismissed past its standing hold (``?force=true``), left the hold hiding its
user's memory behind no request anyone could see: the listing now names it (ids only) and the release shows the
memory again, audited.
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from memory_core.domain.models import SHARED_OWNER, Hold
from memory_core.domain.records import DELETIONS_OWNER, Partition, Record, RecordKind
from tests.support.later_release import (
    KEYED,
    NO_TEXT_IDS,
    put_hold_beside,
    put_holds_beside,
    put_request_beside,
    put_request_keyed_without_text_id,
    put_unreadable_request_beside,
)
from tests.support.local_server import OPERATOR_KEY, RunningServer

LATER = "later@contoso.com"
WORDS = "a fact a later release hid"


def _operator(server: RunningServer, instance: str) -> httpx.Client:
    return httpx.Client(base_url=f"{server.api}/instances/{instance}/operator", headers={"X-API-KEY": OPERATOR_KEY},
                        timeout=30)


def _orphan(server: RunningServer, instance: str, request_id: str) -> None:
    """``LATER``'s fact hidden by a later release's approved request's hold, then the request dismissed past it."""
    with server.client(LATER) as http:
        http.post(f"/instances/{instance}/memory/append",
                  json={"scope": "user", "content_markdown": f"- {WORDS}"}).raise_for_status()
    put_unreadable_request_beside(server, instance, status="approved", request_id=request_id)
    put_hold_beside(server, instance, LATER, request_id)
    with _operator(server, instance) as op:
        assert op.post(f"/deletions/{request_id}/dismiss", params={"force": "true"}).status_code == 200


def _entries(server: RunningServer, instance: str) -> list[str]:
    with server.client(LATER) as http:
        answer = http.get(f"/instances/{instance}/memory/entries", params={"scope": "user"})
    answer.raise_for_status()
    return [e["content_markdown"] for e in answer.json()["entries"]]


def test_an_operator_lists_and_releases_an_orphan_hold_and_the_memory_shows_again(server: RunningServer,
                                                                                  instance_id: str) -> None:
    """The listing names the hold (user, request id, coverage; not the text); a person's credential 403 on both
    routes; the release 200 counting 1, the entry shown, a ``hold_released`` event in the user's trail; released
    again 200 counting 0; the listing then empty."""
    _orphan(server, instance_id, "later-erasure")
    assert _entries(server, instance_id) == []
    with server.client(LATER) as http:
        assert http.get(f"/instances/{instance_id}/operator/orphan-holds").status_code == 403
        assert http.post(f"/instances/{instance_id}/operator/orphan-holds/later-erasure/release",
                         params={"upn": LATER}).status_code == 403
    with _operator(server, instance_id) as op:
        listing = op.get("/orphan-holds")
        released = op.post("/orphan-holds/later-erasure/release", params={"upn": LATER})
        again = op.post("/orphan-holds/later-erasure/release", params={"upn": LATER})
        after = op.get("/orphan-holds").json()
        trail = op.get("/audit", params={"upn": LATER}).json()["events"]
    assert listing.status_code == 200, listing.text
    assert WORDS not in listing.text
    (hold,) = listing.json()["holds"]
    assert {k: hold[k] for k in ("owner", "upn", "request_id", "profile_ids", "entry_ids", "readable")} == {
        "owner": LATER, "upn": LATER, "request_id": "later-erasure", "profile_ids": None, "entry_ids": [],
        "readable": True}
    assert released.status_code == 200, released.text
    assert released.json() == {"request_id": "later-erasure", "upn": LATER, "holds_released": 1}
    assert (again.status_code, again.json()["holds_released"]) == (200, 0)
    assert after["holds"] == [] and after["continuation"] is None
    assert [e["request_id"] for e in trail if e["action"] == "hold_released"] == ["later-erasure"]
    assert _entries(server, instance_id) == [f"- {WORDS}"]


def test_a_hold_whose_request_is_stored_is_409_and_bad_input_is_400(server: RunningServer, instance_id: str) -> None:
    """A pending forget's hold: 409 ``hold_not_orphaned`` (the entry stays hidden); a release naming no valid user,
    or none, 400; a page size outside 1-100 or a continuation this listing did not make, 400. Never a 500."""
    with server.client(LATER) as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- to forget"}).raise_for_status()
        entry = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()["entries"][0]
        request_id = http.delete(f"/instances/{instance_id}/memory/entries/{entry['id']}").json()["request_id"]
    with _operator(server, instance_id) as op:
        stored = op.post(f"/orphan-holds/{request_id}/release", params={"upn": LATER})
        internal = op.post(f"/orphan-holds/{request_id}/release", params={"upn": "~deletions"})
        missing = op.post(f"/orphan-holds/{request_id}/release")
        pages = [op.get("/orphan-holds", params=p) for p in
                 ({"limit": "0"}, {"limit": "101"}, {"limit": "x"}, {"continuation": "bm90LWEtdG9rZW4"})]
    assert (stored.status_code, stored.json()["error"]["code"]) == (409, "hold_not_orphaned"), stored.text
    assert (internal.status_code, internal.json()["error"]["code"]) == (400, "invalid_upn")
    assert missing.status_code == 400
    assert [p.status_code for p in pages] == [400, 400, 400, 400]
    assert _entries(server, instance_id) == []


@pytest.mark.parametrize("stored_id", NO_TEXT_IDS.values(), ids=NO_TEXT_IDS.keys())
def test_a_hold_whose_stored_request_names_no_text_id_is_409_and_not_listed(
    server: RunningServer, instance_id: str, stored_id: object,
) -> None:
    """A later release's pending request keyed ``…~keyed`` naming no id as text (none, a number, an object) keeps its
    hold ``keyed``: not listed, the release 409 ``hold_not_orphaned``, the fact still hidden."""
    with server.client(LATER) as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": f"- {WORDS}"}).raise_for_status()
    store = server.open_store()
    try:
        put_request_keyed_without_text_id(store, instance_id, stored_id)
    finally:
        store.close()
    with _operator(server, instance_id) as op:
        listing = op.get("/orphan-holds")
        refused = op.post(f"/orphan-holds/{KEYED}/release", params={"upn": LATER})
    assert (listing.status_code, listing.json()["holds"]) == (200, [])
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "hold_not_orphaned"), refused.text
    assert _entries(server, instance_id) == []


def test_a_shared_hold_naming_no_author_is_listed_without_a_user_and_released_as_shared(
    server: RunningServer, instance_id: str,
) -> None:
    """Listed with ``upn`` null; released under a user: 200 counting 0, nothing in their trail; released with
    ``?upn=~shared``: 200 counting 1, the event in the instance's ``~deletions`` trail; the listing then empty."""
    with server.client(LATER) as http:
        http.post(f"/instances/{instance_id}/memory/append", json={
            "scope": "user", "content_markdown": "- shared", "share": "team"}).raise_for_status()
    store = server.open_store()
    try:
        store.put_record(Record(Partition(instance_id, SHARED_OWNER), RecordKind.HOLD, "gone",
                                Hold("gone", None, datetime(2099, 1, 1, tzinfo=UTC)).to_data()))
    finally:
        store.close()
    with _operator(server, instance_id) as op:
        listing = op.get("/orphan-holds").json()["holds"]
        bystander = op.post("/orphan-holds/gone/release", params={"upn": "carol@contoso.com"})
        shared = op.post("/orphan-holds/gone/release", params={"upn": SHARED_OWNER})
        carols = op.get("/audit", params={"upn": "carol@contoso.com"}).json()["events"]
        deletions = op.get("/audit", params={"upn": DELETIONS_OWNER}).json()["events"]
        after = op.get("/orphan-holds").json()["holds"]
    assert [(h["owner"], h["upn"], h["request_id"]) for h in listing] == [(SHARED_OWNER, None, "gone")]
    assert (bystander.status_code, bystander.json()["holds_released"]) == (200, 0)
    assert shared.json() == {"request_id": "gone", "upn": SHARED_OWNER, "holds_released": 1}, shared.text
    assert carols == []
    assert [e["request_id"] for e in deletions if e["action"] == "hold_released"] == ["gone"]
    assert after == []


# -- the release naming its hold in the body: POST .../operator/orphan-holds/release -------------------------------

#: Ids no release URL's path carries as themselves: dot segments are resolved and "%2F" decoded before routing.
PATHLESS_IDS = [".", "..", "/", "a/b", "../x", "%2F", "a\x00b", "l\u00f6schen-\u540d\u524d"]


def test_every_listed_hold_is_released_by_its_listed_id_and_release_upn_in_the_body(
    server: RunningServer, instance_id: str,
) -> None:
    """Holds named ".", "..", "/", "a/b", "../x", "%2F", with a NUL or non-ASCII, on a user's memory, and a shared
    one whose author holds an override: the path-named route reaches none of the first (a dot segment lands on
    another route, "/" splits the id, "%2F" is decoded), while each is released by POSTing the listing's
    ``request_id`` and ``release_upn``: 200 counting 1, one event each in the user's (or the ``~deletions``) trail,
    the fact shown again, the listing empty."""
    _orphan(server, instance_id, "plain")
    with server.client(LATER) as http:
        http.post(f"/instances/{instance_id}/memory/append", json={
            "scope": "user", "content_markdown": "- shared", "share": "team"}).raise_for_status()
    until = datetime(2099, 1, 1, tzinfo=UTC)
    put_holds_beside(server, instance_id, LATER, *(Hold(rid, None, until) for rid in PATHLESS_IDS))
    put_holds_beside(server, instance_id, SHARED_OWNER,
                     Hold("shared-one", None, until, author_upn="mallory\u202e@contoso.com"))
    with _operator(server, instance_id) as op:
        for rid in (".", "..", "a/b", "%2F"):
            op.post(f"/orphan-holds/{rid}/release", params={"upn": LATER})
        listing = op.get("/orphan-holds").json()["holds"]
        answers = [op.post("/orphan-holds/release", json={"request_id": h["request_id"], "upn": h["release_upn"]})
                   for h in listing]
        after = op.get("/orphan-holds").json()["holds"]
        trail = op.get("/audit", params={"upn": LATER}).json()["events"]
        deletions = op.get("/audit", params={"upn": DELETIONS_OWNER}).json()["events"]
    listed = sorted((h["request_id"], h["release_upn"]) for h in listing)
    assert listed == sorted([(rid, LATER) for rid in [*PATHLESS_IDS, "plain"]] + [("shared-one", SHARED_OWNER)])
    assert [(a.status_code, a.json()["holds_released"]) for a in answers] == [(200, 1)] * len(listing), [
        a.text for a in answers]
    assert after == []
    assert sorted(e["request_id"] for e in trail if e["action"] == "hold_released") == sorted([*PATHLESS_IDS, "plain"])
    assert [e["request_id"] for e in deletions if e["action"] == "hold_released"] == ["shared-one"]
    assert _entries(server, instance_id) == [f"- {WORDS}", "- shared"]


def test_the_body_named_release_is_404_for_no_standing_hold_and_refuses_bad_bodies(
    server: RunningServer, instance_id: str,
) -> None:
    """No hold of that id (a fresh one, 10 KB of it, one holding a NUL), or one released already: 404
    ``hold_not_found``, its message naming the id cut; a stored request's hold: 409 ``hold_not_orphaned``; a body
    missing either field, an empty or non-text id, ``~deletions``: 400; not JSON: 415; over 64 KiB: 413; a person's
    key: 403. Never a 500, and the fact stays hidden throughout."""
    _orphan(server, instance_id, "held")
    with server.client(LATER) as http:
        forbidden = http.post(f"/instances/{instance_id}/operator/orphan-holds/release",
                              json={"request_id": "held", "upn": LATER})
    with _operator(server, instance_id) as op:
        missing = [op.post("/orphan-holds/release", json={"request_id": rid, "upn": LATER})
                   for rid in ("never-filed", "x" * 10_240, "held\x00", "held/", "Held")]
        bad = [op.post("/orphan-holds/release", json=body) for body in (
            {"upn": LATER}, {"request_id": "held"}, {"request_id": "", "upn": LATER},
            {"request_id": 7, "upn": LATER}, {"request_id": ["held"], "upn": LATER},
            {"request_id": "held", "upn": "~deletions"}, {"request_id": "held", "upn": "not-a-upn"})]
        not_json = op.post("/orphan-holds/release", content=b"request_id=held", headers={
            "content-type": "application/x-www-form-urlencoded"})
        huge = op.post("/orphan-holds/release", json={"request_id": "x" * 70_000, "upn": LATER})
        put_request_beside(server, instance_id, "stored-again")
        put_holds_beside(server, instance_id, LATER, Hold("stored-again", None, datetime(2099, 1, 1, tzinfo=UTC)))
        stored = op.post("/orphan-holds/release", json={"request_id": "stored-again", "upn": LATER})
    assert forbidden.status_code == 403
    assert [(m.status_code, m.json()["error"]["code"]) for m in missing] == [(404, "hold_not_found")] * 5
    assert all(len(m.text) < 2_000 for m in missing)
    assert [b.status_code for b in bad] == [400] * 7, [b.text for b in bad]
    assert not_json.status_code == 415 and huge.status_code == 413
    assert (stored.status_code, stored.json()["error"]["code"]) == (409, "hold_not_orphaned")
    assert _entries(server, instance_id) == []


def test_the_body_cannot_name_who_released_and_a_second_release_is_404(server: RunningServer, instance_id: str) -> None:
    """A body naming an actor or an identity beside the hold: ignored, the event's actor is the operator the
    credential names (as the path-named release's); released again: 404, still one event."""
    _orphan(server, instance_id, "by-body")
    _orphan(server, instance_id, "by-path")
    with _operator(server, instance_id) as op:
        first = op.post("/orphan-holds/release", json={"request_id": "by-body", "upn": LATER, "actor": "mallory",
                                                        "operator": "mallory", "upn ": "carol@contoso.com"})
        by_path = op.post("/orphan-holds/by-path/release", params={"upn": LATER})
        again = op.post("/orphan-holds/release", json={"request_id": "by-body", "upn": LATER})
        trail = op.get("/audit", params={"upn": LATER}).json()["events"]
    assert first.json() == {"request_id": "by-body", "upn": LATER, "holds_released": 1}, first.text
    assert by_path.status_code == 200
    assert (again.status_code, again.json()["error"]["code"]) == (404, "hold_not_found")
    events = {e["request_id"]: e for e in trail if e["action"] == "hold_released"}
    assert sorted(events) == ["by-body", "by-path"]
    assert events["by-body"]["actor"] == events["by-path"]["actor"] != "mallory"
    assert "mallory" not in str(trail)
