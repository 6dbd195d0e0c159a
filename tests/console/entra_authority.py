"""A fake Entra ID authority for the console's sign-in by redirect, because Entra ID cannot be reached here.

It is a fake, and only a stand-in: it plays the part of ``login.microsoftonline.com/<tenant>`` for one
single-page application and one user who is already signed in there (so it shows no login form), over
HTTPS on loopback (MSAL insists on an https authority). What it serves is what MSAL.js asks Entra ID for:

- ``GET /<tenant>/v2.0/.well-known/openid-configuration``: the OpenID metadata, naming Entra's own
  issuer for the tenant (the issuer the service accepts);
- ``GET /<tenant>/discovery/v2.0/keys``: the JWKS (an RSA key generated in the test, so every signature
  the service checks is real);
- ``GET /<tenant>/oauth2/v2.0/authorize``: checks the client, the registered redirect URI and the PKCE
  challenge's method, and redirects back with a one-time code (in the fragment or the query, as asked);
- ``POST /<tenant>/oauth2/v2.0/token``: redeems the code (PKCE verifier checked) for an id token (the
  nonce echoed) and an RS256 access token for the API, with ``client_info`` as Entra sends it.

The metadata and token answers carry CORS headers, as Entra's do for a registered SPA.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import ssl
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.auth.idp import CORE_AUDIENCE, TENANT_ID, V2_ISSUER, SigningKey, entra_claims, mint

CONSOLE_CLIENT_ID = "3c9a1f0e-7b2d-4e58-9c61-0a4f2b7d8e15"
CONSOLE_API_SCOPE = f"{CORE_AUDIENCE}/Memory.ReadWrite"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class _Grant:
    redirect_uri: str
    scope: str
    nonce: str
    challenge: str
    upn: str


@dataclass
class FakeEntraAuthority:
    """The fake authority's state: who is signed in, the registered redirect URI, codes issued, requests seen."""

    signing_key: SigningKey
    upn: str = "dana@contoso.com"
    redirect_uri: str = ""
    authorizations: list[dict[str, str]] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    _codes: dict[str, _Grant] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    base_url: str = ""
    down: bool = False
    """While set, every request is answered 503 (the authority is out of reach)."""

    @property
    def authority(self) -> str:
        return f"{self.base_url}/{TENANT_ID}"

    @property
    def jwks_url(self) -> str:
        return f"{self.authority}/discovery/v2.0/keys"

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": V2_ISSUER,
            "authorization_endpoint": f"{self.authority}/oauth2/v2.0/authorize",
            "token_endpoint": f"{self.authority}/oauth2/v2.0/token",
            "end_session_endpoint": f"{self.authority}/oauth2/v2.0/logout",
            "jwks_uri": self.jwks_url,
            "response_modes_supported": ["query", "fragment", "form_post"],
            "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
            "scopes_supported": ["openid", "profile", "email", "offline_access"],
            "subject_types_supported": ["pairwise"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "client_secret_basic"],
            "code_challenge_methods_supported": ["S256"],
            "tenant_region_scope": "EU",
            "cloud_instance_name": "microsoftonline.com",
        }

    def authorize(self, query: dict[str, str]) -> tuple[int, str]:
        """A 302 to the redirect URI with a code, or a 400 naming what is wrong (as Entra shows its error page)."""
        with self._lock:
            self.authorizations.append(query)
        if query.get("client_id") != CONSOLE_CLIENT_ID:
            return 400, "AADSTS700016: unknown application"
        if query.get("redirect_uri") != self.redirect_uri:
            return 400, "AADSTS50011: the redirect URI does not match the application's"
        if query.get("response_type") != "code" or query.get("code_challenge_method") != "S256":
            return 400, "AADSTS9002325: PKCE with S256 is required for a single-page application"
        code = secrets.token_urlsafe(24)
        with self._lock:
            self._codes[code] = _Grant(query["redirect_uri"], query.get("scope", ""), query.get("nonce", ""),
                                       query.get("code_challenge", ""), self.upn)
        answer = {"code": code, "state": query.get("state", ""), "client_info": self._client_info(self.upn),
                  "session_state": str(uuid.uuid4())}
        separator = "?" if query.get("response_mode") == "query" else "#"
        return 302, f"{query['redirect_uri']}{separator}{urlencode(answer)}"

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.token_requests.append(form)
            grant = self._codes.pop(form.get("code", ""), None)
        if form.get("grant_type") != "authorization_code" or grant is None:
            return 400, {"error": "invalid_grant", "error_description": "AADSTS70008: the code is unknown or used"}
        if form.get("client_id") != CONSOLE_CLIENT_ID or form.get("redirect_uri") != grant.redirect_uri:
            return 400, {"error": "invalid_client", "error_description": "AADSTS50011: client or redirect URI"}
        verifier = form.get("code_verifier", "")
        if _b64url(hashlib.sha256(verifier.encode()).digest()) != grant.challenge:
            return 400, {"error": "invalid_grant", "error_description": "AADSTS501481: the code verifier does not match"}
        scopes = [s for s in form.get("scope", grant.scope).split() if s not in ("openid", "profile", "offline_access")]
        access = entra_claims(grant.upn, audience=CORE_AUDIENCE, name=grant.upn.split("@")[0].title(),
                              azp=CONSOLE_CLIENT_ID)
        now = int(time.time())
        id_claims = {
            "aud": CONSOLE_CLIENT_ID, "iss": V2_ISSUER, "iat": now - 10, "nbf": now - 10, "exp": now + 3600,
            "nonce": grant.nonce, "sub": _b64url(hashlib.sha256(grant.upn.encode()).digest()[:24]),
            "oid": access["oid"], "tid": TENANT_ID, "preferred_username": grant.upn, "name": access["name"],
            "ver": "2.0",
        }
        return 200, {
            "token_type": "Bearer",
            "scope": " ".join(scopes),
            "expires_in": 3600,
            "ext_expires_in": 3600,
            "access_token": mint(self.signing_key, access),
            "id_token": mint(self.signing_key, id_claims),
            "client_info": self._client_info(grant.upn),
        }

    @staticmethod
    def _client_info(upn: str) -> str:
        oid = str(uuid.uuid5(uuid.NAMESPACE_DNS, upn))
        return _b64url(json.dumps({"uid": oid, "utid": TENANT_ID}).encode())


