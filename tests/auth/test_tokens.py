"""Entra ID bearer tokens: real RS256 signatures checked against a JWKS served over HTTP on loopback.

The loopback JWKS stands in for Entra ID's key endpoint, which cannot be reached here.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest

from memory_core.domain.errors import Unauthenticated, Unavailable
from memory_core.identity.modes import AuthMode
from memory_core.identity.tokens import (
    EntraPath,
    JwtVerifier,
    TokenPolicy,
    entra_issuers,
)
from tests.auth.conftest import ALEX, Tokens
from tests.auth.idp import (
    CORE_AUDIENCE,
    MCP_AUDIENCE,
    OTHER_TENANT_ID,
    TENANT_ID,
    V1_ISSUER,
    JwksServer,
    SigningKey,
    entra_claims,
    hs256_with_public_key,
    mint,
    new_signing_key,
    tampered,
    unsigned,
)
from tests.support.local_server import free_port


def _path(jwks_url: str, **verifier: float) -> EntraPath:
    policy = TokenPolicy(issuers=entra_issuers(TENANT_ID), audiences=(CORE_AUDIENCE,))
    return EntraPath(JwtVerifier(jwks_url, policy, **verifier))


@pytest.fixture
def entra(jwks: JwksServer) -> EntraPath:
    return _path(jwks.url("entra"))


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _refusal(entra: EntraPath, token: str) -> Unauthenticated:
    with pytest.raises(Unauthenticated) as caught:
        entra.authenticate(_bearer(token))
    return caught.value


def test_valid_v2_token_names_the_caller(entra: EntraPath, tokens: Tokens) -> None:
    """A v2.0 token for the configured audience is accepted: upn, name, oid and groups become the caller.
    (The JWKS is served on loopback, standing in for Entra ID's, which cannot be reached here.)"""
    token = tokens.entra("Alex@Contoso.com", name="Alex Doe", oid="oid-42", groups=["g1", "g2"])
    authentication = entra.authenticate(_bearer(token))
    caller = authentication.caller
    assert (caller.upn, caller.name, caller.user_id, caller.group_ids) == ("alex@contoso.com", "Alex Doe", "oid-42",
                                                                           ("g1", "g2"))
    assert authentication.mode is AuthMode.ENTRA and authentication.credential == token


def test_valid_v1_token_is_accepted(entra: EntraPath, entra_key: SigningKey) -> None:
    """A v1.0 token (issuer https://sts.windows.net/{tenant}/) for the tenant is accepted.
    (Loopback JWKS standing in for Entra ID's.)"""
    token = mint(entra_key, entra_claims(ALEX, issuer=V1_ISSUER))
    assert entra.authenticate(_bearer(token)).caller.upn == ALEX


def test_preferred_username_is_the_upn_when_upn_is_absent(entra: EntraPath, tokens: Tokens) -> None:
    """Without a upn claim, preferred_username names the caller. (Loopback JWKS standing in for Entra ID's.)"""
    token = tokens.entra(None, preferred_username="Casey@Contoso.com")
    assert entra.authenticate(_bearer(token)).caller.upn == "casey@contoso.com"


def test_roles_come_along(entra: EntraPath, tokens: Tokens) -> None:
    """The roles claim is kept (it opens operator routes). (Loopback JWKS standing in for Entra ID's.)"""
    assert entra.authenticate(_bearer(tokens.operator())).roles == {"Memory.Operator"}


def test_small_clock_skew_is_tolerated(entra: EntraPath, tokens: Tokens) -> None:
    """A token that expired 20 seconds ago is still accepted (60 s leeway). (Loopback JWKS standing in for Entra ID's.)"""
    now = int(time.time())
    assert entra.authenticate(_bearer(tokens.entra(exp=now - 20))).caller.upn == ALEX


def test_expired_token_is_refused_as_expired(entra: EntraPath, tokens: Tokens) -> None:
    """A token past exp (beyond the leeway) answers "expired token", code expired_token.
    (Loopback JWKS standing in for Entra ID's.)"""
    error = _refusal(entra, tokens.entra(exp=int(time.time()) - 300, iat=int(time.time()) - 4000,
                                         nbf=int(time.time()) - 4000))
    assert (error.code, error.message) == ("expired_token", "expired token")


@pytest.fixture(scope="module")
def stranger_key() -> SigningKey:
    """A key the issuer never published."""
    return new_signing_key("unknown-kid")


def _without_exp(entra_key: SigningKey) -> str:
    claims = entra_claims(ALEX)
    del claims["exp"]
    return mint(entra_key, claims)


FORGERIES: dict[str, Callable[[Tokens, SigningKey, SigningKey], str]] = {
    "not yet valid": lambda t, k, s: t.entra(nbf=int(time.time()) + 600, iat=int(time.time())),
    "wrong audience": lambda t, k, s: t.entra(audience=MCP_AUDIENCE),
    "wrong issuer (another tenant)": lambda t, k, s: t.entra(
        issuer=f"https://login.microsoftonline.com/{OTHER_TENANT_ID}/v2.0", tid=OTHER_TENANT_ID
    ),
    "wrong issuer (not Entra)": lambda t, k, s: t.entra(issuer="https://evil.example/v2.0"),
    "alg none": lambda t, k, s: unsigned(entra_claims(ALEX), k.kid),
    "HS256 signed with the public key": lambda t, k, s: hs256_with_public_key(k, entra_claims(ALEX)),
    "tampered payload": lambda t, k, s: tampered(t.entra(), upn="mallory@contoso.com"),
    "unknown kid": lambda t, k, s: mint(s, entra_claims(ALEX)),
    "known kid, other key": lambda t, k, s: mint(s, entra_claims(ALEX), kid=k.kid),
    "no upn": lambda t, k, s: t.entra(None),
    "no exp": lambda t, k, s: _without_exp(k),
    "not a JWT": lambda t, k, s: "not-a-jwt",
    "empty": lambda t, k, s: "",
}


@pytest.mark.parametrize("case", list(FORGERIES))
def test_bad_token_is_refused_as_invalid_token(
    entra: EntraPath, tokens: Tokens, entra_key: SigningKey, stranger_key: SigningKey, case: str
) -> None:
    """Each bad token is refused with the same "invalid token", never naming the check that failed.
    (Keys generated here; loopback JWKS standing in for Entra ID's.)"""
    error = _refusal(entra, FORGERIES[case](tokens, entra_key, stranger_key))
    assert (error.code, error.message) == ("invalid_token", "invalid token")


def test_key_set_is_cached(jwks: JwksServer, tokens: Tokens, entra_key: SigningKey) -> None:
    """Many verifications fetch the key set once. (Loopback JWKS standing in for Entra ID's.)"""
    name = f"cached-{uuid.uuid4().hex[:6]}"
    jwks.publish(name, entra_key)
    entra = _path(jwks.url(name))
    for _ in range(5):
        entra.authenticate(_bearer(tokens.entra()))
    assert jwks.fetches(name) == 1


def test_unknown_kid_refreshes_the_key_set(jwks: JwksServer, entra_key: SigningKey) -> None:
    """After a key rotation, a token with the new kid refreshes the cached key set and is accepted.
    (Loopback JWKS standing in for Entra ID's.)"""
    name = f"rotating-{uuid.uuid4().hex[:6]}"
    jwks.publish(name, entra_key)
    entra = _path(jwks.url(name), cooldown_seconds=0)
    entra.authenticate(_bearer(mint(entra_key, entra_claims(ALEX))))
    rotated = new_signing_key("rotated-key")
    jwks.publish(name, entra_key, rotated)
    assert entra.authenticate(_bearer(mint(rotated, entra_claims(ALEX)))).caller.upn == ALEX
    assert jwks.fetches(name) == 2


def test_unknown_kids_cannot_flood_the_key_endpoint(jwks: JwksServer, entra_key: SigningKey) -> None:
    """Within the refresh cooldown, tokens with random kids cause no further key-set fetches.
    (Loopback JWKS standing in for Entra ID's.)"""
    name = f"flood-{uuid.uuid4().hex[:6]}"
    jwks.publish(name, entra_key)
    entra = _path(jwks.url(name))
    for i in range(5):
        with pytest.raises(Unauthenticated):
            entra.authenticate(_bearer(mint(entra_key, entra_claims(ALEX), kid=f"random-{i}")))
    assert jwks.fetches(name) == 1


def test_unreachable_key_endpoint_is_unavailable(tokens: Tokens) -> None:
    """When the key set cannot be fetched the call answers Unavailable (503), not 401: the token may be fine."""
    entra = _path(f"http://127.0.0.1:{free_port()}/keys", timeout_seconds=2)
    with pytest.raises(Unavailable):
        entra.authenticate(_bearer(tokens.entra()))


def test_bearer_scheme_is_case_insensitive(entra: EntraPath, tokens: Tokens) -> None:
    """``authorization: bearer <token>`` is read like ``Authorization: Bearer``. (Loopback JWKS standing in for Entra ID's.)"""
    assert entra.authenticate({"authorization": f"bearer {tokens.entra()}"}).caller.upn == ALEX
