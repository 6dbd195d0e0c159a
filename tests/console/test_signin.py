"""Sign-in under App Service authentication (mode easyauth), in the browser.

App Service injects X-MS-CLIENT-PRINCIPAL into every request it lets through. Here the
browser itself adds the header to every request (Chrome DevTools ``Network.setExtraHTTPHeaders``),
standing in for App Service's front end, which cannot run on the test machine.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.expected_conditions import staleness_of

from tests.auth.conftest import client_principal
from tests.console.browser import find, status_says, text_appears, wait_for, wait_idle
from tests.support.console_session import open_afresh
from tests.support.local_server import RunningServer, running_server
from tests.support.stand_in_front import PassingFront, serving


@pytest.fixture(scope="module")
def easyauth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {"MEMORY_AUTH_MODE": "easyauth", "WEBSITE_AUTH_ENABLED": "True"}
    with running_server(tmp_path_factory.mktemp("easyauth-console"), env) as server:
        yield server


def _as(driver: WebDriver, principal: str | None) -> None:
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.setExtraHTTPHeaders",
                           {"headers": {"X-MS-CLIENT-PRINCIPAL": principal} if principal else {}})


@pytest.fixture
def as_principal(browser: WebDriver) -> Iterator[None]:
    yield
    _as(browser, None)  # the browser is shared: leave it without the header


def test_easyauth_person_and_operator_role(browser: WebDriver, easyauth_server: RunningServer,
                                           as_principal: None, tmp_path: Path) -> None:
    _as(browser, client_principal("erin@contoso.com", roles=("Memory.Operator",), name="Erin"))
    open_afresh(browser, f"{easyauth_server.api}/console")
    assert find(browser, "#signed-in-as").text == "erin@contoso.com"  # named by the API, from the principal
    assert config_mode(easyauth_server) == ["easyauth"]
    find(browser, "#add-text").send_keys("- written under App Service sign-in")
    browser.find_element(By.CSS_SELECTOR, "#add-form button[type=submit]").click()
    status_says(browser, "Added.")
    text_appears(browser, "#entries", "written under App Service sign-in")
    wait_idle(browser)

    browser.find_element(By.ID, "tab-operator").click()  # the role opens it, no key
    find(browser, "#no-deletions")
    assert not browser.find_elements(By.ID, "operator-refused")

    _as(browser, client_principal("finn@contoso.com", name="Finn"))
    browser.get(f"{easyauth_server.api}/console")
    assert find(browser, "#signed-in-as").text == "finn@contoso.com"
    find(browser, "#empty-state")  # finn sees none of erin's memory
    browser.find_element(By.ID, "tab-operator").click()
    assert "Memory.Operator" in find(browser, "#operator-refused").text


def config_mode(server: RunningServer) -> list[str]:
    return list(httpx.get(f"{server.api}/console/config.json").json()["auth_modes"])


class _AppServiceFront(PassingFront):
    """App Service's front end, as far as the console meets it: it injects the principal while the sign-in lasts;
    once it has expired, it answers a call to the API with 302 to its login page, or with 401 when the call says it
    is an XMLHttpRequest (and ``honours_xhr``, as App Service does)."""

    url = ""
    principal = ""
    expired = threading.Event()
    honours_xhr = True
    seen_xhr: ClassVar[list[str]] = []  # the X-Requested-With of each call answered as expired

    def answers_itself(self) -> bool:
        if not (self.expired.is_set() and self.path.startswith("/api/instances/")):
            return False
        self.seen_xhr.append(self.headers.get("X-Requested-With", ""))
        if self.honours_xhr and self.headers.get("X-Requested-With") == "XMLHttpRequest":
            self.reply(401)
        else:
            self.reply(302, headers={"Location": "/.auth/login/aad?post_login_redirect_uri=/api/console"})
        return True

    def added_headers(self) -> dict[str, str]:
        return {"X-MS-CLIENT-PRINCIPAL": self.principal}


@pytest.fixture
def app_service_front(easyauth_server: RunningServer) -> Iterator[type[_AppServiceFront]]:
    _AppServiceFront.backend = easyauth_server.base_url
    _AppServiceFront.principal = client_principal("gail@contoso.com", name="Gail")
    _AppServiceFront.expired.clear()
    _AppServiceFront.seen_xhr = []
    with serving(_AppServiceFront) as url:
        _AppServiceFront.url = url
        yield _AppServiceFront


@pytest.mark.parametrize("honours_xhr", [True, False], ids=["answered-401", "redirected-to-login"])
def test_a_sign_in_that_expires_while_the_page_is_open_says_so_and_offers_to_sign_in_again(
    browser: WebDriver, app_service_front: type[_AppServiceFront], honours_xhr: bool,
) -> None:
    """App Service answers a call whose sign-in has expired with a 302 to its login page, which the page reported
    as "The service could not be reached". The page now asks for 401 (X-Requested-With), reads a redirect as an
    expired sign-in too, and offers to sign in again at App Service's login, back to the console."""
    app_service_front.honours_xhr = honours_xhr
    open_afresh(browser, f"{app_service_front.url}/api/console")
    assert find(browser, "#signed-in-as").text == "gail@contoso.com"
    wait_idle(browser)

    app_service_front.expired.set()
    browser.find_element(By.ID, "tab-memory").click()
    again = find(browser, "#sign-in-again")
    shown = browser.find_element(By.ID, "main").text
    assert "not signed in" in shown and "could not be reached" not in shown
    assert set(app_service_front.seen_xhr) == {"XMLHttpRequest"}
    browser.find_element(By.ID, "tab-operator").click()  # an expired sign-in, not a missing operator role
    wait_for(browser, staleness_of(again))
    again = find(browser, "#sign-in-again")
    assert not browser.find_elements(By.ID, "operator-refused")

    again.click()
    wait_for(browser, lambda d: "/.auth/login/" in d.current_url)
    went = urlsplit(browser.current_url)
    assert went.path == "/.auth/login/aad"
    assert parse_qs(went.query)["post_login_redirect_uri"] == ["/api/console"]


