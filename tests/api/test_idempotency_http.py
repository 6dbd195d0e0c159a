"""Idempotency-Key on the CoreAPI's writes, over real sockets against ``python -m memory_core serve`` on each store.

A client whose append timed out or answered 503 after its commit may send it again with the same key: one entry,
one audit event, the same answer. The rules themselves: tests/domain/test_idempotency.py.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import httpx

from tests.support.local_server import OPERATOR_KEY, RunningServer

KEY_HEADER = "Idempotency-Key"


def _append(http: httpx.Client, instance_id: str, key: str | bytes | None, content: str = "- likes trains",
            **body: Any) -> httpx.Response:
    headers = {KEY_HEADER: key} if key is not None else {}
    return http.post(f"/instances/{instance_id}/memory/append", headers=headers,
                     json={"scope": "user", "content_markdown": content, **body})


def _entries(http: httpx.Client, instance_id: str) -> list[dict[str, Any]]:
    response = http.get(f"/instances/{instance_id}/memory/entries", params={"scope": "user"})
    response.raise_for_status()
    return list(response.json()["entries"])


def _append_events(http: httpx.Client, instance_id: str) -> list[dict[str, Any]]:
    events = http.get(f"/instances/{instance_id}/memory/audit").json()["events"]
    return [e for e in events if e["action"] in ("append", "import")]


def test_a_retry_with_the_same_key_answers_the_same_and_stores_once(server: RunningServer, instance_id: str) -> None:
    """Two identical appends with one key: both 200 with the same entry_id and section; one entry, one event."""
    key = str(uuid.uuid4())
    with server.client() as http:
        first = _append(http, instance_id, key, reason="user said so")
        again = _append(http, instance_id, key, reason="user said so")
        entries, events = _entries(http, instance_id), _append_events(http, instance_id)
    assert first.status_code == again.status_code == 200
    assert again.json()["entry_id"] == first.json()["entry_id"]
    assert again.json()["content_markdown"] == first.json()["content_markdown"]
    assert [e["id"] for e in entries] == [first.json()["entry_id"]]
    assert [e["entry_id"] for e in events] == [first.json()["entry_id"]]


def test_two_identical_requests_at_once_leave_one_entry_and_both_succeed(server: RunningServer,
                                                                         instance_id: str) -> None:
    """The concurrent retry: eight identical requests with one key sent together, into a memory with no profile
    yet. Every one answers 200 with the same entry id; one entry and one audit event are stored."""
    key = str(uuid.uuid4())
    start = threading.Barrier(8)
    answers: list[httpx.Response] = []

    def send() -> None:
        with server.client() as http:
            start.wait()
            answers.append(_append(http, instance_id, key))

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [a.status_code for a in answers] == [200] * 8, [a.text for a in answers if a.status_code != 200]
    assert len({a.json()["entry_id"] for a in answers}) == 1
    with server.client() as http:
        assert len(_entries(http, instance_id)) == 1
        assert len(_append_events(http, instance_id)) == 1


def test_the_same_key_with_other_content_is_422(server: RunningServer, instance_id: str) -> None:
    """The draft's rule for a key reused on a different request: 422, naming the key; nothing stored."""
    key = str(uuid.uuid4())
    with server.client() as http:
        _append(http, instance_id, key).raise_for_status()
        refused = _append(http, instance_id, key, "- likes planes")
        entries = _entries(http, instance_id)
    assert refused.status_code == 422
    assert refused.json()["error"]["code"] == "idempotency_key_reused"
    assert "Idempotency-Key" in refused.json()["error"]["message"]
    assert [e["content_markdown"] for e in entries] == ["- likes trains"]


