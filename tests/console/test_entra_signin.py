"""Sign-in under Entra ID (mode entra), in the browser: MSAL.js by redirect, then the API with a Bearer token.

Entra ID's servers cannot be reached here, so a FAKE authority stands in for them
(tests/console/entra_authority.py): OpenID metadata, JWKS, an authorize endpoint that redirects back
with a code, and a token endpoint that signs real RS256 tokens with a key generated in the test. It is
a fake only because Entra cannot run on the test machine. Everything else is real: the vendored MSAL
in headless Chromium, and the service validating each Bearer token against the fake's JWKS (its
signature, Entra's issuer for the tenant, the API's audience), as it would Entra's.

The service points at the fake through its ordinary settings: ``MEMORY_ENTRA_AUTHORITY_HOST`` (the
authority the page is given, which then names it among MSAL's known authorities),
``MEMORY_ENTRA_JWKS_URL`` and ``MEMORY_IDENTITY_CA_BUNDLE``. Chromium trusts the fake's certificate
only: its public key is the one certificate error this browser may ignore.
"""

from __future__ import annotations

import base64
import hashlib
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.auth.idp import TENANT_ID, SigningKey, entra_claims, mint, new_signing_key
from tests.console.browser import chromium, find, session_storage, text_appears, wait_for, wait_idle
from tests.console.entra_authority import CONSOLE_API_SCOPE, CONSOLE_CLIENT_ID, FakeEntraServer
from tests.support.console_session import open_afresh
from tests.support.cosmos_server import make_localhost_cert
from tests.support.local_server import RunningServer, running_server

DANA = "dana@contoso.com"


@pytest.fixture(scope="module")
def signing_key() -> SigningKey:
    return new_signing_key("fake-entra-key-1")


@pytest.fixture(scope="module")
def authority_tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return make_localhost_cert(tmp_path_factory.mktemp("fake-entra-tls"))


@pytest.fixture(scope="module")
def fake_entra(authority_tls: tuple[str, str], signing_key: SigningKey) -> Iterator[FakeEntraServer]:
    server = FakeEntraServer(*authority_tls, signing_key)
    yield server
    server.close()


@pytest.fixture(scope="module")
def entra_server(fake_entra: FakeEntraServer, authority_tls: tuple[str, str],
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {
        "MEMORY_AUTH_MODE": "entra",
        "MEMORY_ENTRA_TENANT_ID": TENANT_ID,
        "MEMORY_ENTRA_AUDIENCE": "api://memory-core",
        "MEMORY_ENTRA_AUTHORITY_HOST": fake_entra.state.base_url,
        "MEMORY_ENTRA_JWKS_URL": fake_entra.state.jwks_url,
        "MEMORY_IDENTITY_CA_BUNDLE": authority_tls[0],
        "MEMORY_CONSOLE_CLIENT_ID": CONSOLE_CLIENT_ID,
        "MEMORY_CONSOLE_API_SCOPE": CONSOLE_API_SCOPE,
        "MEMORY_API_KEYS": "",
        "MEMORY_OPERATOR_KEYS": "",
        "WEBSITE_HOSTNAME": "",
    }
    with running_server(tmp_path_factory.mktemp("entra-console"), env) as server:
        fake_entra.state.redirect_uri = f"{server.api}/console"  # the SPA's registered redirect URI
        yield server


def _spki_hash(cert_path: str) -> str:
    cert = x509.load_pem_x509_certificate(Path(cert_path).read_bytes())
    spki = cert.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(spki).digest()).decode()


@pytest.fixture(scope="module")
def entra_browser(authority_tls: tuple[str, str]) -> Iterator[WebDriver]:
    """A Chromium of its own that accepts the fake authority's certificate, and no other one it cannot verify."""
    with chromium(flags=(f"--ignore-certificate-errors-spki-list={_spki_hash(authority_tls[0])}",)) as driver:
        yield driver


