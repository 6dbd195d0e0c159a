"""Deletion listings with a stored request this release cannot read (another layout), over real sockets, on each store.

Such a record (written by a later release, or by an older one whose layout was dropped) must not take the listing
down: the operator's page (``GET .../operator/deletions``) and the person's own (``GET .../memory/deletions``)
answer 200 with every request they can read under ``requests`` and the others under ``unreadable``: their id, the
kind and status as stored when the record names them, and why (``code`` ``unreadable_request``, ``message``).
"""

from __future__ import annotations

import httpx

from tests.support.later_release import STORED_NULL, put_hold_beside, put_request_beside
from tests.support.local_server import OPERATOR_KEY, RunningServer

LATER = "later@contoso.com"


def _forget_one(server: RunningServer, instance: str) -> str:
    with server.client() as http:
        http.post(f"/instances/{instance}/memory/append",
                  json={"scope": "user", "content_markdown": "- a fact"}).raise_for_status()
        entry = http.get(f"/instances/{instance}/memory/entries", params={"scope": "user"}).json()["entries"][-1]
        response = http.delete(f"/instances/{instance}/memory/entries/{entry['id']}")
    assert response.status_code == 202, response.text
    return str(response.json()["request_id"])


def _operator(server: RunningServer, instance: str) -> httpx.Client:
    return httpx.Client(base_url=f"{server.api}/instances/{instance}/operator", headers={"X-API-KEY": OPERATOR_KEY},
                        timeout=30)


def test_the_operators_listing_shows_an_unreadable_request_beside_the_others(server: RunningServer,
                                                                            instance_id: str) -> None:
    """A request of a kind this release does not know and one missing a field it needs: 200, the readable forget
    under ``requests`` with its entry count, the other two under ``unreadable`` (before: an error for the page)."""
    put_request_beside(server, instance_id, "of-a-later-kind", kind="archive")
    put_request_beside(server, instance_id, "missing-a-field", requested_on=None, status="approved")
    forget = _forget_one(server, instance_id)
    with _operator(server, instance_id) as op:
        response = op.get("/deletions")
    assert response.status_code == 200, response.text
    body = response.json()
    assert [(r["id"], r["kind"], r["entry_count"]) for r in body["requests"]] == [(forget, "forget", 1)]
    by_id = {u["request_id"]: u for u in body["unreadable"]}
    assert list(by_id) == ["missing-a-field", "of-a-later-kind"]
    archive, missing = by_id["of-a-later-kind"], by_id["missing-a-field"]
    assert {k: archive[k] for k in ("instance_id", "upn", "kind", "status", "code")} == {
        "instance_id": instance_id, "upn": LATER, "kind": "archive", "status": "pending", "code": "unreadable_request"}
    assert "archive" in archive["message"]
    assert (missing["kind"], missing["status"], missing["code"]) == ("forget", "approved", "unreadable_request")
    assert "requested_on" in missing["message"]


def test_the_status_filter_and_paging_carry_unreadable_requests(server: RunningServer, instance_id: str) -> None:
    """?status=pending lists the unreadable pending one, not the approved; one item a page, every page answers and
    the pages together hold each request once."""
    put_request_beside(server, instance_id, "of-a-later-kind", kind="archive")
    put_request_beside(server, instance_id, "missing-a-field", requested_on=None, status="approved")
    forget = _forget_one(server, instance_id)
    with _operator(server, instance_id) as op:
        pending = op.get("/deletions", params={"status": "pending"}).json()
        seen, token = [], None
        for _ in range(5):
            page = op.get("/deletions", params={"limit": 1, **({"continuation": token} if token else {})})
            assert page.status_code == 200, page.text
            seen += [r["id"] for r in page.json()["requests"]] + [u["request_id"] for u in page.json()["unreadable"]]
            token = page.json()["continuation"]
            if not token:
                break
    assert [r["id"] for r in pending["requests"]] == [forget]
    assert [u["request_id"] for u in pending["unreadable"]] == ["of-a-later-kind"]
    assert sorted(seen) == sorted([forget, "of-a-later-kind", "missing-a-field"])


