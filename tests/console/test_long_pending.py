"""A person with many deletions waiting: the notice above their entries stays short.

Forgetting entries one by one files one request each, and the notice of requests waiting for an operator sits above
the entries. It counts them all, lists the oldest ten and sums up the rest in one line; it used to list every one,
so a thousand forgets pushed the entries thousands of pixels down and a screen reader read each request first.
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import find, text_appears
from tests.console.conftest import open_console
from tests.support.local_server import RunningServer

FORGOTTEN = 40


def test_the_pending_notice_lists_ten_and_counts_the_rest(
        browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client) -> None:
    ids = [local_api.post("/memory/append", json={"scope": "user", "content_markdown": f"- fact {n}"}
                          ).json()["entry_id"] for n in range(FORGOTTEN + 1)]
    for entry in ids[:FORGOTTEN]:
        assert local_api.delete(f"/memory/entries/{entry}").status_code == 202
    open_console(browser, console_server, instance)

    pending = text_appears(browser, "#pending", f"{FORGOTTEN} deletions waiting for an operator")
    assert len(pending.find_elements(By.TAG_NAME, "li")) == 10
    assert find(browser, "#pending-more").text == f"and {FORGOTTEN - 10} more, asked later (each is in My audit trail)."
    # The entry left is near the top of the page, not below a list of every request.
    top = browser.execute_script("return document.querySelector('#entries li.entry').getBoundingClientRect().top")
    assert top < 1500, top
