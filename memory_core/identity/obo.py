"""The on-behalf-of exchange: a user's Entra token for a CoreAPI token (MSAL).

The MCP endpoint never passes a caller's token on to a remote CoreAPI (MCP's
security guidance forbids token passthrough): it asks Entra ID for a token
for the CoreAPI (MEMORY_COREAPI_SCOPE) on behalf of the same user, as the
confidential client MEMORY_OBO_CLIENT_ID, and sends that.

MSAL posts ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`` with
``requested_token_use=on_behalf_of`` to the tenant's token endpoint, found by
OIDC discovery under MEMORY_ENTRA_AUTHORITY_HOST. MSAL does not look OBO
results up in its cache, so this module keeps its own small cache keyed by a
hash of the incoming token; MSAL's own cache is turned off (it would grow by
one account per user for the life of the process).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memory_core.domain.errors import Forbidden, MemoryCoreError, Unavailable
from memory_core.identity.errors import INVALID_TOKEN, CredentialRejected

if TYPE_CHECKING:  # pydantic-settings loads with the composition root, not at import (cold start)
    from memory_core.settings import Settings

log = logging.getLogger("memory_core.identity")

CACHE_ENTRIES = 1024
EXPIRY_MARGIN_SECONDS = 120
"""An exchanged token is reused until this long before it expires."""
TIMEOUT_SECONDS = 10.0
_USER_MUST_ACT = {"interaction_required", "consent_required", "login_required"}


class TokenExchangeFailed(MemoryCoreError):
    """The exchange failed for a reason on this server's side (configuration, the identity provider)."""

    code = "token_exchange_failed"


def _no_token_cache() -> Any:
    import msal

    class NoTokenCache(msal.TokenCache):
        """MSAL's cache, keeping nothing."""

        def add(self, event: Any, now: Any = None) -> None:
            return None

    return NoTokenCache()


def _http_session(ca_bundle: str | None, timeout_seconds: float) -> Any:
    """MSAL's HTTP client: a requests session with a timeout, one retry, and ``ca_bundle`` pinned per request.

    The bundle is set on each request, not on the session: requests lets
    REQUESTS_CA_BUNDLE from the environment override a session's ``verify``.
    """
    import requests
    from requests.adapters import HTTPAdapter

    class Session(requests.Session):
        def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            kwargs.setdefault("timeout", timeout_seconds)
            if ca_bundle:
                kwargs["verify"] = ca_bundle
            return super().request(method, url, *args, **kwargs)

    session = Session()
    adapter = HTTPAdapter(max_retries=1)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


class OnBehalfOfExchange:
    """Exchanges verified user tokens for CoreAPI tokens. Thread-safe; blocking (run it in a worker thread)."""

    def __init__(
        self,
        *,
        tenant_id: str,
        client_id: str,
        client_secret: str,
        scope: str,
        authority_host: str = "https://login.microsoftonline.com",
        ca_bundle: str | None = None,
        timeout_seconds: float = TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.authority = f"{authority_host.rstrip('/')}/{tenant_id}"
        self.scopes = [s for s in scope.split() if s]
        self._client_id = client_id
        self._client_secret = client_secret
        self._ca_bundle = ca_bundle
        self._timeout = timeout_seconds
        self._clock = clock
        self._app: Any = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self.exchanges = 0
        """How many times the token endpoint was asked (tests, diagnostics)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> OnBehalfOfExchange:
        secret = settings.memory_obo_client_secret.get_secret_value() if settings.memory_obo_client_secret else ""
        return cls(
            tenant_id=(settings.memory_entra_tenant_id or "").strip(),
            client_id=(settings.memory_obo_client_id or "").strip(),
            client_secret=secret,
            scope=settings.memory_coreapi_scope or "",
            authority_host=settings.memory_entra_authority_host,
            ca_bundle=settings.memory_identity_ca_bundle,
        )

    def exchange(self, user_token: str) -> str:
        """A CoreAPI access token for the user of ``user_token`` (already verified).

        ``Unauthenticated`` ("invalid token") when Entra ID refuses the
        assertion; ``Forbidden`` when the user must sign in again or consent;
        ``Unavailable`` when the identity provider cannot be reached;
        ``TokenExchangeFailed`` for anything else (details in the log).
        """
        key = hashlib.sha256(user_token.encode("utf-8")).hexdigest()
        now = self._clock()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and cached[1] > now:
                self._cache.move_to_end(key)
                return cached[0]
        result = self._acquire(user_token)
        token = result.get("access_token")
        if not isinstance(token, str) or not token:
            raise self._failure(result)
        try:
            lifetime = float(result.get("expires_in", 0))
        except (TypeError, ValueError):
            lifetime = 0.0
        if lifetime > EXPIRY_MARGIN_SECONDS:
            with self._lock:
                self._cache[key] = (token, now + lifetime - EXPIRY_MARGIN_SECONDS)
                self._cache.move_to_end(key)
                while len(self._cache) > CACHE_ENTRIES:
                    self._cache.popitem(last=False)
        return token

    def _acquire(self, user_token: str) -> dict[str, Any]:
        import requests

        try:
            app = self._application()
            with self._lock:
                self.exchanges += 1
            result = app.acquire_token_on_behalf_of(user_token, self.scopes)
        except requests.exceptions.RequestException as error:
            log.warning("on-behalf-of exchange: the identity provider cannot be reached: %r", error)
            raise Unavailable("the identity provider cannot be reached; retry later") from None
        except MemoryCoreError:
            raise
        except Exception as error:
            log.error("on-behalf-of exchange failed: %r", error)
            raise TokenExchangeFailed(
                "the token exchange for the CoreAPI failed; the operator can find the cause in the service log"
            ) from None
        return result if isinstance(result, dict) else {}

    def _application(self) -> Any:
        """MSAL's confidential client, built on first use (its construction runs OIDC discovery)."""
        with self._lock:
            if self._app is not None:
                return self._app
        import msal

        app = msal.ConfidentialClientApplication(
            self._client_id,
            client_credential=self._client_secret,
            authority=self.authority,
            # The authority comes from configuration, not from a caller; instance discovery
            # would ask login.microsoftonline.com about hosts it does not list.
            instance_discovery=False,
            token_cache=_no_token_cache(),
            http_client=_http_session(self._ca_bundle, self._timeout),
        )
        with self._lock:
            if self._app is None:
                self._app = app
            return self._app

    def _failure(self, result: dict[str, Any]) -> MemoryCoreError:
        error = str(result.get("error") or "no_access_token")
        suberror = str(result.get("suberror") or "")
        description = str(result.get("error_description") or "")[:500]
        log.warning("on-behalf-of exchange refused: %s %s %s", error, suberror, description)
        if error in _USER_MUST_ACT or suberror in _USER_MUST_ACT:
            return Forbidden(
                "the user must sign in again or consent before this server can call the CoreAPI for them",
                code="interaction_required",
            )
        if error == "invalid_grant":
            return CredentialRejected(INVALID_TOKEN, challenge='Bearer realm="memory-core", error="invalid_token"',
                                      code="invalid_token")
        if error in ("temporarily_unavailable", "server_error"):
            return Unavailable("the identity provider cannot exchange the token now; retry later")
        return TokenExchangeFailed(
            "the token exchange for the CoreAPI failed; the operator can find the cause in the service log"
        )
