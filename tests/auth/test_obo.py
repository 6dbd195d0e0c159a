"""The on-behalf-of exchange (MSAL) against a token endpoint served over HTTPS on loopback.

The loopback authority stands in for Entra ID's token endpoint, which cannot be
reached here. It is HTTPS because MSAL accepts only https authorities; its
certificate is trusted through MEMORY_IDENTITY_CA_BUNDLE, never by turning
verification off.
"""

from __future__ import annotations

import jwt
import pytest

from memory_core.domain.errors import Forbidden, Unauthenticated, Unavailable
from memory_core.identity.obo import OnBehalfOfExchange, TokenExchangeFailed
from tests.auth.conftest import ALEX, Tokens
from tests.auth.idp import (
    CORE_AUDIENCE,
    CORE_SCOPE,
    MCP_AUDIENCE,
    OBO_CLIENT_ID,
    OBO_CLIENT_SECRET,
    TENANT_ID,
    AuthorityServer,
)
from tests.support.local_server import free_port


def _exchange(authority: AuthorityServer, ca_bundle: str, **overrides: str) -> OnBehalfOfExchange:
    options = {"client_secret": OBO_CLIENT_SECRET, "authority_host": authority.authority_host, **overrides}
    return OnBehalfOfExchange(tenant_id=TENANT_ID, client_id=OBO_CLIENT_ID, scope=CORE_SCOPE, ca_bundle=ca_bundle,
                              **options)


@pytest.fixture
def exchange(authority: AuthorityServer, tls_cert: tuple[str, str]) -> OnBehalfOfExchange:
    return _exchange(authority, tls_cert[0])


def _claims(token: str) -> dict[str, object]:
    return jwt.decode(token, options={"verify_signature": False})


def test_user_token_is_exchanged_for_a_coreapi_token(exchange: OnBehalfOfExchange, tokens: Tokens) -> None:
    """The exchange answers a token for the CoreAPI audience naming the same user.
    (Loopback HTTPS token endpoint standing in for Entra ID's.)"""
    token = exchange.exchange(tokens.entra(ALEX, audience=MCP_AUDIENCE))
    claims = _claims(token)
    assert (claims["aud"], claims["upn"]) == (CORE_AUDIENCE, ALEX)


def test_exchange_is_an_on_behalf_of_request(exchange: OnBehalfOfExchange, authority: AuthorityServer,
                                             tokens: Tokens) -> None:
    """The token request is the OBO grant: jwt-bearer, requested_token_use=on_behalf_of, the user's token as
    assertion, the CoreAPI scope, this server's client. (Loopback HTTPS token endpoint standing in for Entra ID's.)"""
    user_token = tokens.entra(f"obo-{id(exchange)}@contoso.com", audience=MCP_AUDIENCE)
    exchange.exchange(user_token)
    request = next(r for r in reversed(authority.requests_to(authority.token_path)) if r.form.get("assertion") == user_token)
    assert request.form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert request.form["requested_token_use"] == "on_behalf_of"
    assert CORE_SCOPE in request.form["scope"].split()
    assert request.form["client_id"] == OBO_CLIENT_ID


def test_exchanged_token_is_reused_until_near_expiry(exchange: OnBehalfOfExchange, tokens: Tokens) -> None:
    """The same user token is exchanged once; later calls reuse the CoreAPI token.
    (Loopback HTTPS token endpoint standing in for Entra ID's.)"""
    user_token = tokens.entra(ALEX, audience=MCP_AUDIENCE)
    first = exchange.exchange(user_token)
    assert exchange.exchange(user_token) == first
    assert exchange.exchanges == 1


def test_refused_assertion_is_invalid_token(exchange: OnBehalfOfExchange, tokens: Tokens) -> None:
    """When Entra ID refuses the assertion (invalid_grant) the caller gets 401 "invalid token".
    (Loopback HTTPS token endpoint standing in for Entra ID's.)"""
    with pytest.raises(Unauthenticated) as caught:
        exchange.exchange(tokens.entra(ALEX, audience="api://someone-else"))
    assert caught.value.message == "invalid token"


def test_consent_required_is_forbidden(exchange: OnBehalfOfExchange, authority: AuthorityServer,
                                       tokens: Tokens) -> None:
    """invalid_grant with suberror consent_required is 403: the user must consent or sign in again.
    (Loopback HTTPS token endpoint standing in for Entra ID's.)"""
    authority.next_error = {"error": "invalid_grant", "suberror": "consent_required",
                            "error_description": "AADSTS65001: The user has not consented."}
    with pytest.raises(Forbidden):
        exchange.exchange(tokens.entra(ALEX, audience=MCP_AUDIENCE))


def test_wrong_client_secret_is_a_server_failure(authority: AuthorityServer, tls_cert: tuple[str, str],
                                                 tokens: Tokens) -> None:
    """invalid_client is this server's configuration, not the caller's fault: token_exchange_failed (500).
    (Loopback HTTPS token endpoint standing in for Entra ID's.)"""
    exchange = _exchange(authority, tls_cert[0], client_secret="wrong")
    with pytest.raises(TokenExchangeFailed):
        exchange.exchange(tokens.entra(ALEX, audience=MCP_AUDIENCE))


def test_unreachable_authority_is_unavailable(tls_cert: tuple[str, str], tokens: Tokens) -> None:
    """When the authority cannot be reached the exchange answers Unavailable (503)."""
    exchange = OnBehalfOfExchange(tenant_id=TENANT_ID, client_id=OBO_CLIENT_ID, client_secret=OBO_CLIENT_SECRET,
                                  scope=CORE_SCOPE, authority_host=f"https://127.0.0.1:{free_port()}",
                                  ca_bundle=tls_cert[0], timeout_seconds=2)
    with pytest.raises(Unavailable):
        exchange.exchange(tokens.entra(ALEX, audience=MCP_AUDIENCE))


def test_untrusted_certificate_is_refused(authority: AuthorityServer, tokens: Tokens) -> None:
    """Without the CA bundle the loopback certificate is not trusted: TLS verification stays on."""
    exchange = OnBehalfOfExchange(tenant_id=TENANT_ID, client_id=OBO_CLIENT_ID, client_secret=OBO_CLIENT_SECRET,
                                  scope=CORE_SCOPE, authority_host=authority.authority_host)
    with pytest.raises(Unavailable):
        exchange.exchange(tokens.entra(ALEX, audience=MCP_AUDIENCE))
