"""The platform identity context (X-PLATFORM-IDENTITY): a JWT the platform signs, carrying the user identity.

Its signature is checked against the platform's JWKS, served here over HTTP on
loopback in place of the platform's, which cannot be reached.
"""

from __future__ import annotations

import time

import pytest

from memory_core.domain.errors import Unauthenticated
from memory_core.identity import Authenticator, build_authenticator
from tests.auth.conftest import ALEX, Tokens, identity_settings, settings_of
from tests.auth.idp import (
    PLATFORM_ISSUER,
    V2_ISSUER,
    JwksServer,
    SigningKey,
    mint,
    platform_claims,
)


@pytest.fixture(scope="module")
def auth(jwks: JwksServer) -> Authenticator:
    return build_authenticator(settings_of(identity_settings(jwks, MEMORY_AUTH_MODE="platform")))


def _refused(auth: Authenticator, context: str) -> Unauthenticated:
    with pytest.raises(Unauthenticated) as caught:
        auth.user({"X-PLATFORM-IDENTITY": context})
    return caught.value


def test_identity_context_names_the_user(auth: Authenticator, tokens: Tokens) -> None:
    """upn, name, user_name, user_id and group_ids of the context become the caller.
    (Loopback JWKS standing in for the platform's.)"""
    context = tokens.platform("Alex@Contoso.com", name="Alex", user_name="alex", user_id="u-1", group_ids=["g1"])
    caller = auth.user({"X-PLATFORM-IDENTITY": context})
    assert (caller.upn, caller.name, caller.user_name, caller.user_id, caller.group_ids) == (
        "alex@contoso.com", "Alex", "alex", "u-1", ("g1",))


def test_context_from_another_issuer_is_refused(auth: Authenticator, tokens: Tokens) -> None:
    """A context whose iss is not MEMORY_PLATFORM_ISSUER is "invalid token". (Loopback JWKS standing in for the platform's.)"""
    assert _refused(auth, tokens.platform(ALEX, iss=V2_ISSUER)).message == "invalid token"


def test_entra_token_is_not_a_platform_context(auth: Authenticator, tokens: Tokens) -> None:
    """An Entra-signed token in X-PLATFORM-IDENTITY is refused: not the platform's key, not its issuer.
    (Loopback JWKS standing in for the platform's.)"""
    assert _refused(auth, tokens.entra(ALEX)).message == "invalid token"


def test_context_signed_with_another_key_is_refused(auth: Authenticator, entra_key: SigningKey,
                                                    platform_key: SigningKey) -> None:
    """Right issuer and kid, wrong key: "invalid token". (Loopback JWKS standing in for the platform's.)"""
    forged = mint(entra_key, platform_claims(ALEX), kid=platform_key.kid)
    assert _refused(auth, forged).message == "invalid token"


def test_context_for_another_audience_is_refused(auth: Authenticator, tokens: Tokens) -> None:
    """With MEMORY_PLATFORM_AUDIENCE set, a context for another audience is refused.
    (Loopback JWKS standing in for the platform's.)"""
    assert _refused(auth, tokens.platform(ALEX, aud="another-service")).message == "invalid token"


def test_expired_context_is_refused_as_expired(auth: Authenticator, tokens: Tokens) -> None:
    """A context past exp answers "expired token". (Loopback JWKS standing in for the platform's.)"""
    now = int(time.time())
    assert _refused(auth, tokens.platform(ALEX, exp=now - 600, iat=now - 900, nbf=now - 900)).message == "expired token"


def test_context_without_upn_is_refused(auth: Authenticator, tokens: Tokens) -> None:
    """A context that names no upn is "invalid token". (Loopback JWKS standing in for the platform's.)"""
    assert _refused(auth, tokens.platform(None)).message == "invalid token"


def test_audience_is_optional(jwks: JwksServer, tokens: Tokens) -> None:
    """Without MEMORY_PLATFORM_AUDIENCE any audience (or none) is accepted from the configured issuer.
    (Loopback JWKS standing in for the platform's.)"""
    auth = build_authenticator(settings_of(identity_settings(jwks, MEMORY_AUTH_MODE="platform",
                                                             MEMORY_PLATFORM_AUDIENCE="")))
    assert auth.user({"X-PLATFORM-IDENTITY": tokens.platform(ALEX, aud="whatever")}).upn == ALEX


def test_issuer_must_match_exactly(auth: Authenticator, tokens: Tokens) -> None:
    """The issuer check is exact: the configured issuer with a trailing slash is refused.
    (Loopback JWKS standing in for the platform's.)"""
    assert _refused(auth, tokens.platform(ALEX, iss=PLATFORM_ISSUER + "/")).message == "invalid token"