def test_a_key_sign_in_with_a_name_outside_latin_1_reaches_the_api_spelled_right(tmp_path: Path,
                                                                                   browser: WebDriver) -> None:
    """Zoë 李, signed in by key: the console sends her identity with \\u escapes, so fetch does not refuse
    the header (李 is above U+00FF) and the service stores her name as she spells it.

    Bounded in time: every wait here is explicit (10 s at most each) and a page load stops after 30 s.
    """
    from tests.support.local_server import USER_KEY

    name = "Zoë 李"
    with running_server(tmp_path, {"MEMORY_AUTH_MODE": "key"}) as server:
        open_afresh(browser, f"{server.api}/console", instance="names",
                    key_sign_in={"key": USER_KEY, "upn": "zoe@contoso.com", "name": name})
        assert find(browser, "#signed-in-as", timeout=10).text == "zoe@contoso.com"
        find(browser, "#add-text", timeout=10).send_keys("- written by Zoë 李")
        browser.find_element(By.CSS_SELECTOR, "#add-form button[type=submit]").click()
        text_appears(browser, "#entries", "written by Zoë 李", timeout=10)
        escaped = '{"upn": "zoe@contoso.com", "name": "Zo\\u00eb \\u674e"}'
        with httpx.Client(base_url=f"{server.api}/instances/names",
                          headers={"X-API-KEY": USER_KEY, "X-USER-IDENTITY": escaped}, timeout=10) as api:
            assert api.get("/memory", params={"scope": "user"}).json()["name"] == name


def test_easyauth_sign_out_reaches_app_services_logout(browser: WebDriver, easyauth_server: RunningServer,
                                                       as_principal: None) -> None:
    """"Sign out" goes to /.auth/logout, where App Service ends its session. The page reloaded itself right after
    starting that navigation, which aborted it: the logout was never asked for and the page came back signed in.
    (``serve`` has no /.auth/logout and answers 404 there; App Service answers it.)"""
    _as(browser, client_principal("hana@contoso.com", name="Hana"))
    open_afresh(browser, f"{easyauth_server.api}/console")
    find(browser, "#scope-title")
    wait_idle(browser)
    browser.find_element(By.ID, "sign-out").click()
    wait_for(browser, lambda d: urlsplit(d.current_url).path == "/.auth/logout", timeout=5)
    assert not browser.find_elements(By.ID, "scope-title")


def test_back_after_signing_out_shows_no_memory(tmp_path: Path, browser: WebDriver) -> None:
    """Back after "Sign out" showed the signed-in page, memory included, from the back/forward cache (the page was
    no-cache, not no-store, and nothing re-checked the sign-in when it was shown again). Bounded: explicit waits."""
    from tests.support.local_server import USER_KEY

    with running_server(tmp_path, {"MEMORY_AUTH_MODE": "key"}) as server:
        with httpx.Client(base_url=f"{server.api}/instances/back", timeout=10,
                          headers={"X-API-KEY": USER_KEY, "X-USER-IDENTITY": '{"upn": "ivo@contoso.com"}'}) as api:
            api.post("/memory/append", json={"scope": "user", "content_markdown": "my diagnosis is XYZZY"})
        open_afresh(browser, f"{server.api}/console", instance="back",
                    key_sign_in={"key": USER_KEY, "upn": "ivo@contoso.com"})
        text_appears(browser, "#entries", "XYZZY")
        browser.get(f"{server.api}/console/")  # a second page in the tab's history, signed in too
        text_appears(browser, "#entries", "XYZZY")
        wait_idle(browser)
        browser.find_element(By.ID, "sign-out").click()
        find(browser, "#key-form")
        browser.back()
        wait_for(browser, lambda d: d.execute_script("return document.readyState") == "complete")
        find(browser, "#key-form")  # signed out: the form, loaded afresh
        assert "XYZZY" not in browser.find_element(By.TAG_NAME, "body").text
