"""A memory of many entries, in real headless Chromium: the newest 500 show at once, and a button shows more.

Rendering, and on the next load tearing down, every entry of a long memory took most of the console's
load at 10,000 entries (docs/performance.md); the heading still counts every entry.
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from tests.console.browser import find, status_says, text_appears, wait_for, wait_idle
from tests.console.conftest import open_console
from tests.console.test_person import _confirm
from tests.support.local_server import RunningServer

ENTRIES = 1201


def _seed(local_api: httpx.Client, count: int) -> None:
    def append(i: int) -> None:
        local_api.post("/memory/append", json={"scope": "user", "content_markdown": f"fact {i:04d}"}
                       ).raise_for_status()
    for i in range(count):  # in order, one at a time: the entries' order is their number's
        append(i)


def _click_when_still(browser: WebDriver, element: WebElement) -> None:
    """Scroll ``element`` into view and click it once it has stopped moving. Entries off screen are laid out at an
    estimated height (``content-visibility: auto``) and take their real one as they scroll into view, so a click
    aimed while they do can land on an entry instead (seen once under a full CI run's load)."""
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    tops: list[float] = []

    def still(d: WebDriver) -> bool:
        tops.append(d.execute_script("return arguments[0].getBoundingClientRect().top", element))
        return len(tops) >= 4 and len(set(tops[-4:])) == 1
    wait_for(browser, still)
    element.click()


def _shown(browser: WebDriver) -> list[str]:
    """The rendered entries' text, newest first (one script: a WebDriver call per element takes seconds)."""
    return list(browser.execute_script(
        "return [...document.querySelectorAll('#entries .entry p')].map((p) => p.textContent)"))


def test_the_newest_500_show_first_and_the_button_shows_the_rest_500_at_a_time(
    browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client
) -> None:
    """1,201 entries: the newest 500 are rendered, newest first, under "Entries (1,201)"; the button says how many
    more it shows and how many are left; two clicks show them all, the oldest last, and focus lands on the line
    that replaces the button. A forget keeps every entry shown; choosing the scope again shows 500."""
    _seed(local_api, ENTRIES)
    open_console(browser, console_server, instance)
    text_appears(browser, "h3", f"Entries ({ENTRIES:,})")
    shown = _shown(browser)
    assert (len(shown), shown[0], shown[-1]) == (500, "fact 1200", "fact 0701")
    more = find(browser, "#show-more")
    assert more.text == "Show 500 more (701 older not shown)"

    _click_when_still(browser, more)
    wait_for(browser, lambda d: len(_shown(d)) == 1000)
    status_says(browser, "Showing 1,000 of 1,201 entries.")
    assert find(browser, "#show-more").text == "Show 201 more (201 older not shown)"
    _click_when_still(browser, find(browser, "#show-more"))
    done = text_appears(browser, "#all-shown", "All 1,201 entries shown.")
    shown = _shown(browser)
    assert (len(shown), shown[500], shown[-1]) == (ENTRIES, "fact 0700", "fact 0000")
    assert len(set(shown)) == ENTRIES and not browser.find_elements(By.ID, "show-more")
    assert browser.switch_to.active_element == done

    wait_idle(browser)
    oldest = browser.find_elements(By.CSS_SELECTOR, "#entries .entry")[-1]
    _click_when_still(browser, oldest.find_element(By.CSS_SELECTOR, "button.danger"))
    _confirm(browser, "Forget")
    text_appears(browser, "h3", f"Entries ({ENTRIES - 1:,})")
    wait_idle(browser)
    shown = _shown(browser)
    assert (len(shown), shown[-1]) == (ENTRIES - 1, "fact 0001")
    assert not browser.find_elements(By.ID, "show-more")

    _click_when_still(browser, find(browser, 'button[data-scope="user"]'))
    wait_for(browser, lambda d: len(_shown(d)) == 500)
    assert find(browser, "#show-more").text == "Show 500 more (700 older not shown)"


def test_a_memory_of_500_or_fewer_shows_everything_without_a_button(
    browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client
) -> None:
    """Exactly 500 entries: all of them, no button and no line about more."""
    _seed(local_api, 500)
    open_console(browser, console_server, instance)
    text_appears(browser, "h3", "Entries (500)")
    shown = _shown(browser)
    assert (len(shown), shown[0], shown[-1]) == (500, "fact 0499", "fact 0000")
    assert not browser.find_elements(By.ID, "show-more") and not browser.find_elements(By.ID, "all-shown")
