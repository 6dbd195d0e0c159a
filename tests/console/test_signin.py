"""Sign-in under App Service authentication (mode easyauth), in the browser.

App Service injects X-MS-CLIENT-PRINCIPAL into every request it lets through. Here the
browser itself adds the header to every request (Chrome DevTools ``Network.setExtraHTTPHeaders``),
standing in for App Service's front end, which cannot run on the test machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.auth.conftest import client_principal
from tests.console.browser import find, status_says, text_appears, wait_idle
from tests.support.local_server import RunningServer, running_server


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
    browser.get(f"{easyauth_server.api}/console")
    browser.execute_script("sessionStorage.clear()")
    browser.get(f"{easyauth_server.api}/console")
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