def test_a_persons_own_listing_shows_their_unreadable_request(server: RunningServer, instance_id: str) -> None:
    """The person's console reads their own requests: an unreadable one of theirs is listed under ``unreadable``,
    and another user's is not."""
    put_request_beside(server, instance_id, "of-a-later-kind", kind="archive")
    put_request_beside(server, instance_id, "someone-elses", kind="archive", upn="alex@contoso.com")
    with server.client(LATER) as http:
        response = http.get(f"/instances/{instance_id}/memory/deletions")
    assert response.status_code == 200, response.text
    assert response.json()["requests"] == []
    assert [(u["request_id"], u["kind"]) for u in response.json()["unreadable"]] == [("of-a-later-kind", "archive")]


def test_a_listing_without_unreadable_requests_says_so(server: RunningServer, instance_id: str) -> None:
    """``unreadable`` is always present: an empty list when every request was read."""
    _forget_one(server, instance_id)
    with _operator(server, instance_id) as op:
        assert op.get("/deletions").json()["unreadable"] == []


def test_a_request_of_fields_this_release_does_not_read_is_listed_unreadable(server: RunningServer,
                                                                            instance_id: str) -> None:
    """A requester that is not text, a count kept as an object: both listings answer 200 with them under
    ``unreadable`` and why (both answered 500 before: the request was read, and its answer refused)."""
    put_request_beside(server, instance_id, "null-requester", requested_by=STORED_NULL)
    put_request_beside(server, instance_id, "object-count", erased_entries={"entries": 3}, status="executed")
    with _operator(server, instance_id) as op:
        response = op.get("/deletions")
    with server.client(LATER) as http:
        own = http.get(f"/instances/{instance_id}/memory/deletions")
    for answer in (response, own):
        assert answer.status_code == 200, answer.text
        by_id = {u["request_id"]: u for u in answer.json()["unreadable"]}
        assert list(by_id) == ["null-requester", "object-count"] and answer.json()["requests"] == []
        assert "requested_by is null" in by_id["null-requester"]["message"]
        assert "erased_entries is dict" in by_id["object-count"]["message"]


def test_deciding_an_unreadable_request_is_refused_as_such(server: RunningServer, instance_id: str) -> None:
    """Approving or rejecting a request this release cannot read: 409 ``unreadable_request`` (it was a 500), and the
    request stays as stored."""
    put_request_beside(server, instance_id, "of-a-later-kind", kind="archive")
    put_request_beside(server, instance_id, "null-requester", requested_by=STORED_NULL)
    with _operator(server, instance_id) as op:
        for request_id in ("of-a-later-kind", "null-requester"):
            for answer in (op.post(f"/deletions/{request_id}/approve"),
                           op.post(f"/deletions/{request_id}/reject", json={"reason": "no"})):
                assert answer.status_code == 409, answer.text
                assert answer.json()["error"]["code"] == "unreadable_request"
                assert "cannot be read" in answer.json()["error"]["message"]
        listed = op.get("/deletions").json()["unreadable"]
    assert [(u["request_id"], u["status"]) for u in listed] == [("null-requester", "pending"),
                                                               ("of-a-later-kind", "pending")]


