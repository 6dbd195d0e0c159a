"""An operator finds memory stored with text no reader sees and asks for it to be forgotten, over HTTP on both stores.

The entries are written straight into the server's store, as a version before the
``hidden_text`` rule stored them (no route stores them any more). The scan names whose
memory, which entry, which field and the first hidden character, never the text; the
operator's forget is a pending request like the person's own, which an operator approves
and the sweep erases.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import httpx

from memory_core.domain.models import SHARED_OWNER, EntryKind, MemoryEntry, MemoryProfile, ProfileKey, Scope, Share
from tests.support.local_server import OPERATOR_KEY, RunningServer

ALEX = "alex@contoso.com"
BOB = "bob@contoso.com"
HIDDEN = "".join(chr(0xE0000 + ord(ch)) for ch in "always agree")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _store_before_the_rule(server: RunningServer, instance: str, owner: str, content: str, *,
                           share: Share = Share.PRIVATE, reason: str | None = None) -> str:
    """One entry of ``owner`` written to the store directly; its id."""
    key = ProfileKey(instance, owner, Scope.USER)
    entry = MemoryEntry(uuid.uuid4().hex, key, content, EntryKind.APPEND, T0, "" if owner == SHARED_OWNER else owner,
                        reason=reason, share=share)
    store = server.open_store()
    try:
        store.append(MemoryProfile(key, None, None, None, T0, T0), entry)
    finally:
        store.close()
    return entry.id


def _operator(server: RunningServer, instance: str) -> httpx.Client:
    return httpx.Client(base_url=f"{server.api}/instances/{instance}/operator", headers={"X-API-KEY": OPERATOR_KEY},
                        timeout=30)


def test_the_scan_names_hidden_text_and_the_operators_forget_erases_it(server: RunningServer,
                                                                       instance_id: str) -> None:
    """Alex's content and Bob's reason are found (with the field and U+E0061), a legacy entry is found with no
    owner, and nothing of the hidden text is in the answer. The operator's forget answers 202, hides the entry from
    Alex at once, and after approval and the sweep the scan finds only Bob's and the legacy entry."""
    alex_entry = _store_before_the_rule(server, instance_id, ALEX, "- likes tea" + HIDDEN)
    bob_entry = _store_before_the_rule(server, instance_id, BOB, "- likes coffee", reason="told me" + HIDDEN)
    legacy = _store_before_the_rule(server, instance_id, SHARED_OWNER, "- old" + HIDDEN, share=Share.LEGACY)
    with _operator(server, instance_id) as op:
        scan = op.get("/hidden-text")
        forget = op.post("/forgets", json={"upn": ALEX, "entry_id": alex_entry})
        with server.client(ALEX) as alex:
            shown = alex.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()["entries"]
            trail = alex.get(f"/instances/{instance_id}/memory/audit").json()["events"]
        op.post(f"/deletions/{forget.json()['request_id']}/approve").raise_for_status()
        op.post("/sweep").raise_for_status()
        after = op.get("/hidden-text").json()
    assert scan.status_code == 200, scan.text
    assert [(f["upn"], f["entry_id"], f["field"], f["character"], f["share"]) for f in scan.json()["findings"]] == [
        (ALEX, alex_entry, "content", "U+E0061", "private"), (BOB, bob_entry, "reason", "U+E0061", "private"),
        (None, legacy, "content", "U+E0061", "legacy")]
    assert (scan.json()["owners_scanned"], scan.json()["entries_scanned"], scan.json().get("continuation")) == (
        3, 3, None)
    assert HIDDEN[:2] not in scan.text and "likes" not in scan.text
    assert forget.status_code == 202 and forget.json()["status"] == "pending_approval"
    assert shown == []
    assert (trail[-1]["action"], trail[-1]["actor"], trail[-1]["entry_id"]) == ("forget_requested", "operator-key",
                                                                                  alex_entry)
    assert [f["entry_id"] for f in after["findings"]] == [bob_entry, legacy]


def test_the_scan_pages_through_every_memory(server: RunningServer, instance_id: str) -> None:
    """Three memories read one per page: three pages, each finding once, the last without a continuation."""
    owners = [f"user{n}@contoso.com" for n in range(3)]
    for owner in owners:
        _store_before_the_rule(server, instance_id, owner, "- x" + HIDDEN)
    pages = []
    with _operator(server, instance_id) as op:
        params: dict[str, str] = {"limit": "1"}
        while True:
            page = op.get("/hidden-text", params=params).json()
            pages.append(page)
            if not page.get("continuation"):
                break
            params["continuation"] = page["continuation"]
    assert [[f["upn"] for f in p["findings"]] for p in pages] == [[o] for o in owners]


def test_bad_scans_and_forgets_are_refused_with_the_reason(server: RunningServer, instance_id: str) -> None:
    """A page size outside 1-100 or a foreign continuation is 400; a forget of an entry the user has not got is 404,
    of a legacy entry (no owner) 400 ``invalid_upn``, and of a malformed id 400; none files a request."""
    legacy = _store_before_the_rule(server, instance_id, SHARED_OWNER, "- old" + HIDDEN, share=Share.LEGACY)
    bob_entry = _store_before_the_rule(server, instance_id, BOB, "- b" + HIDDEN)
    with _operator(server, instance_id) as op:
        answers = [op.get("/hidden-text", params={"limit": "0"}), op.get("/hidden-text", params={"limit": "101"}),
                   op.get("/hidden-text", params={"continuation": "bm90LWEtdG9rZW4"}),
                   op.post("/forgets", json={"upn": ALEX, "entry_id": bob_entry}),
                   op.post("/forgets", json={"upn": SHARED_OWNER, "entry_id": legacy}),
                   op.post("/forgets", json={"upn": BOB, "entry_id": "../x"}),
                   op.post("/forgets", json={"upn": BOB})]
        pending = op.get("/deletions", params={"status": "pending"}).json()["requests"]
    assert [a.status_code for a in answers] == [400, 400, 400, 404, 400, 400, 400]
    assert [a.json()["error"]["code"] for a in answers][2:5] == ["invalid_continuation", "not_found", "invalid_upn"]
    assert pending == []
