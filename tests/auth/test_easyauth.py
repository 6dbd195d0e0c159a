"""App Service authentication: X-MS-CLIENT-PRINCIPAL, trusted only in mode easyauth."""

from __future__ import annotations

import base64

import httpx
import pytest

from memory_core.domain.errors import Forbidden, Unauthenticated
from memory_core.identity import Authenticator, build_authenticator
from tests.auth.conftest import ALEX, client_principal, settings_of
from tests.support.local_server import RunningServer


@pytest.fixture(scope="module")
def auth() -> Authenticator:
    return build_authenticator(settings_of({"MEMORY_AUTH_MODE": "easyauth", "WEBSITE_AUTH_ENABLED": "True"}))


def test_principal_names_the_user(auth: Authenticator) -> None:
    """The principal's upn, name, object id and groups become the caller."""
    caller = auth.user({"X-MS-CLIENT-PRINCIPAL": client_principal("Alex@Contoso.com", name="Alex")})
    assert (caller.upn, caller.name, caller.user_id, caller.group_ids) == ("alex@contoso.com", "Alex", "oid-1", ("g-1",))


def test_principal_without_upn_is_refused(auth: Authenticator) -> None:
    """A principal naming no upn is 401 "invalid client principal"."""
    with pytest.raises(Unauthenticated, match="invalid client principal"):
        auth.user({"X-MS-CLIENT-PRINCIPAL": client_principal(None)})


def test_malformed_principal_is_refused(auth: Authenticator) -> None:
    """A principal that is not base64 JSON is 401 "invalid client principal"."""
    with pytest.raises(Unauthenticated, match="invalid client principal"):
        auth.user({"X-MS-CLIENT-PRINCIPAL": base64.b64encode(b"[1, 2]").decode()})


UPN_CLAIM = b'{"typ": "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/upn", "val": "alex@contoso.com"}'


@pytest.mark.parametrize("document", [
    b'{"claims": [' + UPN_CLAIM + b'], "claims": [' + UPN_CLAIM.replace(b"alex@", b"bob@") + b"]}",
    b'{"claims": [' + UPN_CLAIM[:-1] + b', "val": "bob@contoso.com"}]}',
    b'{"claims": [' + UPN_CLAIM + b', {"typ": "name", "val": "Alex \\ud800"}]}',
], ids=["claims-twice", "val-twice", "lone-surrogate"])
def test_a_principal_the_strict_decoder_refuses_is_refused(auth: Authenticator, document: bytes) -> None:
    """The principal is read by the one strict JSON decoder: a member named twice or a lone surrogate is a 401."""
    with pytest.raises(Unauthenticated, match="invalid client principal"):
        auth.user({"X-MS-CLIENT-PRINCIPAL": base64.b64encode(document).decode()})


def test_the_same_principal_without_the_repeat_names_the_user(auth: Authenticator) -> None:
    """The documents above differ from an accepted principal only by what the decoder refuses."""
    caller = auth.user({"X-MS-CLIENT-PRINCIPAL": base64.b64encode(b'{"claims": [' + UPN_CLAIM + b"]}").decode()})
    assert caller.upn == "alex@contoso.com"


def test_operator_role_in_the_principal_opens_operator_routes(auth: Authenticator) -> None:
    """A principal with the Memory.Operator role is an operator, labelled by its UPN."""
    principal = client_principal(ALEX, roles=("Memory.Operator",))
    assert auth.operator({"X-MS-CLIENT-PRINCIPAL": principal}) == ALEX


def test_principal_without_the_role_is_forbidden_on_operator_routes(auth: Authenticator) -> None:
    """A signed-in user without the role is 403 on operator routes."""
    with pytest.raises(Forbidden):
        auth.operator({"X-MS-CLIENT-PRINCIPAL": client_principal(ALEX)})


def test_easyauth_server_serves_the_signed_in_user(easyauth_server: RunningServer, instance_id: str) -> None:
    """Over HTTP, the principal's user appends and reads their own memory."""
    headers = {"X-MS-CLIENT-PRINCIPAL": client_principal(ALEX)}
    with httpx.Client(base_url=easyauth_server.api, headers=headers) as http:
        http.post(f"/instances/{instance_id}/memory/append",
                  json={"scope": "user", "content_markdown": "- signed in"}).raise_for_status()
        document = http.get(f"/instances/{instance_id}/memory", params={"scope": "user"}).json()
    assert document["upn"] == ALEX and "- signed in" in document["content_markdown"]


def test_easyauth_server_without_principal_is_401(easyauth_server: RunningServer, instance_id: str) -> None:
    """Without a principal (an anonymous request App Service let through) the answer is 401 with a challenge."""
    response = httpx.get(f"{easyauth_server.api}/instances/{instance_id}/memory", params={"scope": "user"})
    assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")
