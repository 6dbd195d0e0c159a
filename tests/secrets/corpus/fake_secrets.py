"""Fake secrets of many kinds, realistically shaped, for measuring detection.

None of these is a real credential: the random parts come from a seeded
generator and most carry FAKE/EXAMPLE/TEST markers where the format allows.
They are assembled at import time from pieces, so no literal token sits in
the source for push protection or other scanners to trip on.

``FAKE_SECRETS`` lists ``FakeSecret(kind, secret, text)``: ``text`` is the
whole write (a memory line) and ``secret`` the part that must never be echoed.
``expected`` names the detector we aim to fire, or ``None`` for a kind the
scanner deliberately does not detect (kept so the measured rate is honest).
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass

_UPPER_DIGITS = string.ascii_uppercase + string.digits
_ALNUM = string.ascii_letters + string.digits
_LOWER_ALNUM = string.ascii_lowercase + string.digits
_HEX = "0123456789abcdef"
_B64 = string.ascii_letters + string.digits + "+/"
_B64URL = string.ascii_letters + string.digits + "-_"


@dataclass(frozen=True)
class FakeSecret:
    kind: str
    secret: str
    text: str
    expected: str | None


def _r(seed: str, n: int, alphabet: str = _ALNUM) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


def _j(*parts: str) -> str:
    return "".join(parts)


def _b64url_json(obj: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def _jwt(seed: str, alg: str = "HS256", **claims: object) -> str:
    header = _b64url_json({"alg": alg, "typ": "JWT"})
    payload = _b64url_json({"sub": "fake-user-" + seed, "iat": 1700000000, **claims})
    return ".".join([header, payload, _r(seed, 43, _B64URL)])


def _pem(label: str, seed: str, lines: int = 6, headers: str = "") -> str:
    body = "\n".join(_r(f"{seed}{i}", 64, _B64) for i in range(lines))
    dashes = "-" * 5
    return (
        f"{dashes}BEGIN {label}{dashes}\n{headers}{body}\n{_r(seed + 'end', 24, _B64)}==\n{dashes}END {label}{dashes}"
    )


def _azure_key(seed: str, n_bytes: int = 64) -> str:
    return base64.b64encode(random.Random(seed).randbytes(n_bytes)).decode()


def _card(number: str, sep: str = "") -> str:
    if sep and len(number) == 16:
        return sep.join(number[i : i + 4] for i in range(0, 16, 4))
    if sep and len(number) == 15:
        return sep.join([number[:4], number[4:10], number[10:]])
    if sep and len(number) == 14:
        return sep.join([number[:4], number[4:10], number[10:]])
    return number


def _build() -> list[FakeSecret]:
    out: list[FakeSecret] = []

    def add(kind: str, secret: str, template: str, expected: str | None) -> None:
        out.append(FakeSecret(kind, secret, template.format(s=secret), expected))

    # --- Cloud provider keys -------------------------------------------------
    add(
        "AWS access key id (AKIA)",
        _j("AK", "IA", "FAKE", _r("aws1", 12, _UPPER_DIGITS)),
        "AWS access key id for the sandbox account: {s}",
        "AWS Access Key",
    )
    add(
        "AWS temporary key id (ASIA)",
        _j("AS", "IA", "TEST", _r("aws2", 12, _UPPER_DIGITS)),
        "AWS_ACCESS_KEY_ID={s}",
        "AWS Access Key",
    )
    add(
        "AWS secret access key (quoted)",
        _r("aws3", 36, _B64) + "FAKE",
        'aws_secret_access_key = "{s}"',
        "AWS Access Key",
    )
    add(
        "AWS secret access key (credentials file)",
        _r("aws4", 36, _B64) + "Fak3",
        "[default]\naws_secret_access_key = {s}",
        "Secret Keyword",
    )
    add(
        "Azure AD client secret",
        _j(_r("aad1", 3, _ALNUM), "8", "Q~", "FAKE", _r("aad2", 30, _ALNUM + "_-.~")),
        "AZURE_CLIENT_SECRET: {s}",
        "Azure AD Client Secret",
    )
    add(
        "Google API key",
        _j("AI", "za", "SyFAKE", _r("gcp1", 29, _ALNUM + "_-")),
        "Maps key for the demo page is {s}",
        "Google API Key",
    )

    add(
        "IBM Cloud IAM API key",
        _j("FAKE", _r("ibm1", 40, _ALNUM + "_-")),
        "ibm_cloud_iam_api_key = {s}",
        "IBM Cloud IAM Key",
    )
    add("IBM COS HMAC secret", _r("ibm2", 48, _HEX), 'cos_hmac_secret_access_key: "{s}"', "IBM COS HMAC Credentials")
    add("SoftLayer API key", _r("slk1", 64, _LOWER_ALNUM), "softlayer_api_key={s}", "SoftLayer Credentials")
    add(
        "Cloudant password in URL",
        _r("cl1", 64, _HEX),
        "https://fake-account:{s}@fake-account.cloudant.com",
        "Cloudant Credentials",
    )
    add(
        "Artifactory API key", _j("AKC", "p8", "FAKE", _r("af1", 64)), "X-JFrog-Art-Api: {s}", "Artifactory Credentials"
    )

    # --- Source hosting / package registries ---------------------------------
    add(
        "GitHub classic PAT (ghp_)",
        _j("gh", "p_", "FAKE", _r("gh1", 32)),
        "GitHub token for the release bot: {s}",
        "GitHub Token",
    )
    add(
        "GitHub OAuth token (gho_)",
        _j("gh", "o_", "TEST", _r("gh2", 32)),
        "oauth token {s} from the device flow",
        "GitHub Token",
    )
    add(
        "GitHub app token in clone URL (ghs_)",
        _j("gh", "s_", "FAKE", _r("gh3", 32)),
        "git clone https://x-access-token:{s}@github.com/contoso/memory-core.git",
        "GitHub Token",
    )
    add(
        "GitHub fine-grained PAT",
        _j("github", "_pat_", "11FAKE", _r("gh4", 16, _UPPER_DIGITS), "_", _r("gh5", 59)),
        "GH_TOKEN={s}",
        "GitHub Token",
    )
    add(
        "GitLab personal access token",
        _j("gl", "pat-", "FAKE", _r("gl1", 16, _ALNUM + "_-")),
        "GitLab PAT: {s}",
        "GitLab Token",
    )
    add(
        "npm token in .npmrc",
        _j("np", "m_", "FAKE", _r("npm1", 32)),
        "//registry.npmjs.org/:_authToken={s}",
        "NPM Token",
    )
    add("npm token alone", _j("np", "m_", "TEST", _r("npm2", 32)), "publish with {s} from CI", "NPM Token")
    add(
        "PyPI upload token",
        _j("pypi-", "AgEIcHlwaS5vcmc", _r("pypi1", 80, _B64URL)),
        "twine password: {s}",
        "PyPI Token",
    )

    # --- Chat / SaaS ----------------------------------------------------------
    add(
        "Slack bot token",
        _j("xo", "xb-", "1234567890", "-", "9876543210", "-", "FAKE", _r("sl1", 20, _LOWER_ALNUM)),
        "SLACK_BOT_TOKEN={s}",
        "Slack Token",
    )
    add(
        "Slack user token",
        _j("xo", "xp-", "1111111111", "-", "2222222222", "-", "3333333333333", "-", _r("sl2", 32, _HEX)),
        "user token {s}",
        "Slack Token",
    )
    add(
        "Slack incoming webhook",
        _j("https://hooks.", "slack.com/services/", "TFAKE0001", "/", "BFAKE0002", "/", _r("sl3", 24)),
        "Post alerts to {s}",
        "Slack Token",
    )
    add(
        "Slack app-level token",
        _j("xa", "pp-", "1-", "AFAKE01TEST", "-", "1234567890123", "-", _r("sl4", 64, _HEX)),
        "socket mode token {s}",
        "Slack Token",
    )
    add(
        "Discord bot token",
        _j("MTA", _r("dc1", 21, _ALNUM), ".", _r("dc2", 6, _ALNUM), ".", _r("dc3", 27, _ALNUM + "_-")),
        "discord bot: {s}",
        "Discord Bot Token",
    )
    add(
        "Telegram bot token",
        _j("7123456789", ":", "AAF", _r("tg1", 32, _ALNUM + "_-")),
        "Telegram bot {s}",
        "Telegram Bot Token",
    )
    add(
        "SendGrid API key",
        _j("S", "G.", _r("sg1", 22, _ALNUM + "_-"), ".", _r("sg2", 43, _ALNUM + "_-")),
        "mail via sendgrid using {s}",
        "SendGrid API Key",
    )
    add("Twilio API key SID", _j("S", "K", _r("tw1", 32, _HEX)), "twilio key {s}", "Twilio API Key")
    add("Mailchimp API key", _j(_r("mc1", 32, _HEX), "-us", "6"), "mailchimp {s}", "Mailchimp Access Key")
    add(
        "Square OAuth secret",
        _j("sq0", "csp-", _r("sq1", 43, _ALNUM + "_-")),
        "square app secret {s}",
        "Square OAuth Secret",
    )
    add(
        "Stripe live secret key",
        _j("sk", "_live_", "FAKE", _r("st1", 28)),
        "STRIPE_SECRET_KEY={s}",
        "Stripe Access Key",
    )
    add(
        "Stripe restricted key",
        _j("rk", "_live_", "TEST", _r("st2", 28)),
        "restricted key for reporting: {s}",
        "Stripe Access Key",
    )
    add(
        "Stripe test secret key",
        _j("sk", "_test_", "FAKE", _r("st3", 28)),
        "stripe test-mode key {s}",
        "Stripe Access Key",
    )
    add(
        "OpenAI legacy key",
        _j("sk-", _r("oa1", 20), "T3Blbk", "FJ", _r("oa2", 20)),
        "OPENAI_API_KEY={s}",
        "OpenAI Token",
    )
    add(
        "OpenAI project key",
        _j("sk-", "proj-", "FAKE", _r("oa3", 60, _ALNUM + "_-"), "T3Blbk", "FJ", _r("oa4", 60, _ALNUM + "_-")),
        "the new key is {s}",
        "OpenAI Token",
    )
    add(
        "Anthropic API key",
        _j("sk-", "ant-", "api03-", "FAKE", _r("an1", 89, _ALNUM + "_-"), "AA"),
        "ANTHROPIC_API_KEY={s}",
        "Anthropic API Key",
    )
    add(
        "Hugging Face token",
        _j("h", "f_", "FAKE", _r("hf1", 30, string.ascii_letters)),
        "HF_TOKEN {s} for model downloads",
        "Hugging Face Token",
    )

    # --- Private keys ---------------------------------------------------------
    add("RSA private key (PEM)", _pem("RSA PRIVATE KEY", "pk1"), "Deploy key:\n{s}", "Private Key")
    add("EC private key (PEM)", _pem("EC PRIVATE KEY", "pk2", lines=2), "{s}", "Private Key")
    add("OpenSSH private key", _pem("OPENSSH PRIVATE KEY", "pk3"), "id_ed25519 contents:\n{s}", "Private Key")
    add("PKCS#8 private key", _pem("PRIVATE KEY", "pk4"), "{s}", "Private Key")
    add("Encrypted PKCS#8 private key", _pem("ENCRYPTED PRIVATE KEY", "pk5"), "{s}", "Private Key")
    add(
        "Legacy encrypted RSA key with PEM headers",
        _pem(
            "RSA PRIVATE KEY",
            "pk6",
            headers="Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,FAKE00112233445566778899AABBCC\n\n",
        ),
        "{s}",
        "Private Key",
    )
    add(
        "PGP private key block",
        _pem("PGP PRIVATE KEY BLOCK", "pk7", headers="Version: FakePG v1\n\n"),
        "{s}",
        "Private Key",
    )
    add(
        "Private key in service-account JSON",
        _pem("PRIVATE KEY", "pk8").replace("\n", "\\n"),
        '{{"type": "service_account", "client_email": "fake@example.iam.gserviceaccount.com", "private_key": "{s}"}}',
        "Private Key",
    )
    add(
        "PuTTY private key",
        _j(
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: fake-key\nPublic-Lines: 2\n",
            _r("pt1", 64, _B64),
            "\n",
            _r("pt2", 12, _B64),
            "\nPrivate-Lines: 1\n",
            _r("pt3", 44, _B64),
            "\n",
        ),
        "{s}",
        "Private Key",
    )

    # --- JWTs -----------------------------------------------------------------
    add("JWT (HS256)", _jwt("j1"), "session token {s}", "JSON Web Token")
    add(
        "JWT in Authorization header",
        _jwt("j2", "RS256", aud="api://fake"),
        "Authorization: Bearer {s}",
        "JSON Web Token",
    )
    add("JWT in a cookie", _jwt("j3", name="Fake User"), "Cookie: session={s}; Path=/", "JSON Web Token")
    add(
        "JWT id_token in JSON",
        _jwt("j4", "ES256", iss="https://login.example.com/fake"),
        '{{"id_token": "{s}", "token_type": "Bearer"}}',
        "JSON Web Token",
    )

    # --- Connection strings ---------------------------------------------------
    add(
        "Azure Storage connection string",
        _azure_key("az1"),
        "DefaultEndpointsProtocol=https;AccountName=stfakeexample;AccountKey={s};EndpointSuffix=core.windows.net",
        "Connection String",
    )
    add(
        "Cosmos DB connection string",
        _azure_key("az2"),
        "AccountEndpoint=https://cosmos-fake.documents.azure.com:443/;AccountKey={s};",
        "Connection String",
    )
    add(
        "Service Bus connection string",
        _azure_key("az3", 32),
        "Endpoint=sb://sb-fake.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={s}",
        "Connection String",
    )
    add(
        "Event Hubs connection string",
        _azure_key("az4", 32),
        "Endpoint=sb://eh-fake.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey={s};EntityPath=events",
        "Connection String",
    )
    add(
        "SignalR connection string",
        _azure_key("az5", 32),
        "Endpoint=https://fake.service.signalr.net;AccessKey={s};Version=1.0;",
        "Connection String",
    )
    add(
        "Azure SAS URL",
        _j(
            "sv=2022-11-02&ss=b&srt=sco&sp=rl&se=2030-01-01T00:00:00Z&sig=",
            _azure_key("az6", 32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D"),
        ),
        "https://stfake.blob.core.windows.net/exports?{s}",
        "Azure SAS Token",
    )
    add(
        "SQL Server connection string",
        "Fake!Passw0rd#2024",
        "Server=tcp:sql-fake.database.windows.net,1433;Initial Catalog=memory;User ID=app;Password={s};Encrypt=True;",
        "Connection String",
    )
    add(
        "PostgreSQL URL",
        "FakePg_" + _r("pg1", 12),
        "DATABASE_URL=postgresql://memory_app:{s}@pg-fake.postgres.database.azure.com:5432/memory",
        "Connection String",
    )
    add(
        "MySQL JDBC URL with password param",
        "FakeMy$ql" + _r("my1", 8),
        "jdbc:mysql://mysql-fake.example.com:3306/app?user=app&password={s}&useSSL=true",
        "Connection String",
    )
    add(
        "MongoDB SRV URL",
        "FakeMongo" + _r("mg1", 10),
        "mongodb+srv://appUser:{s}@cluster0.fake.mongodb.net/memory?retryWrites=true",
        "Connection String",
    )
    add(
        "Redis URL with password",
        _r("rd1", 32),
        "REDIS_URL=rediss://:{s}@cache-fake.redis.cache.windows.net:6380/0",
        "Connection String",
    )
    add(
        "AMQP URL",
        "fakeRabbit" + _r("mq1", 8),
        "amqps://worker:{s}@rabbit.fake.example:5671/vhost",
        "Connection String",
    )

    # --- Basic auth -----------------------------------------------------------
    add(
        "HTTPS URL with basic auth",
        "Fake" + _r("ba1", 10),
        "Artifact feed: https://ci-bot:{s}@packages.fake.example/simple/",
        "Basic Auth Credentials",
    )
    add(
        "FTP URL with credentials",
        "ftpFake" + _r("ba2", 6),
        "ftp://uploader:{s}@ftp.fake.example/incoming",
        "Basic Auth Credentials",
    )
    add(
        "Authorization: Basic header",
        base64.b64encode(b"admin:FakeBasic" + _r("ba3", 8).encode()).decode(),
        "curl -H 'Authorization: Basic {s}' https://api.fake.example",
        "Basic Auth Credentials",
    )

    # --- Keyword assignments --------------------------------------------------
    add("api_key= high entropy", _r("kw1", 32), "api_key={s}", "Secret Keyword")
    add(
        "Django SECRET_KEY",
        "django-insecure-" + _r("kw2", 40, _LOWER_ALNUM + "!@#%^&*(-_=+)"),
        "SECRET_KEY = '{s}'",
        "Secret Keyword",
    )
    add(
        "client_secret in JSON",
        _r("kw3", 40, _ALNUM + "_-"),
        '{{"client_id": "fake-app", "client_secret": "{s}"}}',
        "Secret Keyword",
    )
    add("password in YAML", "Xk9#mP2$vL7q", "db:\n  user: app\n  password: {s}", "Secret Keyword")
    add("password in prose with keyword", "Tr0ub4dor&3-Fake", "my wifi password is {s}", "Secret Keyword")
    add(
        "Kubernetes secret data (base64)",
        base64.b64encode(b"FakeK8sPassw0rd!").decode(),
        "data:\n  password: {s}",
        "Secret Keyword",
    )
    add("Heroku API key (UUID)", "3a9fbc2e-4c1d-4f7a-9e8b-fa4e00c0ffee", "HEROKU_API_KEY={s}", "Secret Keyword")
    add("Datadog API key (hex)", _r("dd1", 32, _HEX), "DD_API_KEY={s}", "Secret Keyword")
    add("Opaque bearer token", _r("br1", 40, _ALNUM + "-._"), "Authorization: Bearer {s}", "Bearer Token")

    # --- Payment cards (public test numbers) -----------------------------------
    add(
        "Visa test card, spaced", _card("4111111111111111", " "), "Corporate card {s}, exp 12/29", "Payment Card Number"
    )
    add("Visa test card, contiguous", "4242424242424242", "card number: {s}", "Payment Card Number")
    add("Mastercard test card, dashed", _card("5555555555554444", "-"), "Pay with {s}", "Payment Card Number")
    add("Mastercard 2-series", "2223003122003222", "{s} cvc 123", "Payment Card Number")
    add("Amex test card, 4-6-5", _card("378282246310005", " "), "Amex {s}", "Payment Card Number")
    add("Discover test card", "6011111111111117", "Discover card {s}", "Payment Card Number")
    add("JCB test card", _card("3530111333300000", " "), "JCB {s}", "Payment Card Number")
    add("Diners test card, 4-6-4", _card("30569309025904", " "), "Diners {s}", "Payment Card Number")
    add("UnionPay test card", "6200000000000005", "UnionPay {s}", "Payment Card Number")

    # --- Deliberately not detected (see scanner design decision 6) -------------
    add("bare high-entropy string, no context", _r("miss1", 40), "here it is: {s}", None)
    add("password in prose without keyword", "Tr0ub4dor&3", "log in as admin with {s} tonight", None)
    add("Shopify access token (unsupported vendor)", _j("shp", "at_", _r("miss2", 32, _HEX)), "shopify {s}", None)
    return out


FAKE_SECRETS: list[FakeSecret] = _build()
