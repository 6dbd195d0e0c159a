"""Custody over HTTP: deletion approval, operator endpoints, entries, search, tags and audit."""

from __future__ import annotations

import hashlib

import httpx

from tests.support.local_server import OPERATOR_KEY, RunningServer

AGENT = "/agents/benefits"


def _operator(server: RunningServer) -> httpx.Client:
    return httpx.Client(base_url=server.api, headers={"X-API-KEY": OPERATOR_KEY}, timeout=30)


def _append(http: httpx.Client, inst: str, text: str, **extra: object) -> dict:
    response = http.post(f"/instances/{inst}/memory/append", json={"scope": "user", "content_markdown": text, **extra})
    response.raise_for_status()
    return response.json()


def test_clear_answers_202_pending_approval(server: RunningServer, instance_id: str) -> None:
    """Under operator approval, clear answers 202 with the request id and the pending message."""
    with server.client() as http:
        _append(http, instance_id, "- x")
        response = http.post(f"/instances/{instance_id}/memory/clear", json={"scope": "user", "confirm": True})
    body = response.json()
    assert response.status_code == 202
    assert body["status"] == "pending_approval" and body["request_id"]
    assert body["message"] == "deletion requested, pending operator approval"


def test_pending_memory_is_hidden_from_every_read(server: RunningServer, instance_id: str) -> None:
    """get, combined, export, search and entries all omit memory whose deletion is pending."""
    with server.client() as http:
        _append(http, instance_id, "- hidden pineapple")
        http.post(f"/instances/{instance_id}/memory/clear", json={"scope": "user", "confirm": True})
        reads = [
            http.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).text,
            http.get(f"/instances/{instance_id}/memory", params={"scope": "combined", "agentObjectId": AGENT}).text,
            http.get(f"/instances/{instance_id}/memory/export", params={"scope": "user"}).text,
            str(http.get(f"/instances/{instance_id}/memory/search", params={"q": "pineapple"}).json()["hits"]),
            http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).text,
        ]
    assert all("pineapple" not in r for r in reads)


def test_operator_lists_approves_and_sweeps(server: RunningServer, instance_id: str) -> None:
    """An operator sees the pending request, approves it, and the sweep endpoint erases and reports it (and none
    left for a later sweep)."""
    with server.client() as http, _operator(server) as op:
        _append(http, instance_id, "- a")
        request_id = http.post(f"/instances/{instance_id}/memory/clear",
                               json={"scope": "user", "confirm": True}).json()["request_id"]
        pending = op.get(f"/instances/{instance_id}/operator/deletions", params={"status": "pending"}).json()
        approved = op.post(f"/instances/{instance_id}/operator/deletions/{request_id}/approve")
        swept = op.post(f"/instances/{instance_id}/operator/sweep").json()
        executed = op.get(f"/instances/{instance_id}/operator/deletions", params={"status": "executed"}).json()
    assert [r["id"] for r in pending["requests"]] == [request_id]
    assert approved.status_code == 200 and approved.json()["status"] == "approved"
    assert [(r["id"], r["erased_entries"]) for r in swept["executed"]] == [(request_id, 1)] and swept["left"] == []
    assert [r["id"] for r in executed["requests"]] == [request_id]


def test_rejection_restores_memory_over_http(server: RunningServer, instance_id: str) -> None:
    """Rejecting with a reason makes the memory readable again."""
    with server.client() as http, _operator(server) as op:
        _append(http, instance_id, "- restored fact")
        request_id = http.post(f"/instances/{instance_id}/memory/clear",
                               json={"scope": "user", "confirm": True}).json()["request_id"]
        rejected = op.post(f"/instances/{instance_id}/operator/deletions/{request_id}/reject", json={"reason": "mistake"})
        document = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()["content_markdown"]
    assert rejected.json()["status"] == "rejected"
    assert "- restored fact" in document