def _bearer(signing_key: SigningKey, upn: str = DANA, **claims: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {mint(signing_key, entra_claims(upn, **claims))}"}


def _open_signed_out(browser: WebDriver, server: RunningServer, instance: str) -> None:
    open_afresh(browser, f"{server.api}/console", instance=instance)


def _sign_in(browser: WebDriver, server: RunningServer, fake: FakeEntraServer, instance: str) -> None:
    _open_signed_out(browser, server, instance)
    before = len(fake.state.authorizations)
    find(browser, "#signin-entra").click()
    wait_for(browser, lambda d: len(fake.state.authorizations) > before)
    assert find(browser, "#signed-in-as").text == DANA


def _signed_in_beside(fact: str, browser: WebDriver, server: RunningServer, fake: FakeEntraServer,
                      signing_key: SigningKey) -> str:
    """A new instance in which Dana's memory holds ``fact`` (appended with her Bearer token); Dana signed in to it
    in ``browser`` by redirect, the fact shown and the page idle. Answers the instance."""
    instance = f"entra-{uuid.uuid4().hex[:10]}"
    with httpx.Client(base_url=f"{server.api}/instances/{instance}", timeout=30) as api:
        api.post("/memory/append", json={"scope": "user", "content_markdown": f"- {fact}"},
                 headers=_bearer(signing_key)).raise_for_status()
    _sign_in(browser, server, fake, instance)
    text_appears(browser, "#entries", fact)
    wait_idle(browser)
    return instance


def test_a_person_signs_in_by_redirect_and_sees_their_memory(
    entra_browser: WebDriver, entra_server: RunningServer, fake_entra: FakeEntraServer, signing_key: SigningKey,
) -> None:
    """The page offers "Sign in with Microsoft", goes to the authority, comes back with a code, redeems it for an
    access token and calls the API with it: the person's own memory shows, and what they add is theirs."""
    started = time.monotonic()
    instance = _signed_in_beside("prefers tea to coffee", entra_browser, entra_server, fake_entra, signing_key)
    with httpx.Client(base_url=f"{entra_server.api}/instances/{instance}", timeout=30) as api:
        authorize = fake_entra.state.authorizations[-1]
        assert authorize["client_id"] == CONSOLE_CLIENT_ID and CONSOLE_API_SCOPE in authorize["scope"].split()
        assert fake_entra.state.token_requests[-1]["grant_type"] == "authorization_code"

        find(entra_browser, "#add-text").send_keys("- written after signing in with Entra ID")
        entra_browser.find_element(By.CSS_SELECTOR, "#add-form button[type=submit]").click()
        text_appears(entra_browser, "#entries", "written after signing in with Entra ID")
        mine = api.get("/memory/entries", params={"scope": "user"}, headers=_bearer(signing_key)).json()["entries"]
        assert any("signing in with Entra ID" in e["content_markdown"] for e in mine)
        others = api.get("/memory/entries", params={"scope": "user"},
                         headers=_bearer(signing_key, "erin@contoso.com")).json()["entries"]
        assert others == []
    assert time.monotonic() - started < 60


_REPLACE_CACHED_ACCESS_TOKENS = """
  let replaced = 0;
  for (const key of Object.keys(sessionStorage)) {
    if (!key.includes("|accesstoken|")) continue;
    const entry = JSON.parse(sessionStorage.getItem(key));
    entry.secret = arguments[0];
    sessionStorage.setItem(key, JSON.stringify(entry));
    replaced += 1;
  }
  return replaced;
"""


def test_a_token_the_api_later_refuses_says_the_sign_in_expired_and_signs_in_again_by_redirect(
    entra_browser: WebDriver, entra_server: RunningServer, fake_entra: FakeEntraServer, signing_key: SigningKey,
) -> None:
    """MSAL still holds the access token as valid, but the API refuses it (401: on the service's clock it has
    expired). The page says the person is not signed in rather than that something failed, offers "Sign in again",
    and that button starts a new sign-in by redirect at the authority, after which the memory shows again.

    The refused token is put in MSAL's cache (session storage) by the test: a token that expired between the
    authority and the service is what the fake authority cannot otherwise be made to hand out."""
    started = time.monotonic()
    _signed_in_beside("works from home on Fridays", entra_browser, entra_server, fake_entra, signing_key)

    expired = mint(signing_key, entra_claims(DANA, lifetime=-3600))
    assert entra_browser.execute_script(_REPLACE_CACHED_ACCESS_TOKENS, expired) == 1
    entra_browser.find_element(By.ID, "tab-audit").click()
    again = find(entra_browser, "#sign-in-again")
    shown = entra_browser.find_element(By.ID, "main").text
    assert "not signed in" in shown and "expired" in shown and "could not be reached" not in shown

    authorizations, redeemed = len(fake_entra.state.authorizations), len(fake_entra.state.token_requests)
    again.click()
    wait_for(entra_browser, lambda d: len(fake_entra.state.authorizations) > authorizations)
    text_appears(entra_browser, "#entries", "works from home on Fridays")  # with a new token, accepted
    assert len(fake_entra.state.token_requests) == redeemed + 1
    assert find(entra_browser, "#signed-in-as").text == DANA
    assert not any(expired in value for value in session_storage(entra_browser).values())
    assert time.monotonic() - started < 60


@pytest.fixture
def authority_down(fake_entra: FakeEntraServer) -> Iterator[None]:
    fake_entra.state.down = True
    yield
    fake_entra.state.down = False


def test_a_sign_in_that_cannot_start_says_so_instead_of_doing_nothing(
    entra_browser: WebDriver, entra_server: RunningServer, fake_entra: FakeEntraServer, authority_down: None,
) -> None:
    """MSAL cannot read the authority's metadata (the authority is out of reach): "Sign in with Microsoft" said
    nothing and stayed as it was, the error only in the browser's console. The page now says sign-in could not
    start, and why; once the authority is back, the same button signs in."""
    started = time.monotonic()
    _open_signed_out(entra_browser, entra_server, f"entra-{uuid.uuid4().hex[:10]}")
    find(entra_browser, "#signin-entra").click()
    status = text_appears(entra_browser, "#status", "Sign-in could not start")
    assert "error" in (status.get_attribute("class") or "")
    assert f"{entra_server.api}/console" in entra_browser.current_url  # still on the page, no redirect

    fake_entra.state.down = False  # back: the same button now signs in
    entra_browser.find_element(By.ID, "signin-entra").click()
    assert find(entra_browser, "#signed-in-as").text == DANA
    find(entra_browser, "#empty-state")
    assert time.monotonic() - started < 30
