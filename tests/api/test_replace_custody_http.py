"""Import with mode=replace under custody, over HTTP on both stores (issue #14's reproducer).

Under MEMORY_DELETION_MODE=operator_approval a replace erases nothing: the old
content is hidden and held by a deletion request, the new content shows at once,
a rejection brings the old content back and an approval plus the sweep erases it.
"""

from __future__ import annotations

import httpx

from tests.secrets.corpus.written_forms import digits_of
from tests.support.local_server import OPERATOR_KEY, RunningServer

AGENT = "/agents/benefits"


def _operator(server: RunningServer) -> httpx.Client:
    return httpx.Client(base_url=server.api, headers={"X-API-KEY": OPERATOR_KEY}, timeout=30)


def _append(http: httpx.Client, inst: str, text: str) -> dict:
    response = http.post(f"/instances/{inst}/memory/append", json={"scope": "user", "content_markdown": text})
    response.raise_for_status()
    return response.json()


def _document(http: httpx.Client, inst: str) -> str:
    return http.get(f"/instances/{inst}/memory", params={"scope": "user"}).json()["content_markdown"]


def test_reproducer_ends_with_a_pending_request_and_hidden_entries(server: RunningServer, instance_id: str) -> None:
    """append "keep me", import replace with "" -> 202 pending; the operator sees the request; "keep me" is
    hidden from the caller, not gone: a rejection shows it again."""
    with server.client() as http, _operator(server) as op:
        _append(http, instance_id, "- keep me")
        replaced = http.post(f"/instances/{instance_id}/memory/import",
                             json={"scope": "user", "content_markdown": "", "mode": "replace"})
        pending = op.get(f"/instances/{instance_id}/operator/deletions").json()["requests"]
        hidden_document = _document(http, instance_id)
        hidden_entries = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()
        rejected = op.post(f"/instances/{instance_id}/operator/deletions/{pending[0]['id']}/reject",
                           json={"reason": "not what the user meant"})
        restored = _document(http, instance_id)
    body = replaced.json()
    assert replaced.status_code == 202
    assert body["status"] == "pending_approval" and body["request_id"] == pending[0]["id"]
    assert "pending operator approval" in body["message"] and body["content_markdown"] == ""
    assert [(r["kind"], r["status"], r["scope"], r["upn"]) for r in pending] == [
        ("replace", "pending", "user", "alex@contoso.com")]
    assert hidden_document == "" and hidden_entries["entries"] == []
    assert rejected.status_code == 200
    assert "- keep me" in restored


def test_new_content_is_visible_at_once_and_survives_approval(server: RunningServer, instance_id: str) -> None:
    """The replacement shows immediately (a replace: no heading); approval and the sweep erase only the old."""
    with server.client() as http, _operator(server) as op:
        _append(http, instance_id, "- old one")
        _append(http, instance_id, "- old two")
        replaced = http.post(f"/instances/{instance_id}/memory/import",
                             json={"scope": "user", "content_markdown": "# User memory\n\n- brand new\n",
                                   "mode": "replace"}).json()
        during = _document(http, instance_id)
        op.post(f"/instances/{instance_id}/operator/deletions/{replaced['request_id']}/approve").raise_for_status()
        swept = op.post(f"/instances/{instance_id}/operator/sweep").json()["executed"]
        after = _document(http, instance_id)
    assert replaced["content_markdown"] == "# User memory\n\n- brand new\n"
    assert during == after == "# User memory\n\n- brand new\n"
    assert [(r["kind"], r["erased_entries"]) for r in swept] == [("replace", 2)]


def test_rejection_shows_old_content_before_the_new(server: RunningServer, instance_id: str) -> None:
    """After a rejection nothing is lost: the old content, then the replacement written meanwhile."""
    with server.client() as http, _operator(server) as op:
        _append(http, instance_id, "- old fact")
        request_id = http.post(f"/instances/{instance_id}/memory/import",
                               json={"scope": "user", "content_markdown": "- new fact",
                                     "mode": "replace"}).json()["request_id"]
        op.post(f"/instances/{instance_id}/operator/deletions/{request_id}/reject",
                json={"reason": "keep both"}).raise_for_status()
        document = _document(http, instance_id)
    assert document.index("- old fact") < document.index("- new fact")