def test_a_reason_holding_a_secret_is_refused_and_the_request_stays_pending(
    server: RunningServer, instance_id: str
) -> None:
    """A reason is kept with the request and shown in the user's own trail, so a token in it answers 422 naming
    the reason, without echoing it; nothing is decided, the memory stays hidden, and a plain reason then works."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    with server.client() as http, _operator(server) as op:
        _append(http, instance_id, "- kept fact")
        request_id = http.post(f"/instances/{instance_id}/memory/clear",
                               json={"scope": "user", "confirm": True}).json()["request_id"]
        reject = f"/instances/{instance_id}/operator/deletions/{request_id}/reject"
        refused = op.post(reject, json={"reason": f"user re-sent the deploy token {token} by mistake"})
        pending = op.get(f"/instances/{instance_id}/operator/deletions", params={"status": "pending"}).json()
        hidden = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()["content_markdown"]
        trail = http.get(f"/instances/{instance_id}/memory/audit").json()["events"]
        accepted = op.post(reject, json={"reason": "ticket INC-2026-0042, 5 Dec 2026: the user keeps it"})
        shown = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()["content_markdown"]
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "secret_detected"
    assert refused.json()["error"]["message"].startswith("reason looks like it contains a secret")
    assert token[:12] not in refused.text
    assert [r["id"] for r in pending["requests"]] == [request_id] and "kept fact" not in hidden
    assert "deletion_rejected" not in [e["action"] for e in trail] and "ghp_" not in str(trail)
    assert accepted.status_code == 200 and accepted.json()["reason"].startswith("ticket INC-2026-0042")
    assert "- kept fact" in shown


def test_reject_without_reason_is_400(server: RunningServer, instance_id: str) -> None:
    """A rejection must say why."""
    with _operator(server) as op:
        response = op.post(f"/instances/{instance_id}/operator/deletions/abc/reject", json={})
    assert response.status_code == 400


def test_deciding_an_unknown_request_is_404(server: RunningServer, instance_id: str) -> None:
    """Approving a request id that does not exist answers 404."""
    with _operator(server) as op:
        response = op.post(f"/instances/{instance_id}/operator/deletions/no-such/approve")
    assert response.status_code == 404


def test_approving_twice_is_409(server: RunningServer, instance_id: str) -> None:
    """A request that is no longer pending cannot be decided again."""
    with server.client() as http, _operator(server) as op:
        _append(http, instance_id, "- a")
        request_id = http.post(f"/instances/{instance_id}/memory/clear",
                               json={"scope": "user", "confirm": True}).json()["request_id"]
        op.post(f"/instances/{instance_id}/operator/deletions/{request_id}/approve").raise_for_status()
        again = op.post(f"/instances/{instance_id}/operator/deletions/{request_id}/approve")
    assert again.status_code == 409


def test_user_key_never_opens_operator_routes(server: RunningServer, instance_id: str) -> None:
    """A user API key on an operator route answers 403; no key answers 401."""
    with server.client() as http:
        as_user = http.get(f"/instances/{instance_id}/operator/deletions")
    anonymous = httpx.get(f"{server.api}/instances/{instance_id}/operator/deletions")
    assert as_user.status_code == 403
    assert anonymous.status_code == 401


def test_forget_one_entry_then_purge_flow(server: RunningServer, instance_id: str) -> None:
    """DELETE on an entry answers 202 and hides only that entry; an unknown entry answers 404."""
    with server.client() as http:
        keep = _append(http, instance_id, "- keep")
        gone = _append(http, instance_id, "- gone")
        forgotten = http.delete(f"/instances/{instance_id}/memory/entries/{gone['entry_id']}")
        missing = http.delete(f"/instances/{instance_id}/memory/entries/{gone['entry_id']}")
        listed = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()
    assert forgotten.status_code == 202 and forgotten.json()["status"] == "pending_approval"
    assert missing.status_code == 404
    assert [e["id"] for e in listed["entries"]] == [keep["entry_id"]]


def test_operator_purge_hides_all_of_a_users_memory(server: RunningServer, instance_id: str) -> None:
    """POST operator/purges hides every scope of that user and, once approved and swept, erases it."""
    with server.client() as http, _operator(server) as op:
        _append(http, instance_id, "- user fact")
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "agent", "agent_object_id": AGENT, "content_markdown": "- agent fact"}).raise_for_status()
        purge = op.post(f"/instances/{instance_id}/operator/purges", json={"upn": "ALEX@contoso.com"})
        hidden = http.get(f"/instances/{instance_id}/memory",
                          params={"scope": "combined", "agentObjectId": AGENT}).json()["content_markdown"]
        op.post(f"/instances/{instance_id}/operator/deletions/{purge.json()['request_id']}/approve").raise_for_status()
        swept = op.post(f"/instances/{instance_id}/operator/sweep").json()
    assert purge.status_code == 202
    assert hidden == ""
    assert swept["executed"][0]["erased_entries"] == 2


def test_entries_carry_provenance_and_tags(server: RunningServer, instance_id: str) -> None:
    """Each listed entry has id, content, created_on, author, session, tags (with the seed's hash tags) and sha256."""
    with server.client() as http:
        _append(http, instance_id, "- likes tea", session_id="sess-1", tags=["mem_type:user-profile"])
        entry = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()["entries"][0]
    assert entry["author"]["upn"] == "alex@contoso.com"
    assert entry["session_id"] == "sess-1"
    assert "mem_type:user-profile" in entry["tags"]
    assert any(t.startswith("session_id:") for t in entry["tags"])
    assert len(entry["content_sha256"]) == 64


def test_unknown_mem_type_is_400(server: RunningServer, instance_id: str) -> None:
    """Tags are checked: an unknown mem_type is refused with 400 invalid_tag."""
    with server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/append",
                             json={"scope": "user", "content_markdown": "- x", "tags": ["mem_type:episodic"]})
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_tag"