def test_an_operator_dismisses_an_unreadable_request_and_nobody_else_can(server: RunningServer,
                                                                         instance_id: str) -> None:
    """``POST .../operator/deletions/{id}/dismiss``: a person's credential 403 (the record stays); the operator 200
    with the record's key and digest, after which the listing no longer shows it and the user's trail has the
    ``deletion_dismissed`` event; a readable request 409 ``readable_request`` (still pending); none 404."""
    put_request_beside(server, instance_id, "of-a-later-kind", kind="archive")
    forget = _forget_one(server, instance_id)
    with server.client(LATER) as http:
        assert http.post(f"/instances/{instance_id}/operator/deletions/of-a-later-kind/dismiss").status_code == 403
    with _operator(server, instance_id) as op:
        assert [u["request_id"] for u in op.get("/deletions").json()["unreadable"]] == ["of-a-later-kind"]
        dismissed = op.post("/deletions/of-a-later-kind/dismiss")
        readable = op.post(f"/deletions/{forget}/dismiss")
        absent = op.post("/deletions/no-such-request/dismiss")
        listing = op.get("/deletions").json()
        trail = op.get("/audit", params={"upn": LATER}).json()["events"]
    assert dismissed.status_code == 200, dismissed.text
    body = dismissed.json()
    assert {k: body[k] for k in ("request_id", "upn", "record_id", "holds_left")} == {
        "request_id": "of-a-later-kind", "upn": LATER, "record_id": "2026-01-01T00:00:00.000000Z~of-a-later-kind",
        "holds_left": 0}
    assert len(body["record_sha256"]) == 64
    assert (readable.status_code, readable.json()["error"]["code"]) == (409, "readable_request")
    assert absent.status_code == 404
    assert listing["unreadable"] == []
    assert [(r["id"], r["status"]) for r in listing["requests"]] == [(forget, "pending")]
    (event,) = [e for e in trail if e["action"] == "deletion_dismissed"]
    assert (event["request_id"], event["content_sha256"]) == ("of-a-later-kind", body["record_sha256"])


def test_a_dismissal_while_its_holds_stand_is_409_unless_forced(server: RunningServer, instance_id: str) -> None:
    """A later release's approved erasure whose hold still stands: ``dismiss`` 409 ``holds_standing`` (still
    listed); ``dismiss?force=true`` 200, saying it was stored approved, that 1 hold was left and that it was forced.
    Before: 200 at once, saying neither."""
    put_request_beside(server, instance_id, "approved-later", kind="archive", status="approved")
    put_hold_beside(server, instance_id, LATER, "approved-later")
    with _operator(server, instance_id) as op:
        refused = op.post("/deletions/approved-later/dismiss")
        listed = [u["request_id"] for u in op.get("/deletions").json()["unreadable"]]
        forced = op.post("/deletions/approved-later/dismiss", params={"force": "true"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "holds_standing"), refused.text
    assert "1 hold(s)" in refused.json()["error"]["message"] and listed == ["approved-later"]
    assert forced.status_code == 200, forced.text
    body = forced.json()
    assert {k: body[k] for k in ("kind", "status", "holds_left", "forced")} == {
        "kind": "archive", "status": "approved", "holds_left": 1, "forced": True}


def test_the_operator_reads_the_deletions_trail_and_no_other_internal_one(server: RunningServer,
                                                                          instance_id: str) -> None:
    """A dismissed request naming no valid user is audited in the instance's ``~deletions`` trail, which
    ``GET .../operator/audit?upn=~deletions`` reads (before: 400 ``invalid_upn``, so no one could); every other
    internal name (``~shared``, ``~system``, a look-alike) stays 400 ``invalid_upn``."""
    put_request_beside(server, instance_id, "no-user", upn=7, kind="archive")
    with _operator(server, instance_id) as op:
        assert op.post("/deletions/no-user/dismiss").status_code == 200
        trail = op.get("/audit", params={"upn": "~deletions"})
        others = {name: op.get("/audit", params={"upn": name})
                  for name in ("~shared", "~system", "~deletions~", "~Deletions", "~deletionsx", "~")}
    assert trail.status_code == 200, trail.text
    assert trail.json()["upn"] == "~deletions"
    assert [(e["action"], e["request_id"]) for e in trail.json()["events"]] == [("deletion_dismissed", "no-user")]
    for name, answer in others.items():
        assert (answer.status_code, answer.json()["error"]["code"]) == (400, "invalid_upn"), name