def test_a_secret_in_a_replace_files_nothing(server: RunningServer, instance_id: str) -> None:
    """A refused replacement neither hides the old content nor files a request."""
    with server.client() as http, _operator(server) as op:
        _append(http, instance_id, "- still here")
        refused = http.post(f"/instances/{instance_id}/memory/import",
                            json={"scope": "user", "mode": "replace",
                                  "content_markdown": "- token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"})
        requests = op.get(f"/instances/{instance_id}/operator/deletions").json()["requests"]
        document = _document(http, instance_id)
    assert refused.status_code == 422
    assert requests == [] and "- still here" in document


def test_replace_is_immediate_in_immediate_mode(immediate_server: RunningServer, instance_id: str) -> None:
    """MEMORY_DELETION_MODE=immediate: 200, the old content is erased, no request is filed."""
    with immediate_server.client() as http, _operator(immediate_server) as op:
        _append(http, instance_id, "- erase me")
        replaced = http.post(f"/instances/{instance_id}/memory/import",
                             json={"scope": "user", "content_markdown": "- fresh", "mode": "replace"})
        requests = op.get(f"/instances/{instance_id}/operator/deletions").json()["requests"]
    assert replaced.status_code == 200 and replaced.json()["status"] == "stored"
    assert "- erase me" not in replaced.json()["content_markdown"] and requests == []


def test_openapi_documents_the_202_of_import(server: RunningServer) -> None:
    """The OpenAPI document lists 202 with the import answer's model, the one 200 answers too (beside the
    not_stored answer of X-MEMORY-MODE: off)."""
    document = httpx.get(f"{server.api}/openapi.json", timeout=30).json()
    responses = document["paths"]["/api/instances/{instanceId}/memory/import"]["post"]["responses"]
    accepted = responses["202"]["content"]["application/json"]["schema"]
    assert accepted == {"$ref": "#/components/schemas/ImportMemoryResponse"}
    assert accepted in responses["200"]["content"]["application/json"]["schema"]["anyOf"]
    schema = document["components"]["schemas"]["ImportMemoryResponse"]["properties"]
    assert {"status", "request_id", "message"} <= set(schema)


def test_card_numbers_and_ssns_are_refused_at_the_door(server: RunningServer, instance_id: str) -> None:
    """The issue's card write, dashed and Amex-grouped cards and an SSN, the card and the SSN typed
    in full-width and Persian digits, and the SSN copied with non-breaking hyphens: 422, nothing stored,
    never echoed."""
    full_width_card, persian_ssn = digits_of(0xFF10)("4111 1111 1111 1111"), digits_of(0x06F0)("536-22-1234")
    writes = ["- My card number is 4111 1111 1111 1111", "- card 5555-5555-5555-4444 exp 09/28",
              "- amex 3782 822463 10005", "- My SSN is 536-22-1234",
              f"- カード番号 {full_width_card}", f"- SSN {persian_ssn}", "- My SSN is 536\u201122\u20111234"]
    with server.client() as http:
        answers = [http.post(f"/instances/{instance_id}/memory/append",
                             json={"scope": "user", "content_markdown": text}) for text in writes]
        stored = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"}).json()["entries"]
    assert [a.status_code for a in answers] == [422] * 7
    assert all(a.json()["error"]["code"] == "secret_detected" for a in answers)
    assert "4111" not in answers[0].text and "536-22" not in answers[3].text
    assert full_width_card[:4] not in str(answers[4].json()) and persian_ssn[:4] not in str(answers[5].json())
    assert "536" not in answers[6].text
    assert stored == []