def test_search_ranks_by_relevance_and_composes_with_tags(server: RunningServer, instance_id: str) -> None:
    """search returns matching entries best first; a tag filter narrows them."""
    with server.client() as http:
        _append(http, instance_id, "- prefers green tea in the morning", tags=["mem_type:user-profile"])
        _append(http, instance_id, "- tea tea tea: a serious tea drinker")
        _append(http, instance_id, "- flies to Oslo in May")
        ranked = http.get(f"/instances/{instance_id}/memory/search", params={"q": "tea"}).json()["hits"]
        tagged = http.get(f"/instances/{instance_id}/memory/search",
                          params={"q": "tea", "tags": "mem_type:user-profile"}).json()["hits"]
    assert [h["entry"]["content_markdown"] for h in ranked] == [
        "- tea tea tea: a serious tea drinker", "- prefers green tea in the morning"]
    assert [h["entry"]["content_markdown"] for h in tagged] == ["- prefers green tea in the morning"]


def test_user_reads_own_audit_and_operator_reads_any(server: RunningServer, instance_id: str) -> None:
    """GET memory/audit shows the caller's trail; operator/audit?upn= shows the same trail to an operator."""
    with server.client() as http, _operator(server) as op:
        _append(http, instance_id, "- audited")
        own = http.get(f"/instances/{instance_id}/memory/audit").json()
        theirs = op.get(f"/instances/{instance_id}/operator/audit", params={"upn": "alex@contoso.com"}).json()
    assert [e["action"] for e in own["events"]] == ["append"]
    assert own["events"] == theirs["events"]
    assert "audited" not in str(own)


def test_forget_is_immediate_in_immediate_mode(immediate_server: RunningServer, instance_id: str) -> None:
    """MEMORY_DELETION_MODE=immediate: DELETE answers 200 deleted and the entry is gone."""
    with immediate_server.client() as http:
        entry = _append(http, instance_id, "- erase now")
        response = http.delete(f"/instances/{instance_id}/memory/entries/{entry['entry_id']}")
        listed = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()
    assert response.status_code == 200 and response.json() == {"status": "deleted", "entry_id": entry["entry_id"]}
    assert listed["entries"] == []


def test_a_secret_is_refused_with_422_and_nothing_stored(server: RunningServer, instance_id: str) -> None:
    """A write carrying a private key answers 422 secret_detected naming the detector, never the secret."""
    key_body = "MIIEowIBAAKCAQEA7v" + "Qx9s2kLmZ3pR8tW1yB4nC6dF0gH5jK" * 3
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + key_body + "\n-----END RSA PRIVATE KEY-----"
    with server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/append",
                             json={"scope": "user", "content_markdown": f"- my key is\n{pem}"})
        stored = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()["entries"]
        audit = http.get(f"/instances/{instance_id}/memory/audit").json()["events"]
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "secret_detected"
    assert "Private Key" in response.json()["error"]["message"]
    assert key_body[:16] not in response.text
    assert stored == []
    assert [e["action"] for e in audit] == ["write_rejected"]
    assert key_body[:16] not in str(audit)


