"""Signed JWTs: Entra ID access tokens (mode entra) and the platform identity context (mode platform).

``JwtVerifier`` checks a token the same way for both: the signature against
the issuer's JWKS (PyJWT's ``PyJWKClient``: the key set is cached, and an
unknown ``kid`` refreshes it at most once per cooldown), RS256 only, the
issuer, the audience, expiry and not-before with a small clock skew.

A rejection says only "invalid token" or "expired token" (expiry is checked
after the signature, so it reveals nothing to a forger); the reason goes to the
service log, never the token.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from memory_core.domain.errors import Unavailable
from memory_core.domain.identity import Caller, InvalidCallerId, caller_upn
from memory_core.identity.errors import EXPIRED_TOKEN, INVALID_TOKEN, CredentialRejected
from memory_core.identity.headers import (
    MAX_CREDENTIAL_CHARS,
    PLATFORM_IDENTITY_HEADER,
    bearer_token,
    present,
)
from memory_core.identity.keys import UserIdentityHeader, caller_from_identity, identity_problem
from memory_core.identity.model import Authentication
from memory_core.identity.modes import AuthMode

if TYPE_CHECKING:  # PyJWT and its cryptography stack load with the first verifier (cold start, issue #15)
    import jwt

log = logging.getLogger("memory_core.identity")

ALGORITHMS: tuple[str, ...] = ("RS256",)
"""The only signature algorithm accepted (Entra ID signs access tokens with RS256)."""
CLOCK_SKEW_SECONDS = 60
"""Leeway on exp and nbf for clocks that disagree a little."""
JWKS_LIFESPAN_SECONDS = 3600
"""How long a fetched key set is used before it is fetched again."""
JWKS_REFRESH_COOLDOWN_SECONDS = 30.0
"""At most one forced refresh for an unknown kid per this many seconds (random kids cannot flood the issuer)."""
JWKS_TIMEOUT_SECONDS = 10.0


def entra_issuers(tenant_id: str) -> tuple[str, ...]:
    """The issuers Entra ID uses for ``tenant_id``: v2.0 and v1.0 access token formats."""
    return (f"https://login.microsoftonline.com/{tenant_id}/v2.0", f"https://sts.windows.net/{tenant_id}/")


def entra_jwks_url(tenant_id: str) -> str:
    return f"https://login.microsoftonline.com/{tenant_id}/discovery/v2.0/keys"


def invalid(reason: str, code: str = "invalid_token") -> CredentialRejected:
    log.info("token rejected: %s", reason)
    return CredentialRejected(INVALID_TOKEN, challenge="", code=code)


@dataclass(frozen=True)
class TokenPolicy:
    """What a token must satisfy besides its signature."""

    issuers: tuple[str, ...]
    audiences: tuple[str, ...] = ()
    """Empty: the audience is not checked (allowed for the platform identity context only)."""
    leeway_seconds: int = CLOCK_SKEW_SECONDS


class JwtVerifier:
    """Verifies RS256 JWTs against one issuer's JWKS. Thread-safe; one per process and issuer."""

    def __init__(
        self,
        jwks_url: str,
        policy: TokenPolicy,
        *,
        ssl_context: ssl.SSLContext | None = None,
        lifespan_seconds: float = JWKS_LIFESPAN_SECONDS,
        cooldown_seconds: float = JWKS_REFRESH_COOLDOWN_SECONDS,
        timeout_seconds: float = JWKS_TIMEOUT_SECONDS,
    ) -> None:
        self.jwks_url = jwks_url
        self.policy = policy
        # The key set is cached for ``lifespan_seconds`` and refreshed on an unknown kid.
        # The per-kid LRU (cache_keys=True) is left off on purpose: it never expires,
        # so a key the issuer withdrew would stay trusted for the life of the process.
        import jwt

        self._jwks = jwt.PyJWKClient(
            jwks_url,
            cache_jwk_set=True,
            lifespan=lifespan_seconds,
            timeout=timeout_seconds,
            ssl_context=ssl_context,
            cooldown_duration=cooldown_seconds,
        )

    def verify(self, token: str) -> dict[str, Any]:
        """The token's claims. ``CredentialRejected`` ("invalid token"/"expired token"); ``Unavailable``
        when the key set cannot be fetched."""
        if not token or len(token) > MAX_CREDENTIAL_CHARS:
            raise invalid("empty or oversized token")
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise invalid("malformed token") from None
        if header.get("alg") not in ALGORITHMS:
            raise invalid(f"algorithm {str(header.get('alg'))[:20]!r} is not allowed")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise invalid("no kid in the token header")
        key = self._signing_key(kid)
        if key.key_type != "RSA":
            raise invalid(f"kid names a {key.key_type} key")
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=list(ALGORITHMS),
                audience=list(self.policy.audiences) or None,
                issuer=list(self.policy.issuers),
                leeway=self.policy.leeway_seconds,
                options={
                    "require": ["exp", "iss", *(["aud"] if self.policy.audiences else [])],
                    "verify_aud": bool(self.policy.audiences),
                },
            )
        except jwt.ExpiredSignatureError:
            log.info("token rejected: expired")
            raise CredentialRejected(EXPIRED_TOKEN, challenge="", code="expired_token") from None
        except jwt.PyJWTError as error:
            raise invalid(type(error).__name__) from None
        if not isinstance(claims, dict):
            raise invalid("claims are not an object")
        return claims

    def _signing_key(self, kid: str) -> jwt.PyJWK:
        import jwt

        try:
            return self._jwks.get_signing_key(kid)
        except jwt.PyJWKClientConnectionError as error:
            log.warning("the signing keys at %s cannot be fetched: %s", self.jwks_url, error)
            raise Unavailable("the identity provider's signing keys cannot be fetched; retry later") from None
        except jwt.PyJWKSetError as error:
            log.warning("the key set at %s is unusable: %s", self.jwks_url, error)
            raise Unavailable("the identity provider's signing keys cannot be used; retry later") from None
        except jwt.PyJWKClientError as error:
            raise invalid(f"no usable signing key: {str(error)[:200]!r}") from None


