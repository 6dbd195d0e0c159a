"""A stand-in for Entra ID's servers (and the platform's), which cannot be reached here.

- ``SigningKey`` / ``mint``: RSA keys generated in the test and real RS256 signatures;
- ``JwksServer``: JWKS documents over HTTP on loopback, one per named key set,
  counting fetches (to see caching and refresh-on-unknown-kid);
- ``AuthorityServer``: an Entra-like authority over HTTPS on loopback (MSAL
  insists on an https authority): OIDC discovery and a token endpoint that
  performs the on-behalf-of exchange, recording each token request.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import ssl
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

TENANT_ID = "7f1c3a52-9d0e-4b8a-a4f6-2c5e8b1d9f03"
OTHER_TENANT_ID = "0b9e2d41-6c7a-4f35-8e12-d3a4b5c6e7f8"
V2_ISSUER = f"https://login.microsoftonline.com/{TENANT_ID}/v2.0"
V1_ISSUER = f"https://sts.windows.net/{TENANT_ID}/"
CORE_AUDIENCE = "api://memory-core"
MCP_AUDIENCE = "api://memory-mcp"
CORE_SCOPE = "api://memory-core/.default"
OBO_CLIENT_ID = "5d7c0a1e-3b2f-4e6d-9a8c-1f2e3d4c5b6a"
OBO_CLIENT_SECRET = "test-obo-secret"
PLATFORM_ISSUER = "https://platform.example.test/identity"
PLATFORM_AUDIENCE = "memory-core"
OPERATOR_ROLE = "Memory.Operator"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass(frozen=True)
class SigningKey:
    """An RSA key pair with its kid."""

    kid: str
    private_key: rsa.RSAPrivateKey

    @property
    def private_pem(self) -> bytes:
        return self.private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    @property
    def public_pem(self) -> bytes:
        return self.private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def jwk(self) -> dict[str, Any]:
        numbers = self.private_key.public_key().public_numbers()

        def encode(value: int) -> str:
            return _b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))

        return {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.kid, "n": encode(numbers.n), "e": encode(numbers.e)}


def new_signing_key(kid: str | None = None) -> SigningKey:
    return SigningKey(kid or f"kid-{uuid.uuid4().hex[:10]}", rsa.generate_private_key(public_exponent=65537, key_size=2048))


def mint(key: SigningKey, claims: dict[str, Any], *, kid: str | None = None, headers: dict[str, Any] | None = None) -> str:
    """An RS256 JWT over ``claims`` signed with ``key``."""
    return jwt.encode(claims, key.private_pem, algorithm="RS256", headers={"kid": kid or key.kid, **(headers or {})})


def unsigned(claims: dict[str, Any], kid: str) -> str:
    """A token with alg none and no signature."""
    header = _b64url(json.dumps({"alg": "none", "typ": "JWT", "kid": kid}).encode())
    return f"{header}.{_b64url(json.dumps(claims).encode())}."


def hs256_with_public_key(key: SigningKey, claims: dict[str, Any]) -> str:
    """The algorithm-confusion forgery: HS256 keyed with the RSA public key (which anyone can fetch)."""
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT", "kid": key.kid}).encode())
    payload = _b64url(json.dumps(claims).encode())
    signature = hmac.new(key.public_pem, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64url(signature)}"


def tampered(token: str, **changes: Any) -> str:
    """``token`` with its payload changed and its original signature kept."""
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims.update(changes)
    return f"{header}.{_b64url(json.dumps(claims).encode())}.{signature}"


def entra_claims(
    upn: str | None = "alex@contoso.com",
    *,
    audience: str = CORE_AUDIENCE,
    issuer: str = V2_ISSUER,
    roles: tuple[str, ...] = (),
    lifetime: int = 3600,
    **extra: Any,
) -> dict[str, Any]:
    """The claims of an Entra ID delegated access token for ``upn``."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "aud": audience,
        "iss": issuer,
        "iat": now - 10,
        "nbf": now - 10,
        "exp": now + lifetime,
        "tid": TENANT_ID,
        "oid": str(uuid.uuid5(uuid.NAMESPACE_DNS, upn or "none")),
        "name": (upn or "app").split("@")[0].title(),
        "scp": "Memory.ReadWrite",
        "ver": "2.0" if issuer.endswith("/v2.0") else "1.0",
    }
    if upn is not None:
        claims["upn"] = upn
    if roles:
        claims["roles"] = list(roles)
    claims.update(extra)
    return claims


