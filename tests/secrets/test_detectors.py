"""Behaviour of the detectors memory-core adds to detect-secrets, one rule per test.

Fake values are assembled from pieces so no literal token sits in the source.
"""

from __future__ import annotations

import base64
import json

import pytest

from memory_core.secrets import SecretScanner
from memory_core.secrets.payment_cards import is_card_number, luhn_valid
from memory_core.secrets.values import is_placeholder

AZURE_KEY = base64.b64encode(bytes(range(7, 71))).decode()  # 88 characters, like a storage key
SB_KEY = base64.b64encode(bytes(range(100, 132))).decode()  # 44 characters, like a SAS key


def names(scanner: SecretScanner, text: str) -> list[str]:
    return [finding.detector for finding in scanner.scan(text)]


def b64url(obj: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def fake_pem(label: str, body_chars: int = 128) -> str:
    body = ("MIIEFAKEkeyMATERIALnotREAL0123456789abcdefABCDEF+/" * 10)[:body_chars]
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "\n".join(["-" * 5 + f"BEGIN {label}" + "-" * 5, *lines, "-" * 5 + f"END {label}" + "-" * 5])


# --- Payment cards ---------------------------------------------------------


def test_luhn_accepts_valid_test_number() -> None:
    """The Luhn check accepts a known-valid test card number."""
    assert luhn_valid("4111111111111111")


def test_luhn_rejects_number_with_wrong_check_digit() -> None:
    """The Luhn check rejects the same number with its last digit changed."""
    assert not luhn_valid("4111111111111112")


def test_luhn_valid_card_in_text_is_detected(scanner: SecretScanner) -> None:
    """A Luhn-valid Visa number written in groups of four is a Payment Card Number."""
    assert names(scanner, "card 4111 1111 1111 1111 exp 12/29") == ["Payment Card Number"]


def test_luhn_invalid_card_in_text_is_not_detected(scanner: SecretScanner) -> None:
    """The same shape failing the Luhn check is not flagged."""
    assert names(scanner, "card 4111 1111 1111 1112 exp 12/29") == []


def test_dashed_amex_grouping_is_detected(scanner: SecretScanner) -> None:
    """An Amex number in its 4-6-5 grouping with dashes is detected."""
    assert names(scanner, "amex 3782-822463-10005") == ["Payment Card Number"]


def test_card_number_needs_an_issuer_prefix() -> None:
    """A Luhn-valid 16-digit number that no card issuer uses (starts with 1) is not a card."""
    assert luhn_valid("1000000000000008") and not is_card_number("1000000000000008")


def test_card_number_of_one_repeated_digit_is_ignored() -> None:
    """All-zero and other single-digit runs pass Luhn trivially but are not cards."""
    assert not is_card_number("0000000000000000")


def test_mixed_separators_are_not_a_card(scanner: SecretScanner) -> None:
    """Groups joined by a mix of spaces and dashes are not read as one card number."""
    assert names(scanner, "ref 4111-1111 1111-1111") == []


def test_digits_inside_a_longer_number_are_not_a_card(scanner: SecretScanner) -> None:
    """A valid card number embedded in a longer digit run (e.g. an id) is not flagged."""
    assert names(scanner, "id 94111111111111111") == []


def test_iban_is_not_a_card(scanner: SecretScanner) -> None:
    """An IBAN in groups of four is not mistaken for a card number."""
    assert names(scanner, "IBAN DE89 3704 0044 0532 0130 00") == []


def test_isbn_13_is_not_a_card(scanner: SecretScanner) -> None:
    """An ISBN-13 (978...) is not mistaken for a card number."""
    assert names(scanner, "ISBN 9780141439518") == []


# --- Private keys ----------------------------------------------------------


def test_pem_private_key_block_is_detected(scanner: SecretScanner) -> None:
    """An RSA private key block with key material is a Private Key."""
    assert names(scanner, fake_pem("RSA PRIVATE KEY")) == ["Private Key"]


def test_openssh_private_key_block_is_detected(scanner: SecretScanner) -> None:
    """An OpenSSH private key block is a Private Key."""
    assert names(scanner, fake_pem("OPENSSH PRIVATE KEY")) == ["Private Key"]


def test_private_key_with_json_escaped_newlines_is_detected(scanner: SecretScanner) -> None:
    """A PEM key inside a JSON string, with \\n escapes, is a Private Key."""
    escaped = fake_pem("PRIVATE KEY").replace("\n", "\\n")
    assert "Private Key" in names(scanner, '{"private_key": "' + escaped + '"}')


def test_truncated_private_key_with_material_is_detected(scanner: SecretScanner) -> None:
    """A header followed by key material but no END line is still a Private Key."""
    truncated = fake_pem("EC PRIVATE KEY").split("-----END")[0]
    assert names(scanner, truncated) == ["Private Key"]


def test_private_key_header_in_prose_is_not_detected(scanner: SecretScanner) -> None:
    """Naming the armour lines without key material is not a secret."""
    text = "Old keys start with " + "-" * 5 + "BEGIN RSA PRIVATE KEY" + "-" * 5 + " and end with the END line."
    assert names(scanner, text) == []


def test_public_key_block_is_not_detected(scanner: SecretScanner) -> None:
    """A public key block is not a secret."""
    assert names(scanner, fake_pem("PUBLIC KEY")) == []


# --- JWTs ------------------------------------------------------------------


def _jwt() -> str:
    header = b64url({"alg": "HS256", "typ": "JWT"})
    payload = b64url({"sub": "fake-user", "iat": 1700000000})
    return ".".join([header, payload, "FAKEsignatureFAKEsignatureFAKEsignature0"])


def test_jwt_is_detected(scanner: SecretScanner) -> None:
    """A header.payload.signature token whose parts decode to JSON is a JSON Web Token."""
    assert names(scanner, "token " + _jwt()) == ["JSON Web Token"]


def test_jwt_after_equals_sign_is_detected(scanner: SecretScanner) -> None:
    """A JWT as a cookie value (after "=") is detected."""
    assert "JSON Web Token" in names(scanner, "Cookie: session=" + _jwt() + "; Path=/")


def test_jwt_shaped_text_that_is_not_json_is_not_detected(scanner: SecretScanner) -> None:
    """eyJ-prefixed dotted text whose parts do not decode to JSON is not a JWT."""
    assert names(scanner, "eyJhbm90.eyJqc29u") == []


# --- Connection strings ----------------------------------------------------


def test_azure_storage_connection_string_is_detected(scanner: SecretScanner) -> None:
    """A storage connection string with AccountKey= is a Connection String."""
    text = (
        "DefaultEndpointsProtocol=https;AccountName=stfake;AccountKey=" + AZURE_KEY + ";EndpointSuffix=core.windows.net"
    )
    assert "Connection String" in names(scanner, text)


def test_cosmos_connection_string_is_detected(scanner: SecretScanner) -> None:
    """A Cosmos DB connection string with AccountKey= is a Connection String."""
    text = "AccountEndpoint=https://fake.documents.azure.com:443/;AccountKey=" + AZURE_KEY + ";"
    assert "Connection String" in names(scanner, text)


def test_service_bus_connection_string_is_detected(scanner: SecretScanner) -> None:
    """A Service Bus connection string with SharedAccessKey= is a Connection String."""
    text = "Endpoint=sb://fake.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=" + SB_KEY
    assert "Connection String" in names(scanner, text)


def test_connection_string_without_key_is_not_detected(scanner: SecretScanner) -> None:
    """An endpoint-only connection string (managed identity) is not a secret."""
    assert names(scanner, "Endpoint=sb://fake.servicebus.windows.net/;SharedAccessKeyName=Root") == []


def test_placeholder_account_key_is_not_detected(scanner: SecretScanner) -> None:
    """AccountKey=<your-key> in documentation is not a secret."""
    assert names(scanner, "AccountName=stfake;AccountKey=<your-storage-account-key>") == []


def test_sql_server_password_is_detected(scanner: SecretScanner) -> None:
    """Password= inside a Server=...; connection string is a Connection String, even a weak one."""
    text = "Server=tcp:fake.database.windows.net,1433;User ID=app;Password=hunter22;"
    assert "Connection String" in names(scanner, text)


def test_postgres_url_with_password_is_detected(scanner: SecretScanner) -> None:
    """postgres://user:password@host is a Connection String."""
    assert names(scanner, "postgres://app:" + "FakePw" + "1234@db.fake.example:5432/app") == ["Connection String"]


def test_mongodb_srv_url_with_password_is_detected(scanner: SecretScanner) -> None:
    """mongodb+srv://user:password@host is a Connection String."""
    assert names(scanner, "mongodb+srv://u:" + "FakeMongo" + "99@cluster0.fake.net/db") == ["Connection String"]


def test_database_url_without_password_is_not_detected(scanner: SecretScanner) -> None:
    """A database URL with no credentials is not a secret."""
    assert names(scanner, "DATABASE_URL=postgres://localhost:5432/app") == []


def test_database_url_with_placeholder_password_is_not_detected(scanner: SecretScanner) -> None:
    """postgres://USER:PASSWORD@HOST and user:<password>@ placeholders are not secrets."""
    text = "format: postgres://USER:PASSWORD@HOST:5432/DB or mysql://app:<password>@db/app"
    assert names(scanner, text) == []


def test_https_url_with_credentials_is_basic_auth(scanner: SecretScanner) -> None:
    """https://user:password@host is reported as Basic Auth Credentials, not a Connection String."""
    assert names(scanner, "feed https://bot:" + "FakePw" + "0987@pkgs.fake.example/simple") == [
        "Basic Auth Credentials"
    ]


def test_url_path_with_colon_and_at_is_not_basic_auth(scanner: SecretScanner) -> None:
    """A colon in a path and an @ later on (wiki pages, Mastodon handles) is not userinfo."""
    assert names(scanner, "see https://en.wikipedia.org/wiki/Help:Contents and https://x.example/a:b/@alice") == []


def test_sas_signature_is_detected(scanner: SecretScanner) -> None:
    """A blob URL with sv=...&sig=<signature> is an Azure SAS Token."""
    sig = SB_KEY.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    assert names(scanner, "https://st.blob.core.windows.net/c?sv=2022-11-02&sp=r&sig=" + sig) == ["Azure SAS Token"]


# --- Keyword assignments and headers ---------------------------------------


def test_password_policy_prose_is_not_detected(scanner: SecretScanner) -> None:
    """Prose about passwords ("password policy: 12 characters") is not a secret."""
    assert names(scanner, "Password policy: at least 12 characters, rotate every 90 days.") == []


def test_password_assignment_with_strong_value_is_detected(scanner: SecretScanner) -> None:
    """password: <8+ chars in 3+ character classes> is a Secret Keyword."""
    assert names(scanner, "password: " + "Xk9#" + "mP2$vL7q") == ["Secret Keyword"]


def test_password_in_a_sentence_is_detected(scanner: SecretScanner) -> None:
    """ "my password is <value>" is a Secret Keyword when the value looks like a password."""
    assert names(scanner, "my wifi password is " + "Tr0ub4dor" + "&3") == ["Secret Keyword"]


def test_api_key_with_high_entropy_value_is_detected(scanner: SecretScanner) -> None:
    """api_key=<long random value> is a Secret Keyword."""
    assert names(scanner, "api_key=" + "q8Zr2LmX0vB7nT4k" + "W1pS9dF6hJ3c") == ["Secret Keyword"]


def test_api_key_with_word_value_is_not_detected(scanner: SecretScanner) -> None:
    """api_key = settings.api_key (an expression, not a value) is not flagged."""
    assert names(scanner, "api_key = settings.api_key") == []


def test_metadata_keys_are_not_detected(scanner: SecretScanner) -> None:
    """Keys describing a secret (secret_name, token_limit, ...) are not secrets."""
    assert names(scanner, "secret_name: storage-connection-string-2024\ntoken_limit: 128000") == []


def test_uuid_and_commit_hash_alone_are_not_detected(scanner: SecretScanner) -> None:
    """High-entropy ids without a secret keyword (UUIDs, commit hashes) are not flagged."""
    text = "tenant 72f988bf-86f1-41af-91ab-2d7cd011db47, commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    assert names(scanner, text) == []


def test_bearer_token_is_detected(scanner: SecretScanner) -> None:
    """Authorization: Bearer <long random token> is a Bearer Token."""
    assert names(scanner, "Authorization: Bearer " + "a1B2c3D4e5F6g7H8" + "i9J0k1L2m3N4") == ["Bearer Token"]


def test_bearer_placeholder_is_not_detected(scanner: SecretScanner) -> None:
    """ "Bearer <token>" and "Bearer $TOKEN" are not secrets."""
    assert names(scanner, "Authorization: Bearer <token>; curl -H 'Authorization: Bearer $TOKEN'") == []


def test_basic_authorization_header_is_detected(scanner: SecretScanner) -> None:
    """Authorization: Basic <base64 of user:password> is Basic Auth Credentials."""
    value = base64.b64encode(b"admin:" + b"FakePass" + b"123").decode()
    assert names(scanner, "Authorization: Basic " + value) == ["Basic Auth Credentials"]


@pytest.mark.parametrize("value", ["<password>", "${DB_PASSWORD}", "{{ secrets.X }}", "********", "changeme"])
def test_placeholders_are_recognised(value: str) -> None:
    """Template markers, masks and stand-in words count as placeholders, not secrets."""
    assert is_placeholder(value)


# --- Token formats added on top of detect-secrets --------------------------


def test_github_fine_grained_pat_is_detected(scanner: SecretScanner) -> None:
    """A github_pat_ token (unknown to detect-secrets 1.5.0) is a GitHub Token."""
    token = "github" + "_pat_" + "11FAKE0000" + "A" * 12 + "_" + "b" * 59
    assert "GitHub Token" in names(scanner, "token " + token)


def test_stripe_test_key_is_detected(scanner: SecretScanner) -> None:
    """A Stripe test-mode secret key (detect-secrets only knows live keys) is a Stripe Access Key."""
    assert names(scanner, "stripe " + "sk" + "_test_" + "FAKE" + "a1b2c3d4e5f6g7h8i9j0k1l2") == ["Stripe Access Key"]


def test_azure_ad_client_secret_is_detected(scanner: SecretScanner) -> None:
    """An Entra ID client secret ("...Q~...") is an Azure AD Client Secret."""
    secret = "abc" + "8Q~" + "FAKE" + "x" * 10 + "0123456789abcdefghij"[:20]
    assert names(scanner, "client credential " + secret) == ["Azure AD Client Secret"]