def test_a_refused_passwords_event_holds_no_hash_to_guess_it_by(server: RunningServer, instance_id: str) -> None:
    """A low-entropy secret is found again from an unsalted SHA-256 by guessing, so the write_rejected event keeps
    the size of what was refused and no hash of it (an audit recovered `Summer2024!` from three guesses)."""
    content = "- password=Summer2024!"
    with server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/append",
                             json={"scope": "user", "content_markdown": content})
        (event,) = http.get(f"/instances/{instance_id}/memory/audit").json()["events"]
    assert response.status_code == 422 and event["action"] == "write_rejected"
    assert event["content_sha256"] is None and event["byte_count"] == len(content)
    assert hashlib.sha256(content.encode()).hexdigest() not in str(event)


def test_a_secret_in_the_memory_tools_agent_name_is_refused(server: RunningServer, instance_id: str) -> None:
    """A file below /memories/agent keeps the calling agent's name (the agentName query) in its entry's heading:
    a token there answers 422 naming agent_name and stores nothing; the same file with a plain name is stored."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    create = {"command": "create", "path": "/memories/agent/notes.md", "file_text": "prefers email\n"}
    agent = {"agentObjectId": "/agents/helpdesk"}
    with server.client() as http:
        refused = http.post(f"/instances/{instance_id}/memory/files/create", json=create,
                            params={**agent, "agentName": f"Helpdesk {token}"})
        before = http.get(f"/instances/{instance_id}/memory", params={"scope": "agent", **agent}).json()
        accepted = http.post(f"/instances/{instance_id}/memory/files/create", json=create,
                             params={**agent, "agentName": "Helpdesk"})
        after = http.get(f"/instances/{instance_id}/memory", params={"scope": "agent", **agent}).json()
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "secret_detected"
    assert refused.json()["error"]["message"].startswith("agent_name looks like it contains a secret")
    assert token[:12] not in refused.text and before["content_markdown"] == ""
    assert accepted.status_code == 200 and "agent: Helpdesk" in after["content_markdown"]


def test_a_secret_in_the_agent_id_is_refused_and_kept_out_of_the_trail(server: RunningServer, instance_id: str) -> None:
    """The agent id is stored with the entry, shown in its heading to every model that reads it and kept in the audit
    trail: a token there answers 422 naming agent_object_id, and the rejection's event leaves the id out."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    agent = f"agent-{token}"
    with server.client() as http:
        refused = http.post(f"/instances/{instance_id}/memory/append",
                            json={"scope": "agent", "agent_object_id": agent, "content_markdown": "- likes tea"})
        agents = http.get(f"/instances/{instance_id}/memory/agents").json()
        audit = http.get(f"/instances/{instance_id}/memory/audit").json()["events"]
        stored = http.get(f"/instances/{instance_id}/memory", params={"scope": "agent", "agentObjectId": agent}).json()
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "secret_detected"
    assert refused.json()["error"]["message"].startswith("agent_object_id looks like it contains a secret")
    assert stored["content_markdown"] == "" and token[:12] not in str(agents)
    assert [e["action"] for e in audit] == ["write_rejected"] and token[:12] not in str(audit) + refused.text


def test_a_secret_beside_the_content_is_refused_and_nothing_stored(server: RunningServer, instance_id: str) -> None:
    """A token in a tag or the session id answers 422 naming the field; nothing is stored, the audit keeps no token."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2
    with server.client() as http:
        in_tag = http.post(f"/instances/{instance_id}/memory/append",
                           json={"scope": "user", "content_markdown": "- likes tea", "tags": ["drinks", token]})
        in_session = http.post(f"/instances/{instance_id}/memory/append",
                               json={"scope": "user", "content_markdown": "- likes tea", "session_id": token})
        stored = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()["entries"]
        audit = http.get(f"/instances/{instance_id}/memory/audit").json()["events"]
    assert [in_tag.status_code, in_session.status_code] == [422, 422]
    assert in_tag.json()["error"]["message"].startswith("tags looks like it contains a secret (detectors: GitHub Token)")
    assert in_session.json()["error"]["message"].startswith("session_id looks like it contains a secret")
    assert stored == [] and [e["action"] for e in audit] == ["write_rejected", "write_rejected"]
    assert token[:12] not in str(audit) + in_tag.text + in_session.text