def platform_claims(upn: str | None = "alex@contoso.com", *, lifetime: int = 600, **extra: Any) -> dict[str, Any]:
    """The claims of a platform identity context (the already-resolved user identity)."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": PLATFORM_ISSUER,
        "aud": PLATFORM_AUDIENCE,
        "iat": now - 5,
        "nbf": now - 5,
        "exp": now + lifetime,
        "name": (upn or "x").split("@")[0].title(),
        "user_name": upn,
        "user_id": str(uuid.uuid5(uuid.NAMESPACE_URL, upn or "none")),
        "group_ids": ["g-benefits"],
    }
    if upn is not None:
        claims["upn"] = upn
    claims.update(extra)
    return claims


# -- loopback HTTP(S) servers --------------------------------------------------------------------

Route = Callable[["Request"], tuple[int, dict[str, Any]]]


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    form: dict[str, str] = field(default_factory=dict)


class _LoopbackServer:
    """A threaded HTTP(S) server on 127.0.0.1 with JSON routes."""

    def __init__(self, *, certfile: str | None = None, keyfile: str | None = None) -> None:
        self.routes: dict[tuple[str, str], Route] = {}
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                path = urlsplit(self.path).path
                form = {k: v[0] for k, v in parse_qs(body).items()}
                request = Request(self.command, path, {k.lower(): v for k, v in self.headers.items()}, form)
                with outer._lock:
                    outer.requests.append(request)
                    route = outer.routes.get((self.command, path))
                status, document = route(request) if route else (404, {"error": "not_found"})
                data = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = _serve  # noqa: N815 - BaseHTTPRequestHandler's method names
            do_POST = _serve  # noqa: N815

            def log_message(self, *args: Any) -> None:
                return None

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.scheme = "http"
        if certfile:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(certfile, keyfile)
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self._httpd.server_address[1]}"

    def requests_to(self, path: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class JwksServer(_LoopbackServer):
    """JWKS documents at ``/<name>/keys`` over HTTP on loopback (the issuers' signing keys)."""

    def __init__(self) -> None:
        super().__init__()
        self._sets: dict[str, list[SigningKey]] = {}

    def publish(self, name: str, *keys: SigningKey) -> str:
        """Serve ``keys`` as key set ``name``; answers its URL."""
        self._sets[name] = list(keys)
        self.routes[("GET", f"/{name}/keys")] = lambda _r: (200, {"keys": [k.jwk() for k in self._sets[name]]})
        return self.url(name)

    def url(self, name: str) -> str:
        return f"{self.base_url}/{name}/keys"

    def fetches(self, name: str) -> int:
        return len(self.requests_to(f"/{name}/keys"))


class AuthorityServer(_LoopbackServer):
    """An Entra-like authority for ``TENANT_ID`` over HTTPS on loopback: discovery and the OBO token endpoint.

    The token endpoint checks the confidential client, the grant type, the
    requested token use, the scope and the user's assertion (signature and
    audience, as Entra ID would), then issues a CoreAPI token for the same user.
    ``next_error`` makes it answer the next request with an OAuth error.
    """

    def __init__(self, certfile: str, keyfile: str, signing_key: SigningKey, *, assertion_audience: str = MCP_AUDIENCE) -> None:
        super().__init__(certfile=certfile, keyfile=keyfile)
        self.signing_key = signing_key
        self.assertion_audience = assertion_audience
        self.next_error: dict[str, Any] | None = None
        base = f"/{TENANT_ID}"
        self.token_path = f"{base}/oauth2/v2.0/token"
        self.routes[("GET", f"{base}/v2.0/.well-known/openid-configuration")] = self._discovery
        self.routes[("POST", self.token_path)] = self._token

    @property
    def authority_host(self) -> str:
        return self.base_url

    def _discovery(self, _request: Request) -> tuple[int, dict[str, Any]]:
        base = f"{self.base_url}/{TENANT_ID}"
        return 200, {
            "issuer": V2_ISSUER,
            "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
            "token_endpoint": f"{base}/oauth2/v2.0/token",
            "jwks_uri": f"{base}/discovery/v2.0/keys",
        }

    def _token(self, request: Request) -> tuple[int, dict[str, Any]]:
        if self.next_error is not None:
            error, self.next_error = self.next_error, None
            return 400, error
        form = request.form
        if form.get("client_id") != OBO_CLIENT_ID or form.get("client_secret") != OBO_CLIENT_SECRET:
            return 401, {"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret."}
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" or form.get(
            "requested_token_use"
        ) != "on_behalf_of":
            return 400, {"error": "unsupported_grant_type"}
        if CORE_SCOPE not in form.get("scope", "").split():
            return 400, {"error": "invalid_scope"}
        try:
            user = jwt.decode(
                form.get("assertion", ""),
                self.signing_key.public_pem,
                algorithms=["RS256"],
                audience=self.assertion_audience,
                issuer=[V2_ISSUER, V1_ISSUER],
            )
        except jwt.PyJWTError:
            return 400, {"error": "invalid_grant", "error_description": "AADSTS50013: Assertion failed signature validation."}
        claims = entra_claims(
            user.get("upn"),
            audience=CORE_AUDIENCE,
            name=user.get("name"),
            oid=user.get("oid"),
            groups=user.get("groups", []),
            azp=OBO_CLIENT_ID,
        )
        return 200, {
            "token_type": "Bearer",
            "scope": CORE_SCOPE,
            "expires_in": 3600,
            "ext_expires_in": 3600,
            "access_token": mint(self.signing_key, claims),
        }
