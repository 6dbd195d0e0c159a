"""The authenticator over several paths: precedence, no fall-through, messages, challenges, operators.

Tokens are verified for real against the loopback JWKS, which stands in for
Entra ID's and the platform's key endpoints (they cannot be reached here).
"""

from __future__ import annotations

import json

import pytest

from memory_core.domain.errors import Forbidden, Unauthenticated
from memory_core.identity import (
    Authenticator,
    AuthMode,
    KeyAuthenticator,
    build_authenticator,
)
from tests.auth.conftest import (
    ALEX,
    BOB,
    OLIVIA,
    Tokens,
    client_principal,
    identity_settings,
    settings_of,
)
from tests.auth.idp import JwksServer
from tests.support.local_server import OPERATOR_KEY, USER_KEY, identity

KEY_HEADERS = {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": identity(BOB)}


@pytest.fixture(scope="module")
def auth(jwks: JwksServer) -> Authenticator:
    """entra, platform and key, with user and operator keys."""
    return build_authenticator(
        settings_of(identity_settings(jwks, MEMORY_API_KEYS=USER_KEY, MEMORY_OPERATOR_KEYS=OPERATOR_KEY))
    )


def _unauthenticated(call, headers: dict[str, str]) -> Unauthenticated:  # type: ignore[no-untyped-def]
    with pytest.raises(Unauthenticated) as caught:
        call(headers)
    return caught.value


def test_bearer_token_wins_over_a_key(auth: Authenticator, tokens: Tokens) -> None:
    """With a valid bearer token and a valid key, the token names the caller (it comes first).
    (Loopback JWKS standing in for Entra ID's.)"""
    assert auth.user({**tokens.bearer(ALEX), **KEY_HEADERS}).upn == ALEX


def test_invalid_bearer_token_never_falls_through_to_a_valid_key(auth: Authenticator) -> None:
    """A present but invalid token is 401 even when a valid key and identity are also sent."""
    error = _unauthenticated(auth.user, {"Authorization": "Bearer nonsense", **KEY_HEADERS})
    assert error.message == "invalid token"


def test_invalid_platform_context_never_falls_through_to_a_valid_key(auth: Authenticator, tokens: Tokens) -> None:
    """A present but expired platform identity context is 401 even with a valid key.
    (Loopback JWKS standing in for the platform's.)"""
    expired = tokens.platform_header(ALEX, exp=1, iat=0, nbf=0)
    assert _unauthenticated(auth.user, {**expired, **KEY_HEADERS}).message == "expired token"


def test_wrong_key_is_refused_even_with_an_identity(auth: Authenticator) -> None:
    """A wrong X-API-KEY is 401 "invalid API key", as before."""
    assert _unauthenticated(auth.user, {"X-API-KEY": "nope", "X-USER-IDENTITY": identity(ALEX)}).message == (
        "invalid API key"
    )


def test_identity_header_alone_is_no_credential(auth: Authenticator) -> None:
    """X-USER-IDENTITY without a key names nobody: 401 listing the accepted credentials."""
    error = _unauthenticated(auth.user, {"X-USER-IDENTITY": identity(ALEX)})
    assert error.message == (
        "missing credential: send Authorization: Bearer <token> or X-PLATFORM-IDENTITY or X-API-KEY with X-USER-IDENTITY"
    )


def test_missing_credential_challenges_with_every_enabled_scheme(auth: Authenticator) -> None:
    """The 401 challenge names Bearer, the platform header and the API key header."""
    error = _unauthenticated(auth.user, {})
    assert error.challenge == (  # type: ignore[attr-defined]
        'Bearer realm="memory-core", PlatformIdentity realm="memory-core", header="X-PLATFORM-IDENTITY", '
        'ApiKey header="X-API-KEY"'
    )


def test_rejected_bearer_token_challenge_says_invalid_token(auth: Authenticator) -> None:
    """A rejected bearer token's challenge carries error="invalid_token" (RFC 6750)."""
    error = _unauthenticated(auth.user, {"Authorization": "Bearer x.y.z"})
    assert 'Bearer realm="memory-core", error="invalid_token", error_description="invalid token"' in error.challenge  # type: ignore[attr-defined]


def test_other_authorization_schemes_are_not_bearer_tokens(auth: Authenticator) -> None:
    """Authorization: Basic is no credential here; the key path then decides."""
    assert auth.user({"Authorization": "Basic dXNlcjpwYXNz", **KEY_HEADERS}).upn == BOB


def test_bearer_token_is_ignored_when_entra_is_off(tokens: Tokens) -> None:
    """In mode key a bearer token is not a credential: the answer is the key path's "missing X-API-KEY header"."""
    auth = KeyAuthenticator([USER_KEY], [OPERATOR_KEY])
    assert _unauthenticated(auth.user, tokens.bearer(ALEX)).message == "missing X-API-KEY header"


def test_client_principal_is_ignored_outside_easyauth(auth: Authenticator) -> None:
    """X-MS-CLIENT-PRINCIPAL is not trusted unless mode easyauth is on: it names nobody."""
    assert _unauthenticated(auth.user, {"X-MS-CLIENT-PRINCIPAL": client_principal(ALEX)}).message.startswith(
        "missing credential"
    )


def test_key_mode_messages_are_unchanged() -> None:
    """Mode key alone answers exactly as before: missing key, missing identity, ApiKey challenge."""
    auth = KeyAuthenticator([USER_KEY], [OPERATOR_KEY])
    missing = _unauthenticated(auth.user, {})
    assert (missing.message, missing.challenge) == ("missing X-API-KEY header", 'ApiKey header="X-API-KEY"')  # type: ignore[attr-defined]
    assert _unauthenticated(auth.user, {"X-API-KEY": USER_KEY}).message == "missing X-USER-IDENTITY header"


def test_key_authenticator_reports_its_mode() -> None:
    """KeyAuthenticator (kept for its importers) is the authenticator with mode key alone."""
    assert KeyAuthenticator([USER_KEY], []).modes == {AuthMode.KEY}


def test_memory_core_auth_still_exports_the_key_helpers() -> None:
    """memory_core.auth stays importable with its names (parse_identity, key_matches, the headers)."""
    from memory_core import auth as legacy

    assert legacy.parse_identity(identity(ALEX)).upn == ALEX
    assert legacy.key_matches("k", ["a", "k"]) and not legacy.key_matches("k", [])
    assert (legacy.API_KEY_HEADER, legacy.USER_IDENTITY_HEADER) == ("x-api-key", "x-user-identity")


# -- operators ------------------------------------------------------------------


def test_operator_role_opens_operator_routes(auth: Authenticator, tokens: Tokens) -> None:
    """A token holding Memory.Operator is an operator; the audit label is its UPN.
    (Loopback JWKS standing in for Entra ID's.)"""
    assert auth.operator(tokens.operator_bearer(OLIVIA)) == OLIVIA


def test_token_without_the_role_is_forbidden_on_operator_routes(auth: Authenticator, tokens: Tokens) -> None:
    """A valid user token without the role is 403 naming the role, with an insufficient_scope challenge.
    (Loopback JWKS standing in for Entra ID's.)"""
    with pytest.raises(Forbidden) as caught:
        auth.operator(tokens.bearer(ALEX))
    assert caught.value.message == "this endpoint needs the Memory.Operator app role"
    assert 'error="insufficient_scope"' in caught.value.challenge  # type: ignore[attr-defined]


def test_platform_context_never_opens_operator_routes(auth: Authenticator, tokens: Tokens) -> None:
    """A platform identity context names a user only: 403 on operator routes, even with a roles claim.
    (Loopback JWKS standing in for the platform's.)"""
    with pytest.raises(Forbidden):
        auth.operator(tokens.platform_header(ALEX, roles=["Memory.Operator"]))


def test_operator_key_works_beside_tokens(auth: Authenticator) -> None:
    """MEMORY_OPERATOR_KEYS open operator routes in every mode."""
    assert auth.operator({"X-API-KEY": OPERATOR_KEY}) == "operator-key"


def test_operator_key_opens_operator_routes_in_entra_only_mode(jwks: JwksServer) -> None:
    """With MEMORY_AUTH_MODE=entra alone an operator key still opens operator routes (the operator CLI)."""
    auth = build_authenticator(settings_of(identity_settings(jwks, MEMORY_AUTH_MODE="entra",
                                                             MEMORY_OPERATOR_KEYS=OPERATOR_KEY)))
    assert auth.operator({"X-API-KEY": OPERATOR_KEY}) == "operator-key"


def test_user_key_is_forbidden_on_operator_routes(auth: Authenticator) -> None:
    """A user API key is a valid credential without operator rights: 403."""
    with pytest.raises(Forbidden):
        auth.operator({"X-API-KEY": USER_KEY})


def test_operator_routes_without_credential_say_what_opens_them(auth: Authenticator) -> None:
    """No credential on an operator route: 401 naming the role and the operator key."""
    error = _unauthenticated(auth.operator, {})
    assert error.message == (
        "missing credential: send Authorization: Bearer <token> with the Memory.Operator app role "
        "or an operator key in X-API-KEY"
    )


def test_operator_role_name_is_configurable(jwks: JwksServer, tokens: Tokens) -> None:
    """MEMORY_OPERATOR_ROLE names the app role that opens operator routes. (Loopback JWKS standing in for Entra ID's.)"""
    auth = build_authenticator(settings_of(identity_settings(jwks, MEMORY_OPERATOR_ROLE="Custody.Admin")))
    assert auth.operator(tokens.bearer(OLIVIA, roles=("Custody.Admin",))) == OLIVIA
    with pytest.raises(Forbidden):
        auth.operator(tokens.operator_bearer(OLIVIA))


_GROUPS_1024 = [f"{i:08x}-0000-0000-0000-000000000000" for i in range(1024)]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ('{"upn": "bob@contoso.com", "group_ids": ' + json.dumps([*_GROUPS_1024, "one-more"]) + "}",
         "X-USER-IDENTITY is not a valid user identity: group_ids has more than 1024 entries"),
        ('{"upn": "bob@contoso.com", "name": "' + "N" * 513 + '"}',
         "X-USER-IDENTITY is not a valid user identity: name is longer than 512 characters"),
        ('{"upn": "' + "u" * 310 + '@contoso.com"}',
         "X-USER-IDENTITY is not a valid user identity: upn is longer than 320 characters"),
        ('{"upn": "bob@contoso.com", "group_ids": ["a", 7]}',
         "X-USER-IDENTITY is not a valid user identity: group_ids[1] is not a string"),
        ('{"name": "Bob"}', "X-USER-IDENTITY is not a valid user identity: upn is missing"),
        ('{"upn": ""}', "X-USER-IDENTITY is not a valid user identity: upn is empty"),
        ('["bob@contoso.com"]', "X-USER-IDENTITY is not a valid user identity: not a JSON object"),
        ("{upn: bob}", "X-USER-IDENTITY is not a valid user identity: not valid JSON"),
        ('{"upn": "bob"}', "X-USER-IDENTITY is not a valid user identity (JSON with a upn of the form name@domain)"),
    ],
)
def test_a_refused_identity_names_the_field_and_limit_that_failed(auth: Authenticator, document: str,
                                                                   message: str) -> None:
    """The 401 says which member failed and which limit, without echoing any value sent."""
    error = _unauthenticated(auth.user, {"X-API-KEY": USER_KEY, "X-USER-IDENTITY": document})
    assert error.message == message


def test_an_identity_at_every_limit_is_believed(auth: Authenticator) -> None:
    """1,024 groups and a 512-character name: the largest identity accepted names its user."""
    document = json.dumps({"upn": BOB, "name": "N" * 512, "group_ids": _GROUPS_1024})
    caller = auth.user({"X-API-KEY": USER_KEY, "X-USER-IDENTITY": document})
    assert caller.upn == BOB and len(caller.group_ids) == 1024
