"""Long tables show a part at a time, and the rest of the view stays in reach.

Many deletion requests: the operator's table shows 100 at a time.

The table listed every pending request: with 1,000 the tab took 6.5 s to show (5 s of it laying out 2,000 buttons)
and the sweep, the audit trail and the agent settings sat 80,000 pixels down the page. It now shows the oldest
100 and a button that shows 100 more and says how many are left; a decision keeps what was shown, and a change of
filter starts from 100 again.

A long audit trail: the person's (and the operator's) trail showed every event, up to 50,000; 2,000 took 2.7 s.
It now shows the newest 200, and a button shows 200 more.

Bounded in time: every wait is explicit (10 s at most each) and a page load stops after 30 s.
"""

from __future__ import annotations

import httpx
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.console.browser import find, status_says, wait_for, wait_idle
from tests.console.conftest import open_console
from tests.console.test_operator import _open_operator
from tests.support.local_server import RunningServer

PENDING = 230


def _rows(driver: WebDriver) -> int:
    return len(driver.find_elements(By.CSS_SELECTOR, "#deletions tbody tr"))


def test_the_operator_sees_requests_100_at_a_time(
        browser: WebDriver, console_server: RunningServer, instance: str, operator_api: httpx.Client) -> None:
    for n in range(PENDING):
        operator_api.post("/operator/purges", json={"upn": f"user{n:03}@contoso.com"}).raise_for_status()
    _open_operator(browser, console_server, instance)
    find(browser, "#deletions")

    assert _rows(browser) == 100
    more = find(browser, "#show-more-requests")
    assert more.text == "Show 100 more (130 not shown)"
    more.click()
    wait_for(browser, lambda d: _rows(d) == 200)
    assert find(browser, "#show-more-requests").text == "Show 30 more (30 not shown)"

    # A decision reads the list again and keeps the 200 shown (one fewer pending now).
    browser.find_element(By.CSS_SELECTOR, "#deletions tbody tr button.primary").click()
    find(browser, "#confirm-ok").click()
    status_says(browser, "Approved")
    wait_for(browser, lambda d: _rows(d) == 200 and "29 not shown" in d.find_element(By.ID, "show-more-requests").text)

    find(browser, "#show-more-requests").click()
    wait_for(browser, lambda d: _rows(d) == PENDING - 1)
    done = find(browser, "#show-more-requests-done")
    assert done.text == f"All {PENDING - 1} requests shown."
    assert browser.switch_to.active_element == done

    # Another filter starts from 100 again.
    browser.find_element(By.CSS_SELECTOR, "#deletion-status option[value='all']").click()
    wait_for(browser, lambda d: d.find_elements(By.ID, "show-more-requests")
             and "130 not shown" in d.find_element(By.ID, "show-more-requests").text)
    wait_idle(browser)
    assert _rows(browser) == 100


def test_an_audit_trail_shows_200_events_at_a_time(
        browser: WebDriver, console_server: RunningServer, instance: str, local_api: httpx.Client) -> None:
    for n in range(450):
        local_api.post("/memory/append", json={"scope": "user", "content_markdown": f"- fact {n}"}).raise_for_status()
    open_console(browser, console_server, instance)
    find(browser, "#tab-audit").click()
    find(browser, "#own-audit")

    def rows(d: WebDriver) -> int:
        return len(d.find_elements(By.CSS_SELECTOR, "#own-audit tbody tr"))

    assert rows(browser) == 200
    find(browser, "#own-audit-more").click()
    wait_for(browser, lambda d: rows(d) == 400)
    assert find(browser, "#own-audit-more").text == "Show 50 more (50 not shown)"
    find(browser, "#own-audit-more").click()
    done = find(browser, "#own-audit-more-done")
    assert rows(browser) == 450 and done.text == "All 450 events shown."
    assert browser.switch_to.active_element == done
