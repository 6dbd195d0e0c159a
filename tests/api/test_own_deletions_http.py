"""GET .../memory/deletions: a user's own deletion requests, over real sockets, on each store.

The person's console reads it to show what waits for an operator, so it must answer every request
of the caller (an operator's purge of them included), nobody else's whatever the query says, and
keep up with the operator's decisions. Credentials on this route, as on every route, are tested by
tests/auth/test_rest_matrix.py.
"""

from __future__ import annotations

import httpx

from tests.support.local_server import OPERATOR_KEY, RunningServer

BOB = "bob@contoso.com"


def _operator(server: RunningServer) -> httpx.Client:
    return httpx.Client(base_url=server.api, headers={"X-API-KEY": OPERATOR_KEY}, timeout=30)


def _forget_one(http: httpx.Client, inst: str, text: str) -> str:
    http.post(f"/instances/{inst}/memory/append", json={"scope": "user", "content_markdown": text}).raise_for_status()
    entry = http.get(f"/instances/{inst}/memory/entries", params={"scope": "user"}).json()["entries"][-1]
    response = http.delete(f"/instances/{inst}/memory/entries/{entry['id']}")
    assert response.status_code == 202, response.text
    return str(response.json()["request_id"])


def _own(http: httpx.Client, inst: str, **params: object) -> list[dict]:
    response = http.get(f"/instances/{inst}/memory/deletions", params=params)
    assert response.status_code == 200, response.text
    return list(response.json()["requests"])


def test_a_user_sees_their_own_requests_and_nobody_elses(server: RunningServer, instance_id: str) -> None:
    """Alex's forget, Alex's clear and an operator's purge of Alex are listed for Alex, oldest first, with what
    they are; Bob's forget is listed for Bob only. A ``upn`` in the query changes nothing."""
    with server.client() as alex, server.client(BOB) as bob, _operator(server) as op:
        forget = _forget_one(alex, instance_id, "- alex forgets this")
        bobs = _forget_one(bob, instance_id, "- bob forgets this")
        clear = alex.post(f"/instances/{instance_id}/memory/clear",
                          json={"scope": "agent", "agent_object_id": "/agents/a", "confirm": True}).json()["request_id"]
        purge = op.post(f"/instances/{instance_id}/operator/purges", json={"upn": "alex@contoso.com"}).json()
        listed = _own(alex, instance_id)
        as_bob = _own(alex, instance_id, upn=BOB)
        bob_listed = _own(bob, instance_id)
    assert [(r["id"], r["kind"], r["status"], r["scope"]) for r in listed] == [
        (forget, "forget", "pending", "user"), (clear, "clear", "pending", "agent"),
        (purge["request_id"], "purge", "pending", None),
    ]
    assert listed[1]["agent_object_id"] == "/agents/a"
    assert {r["upn"] for r in listed} == {"alex@contoso.com"}
    assert listed[2]["requested_by"] != "alex@contoso.com"
    assert as_bob == listed
    assert [r["id"] for r in bob_listed] == [bobs]


def test_the_status_filter_follows_the_operators_decisions(server: RunningServer, instance_id: str) -> None:
    """An approved request leaves ``pending`` for ``approved``, a rejected one shows its reason under
    ``rejected``, and a swept one is ``executed``; without a filter all four are listed."""
    with server.client() as alex, _operator(server) as op:
        kept, approved, rejected = (_forget_one(alex, instance_id, f"- fact {n}") for n in range(3))
        op.post(f"/instances/{instance_id}/operator/deletions/{approved}/approve").raise_for_status()
        op.post(f"/instances/{instance_id}/operator/deletions/{rejected}/reject",
                json={"reason": "still needed"}).raise_for_status()
        before_sweep = {s: [r["id"] for r in _own(alex, instance_id, status=s)] for s in ("pending", "approved")}
        op.post(f"/instances/{instance_id}/operator/sweep").raise_for_status()
        listed = {r["id"]: r for r in _own(alex, instance_id)}
        refused = _own(alex, instance_id, status="rejected")
        executed = _own(alex, instance_id, status="executed")
    assert before_sweep == {"pending": [kept], "approved": [approved]}
    assert {i: r["status"] for i, r in listed.items()} == {kept: "pending", approved: "executed", rejected: "rejected"}
    assert [(r["id"], r["reason"]) for r in refused] == [(rejected, "still needed")]
    assert [(r["id"], r["erased_entries"]) for r in executed] == [(approved, 1)]


def test_pages_continue_and_foreign_tokens_and_bad_filters_answer_400(server: RunningServer, instance_id: str) -> None:
    """Pages of one continue to the end; a token of the operator's listing, an unknown status and a limit out
    of range are each a clear 400."""
    with server.client() as alex, _operator(server) as op:
        made = [_forget_one(alex, instance_id, f"- paged {n}") for n in range(3)]
        seen, token = [], None
        while True:
            body = alex.get(f"/instances/{instance_id}/memory/deletions",
                            params={"limit": 2, **({"continuation": token} if token else {})}).json()
            seen += [r["id"] for r in body["requests"]]
            token = body["continuation"]
            if token is None:
                break
        operator_page = op.get(f"/instances/{instance_id}/operator/deletions", params={"limit": 1}).json()
        operator_token = operator_page["continuation"]
        foreign = alex.get(f"/instances/{instance_id}/memory/deletions", params={"continuation": operator_token})
        bad_status = alex.get(f"/instances/{instance_id}/memory/deletions", params={"status": "hidden"})
        bad_limit = alex.get(f"/instances/{instance_id}/memory/deletions", params={"limit": 0})
    assert seen == made
    assert operator_token is not None
    assert (foreign.status_code, foreign.json()["error"]["code"]) == (400, "invalid_continuation")
    assert (bad_status.status_code, bad_status.json()["error"]["code"]) == (400, "validation_error")
    assert bad_limit.status_code == 400

