"""Who is calling: the credential paths of MEMORY_AUTH_MODE and the authenticator over them.

- ``modes``: the modes (local, key, entra, platform, easyauth) and their precedence;
- ``keys``: X-USER-IDENTITY with a service key (key);
- ``tokens``: Entra ID bearer tokens (entra) and the platform identity context (platform), JWKS-verified;
- ``easyauth``: App Service authentication's X-MS-CLIENT-PRINCIPAL (easyauth);
- ``local``: the one local user on a loopback server (local);
- ``authenticator``: ``Authenticator.user`` / ``.operator`` / ``.authenticate`` over the enabled paths;
- ``config``: ``build_authenticator(settings)``, refusing unusable settings at start;
- ``obo``: the on-behalf-of exchange the MCP endpoint uses before calling a remote CoreAPI.

See docs/identity.md.
"""

from memory_core.identity.authenticator import Authenticator, KeyAuthenticator
from memory_core.identity.config import build_authenticator
from memory_core.identity.errors import CredentialRejected, NotPermitted
from memory_core.identity.headers import (
    API_KEY_HEADER,
    AUTHORIZATION_HEADER,
    CLIENT_PRINCIPAL_HEADER,
    PLATFORM_IDENTITY_HEADER,
    USER_IDENTITY_HEADER,
)
from memory_core.identity.keys import (
    UserIdentityHeader,
    identity_json,
    key_matches,
    parse_identity,
)
from memory_core.identity.local import LOCAL_CALLER
from memory_core.identity.model import Authentication
from memory_core.identity.modes import AuthMode

__all__ = [
    "API_KEY_HEADER",
    "AUTHORIZATION_HEADER",
    "CLIENT_PRINCIPAL_HEADER",
    "LOCAL_CALLER",
    "PLATFORM_IDENTITY_HEADER",
    "USER_IDENTITY_HEADER",
    "AuthMode",
    "Authentication",
    "Authenticator",
    "CredentialRejected",
    "KeyAuthenticator",
    "NotPermitted",
    "UserIdentityHeader",
    "build_authenticator",
    "identity_json",
    "key_matches",
    "parse_identity",
]