def test_a_retry_after_the_entry_was_forgotten_and_swept_is_422_and_brings_nothing_back(
    server: RunningServer, instance_id: str
) -> None:
    """A key is used once for all time: forgotten, approved and swept, its entry stays erased; the retry answers
    422 ``idempotency_key_erased`` and stores nothing (in either deletion mode the erasure ends the same way)."""
    key = str(uuid.uuid4())
    with server.client() as http, httpx.Client(base_url=f"{server.api}/instances/{instance_id}/operator",
                                               headers={"X-API-KEY": OPERATOR_KEY}, timeout=60) as op:
        entry_id = _append(http, instance_id, key).json()["entry_id"]
        forgotten = http.delete(f"/instances/{instance_id}/memory/entries/{entry_id}")
        if forgotten.status_code == 202:
            op.post(f"/deletions/{forgotten.json()['request_id']}/approve").raise_for_status()
            op.post("/sweep").raise_for_status()
        else:
            assert forgotten.status_code == 200
        refused = _append(http, instance_id, key)
        entries = _entries(http, instance_id)
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["code"] == "idempotency_key_erased"
    assert entries == []


def test_another_user_with_the_same_key_writes_their_own_entry(server: RunningServer, instance_id: str) -> None:
    """A key is scoped to the caller: another person's key of the same value neither collides nor tells them
    anything (200, a different entry id, their own memory)."""
    key = str(uuid.uuid4())
    with server.client("alex@contoso.com") as alex, server.client("blake@contoso.com") as blake:
        first = _append(alex, instance_id, key)
        other = _append(blake, instance_id, key, "- other words")
        assert other.status_code == 200 and other.json()["entry_id"] != first.json()["entry_id"]
        assert [e["content_markdown"] for e in _entries(blake, instance_id)] == ["- other words"]
        assert [e["content_markdown"] for e in _entries(alex, instance_id)] == ["- likes trains"]


def test_without_the_header_a_repeat_is_a_second_entry(server: RunningServer, instance_id: str) -> None:
    with server.client() as http:
        _append(http, instance_id, None).raise_for_status()
        _append(http, instance_id, None).raise_for_status()
        assert len(_entries(http, instance_id)) == 2


def test_a_malformed_key_is_400_and_stores_nothing(server: RunningServer, instance_id: str) -> None:
    """Not 1 to 255 printable ASCII characters: 400 invalid_idempotency_key, before anything is stored."""
    with server.client() as http:
        for key in ("x" * 256, "caf\u00e9".encode()):  # too long; not ASCII (UTF-8 bytes on the wire)
            refused = _append(http, instance_id, key)
            assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_idempotency_key"
        assert _entries(http, instance_id) == []


def test_import_in_append_mode_takes_the_key_and_replace_refuses_it(server: RunningServer, instance_id: str) -> None:
    key = str(uuid.uuid4())
    body = {"scope": "user", "content_markdown": "- imported", "mode": "append"}
    with server.client() as http:
        path = f"/instances/{instance_id}/memory/import"
        first = http.post(path, headers={KEY_HEADER: key}, json=body)
        again = http.post(path, headers={KEY_HEADER: key}, json=body)
        replace = http.post(path, headers={KEY_HEADER: str(uuid.uuid4())}, json={**body, "mode": "replace"})
        entries = _entries(http, instance_id)
    assert first.status_code == again.status_code == 200
    assert again.json()["content_markdown"] == first.json()["content_markdown"]
    assert replace.status_code == 400 and replace.json()["error"]["code"] == "idempotency_key_unsupported"
    assert [e["content_markdown"] for e in entries] == ["- imported"]


def test_openapi_documents_the_header_on_append_and_import(server: RunningServer) -> None:
    with server.client() as http:
        paths = http.get("/openapi.json").json()["paths"]
    for route in ("append", "import"):
        parameters = paths[f"/api/instances/{{instanceId}}/memory/{route}"]["post"]["parameters"]
        (header,) = [p for p in parameters if p["in"] == "header"]
        assert header["name"] == KEY_HEADER and header["required"] is False
        assert header["schema"]["maxLength"] == 255 and header["schema"]["minLength"] == 1
    clear = paths["/api/instances/{instanceId}/memory/clear"]["post"]["parameters"]
    assert all(p["in"] != "header" for p in clear)
