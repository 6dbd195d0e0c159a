"""Bad input answers a clear JSON error with the right status, never a 500."""

from __future__ import annotations

import pytest

from tests.support.local_server import RunningServer, identity


def _error(response) -> dict:  # type: ignore[no-untyped-def]
    body = response.json()
    assert set(body) == {"error"}
    return body["error"]


def test_unknown_scope_is_400(server: RunningServer, instance_id: str) -> None:
    """scope=everything is not a scope: 400 naming the scope field."""
    with server.client() as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "everything"})
    assert response.status_code == 400
    assert "scope" in _error(response)["message"]


def test_missing_scope_is_400(server: RunningServer, instance_id: str) -> None:
    """GET without scope answers 400 rather than guessing a scope."""
    with server.client() as http:
        response = http.get(f"/instances/{instance_id}/memory")
    assert response.status_code == 400


def test_combined_on_a_write_is_400(server: RunningServer, instance_id: str) -> None:
    """combined is read-only: append with scope=combined answers 400."""
    with server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/append",
                             json={"scope": "combined", "content_markdown": "- x"})
    assert response.status_code == 400


def test_combined_read_without_agent_is_400(server: RunningServer, instance_id: str) -> None:
    """combined needs agentObjectId: 400 agent_required."""
    with server.client() as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "combined"})
    assert response.status_code == 400
    assert _error(response)["code"] == "agent_required"


def test_malformed_json_is_400(server: RunningServer, instance_id: str) -> None:
    """A body that is not JSON answers 400 malformed_json."""
    with server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/append", content=b"{not json",
                             headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert _error(response)["code"] == "malformed_json"


def test_json_that_is_not_an_object_is_400(server: RunningServer, instance_id: str) -> None:
    """A JSON array body answers 400 malformed_json."""
    with server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/append", json=["scope", "user"])
    assert response.status_code == 400
    assert _error(response)["code"] == "malformed_json"


@pytest.mark.parametrize(
    "body",
    [
        {"scope": "user", "content_markdown": 42},
        {"scope": "user"},
        {"scope": "user", "content_markdown": "- x", "tags": "not-a-list"},
        {"scope": ["user"], "content_markdown": "- x"},
    ],
)
def test_wrong_types_are_400_with_field_details(server: RunningServer, instance_id: str, body: dict) -> None:
    """Wrong or missing fields answer 400 validation_error listing each field, without echoing values."""
    with server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/append", json=body)
    error = _error(response)
    assert response.status_code == 400
    assert error["code"] == "validation_error"
    assert error["details"] and all("field" in d and "message" in d for d in error["details"])


def test_confirm_must_be_exactly_true(server: RunningServer, instance_id: str) -> None:
    """confirm=false answers 400 confirm_required."""
    with server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/clear", json={"scope": "user", "confirm": False})
    assert response.status_code == 400
    assert _error(response)["code"] == "confirm_required"


def test_empty_content_is_400(server: RunningServer, instance_id: str) -> None:
    """Appending only whitespace answers 400 empty_content."""
    with server.client() as http:
        response = http.post(f"/instances/{instance_id}/memory/append", json={"scope": "user", "content_markdown": "  \n"})
    assert response.status_code == 400
    assert _error(response)["code"] == "empty_content"


def test_bad_instance_id_is_400(server: RunningServer) -> None:
    """An instanceId with characters outside the allowed set answers 400."""
    with server.client() as http:
        response = http.get("/instances/bad%20id%24/memory", params={"scope": "user"})
    assert response.status_code == 400
    assert _error(response)["code"] == "invalid_instance_id"


def test_missing_api_key_is_401_with_www_authenticate(server: RunningServer, instance_id: str) -> None:
    """No X-API-KEY answers 401 with a WWW-Authenticate header."""
    with server.client(key=None) as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    assert response.status_code == 401
    assert "www-authenticate" in response.headers


def test_wrong_api_key_is_401(server: RunningServer, instance_id: str) -> None:
    """A key that is not configured answers 401 invalid API key."""
    with server.client(key="not-a-key") as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    assert response.status_code == 401
    assert _error(response)["message"] == "invalid API key"


def test_operator_key_does_not_open_user_routes_without_identity(server: RunningServer, instance_id: str) -> None:
    """The operator key is not a user key: it answers 401 on a user route."""
    with server.client(key="test-operator-key") as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    assert response.status_code == 401


def test_missing_identity_is_401(server: RunningServer, instance_id: str) -> None:
    """A valid key without X-USER-IDENTITY answers 401."""
    with server.client(upn=None) as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    assert response.status_code == 401


@pytest.mark.parametrize("raw", ["not json", '{"name": "no upn"}', '{"upn": "   "}', "[]"])
def test_unusable_identity_is_401(server: RunningServer, instance_id: str, raw: str) -> None:
    """An X-USER-IDENTITY that is not JSON with a non-empty upn answers 401."""
    with server.client(upn=None, X_USER_IDENTITY=raw) as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    assert response.status_code == 401


def test_unknown_route_is_json_404(server: RunningServer) -> None:
    """A path no function serves answers a JSON 404."""
    with server.client() as http:
        response = http.get("/nowhere")
    assert response.status_code == 404
    assert _error(response)["code"] == "not_found"


def test_wrong_method_is_405_with_allow(server: RunningServer, instance_id: str) -> None:
    """DELETE on the memory route answers 405 listing the allowed methods."""
    with server.client() as http:
        response = http.delete(f"/instances/{instance_id}/memory")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD"


def test_upn_in_body_never_decides_ownership(server: RunningServer, instance_id: str) -> None:
    """A body naming another upn still writes to the caller's own memory."""
    with server.client("alex@contoso.com") as alex, server.client("blake@contoso.com") as blake:
        alex.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "upn": "blake@contoso.com", "content_markdown": "- planted"}).raise_for_status()
        blake_view = blake.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()
        alex_view = alex.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()
    assert "planted" not in blake_view["content_markdown"]
    assert "planted" in alex_view["content_markdown"]


def test_upn_is_normalized_for_ownership(server: RunningServer, instance_id: str) -> None:
    """ALEX@Contoso.com and alex@contoso.com own the same memory."""
    with server.client("  ALEX@Contoso.com ") as loud, server.client("alex@contoso.com") as quiet:
        loud.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- same person"}).raise_for_status()
        view = quiet.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()
    assert "same person" in view["content_markdown"]


def test_identity_header_is_required_json_even_with_extra_fields(server: RunningServer, instance_id: str) -> None:
    """Extra identity fields (group_ids, user_id) are accepted."""
    with server.client(upn=None, X_USER_IDENTITY=identity("c@contoso.com", group_ids=["g1"], user_id="u1")) as http:
        response = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"})
    assert response.status_code == 200
