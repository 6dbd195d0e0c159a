"""The main flows work with the keyboard alone, and focus is always visible."""

from __future__ import annotations

import httpx
from selenium.common.exceptions import TimeoutException
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


def _focus_settles_on(driver: WebDriver, css: str, text: str = "") -> None:
    """Focus lands on ``css`` (inside an element showing ``text``) once the redraw is done: never on <body>."""
    script = ("const a = document.activeElement; return Boolean(a && a.matches(arguments[0])"
              " && (!arguments[1] || (a.closest('li, tr') || a).textContent.includes(arguments[1])))")
    try:
        wait_for(driver, lambda d: d.execute_script(script, css, text), timeout=5)
    except TimeoutException as error:
        shown = driver.execute_script("const a = document.activeElement; return a === document.body ? 'BODY'"
                                      " : a.tagName + '#' + a.id + '.' + a.className")
        raise AssertionError(f"focus is on {shown}, not on {css} {text!r}") from error
    _assert_focus_visible(driver)


def test_focus_stays_by_the_work_after_a_forget_an_add_and_an_operators_decisions(
    browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client,
) -> None:
    """A confirmed forget, an add and an operator's approve or reject redraw the view, and the button that had focus
    is gone: focus went to <body>, the top of the page. It now goes to the next entry's Forget (or the next
    request's Approve), to the note field after an add, and to the list's heading when no row is left."""
    for fact in ("fact 0", "fact 1", "fact 2"):
        local_api.post("/memory/append", json={"scope": "user", "content_markdown": fact}).raise_for_status()
    open_console(browser, console_server, instance, operator_key=OPERATOR_KEY)
    forget = browser.find_elements(By.CSS_SELECTOR, "#entries li.entry")[1]  # newest first: fact 1
    assert "fact 1" in forget.text
    browser.execute_script("arguments[0].focus()", forget.find_element(By.CSS_SELECTOR, "button.danger"))
    _keys(browser, Keys.ENTER)
    find(browser, "dialog#confirm[open]")
    _keys(browser, Keys.TAB, Keys.ENTER)
    status_says(browser, "waiting for an operator's approval")
    _focus_settles_on(browser, "#entries button.danger", "fact 0")  # the entry after the forgotten one

    browser.execute_script("arguments[0].focus()", find(browser, "#add-text"))
    _keys(browser, "a note")
    browser.execute_script("arguments[0].focus()", browser.find_element(By.CSS_SELECTOR, "#add-form button"))
    _keys(browser, Keys.ENTER)
    status_says(browser, "Added.")
    _focus_settles_on(browser, "#add-text")

    entry_id = next(e["id"] for e in local_api.get("/memory/entries", params={"scope": "user"}).json()["entries"]
                    if e["content_markdown"] == "fact 2")
    local_api.delete(f"/memory/entries/{entry_id}").raise_for_status()  # a second pending request
    browser.find_element(By.ID, "tab-operator").click()
    rows = wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#deletions tbody tr")) == 2
                    and d.find_elements(By.CSS_SELECTOR, "#deletions tbody tr"))
    wait_idle(browser)
    browser.execute_script("arguments[0].focus()", rows[0].find_element(By.CSS_SELECTOR, "button.primary"))
    _keys(browser, Keys.ENTER)
    find(browser, "dialog#confirm[open]")
    _keys(browser, Keys.TAB, Keys.ENTER)
    status_says(browser, "Approved")
    _focus_settles_on(browser, "#deletions button.primary")  # the request left to decide

    _keys(browser, Keys.TAB)  # from Approve to Reject
    assert _focused_matches(browser, "#deletions button.danger")
    _keys(browser, Keys.ENTER)
    find(browser, "dialog#confirm[open]")
    _keys(browser, "not this one", Keys.TAB, Keys.TAB, Keys.ENTER)
    status_says(browser, "Rejected")
    _focus_settles_on(browser, "#deletions-title")  # no request left: the list's heading


def test_choosing_a_scope_keeps_the_focus_on_the_button_chosen(
    browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client,
) -> None:
    """Choosing an agent (or "About me") in the list beside the memory draws the view again, the list with it: the
    focus went to <body>, and a keyboard or screen-reader user started again from the top of the page. It now comes
    back to the button chosen, which is marked as the current one, so the next Tab goes on from there."""
    for agent_id in ("agent-one", "agent-two"):
        local_api.post("/memory/append", json={"scope": "agent", "agent_object_id": agent_id, "agent_name": agent_id,
                                               "content_markdown": f"kept by {agent_id}"}).raise_for_status()
    open_console(browser, console_server, instance)
    browser.execute_script("document.activeElement.blur(); window.scrollTo(0, 0)")

    _tab_to(browser, "nav button[data-scope='agent:agent-one']")
    _keys(browser, Keys.ENTER)
    text_appears(browser, "#entries", "kept by agent-one")
    _focus_settles_on(browser, "nav button[data-scope='agent:agent-one'][aria-current=true]")

    _tab_to(browser, "nav button[data-scope=user]", backwards=True)
    _keys(browser, Keys.ENTER)
    text_appears(browser, "#scope-title", "About me")
    _focus_settles_on(browser, "nav button[data-scope=user][aria-current=true]")
