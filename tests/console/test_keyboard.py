"""The main flows work with the keyboard alone, and focus is always visible."""

from __future__ import annotations

import httpx
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import find, status_says, text_appears, wait_for, wait_idle
from tests.console.conftest import open_console
from tests.support.local_server import OPERATOR_KEY, RunningServer

MAX_TABS = 80


def _keys(driver: WebDriver, *keys: str) -> None:
    ActionChains(driver).send_keys(*keys).perform()


def _focused_matches(driver: WebDriver, css: str) -> bool:
    return bool(driver.execute_script("return document.activeElement && document.activeElement.matches(arguments[0])", css))


def _assert_focus_visible(driver: WebDriver) -> None:
    outline = driver.execute_script(
        "const s = getComputedStyle(document.activeElement); return [s.outlineStyle, s.outlineWidth];")
    assert outline[0] != "none" and outline[1] != "0px", f"focus not visible: {outline}"


def _tab_to(driver: WebDriver, css: str, *, backwards: bool = False) -> None:
    """Press Tab until ``css`` has focus; fails if it is not reachable by keyboard."""
    for _ in range(MAX_TABS):
        _keys(driver, Keys.SHIFT + Keys.TAB if backwards else Keys.TAB)
        if _focused_matches(driver, css):
            _assert_focus_visible(driver)
            return
    raise AssertionError(f"{css} cannot be reached with Tab")


def test_a_person_adds_searches_and_forgets_with_the_keyboard_alone(
    browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client,
) -> None:
    open_console(browser, console_server, instance)
    browser.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")
    _keys(browser, Keys.TAB)
    assert _focused_matches(browser, "a.skip")  # the first stop skips the header
    _assert_focus_visible(browser)

    _tab_to(browser, "#add-text")
    _keys(browser, "- typed with the keyboard")
    _tab_to(browser, "#add-form button[type=submit]")
    _keys(browser, Keys.ENTER)
    status_says(browser, "Added.")
    text_appears(browser, "#entries", "typed with the keyboard")
    wait_idle(browser)

    browser.execute_script("document.activeElement.blur()")
    _tab_to(browser, "#search-q")
    _keys(browser, "keyboard", Keys.ENTER)
    text_appears(browser, "#search-results", "Search results (1)")

    # forget: Escape cancels, then Tab to Confirm and Enter
    _tab_to(browser, "#entries button.danger")
    _keys(browser, Keys.ENTER)
    find(browser, "dialog#confirm[open]")
    assert _focused_matches(browser, "#confirm-cancel")  # the safe choice has focus
    _keys(browser, Keys.ESCAPE)
    wait_for(browser, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is None)
    assert _focused_matches(browser, "#entries button.danger")  # focus returns to the opener
    _keys(browser, Keys.ENTER)
    find(browser, "dialog#confirm[open]")
    _keys(browser, Keys.TAB)
    assert _focused_matches(browser, "#confirm-ok")
    _keys(browser, Keys.ENTER)
    status_says(browser, "waiting for an operator's approval")
    find(browser, "#pending")
    assert local_api.get("/memory/entries", params={"scope": "user"}).json()["entries"] == []


def test_an_operator_approves_with_the_keyboard_alone(browser: WebDriver, console_server: RunningServer,
                                                      instance: str, local_api: httpx.Client,
                                                      operator_api: httpx.Client) -> None:
    entry = local_api.post("/memory/append", json={"scope": "user", "content_markdown": "- to forget"}).json()
    request_id = local_api.delete(f"/memory/entries/{entry['entry_id']}").json()["request_id"]
    open_console(browser, console_server, instance, operator_key=OPERATOR_KEY)
    browser.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")

    _tab_to(browser, "[role=tab][aria-selected=true]")
    _keys(browser, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT)  # arrow keys move between the tabs
    assert _focused_matches(browser, "#tab-operator")
    find(browser, f'tr[data-request-id="{request_id}"]')
    wait_idle(browser)
    _tab_to(browser, f'tr[data-request-id="{request_id}"] button.primary')
    _keys(browser, Keys.ENTER)
    find(browser, "dialog#confirm[open]")
    _keys(browser, Keys.TAB, Keys.ENTER)
    status_says(browser, "Approved")
    approved = operator_api.get("/operator/deletions", params={"status": "approved"}).json()["requests"]
    assert [r["id"] for r in approved] == [request_id]
