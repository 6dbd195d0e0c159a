"""POST /memory/search: the search's fields as a strict JSON body, so the words never travel in a URL.

GET with the same fields as query parameters still answers, for existing callers; POST is the preferred form
(URLs are what proxies, request telemetry and HTTP clients' logs record). Who searches is always the
credential's caller: the body names no one.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from memory_core.edge import SMALL_BODY_BYTES
from tests.support.local_server import RunningServer

AGENT = "/agents/search-post"


def _search(inst: str) -> str:
    return f"/instances/{inst}/memory/search"


def _append(http: httpx.Client, inst: str, text: str, **extra: object) -> None:
    body = {"scope": "user", "content_markdown": text, **extra}
    http.post(f"/instances/{inst}/memory/append", json=body).raise_for_status()


def _hits(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [hit["entry"]["content_markdown"] for hit in answer.json()["hits"]]


def test_post_finds_what_get_finds_for_every_field(server: RunningServer, instance_id: str) -> None:
    """Words, tags, scope, the agent, the limit and the sharing policy mean the same in the body as in the URL."""
    with server.client() as http:
        _append(http, instance_id, "- Green tea at breakfast.", tags=["home"])
        _append(http, instance_id, "- Black tea at work.", tags=["work"])
        _append(http, instance_id, "- Mint tea for the agent.", scope="agent", agent_object_id=AGENT)
        cases: list[dict[str, Any]] = [
            {"q": "tea"},
            {"q": "tea", "tags": "work"},
            {"q": "tea", "limit": 1},
            {"q": "tea", "scope": "agent", "agentObjectId": AGENT},
            {"q": "tea", "scope": "combined", "agentObjectId": AGENT, "memorySharing": None},
        ]
        for case in cases:
            posted = http.post(_search(instance_id), json=case)
            got = http.get(_search(instance_id), params={k: str(v) for k, v in case.items() if v is not None})
            assert _hits(posted) == _hits(got), case
            assert posted.json()["query"] == "tea"
        assert len(_hits(http.post(_search(instance_id), json={"q": "tea"}))) == 2
        assert _hits(http.post(_search(instance_id), json={"q": "tea", "tags": "work"})) == ["- Black tea at work."]
        combined = http.post(_search(instance_id), json={"q": "tea", "scope": "combined", "agentObjectId": AGENT})
        assert len(_hits(combined)) == 3


def test_an_empty_or_blank_q_answers_as_the_get_does(sqlite_server: RunningServer, instance_id: str) -> None:
    """No words (an empty body, or q of spaces only) is the same search as GET without q."""
    with sqlite_server.client() as http:
        _append(http, instance_id, "- Likes trains.")
        got = http.get(_search(instance_id))
        for body in ({}, {"q": ""}, {"q": "   "}):
            posted = http.post(_search(instance_id), json=body)
            assert _hits(posted) == _hits(got), body
            assert posted.json()["query"] == ""


@pytest.mark.parametrize(("body", "field"), [
    ({"q": 5}, "q"),
    ({"q": None}, "q"),
    ({"q": ["tea"]}, "q"),
    ({"limit": "5"}, "limit"),
    ({"limit": True}, "limit"),
    ({"limit": 5.0}, "limit"),
    ({"limit": 0}, "limit"),
    ({"limit": 101}, "limit"),
    ({"tags": ["work"]}, "tags"),
    ({"scope": "everyone"}, "scope"),
    ({"agentObjectId": ""}, "agentObjectId"),
    ({"agentObjectId": 7}, "agentObjectId"),
    ({"memorySharing": "public"}, "memorySharing"),
])
def test_a_wrong_type_or_value_is_refused_naming_the_field(sqlite_server: RunningServer, instance_id: str,
                                                           body: dict[str, Any], field: str) -> None:
    """Each field has its JSON type: a number is no string and "5" no number (the query string's text is not)."""
    with sqlite_server.client() as http:
        answer = http.post(_search(instance_id), json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "validation_error"
    assert error["message"].startswith(f"invalid request: {field}"), error


@pytest.mark.parametrize("extra", ["query", "text", "Q", "offset", "user"])
def test_an_unknown_field_is_refused_naming_it(sqlite_server: RunningServer, instance_id: str, extra: str) -> None:
    """A misspelt field would otherwise be a search for nothing (all entries), silently."""
    with sqlite_server.client() as http:
        answer = http.post(_search(instance_id), json={"q": "tea", extra: "x"})
    assert answer.status_code == 400
    assert answer.json()["error"]["message"] == f"invalid request: {extra}: Extra inputs are not permitted"


def test_an_upn_in_the_body_is_refused_and_never_names_whose_memory(sqlite_server: RunningServer,
                                                                    instance_id: str) -> None:
    """Identity comes from the credential only: a body naming another user is refused, not obeyed or ignored."""
    with sqlite_server.client("bob@contoso.com") as bob:
        _append(bob, instance_id, "- Bob's private pineapple.")
    with sqlite_server.client("alex@contoso.com") as alex:
        refused = alex.post(_search(instance_id), json={"q": "pineapple", "upn": "bob@contoso.com"})
        plain = alex.post(_search(instance_id), json={"q": "pineapple"})
    with sqlite_server.client("bob@contoso.com") as bob:
        own = bob.post(_search(instance_id), json={"q": "pineapple"})
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == "invalid request: upn: Extra inputs are not permitted"
    assert "pineapple" not in refused.text.replace('"pineapple"', "")  # nothing of Bob's in the refusal
    assert _hits(plain) == []
    assert _hits(own) == ["- Bob's private pineapple."]


def test_a_q_past_1024_characters_is_400_and_a_body_past_64_kib_is_413(sqlite_server: RunningServer,
                                                                       instance_id: str) -> None:
    """The query's own limit holds in the body; a body too large for any search is refused before it is read."""
    with sqlite_server.client() as http:
        long_q = http.post(_search(instance_id), json={"q": "w" * 1025})
        at_limit = http.post(_search(instance_id), json={"q": "w" * 1024})
        huge = http.post(_search(instance_id), json={"q": "w" * (SMALL_BODY_BYTES + 1)})
    assert long_q.status_code == 400 and long_q.json()["error"]["message"].startswith("invalid request: q:")
    assert at_limit.status_code == 200
    assert huge.status_code == 413 and huge.json()["error"]["code"] == "payload_too_large"
    assert f"{SMALL_BODY_BYTES} bytes" in huge.json()["error"]["message"]


@pytest.mark.parametrize(("content", "content_type", "status", "code"), [
    (b"", "application/json", 400, "malformed_json"),
    (b"[]", "application/json", 400, "malformed_json"),
    (b'"tea"', "application/json", 400, "malformed_json"),
    (b'{"q": "tea", "q": "coffee"}', "application/json", 400, "malformed_json"),
    (b"q=tea", "application/x-www-form-urlencoded", 415, "unsupported_media_type"),
])
def test_a_body_that_is_no_json_object_is_refused(sqlite_server: RunningServer, instance_id: str, content: bytes,
                                                  content_type: str, status: int, code: str) -> None:
    """No body, a list, a string, a repeated member, a form: the rules of every other body."""
    with sqlite_server.client() as http:
        answer = http.post(_search(instance_id), content=content, headers={"Content-Type": content_type})
    assert answer.status_code == status, answer.text
    assert answer.json()["error"]["code"] == code


def test_words_in_the_url_of_a_post_are_refused(sqlite_server: RunningServer, instance_id: str) -> None:
    """A caller who put the words in the URL of a POST learns it, instead of searching for nothing."""
    with sqlite_server.client() as http:
        _append(http, instance_id, "- Likes trains.")
        answer = http.post(_search(instance_id), params={"q": "trains"}, json={})
        mixed = http.post(_search(instance_id), params={"LIMIT": "3"}, json={"q": "trains"})
        other = http.post(_search(instance_id), params={"unrelated": "1"}, json={"q": "trains"})
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "code": "parameter_in_url",
        "message": "query parameter 'q' on a POST: give it in the JSON body, not in the URL (URLs are logged)",
    }
    assert mixed.status_code == 400 and "'limit'" in mixed.json()["error"]["message"]
    assert _hits(other) == ["- Likes trains."]  # a parameter search does not read is no search field


def test_memory_off_answers_an_empty_search_with_the_notice(server: RunningServer, instance_id: str) -> None:
    """X-MEMORY-MODE: off: the POST reads nothing, as the GET does, and says why; the body is still checked."""
    with server.client() as http:
        _append(http, instance_id, "- kept")
        off = {"X-MEMORY-MODE": "off"}
        found = http.post(_search(instance_id), json={"q": "kept"}, headers=off)
        refused = http.post(_search(instance_id), json={"q": "kept", "upn": "x@contoso.com"}, headers=off)
    assert found.status_code == 200
    assert found.json()["hits"] == [] and "X-MEMORY-MODE: off" in found.json()["notice"]
    assert found.json()["query"] == "kept"
    assert refused.status_code == 400


def test_the_openapi_document_gives_the_post_its_body_and_prefers_it(sqlite_server: RunningServer) -> None:
    """POST has the SearchBody (strict, no other fields) and no query parameters; GET keeps its parameters and its
    operationId; both say POST is preferred."""
    document = httpx.get(f"{sqlite_server.api}/openapi.json").json()
    item = document["paths"]["/api/instances/{instanceId}/memory/search"]
    post, get = item["post"], item["get"]
    assert post["operationId"] == "search_memory_post" and get["operationId"] == "search_memory"
    assert post["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/SearchBody"}
    assert [p["name"] for p in post["parameters"]] == ["instanceId"]
    assert {p["name"] for p in get["parameters"]} == {"instanceId", "q", "scope", "agentObjectId", "tags", "limit",
                                                      "memorySharing"}
    assert "requestBody" not in get
    assert {"413", "415"} <= set(post["responses"]) and "413" not in get["responses"]
    assert post["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/SearchResponse")
    assert "POST" in post["description"] and "preferred" in post["description"]
    schema = document["components"]["schemas"]["SearchBody"]
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {"q", "scope", "agentObjectId", "tags", "limit", "memorySharing"}
    assert schema["properties"]["q"]["maxLength"] == 1024
    assert (schema["properties"]["limit"]["minimum"], schema["properties"]["limit"]["maximum"]) == (1, 100)
    operation_ids = [op["operationId"] for path in document["paths"].values() for op in path.values()]
    assert len(operation_ids) == len(set(operation_ids))