class FakeEntraServer:
    """``FakeEntraAuthority`` served over HTTPS on 127.0.0.1 (a free port), until ``close``."""

    def __init__(self, certfile: str, keyfile: str, signing_key: SigningKey) -> None:
        self.state = FakeEntraAuthority(signing_key)
        state = self.state
        prefix = f"/{TENANT_ID}"

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.send_header("Access-Control-Allow-Origin", self.headers.get("Origin") or "*")
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, document: dict[str, Any]) -> None:
                self._send(status, json.dumps(document).encode(), "application/json; charset=utf-8")

            def do_OPTIONS(self) -> None:
                self._send(204, b"", "text/plain", {"Access-Control-Allow-Methods": "GET, POST",
                                                    "Access-Control-Allow-Headers": "*", "Access-Control-Max-Age": "60"})

            def do_GET(self) -> None:
                if state.down:
                    self._json(503, {"error": "temporarily_unavailable"})
                    return
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if parts.path == f"{prefix}/v2.0/.well-known/openid-configuration":
                    self._json(200, state.metadata())
                elif parts.path == f"{prefix}/discovery/v2.0/keys":
                    self._json(200, {"keys": [state.signing_key.jwk()]})
                elif parts.path == f"{prefix}/oauth2/v2.0/authorize":
                    status, where = state.authorize(query)
                    if status == 302:
                        self._send(302, b"", "text/plain", {"Location": where})
                    else:
                        self._send(status, where.encode(), "text/plain; charset=utf-8")
                else:
                    self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:
                if state.down:
                    self._json(503, {"error": "temporarily_unavailable"})
                    return
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                if urlsplit(self.path).path == f"{prefix}/oauth2/v2.0/token":
                    self._json(*state.token(form))
                else:
                    self._json(404, {"error": "not_found"})

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certfile, keyfile)
        self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self.state.base_url = f"https://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
