"""Screen readers list a page's buttons by name: the buttons of one kind in a list must not all read alike.

An agent writes several entries in one minute, and a person's forgets are one request each: a Forget named only by
the minute, or an Approve named only by the kind and the user, gave a screen-reader user a list of identical names.
Each now names its entry (the start of its text) or its request (what, whose, when asked).
"""

from __future__ import annotations

import time

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import find, wait_idle
from tests.console.conftest import open_console
from tests.support.local_server import OPERATOR_KEY, RunningServer


def _names(driver: WebDriver, css: str) -> list[str]:
    return [b.get_attribute("aria-label") or b.text for b in driver.find_elements(By.CSS_SELECTOR, css)]


def test_each_forget_button_names_its_entry(
        browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client) -> None:
    for text in ("I like **green tea**", "My car is a [Volvo](https://volvo.example) " + "and more " * 20):
        local_api.post("/memory/append", json={"scope": "user", "content_markdown": text}).raise_for_status()
    open_console(browser, console_server, instance)
    find(browser, "#entries")

    names = _names(browser, "#entries button.danger")
    assert len(set(names)) == 2, names
    assert names[1].startswith("Forget the entry from ") and names[1].endswith(": I like green tea")
    # Cut at a word, under 60 characters, with the link read as its text.
    assert names[0].endswith(": My car is a Volvo and more and more and more and more and\u2026"), names[0]


def test_each_approve_and_reject_names_its_request(
        browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client) -> None:
    ids = [local_api.post("/memory/append", json={"scope": "user", "content_markdown": f"- fact {n}"}
                          ).json()["entry_id"] for n in range(2)]
    for entry in ids:
        assert local_api.delete(f"/memory/entries/{entry}").status_code == 202
        time.sleep(1.05)
    local_api.post("/memory/clear", json={"scope": "user", "confirm": True}).raise_for_status()
    open_console(browser, console_server, instance, operator_key=OPERATOR_KEY)
    find(browser, "#tab-operator").click()
    find(browser, "#deletions")
    wait_idle(browser)

    approve = _names(browser, "#deletions button.primary")
    assert len(approve) == 3
    # The stored user and scope are isolated (U+2068 ... U+2069) in the name, as in the row (test_operator_bidi.py).
    assert all(name.startswith("Approve ") and " for \u2068local@localhost\u2069, asked " in name for name in approve)
    assert sorted(name.split(" for ")[0] for name in approve) == [
        "Approve clear \u2068user\u2069", "Approve forget \u2068user\u2069", "Approve forget \u2068user\u2069"]
    assert len(set(approve)) == 3, approve  # the two forgets, a second apart, are told apart by the second
    assert _names(browser, "#deletions button.danger") == [n.replace("Approve", "Reject", 1) for n in approve]
