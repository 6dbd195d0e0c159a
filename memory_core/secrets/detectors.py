"""The detectors memory-core adds to detect-secrets: the names of the kinds it reports and
the table the scanner runs (``CUSTOM_DETECTORS``).

Every detector answers one question: does this text contain a secret of my kind? It
never returns the secret itself, so nothing downstream can echo it. The matchers live
with their family: ``private_keys``, ``connection_strings``, ``payment_cards``,
``keyword_assignments`` and ``tokens``; the shared shape and search primitives in
``matching``; the value heuristics in ``values``. Why each detector exists and how it
is tuned is written on the detector; the overall choices are in
``memory_core.secrets.scanner``.
"""

from __future__ import annotations

from memory_core.secrets.connection_strings import (
    has_azure_key,
    has_basic_auth_url,
    has_db_url_password,
    has_kv_connection_password,
    has_sas_token,
    has_url_password_param,
)
from memory_core.secrets.keyword_assignments import has_secret_assignment
from memory_core.secrets.matching import Detector, prefixed
from memory_core.secrets.payment_cards import has_card_number
from memory_core.secrets.private_keys import has_private_key
from memory_core.secrets.tokens import has_basic_auth_header, has_bearer_token, has_entra_client_secret, has_jwt

# Names shared with detect-secrets' plugins are spelled as its ``secret_type``
# so one kind of secret is reported under one name.
AWS_ACCESS_KEY = "AWS Access Key"
GITHUB_TOKEN = "GitHub Token"
SLACK_TOKEN = "Slack Token"
STRIPE_ACCESS_KEY = "Stripe Access Key"
OPENAI_TOKEN = "OpenAI Token"
BASIC_AUTH = "Basic Auth Credentials"
SECRET_KEYWORD = "Secret Keyword"
NPM_TOKEN = "NPM Token"  # detect-secrets says "NPM tokens"; the scanner renames it
PRIVATE_KEY = "Private Key"
JWT = "JSON Web Token"
# Names of kinds detect-secrets does not have.
CONNECTION_STRING = "Connection String"
AZURE_SAS_TOKEN = "Azure SAS Token"
AZURE_AD_CLIENT_SECRET = "Azure AD Client Secret"
PAYMENT_CARD = "Payment Card Number"
BEARER_TOKEN = "Bearer Token"
GOOGLE_API_KEY = "Google API Key"
ANTHROPIC_API_KEY = "Anthropic API Key"
HUGGING_FACE_TOKEN = "Hugging Face Token"


# --------------------------------------------------------------------------
# Token formats detect-secrets 1.5.0 does not know. Each is vendor-prefixed,
# so a match is specific enough to decide on its own.

_E = r"(?![A-Za-z0-9_])"  # token end: not followed by more token characters

EXTRA_TOKEN_DETECTORS: tuple[Detector, ...] = (
    Detector(GITHUB_TOKEN, ("github_pat_",), prefixed(("github_pat_",), r"github_pat_[A-Za-z0-9_]{36,255}" + _E)),
    Detector(
        STRIPE_ACCESS_KEY,
        ("_test_", "_live_"),
        prefixed(("sk_test_", "rk_test_", "sk_live_", "rk_live_"), r"[sr]k_(?:test|live)_[0-9A-Za-z]{24,247}" + _E),
    ),
    Detector(
        OPENAI_TOKEN,
        ("sk-",),
        prefixed(("sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-"), r"sk-[A-Za-z]+-[A-Za-z0-9_-]{40,300}" + _E),
    ),
    Detector(
        ANTHROPIC_API_KEY,
        ("sk-ant-",),
        prefixed(("sk-ant-",), r"sk-ant-(?:api|admin|oat)\d{2}-[A-Za-z0-9_-]{40,200}" + _E),
    ),
    Detector(GOOGLE_API_KEY, ("aiza",), prefixed(("AIza",), r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])")),
    Detector(HUGGING_FACE_TOKEN, ("hf_",), prefixed(("hf_",), r"hf_[A-Za-z]{34,40}" + _E)),
    Detector(
        SLACK_TOKEN,
        ("xapp-", "xoxe"),
        prefixed(
            ("xapp-", "xoxe"),
            r"xapp-\d-[A-Z0-9]{8,}-\d{8,}-[a-f0-9]{32,}" + _E + r"|xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9]{40,}" + _E,
        ),
    ),
    Detector(NPM_TOKEN, ("npm_",), prefixed(("npm_",), r"npm_[A-Za-z0-9]{36}" + _E)),
    Detector(AZURE_AD_CLIENT_SECRET, ("q~",), has_entra_client_secret),
)

CUSTOM_DETECTORS: tuple[Detector, ...] = (
    Detector(PRIVATE_KEY, ("private key", "putty-user-key-file"), has_private_key),
    Detector(CONNECTION_STRING, ("://",), has_db_url_password),
    Detector(CONNECTION_STRING, ("password=", "passwd=", "pwd="), has_url_password_param),
    Detector(CONNECTION_STRING, ("accountkey", "accesskey"), has_azure_key),
    Detector(CONNECTION_STRING, ("password", "pwd"), has_kv_connection_password),
    Detector(BASIC_AUTH, ("://",), has_basic_auth_url),
    Detector(BASIC_AUTH, ("basic",), has_basic_auth_header),
    Detector(AZURE_SAS_TOKEN, ("sig=",), has_sas_token),
    Detector(PAYMENT_CARD, (), has_card_number),
    Detector(SECRET_KEYWORD, ("pass", "pwd", "secret", "token", "key", "credential"), has_secret_assignment),
    Detector(BEARER_TOKEN, ("bearer",), has_bearer_token),
    Detector(JWT, ("eyj",), has_jwt),
    *EXTRA_TOKEN_DETECTORS,
)