def _text(claims: Mapping[str, Any], name: str, limit: int = 512) -> str | None:
    value = claims.get(name)
    return value[:limit] if isinstance(value, str) and value else None


def _strings(claims: Mapping[str, Any], name: str, limit: int = 1024) -> tuple[str, ...]:
    value = claims.get(name)
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value[:limit] if isinstance(v, str))


def entra_caller(claims: Mapping[str, Any]) -> tuple[Caller, frozenset[str]]:
    """The caller and app roles of verified Entra claims: upn, else preferred_username; name, oid, groups."""
    raw_upn = _text(claims, "upn", 320) or _text(claims, "preferred_username", 320)
    if not raw_upn:
        raise invalid("no upn or preferred_username claim")
    try:
        upn = caller_upn(raw_upn)
    except InvalidCallerId as error:
        raise invalid(f"upn claim: {error}") from None
    caller = Caller(
        upn=upn,
        name=_text(claims, "name"),
        user_name=raw_upn,
        user_id=_text(claims, "oid", 256),
        group_ids=_strings(claims, "groups"),
    )
    return caller, frozenset(_strings(claims, "roles", 256))


class EntraPath:
    """Users by Entra ID access token in ``Authorization: Bearer`` (mode entra)."""

    mode = AuthMode.ENTRA

    def __init__(self, verifier: JwtVerifier) -> None:
        self.verifier = verifier

    def presented(self, headers: Mapping[str, str]) -> bool:
        return bearer_token(headers) is not None

    def authenticate(self, headers: Mapping[str, str]) -> Authentication:
        token = bearer_token(headers) or ""
        caller, roles = entra_caller(self.verifier.verify(token))
        return Authentication(caller, AuthMode.ENTRA, roles, credential=token)


def platform_caller(claims: Mapping[str, Any]) -> Caller:
    """The caller named by verified identity-context claims: upn, name, user_name, user_id, group_ids."""
    try:
        identity = UserIdentityHeader.model_validate(claims)
    except ValidationError as error:
        raise invalid(f"identity context claims are not a user identity: {identity_problem(error)}") from None
    caller = caller_from_identity(identity)
    if caller is None:
        raise invalid("identity context upn is empty")
    return caller


class PlatformPath:
    """Users by the platform-issued identity context in X-PLATFORM-IDENTITY (mode platform).

    The context names a user only; it never carries operator rights.
    """

    mode = AuthMode.PLATFORM

    def __init__(self, verifier: JwtVerifier) -> None:
        self.verifier = verifier

    def presented(self, headers: Mapping[str, str]) -> bool:
        return present(headers, PLATFORM_IDENTITY_HEADER) is not None

    def authenticate(self, headers: Mapping[str, str]) -> Authentication:
        token = present(headers, PLATFORM_IDENTITY_HEADER) or ""
        caller = platform_caller(self.verifier.verify(token))
        return Authentication(caller, AuthMode.PLATFORM, credential=token)


def ssl_context_for(ca_bundle: str | None) -> ssl.SSLContext | None:
    """A context trusting only ``ca_bundle`` (MEMORY_IDENTITY_CA_BUNDLE), or None for the system store."""
    return ssl.create_default_context(cafile=ca_bundle) if ca_bundle else None


def audiences(values: Sequence[str]) -> tuple[str, ...]:
    return tuple(v.strip() for v in values if v.strip())
