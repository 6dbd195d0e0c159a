"""The authenticator every entry point uses: REST endpoints, the MCP tools, the operator routes.

It tries the enabled credential paths in a fixed order: an Authorization
bearer token (entra), the platform identity context (platform), App Service
authentication's principal (easyauth), a service key with X-USER-IDENTITY
(key), and finally the local user (local). The first path whose credential is
present decides: a present but bad credential is refused (401), never passed
over for a weaker path. A credential of a path that is not enabled is ignored.

Operator routes accept an operator key (MEMORY_OPERATOR_KEYS, in every mode)
or a token or sign-in holding the operator app role (MEMORY_OPERATOR_ROLE).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memory_core.domain.identity import Caller
from memory_core.identity.errors import CredentialRejected, NotPermitted
from memory_core.identity.headers import API_KEY_HEADER, header
from memory_core.identity.keys import KeyPath, key_matches
from memory_core.identity.model import Authentication, CredentialPath
from memory_core.identity.modes import PRECEDENCE, AuthMode

REALM = "memory-core"
DEFAULT_OPERATOR_ROLE = "Memory.Operator"
OPERATOR_KEY_LABEL = "operator-key"


class Authenticator:
    """Authenticates users (``user``) and operators (``operator``) from request headers."""

    def __init__(
        self,
        paths: Sequence[CredentialPath],
        *,
        api_keys: Sequence[str] = (),
        operator_keys: Sequence[str] = (),
        operator_role: str = DEFAULT_OPERATOR_ROLE,
    ) -> None:
        rank = {mode: i for i, mode in enumerate(PRECEDENCE)}
        self._paths = tuple(sorted(paths, key=lambda p: rank[p.mode]))
        self.modes = frozenset(p.mode for p in self._paths)
        self._api_keys = tuple(api_keys)
        self._operator_keys = tuple(operator_keys)
        self.operator_role = operator_role

    # -- users ------------------------------------------------------------------

    def authenticate(self, headers: Mapping[str, str]) -> Authentication:
        """The caller and how it was proved. ``Unauthenticated`` (401) for a missing or bad credential."""
        for path in self._paths:
            if path.presented(headers):
                return self._run(path, headers, operator=False)
        raise self._missing(operator=False)

    def user(self, headers: Mapping[str, str]) -> Caller:
        """The calling user. Raises ``Unauthenticated`` for a missing or wrong credential."""
        return self.authenticate(headers).caller

    # -- operators --------------------------------------------------------------

    def operator(self, headers: Mapping[str, str]) -> str:
        """An operator's label for the audit trail: "operator-key", or the UPN of a role holder.

        ``Unauthenticated`` (401) for a missing or bad credential; ``Forbidden``
        (403) for a valid one without operator rights (a user key, a token
        without the role, a platform identity context).
        """
        for path in self._paths:
            if path.mode in (AuthMode.KEY, AuthMode.LOCAL) or not path.presented(headers):
                continue
            authentication = self._run(path, headers, operator=True)
            if path.mode is AuthMode.PLATFORM:
                raise NotPermitted("this endpoint needs an operator; a platform identity context cannot open it")
            if self.operator_role in authentication.roles:
                return authentication.caller.upn
            raise NotPermitted(
                f"this endpoint needs the {self.operator_role} app role",
                challenge=self._challenge(
                    operator=True, bearer_error="insufficient_scope", description="operator role required"
                )
                if path.mode is AuthMode.ENTRA
                else None,
            )
        presented = header(headers, API_KEY_HEADER)
        if presented:
            if key_matches(presented, self._operator_keys):
                return OPERATOR_KEY_LABEL
            if AuthMode.KEY in self.modes and key_matches(presented, self._api_keys):
                raise NotPermitted("this endpoint needs an operator key; a user API key cannot open it")
            raise CredentialRejected("invalid API key", challenge=self._challenge(operator=True))
        raise self._missing(operator=True)

    # -- rejections -------------------------------------------------------------

    def _run(self, path: CredentialPath, headers: Mapping[str, str], *, operator: bool) -> Authentication:
        try:
            return path.authenticate(headers)
        except CredentialRejected as error:
            bearer_error = "invalid_token" if path.mode is AuthMode.ENTRA else None
            error.challenge = self._challenge(operator=operator, bearer_error=bearer_error, description=error.message)
            raise

    def _challenge(
        self, *, operator: bool, bearer_error: str | None = None, description: str | None = None
    ) -> str:
        """The WWW-Authenticate value: one challenge per enabled way of authenticating."""
        parts: list[str] = []
        if self.modes & {AuthMode.ENTRA, AuthMode.EASYAUTH}:
            bearer = f'Bearer realm="{REALM}"'
            if bearer_error:
                bearer += f', error="{bearer_error}", error_description="{description or bearer_error}"'
            parts.append(bearer)
        if AuthMode.PLATFORM in self.modes and not operator:
            parts.append(f'PlatformIdentity realm="{REALM}", header="X-PLATFORM-IDENTITY"')
        if AuthMode.KEY in self.modes or operator or not parts:
            parts.append('ApiKey header="X-API-KEY"')
        return ", ".join(parts)

    def _missing(self, *, operator: bool) -> CredentialRejected:
        challenge = self._challenge(operator=operator)
        token_modes = self.modes & {AuthMode.ENTRA, AuthMode.PLATFORM, AuthMode.EASYAUTH}
        if not token_modes:
            # key (and local) only: the message the key path has always answered
            return CredentialRejected("missing X-API-KEY header", challenge=challenge)
        options: list[str] = []
        role = f" with the {self.operator_role} app role"
        if AuthMode.ENTRA in self.modes:
            options.append("Authorization: Bearer <token>" + (role if operator else ""))
        if AuthMode.PLATFORM in self.modes and not operator:
            options.append("X-PLATFORM-IDENTITY")
        if AuthMode.EASYAUTH in self.modes:
            options.append("an App Service sign-in" + (role if operator else ""))
        if operator:
            options.append("an operator key in X-API-KEY")
        elif AuthMode.KEY in self.modes:
            options.append("X-API-KEY with X-USER-IDENTITY")
        return CredentialRejected(f"missing credential: send {' or '.join(options)}", challenge=challenge)


class KeyAuthenticator(Authenticator):
    """Mode key alone: users by service key + X-USER-IDENTITY, operators by operator key."""

    def __init__(self, api_keys: Sequence[str], operator_keys: Sequence[str]) -> None:
        super().__init__([KeyPath(api_keys)], api_keys=api_keys, operator_keys=operator_keys)
