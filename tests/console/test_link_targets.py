"""A link in memory says where it leads when its text names another site.

Memory is written by agents, so a link's text is not to be trusted: ``[https://bank.example/login](https://evil.example)``
reads as the bank and leads elsewhere, and a phone shows no address on hover. The entry then shows the host the link
really leads to beside it; a link whose text names its own host, or no host at all, shows nothing more.
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import find
from tests.console.conftest import open_console
from tests.support.local_server import RunningServer

ENTRIES = {
    "named elsewhere": "Pay at [https://bank.example/login](https://evil.example/phish) today.",
    "look-alike host": "Pay rent at [bank.example](https://b\u0430nk.example/login) today.",
    "bare host, zero-width": "Pay tax at [bank\u200b.example/pay](https://evil.example/pay) today.",
    "user name": "Pay fees at <https://bank.example@evil.example/fees> today.",
    "own host": "Read [https://docs.example/guide](https://docs.example/guide#start) first.",
    "no host": "Read [the guide](https://docs.example/guide) first.",
}


def _entry_text(driver: WebDriver, words: str) -> str:
    return next(e.text for e in driver.find_elements(By.CSS_SELECTOR, "#entries .markdown") if words in e.text)


def test_a_link_naming_another_site_shows_where_it_leads(
        browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client) -> None:
    for content in ENTRIES.values():
        local_api.post("/memory/append", json={"scope": "user", "content_markdown": content}).raise_for_status()
    open_console(browser, console_server, instance)
    find(browser, "#entries .markdown")

    assert _entry_text(browser, "https://bank.example/login") == (
        "Pay at https://bank.example/login (leads to evil.example) today.")
    assert "(leads to xn--bnk-6cd.example)" in _entry_text(browser, "Pay rent at")
    assert "(leads to evil.example)" in _entry_text(browser, "Pay tax at")
    assert "(leads to evil.example)" in _entry_text(browser, "Pay fees at")
    assert _entry_text(browser, "docs.example/guide") == "Read https://docs.example/guide first."
    assert _entry_text(browser, "the guide") == "Read the guide first."
    # The note is text beside the link, not part of it: the link's own name is unchanged for screen readers.
    link = browser.find_element(By.CSS_SELECTOR, "#entries a[href^='https://evil.example/phish']")
    assert link.text == "https://bank.example/login"
